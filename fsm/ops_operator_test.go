package fsm

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/sepp-io/sepp/engine"
	cmdpb "github.com/sepp-io/sepp/proto/seppcmd/v1"
)

// The queue commands apply through the log and answer what the engine
// did; a replica restored from a snapshot holds the same queues.
func TestFSM_QueueCommands(t *testing.T) {
	f := newTestFSM(t)
	prio := uint32(6)
	res := applyEntry(t, f, 1, stamped(t0,
		CreateQueueCommand(engine.QueueConfig{Name: "emails", DefaultPriority: &prio}, false),
		CreateQueueCommand(engine.QueueConfig{Name: "emails"}, false),
		EnqueueCommand(enqueueParams("emails", 1)),
		EnqueueCommand(enqueueParams("emails", 2)),
		UpdateQueueCommand(engine.QueueUpdate{Name: "emails", Paused: ptr(true), Set: engine.QueueConfig{MaxLength: ptr(5)}}),
		PauseQueueCommand("nosuchqueue"),
		DeleteQueueCommand("emails", false),
		PurgeQueueCommand("emails", engine.PurgeWaiting),
	))
	switch {
	case res[0].Err != nil:
		t.Fatalf("create: %v", res[0].Err)
	case !errors.Is(res[1].Err, engine.ErrAlreadyExists):
		t.Fatalf("second create: %v, want ErrAlreadyExists", res[1].Err)
	case res[4].Err != nil:
		t.Fatalf("update: %v", res[4].Err)
	case !errors.Is(res[5].Err, engine.ErrNotFound):
		t.Fatalf("pause of an unknown queue: %v, want ErrNotFound", res[5].Err)
	case !errors.Is(res[6].Err, engine.ErrQueueNotEmpty):
		t.Fatalf("delete of a queue holding jobs: %v, want ErrQueueNotEmpty", res[6].Err)
	case res[7].Err != nil || res[7].Removed.Jobs != 2:
		t.Fatalf("purge: %+v", res[7])
	}
	var cfg engine.Config
	var stats engine.QueueStats
	_ = f.Read(func(e *engine.Engine) error {
		cfg = e.Config()
		stats, _ = e.QueueStats(time.Time{}, "emails")
		return nil
	})
	if len(cfg.Queues) != 1 || *cfg.Queues[0].DefaultPriority != 6 || *cfg.Queues[0].MaxLength != 5 || !stats.Paused || stats.Purged != 2 {
		t.Fatalf("config %+v, stats %+v", cfg.Queues, stats)
	}

	g := newTestFSM(t)
	if err := g.Restore(io.NopCloser(bytes.NewReader(snapshotBytes(t, f)))); err != nil {
		t.Fatal(err)
	}
	if g.Digest() != f.Digest() {
		t.Fatal("restored replica differs")
	}

	res = applyEntry(t, f, 2, stamped(t0.Add(time.Second), DeleteQueueCommand("emails", false)))
	if res[0].Err != nil || res[0].Removed != (engine.QueueRemoval{}) {
		t.Fatalf("delete of the purged queue: %+v", res[0])
	}
}

// A declarative ConfigSet meets the running queues by the engine's rule; a
// plain one still replaces the config whole, as older binaries apply it.
func TestFSM_DeclarativeConfigSet(t *testing.T) {
	f := newTestFSM(t)
	file := engine.Config{Limits: engine.DefaultLimits(), Queues: []engine.QueueConfig{{Name: "declared"}}}
	res := applyEntry(t, f, 1, stamped(t0,
		CreateQueueCommand(engine.QueueConfig{Name: "runtime"}, false),
		DeclaredConfigCommand(file),
	))
	if res[0].Err != nil || res[1].Err != nil {
		t.Fatalf("%v %v", res[0].Err, res[1].Err)
	}
	names := func() []string {
		var out []string
		_ = f.Read(func(e *engine.Engine) error {
			for _, q := range e.Config().Queues {
				out = append(out, q.Name)
			}
			return nil
		})
		return out
	}
	if got := names(); len(got) != 2 || got[0] != "runtime" || got[1] != "declared" {
		t.Fatalf("queues after a declarative config: %v", got)
	}
	applyEntry(t, f, 2, stamped(t0, SetConfigCommand(file)))
	if got := names(); len(got) != 1 || got[0] != "declared" {
		t.Fatalf("queues after a replacing config: %v", got)
	}
}

// A queue operation needs command version 5: an entry that claims less is
// refused by both decoders.
func TestQueueCommands_NeedTheirVersion(t *testing.T) {
	for _, c := range []*cmdpb.Command{
		CreateQueueCommand(engine.QueueConfig{Name: "q"}, false),
		UpdateQueueCommand(engine.QueueUpdate{Name: "q"}),
		DeleteQueueCommand("q", false),
		PurgeQueueCommand("q", engine.PurgeDeadLetters),
		JobsActCommand(engine.JobActionParams{Action: engine.JobActionDelete, IDs: []engine.JobID{1}}),
	} {
		if c.GetVersion() != CommandVersionQueues {
			t.Fatalf("%T: version %d", c.GetOp(), c.GetVersion())
		}
		c.Version = CommandVersionMemoryBudget
		data, err := EncodeEntry(stamped(t0, c))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := DecodeEntry(data); !errors.Is(err, ErrDecode) {
			t.Fatalf("%T at version 4: DecodeEntry %v", c.GetOp(), err)
		}
		if err := CheckEntry(data); !errors.Is(err, ErrDecode) {
			t.Fatalf("%T at version 4: CheckEntry %v", c.GetOp(), err)
		}
	}
}

