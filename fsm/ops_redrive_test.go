package fsm

import (
	"bytes"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/sepp-io/sepp/engine"
	cmdpb "github.com/sepp-io/sepp/proto/seppcmd/v1"
)

func newRetainingFSM(t *testing.T) *FSM {
	t.Helper()
	lim := engine.DefaultLimits()
	lim.DeadLetterRetention = time.Hour
	return New(Config{Engine: engine.Config{Limits: lim}, SnapshotTempDir: t.TempDir()})
}

// A redrive task runs through the log: started, stepped, paused, resumed and
// ended by commands, and a replica restored mid-way goes on to the same
// state.
func TestFSM_RedriveCommands(t *testing.T) {
	f := newRetainingFSM(t)
	var setup []*cmdpb.Command
	for i := range 3 {
		setup = append(setup, EnqueueCommand(enqueueParams("q", i)))
	}
	setup = append(setup, DeadLetterJobsCommand([]engine.JobID{1, 2, 3}, "poison"))
	applyEntry(t, f, 1, stamped(t0, setup...))

	res := applyEntry(t, f, 2, stamped(t0.Add(time.Second),
		RedriveStartCommand(engine.RedriveParams{Selection: engine.RedriveSelection{Queue: "q", ReasonContains: "poison"}, Rate: 1, By: "alice"}),
		RedriveStartCommand(engine.RedriveParams{ToQueue: "q"}),
		RedriveStartCommand(engine.RedriveParams{Rate: -1}),
		RedriveStepCommand(1, 1),
		RedriveSetStateCommand(1, engine.RedrivePaused, ""),
		RedriveStepCommand(1, 1),
		RedriveSetStateCommand(1, engine.RedriveDone, ""),
	))
	switch {
	case res[0].Err != nil || res[0].Redrive.ID != 1 || res[0].Redrive.Remaining != 3:
		t.Fatalf("start: %+v", res[0])
	case !errors.Is(res[1].Err, engine.ErrInvalidArgument):
		t.Fatalf("same-id requeue to a queue: %v", res[1].Err)
	case !errors.Is(res[2].Err, engine.ErrInvalidArgument):
		t.Fatalf("negative rate: %v", res[2].Err)
	case res[3].Err != nil || res[3].Redrive.Moved != 1 || res[3].Redrive.Cursor != 1:
		t.Fatalf("step: %+v", res[3])
	case res[4].Err != nil || res[4].Redrive.State != engine.RedrivePaused:
		t.Fatalf("pause: %+v", res[4])
	case res[5].Err != nil || res[5].Redrive.Moved != 1:
		t.Fatalf("step while paused: %+v", res[5])
	case !errors.Is(res[6].Err, engine.ErrInvalidArgument):
		t.Fatalf("set state done: %v", res[6].Err)
	}

	g := newRetainingFSM(t)
	if err := g.Restore(io.NopCloser(bytes.NewReader(snapshotBytes(t, f)))); err != nil {
		t.Fatal(err)
	}
	rest := func() []*cmdpb.Command {
		return stamped(t0.Add(2*time.Second),
			RedriveSetStateCommand(1, engine.RedriveRunning, ""),
			RedriveStepCommand(1, 5),
		)
	}
	for _, x := range []*FSM{f, g} {
		res := applyEntry(t, x, 3, rest())
		if res[1].Err != nil || res[1].Redrive.Moved != 3 || res[1].Redrive.State != engine.RedriveDone {
			t.Fatalf("resume and finish: %+v", res[1])
		}
	}
	if g.Digest() != f.Digest() {
		t.Fatal("restored replica diverged")
	}
}

// A redrive command needs command version 10: an entry that claims less is
// refused by both decoders.
func TestRedriveCommands_NeedTheirVersion(t *testing.T) {
	for _, c := range []*cmdpb.Command{
		RedriveStartCommand(engine.RedriveParams{}),
		RedriveStepCommand(1, 1),
		RedriveSetStateCommand(1, engine.RedriveCancelled, "bob"),
	} {
		if c.GetVersion() != CommandVersionRedrive || opVersion(c.GetOp()) != CommandVersionRedrive {
			t.Fatalf("%T: version %d", c.GetOp(), c.GetVersion())
		}
		c.Version = CommandVersionQueues
		data, err := EncodeEntry(stamped(t0, c))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := DecodeEntry(data); !errors.Is(err, ErrDecode) {
			t.Fatalf("%T at version %d: DecodeEntry %v", c.GetOp(), CommandVersionQueues, err)
		}
		if err := CheckEntry(data); !errors.Is(err, ErrDecode) {
			t.Fatalf("%T at version %d: CheckEntry %v", c.GetOp(), CommandVersionQueues, err)
		}
	}
}