// JobsAct applies through the log and answers per job.
func TestFSM_JobsAct(t *testing.T) {
	f := newTestFSM(t)
	res := applyEntry(t, f, 1, stamped(t0,
		EnqueueCommand(enqueueParams("q", 1)),
		JobsActCommand(engine.JobActionParams{Action: engine.JobActionReschedule, IDs: []engine.JobID{1, 9}, RunAt: t0.Add(time.Hour)}),
		JobsActCommand(engine.JobActionParams{Action: engine.JobActionPriority, IDs: []engine.JobID{1}, Priority: 12}),
	))
	if res[1].Err != nil || len(res[1].Items) != 2 || res[1].Items[0].Err != nil || !errors.Is(res[1].Items[1].Err, engine.ErrNotFound) {
		t.Fatalf("reschedule: %+v", res[1])
	}
	if !errors.Is(res[2].Err, engine.ErrInvalidArgument) {
		t.Fatalf("priority 12: %+v", res[2])
	}
	var j engine.Job
	_ = f.Read(func(e *engine.Engine) error { j, _ = e.GetJob(1); return nil })
	if j.State != engine.StateScheduled || !j.ScheduledAt.Equal(t0.Add(time.Hour)) {
		t.Fatalf("job after reschedule: %+v", j)
	}
}

// A cancel through the log revokes the lease on every replica: the worker's
// ack in the same entry is lease-lost, the record says cancelled and its
// reason; the command carries version 9, which a version 5 writer cannot
// claim for it.
func TestFSM_JobsActCancel(t *testing.T) {
	lim := engine.DefaultLimits()
	lim.DeadLetterRetention = time.Hour
	f := New(Config{Engine: engine.Config{Limits: lim}, SnapshotTempDir: t.TempDir()})
	res := applyEntry(t, f, 1, stamped(t0,
		EnqueueCommand(enqueueParams("q", 1)),
		EnqueueCommand(enqueueParams("q", 2)),
		ReserveCommand(engine.ReserveParams{Queue: "q", WorkerID: "w", N: 2, Lease: time.Minute}),
	))
	ds := res[2].Deliveries
	if len(ds) != 2 {
		t.Fatalf("reserve: %+v", res[2])
	}
	cancel := JobsActCommand(engine.JobActionParams{Action: engine.JobActionCancel, IDs: []engine.JobID{ds[0].Job.ID}, Reason: "wedged"})
	cancelDelete := JobsActCommand(engine.JobActionParams{Action: engine.JobActionCancelDelete, IDs: []engine.JobID{ds[1].Job.ID}})
	if cancel.GetVersion() != CommandVersionCancel || cancelDelete.GetVersion() != CommandVersionCancel || CommandVersion < CommandVersionCancel {
		t.Fatalf("versions %d %d (binary %d), want %d", cancel.GetVersion(), cancelDelete.GetVersion(), CommandVersion, CommandVersionCancel)
	}
	res = applyEntry(t, f, 2, stamped(t0.Add(time.Second), cancel, cancelDelete,
		AckCommand(engine.LeaseRef{JobID: ds[0].Job.ID, LeaseToken: ds[0].LeaseToken}),
		ExtendLeaseCommand(engine.ExtendParams{LeaseRef: engine.LeaseRef{JobID: ds[1].Job.ID, LeaseToken: ds[1].LeaseToken}}),
	))
	for i := range 2 {
		if res[i].Err != nil || len(res[i].Items) != 1 || res[i].Items[0].Err != nil {
			t.Fatalf("cancel %d: %+v", i, res[i])
		}
	}
	if !errors.Is(res[2].Err, engine.ErrLeaseLost) || !errors.Is(res[3].Err, engine.ErrLeaseLost) {
		t.Fatalf("ack, extend after cancel: %v, %v; want lease lost", res[2].Err, res[3].Err)
	}
	var rec engine.DeadLetterRecord
	var recErr, goneErr error
	_ = f.Read(func(e *engine.Engine) error {
		rec, recErr = e.GetDeadLetter(ds[0].Job.ID)
		_, goneErr = e.GetJob(ds[1].Job.ID)
		return nil
	})
	if recErr != nil || rec.Cause != engine.CauseCancelled || rec.LastReason != "wedged" {
		t.Fatalf("record %+v %v", rec, recErr)
	}
	if !errors.Is(goneErr, engine.ErrNotFound) {
		t.Fatalf("cancel-delete left the job: %v", goneErr)
	}

	// A writer that stamps a cancel with the queue operations' version is
	// refused as corrupt: an older member would have been asked to apply it.
	forged := JobsActCommand(engine.JobActionParams{Action: engine.JobActionCancel, IDs: []engine.JobID{1}})
	forged.Version = CommandVersionQueues
	data, err := EncodeEntry([]*cmdpb.Command{forged})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := DecodeEntry(data); !errors.Is(err, ErrDecode) || !strings.Contains(err.Error(), "job action cancel needs 9") {
		t.Fatalf("DecodeEntry of a version 5 cancel: %v, want ErrDecode", err)
	}
}
