package fsm

import (
	"errors"
	"testing"
	"time"

	"github.com/sepp-io/sepp/engine"
	cmdpb "github.com/sepp-io/sepp/proto/seppcmd/v1"
)

// withVersion is cmd as a binary before the dead-letter edges wrote it.
func withVersion(cmd *cmdpb.Command, v uint32) *cmdpb.Command {
	cmd.Version = v
	return cmd
}

// TestFSM_DeadLetterEdgesGatedByVersion: what command version 13 changes
// at apply applies only to commands of that version; an older entry
// replays as older binaries applied it, so a log written across a rolling
// upgrade gives every replica the same state.
func TestFSM_DeadLetterEdgesGatedByVersion(t *testing.T) {
	redriveExpired := engine.RedriveParams{Selection: engine.RedriveSelection{Cause: engine.CauseExpired}}
	unknownTarget := engine.QueueConfig{Name: "src", DeadLetterQueue: "does-not-exist"}
	retarget := engine.QueueUpdate{Name: "q", Set: engine.QueueConfig{DeadLetterQueue: "does-not-exist"}, SetDeadLetterQueue: true}
	tests := []struct {
		name    string
		cmd     *cmdpb.Command
		wantVer uint32
		wantErr error // nil: applied
	}{
		{"redrive of cause expired, version 13", RedriveStartCommand(redriveExpired), CommandVersionDeadLetterEdges, nil},
		{"redrive of cause expired, version 10: refused as then", withVersion(RedriveStartCommand(redriveExpired), CommandVersionRedrive), CommandVersionRedrive, engine.ErrInvalidArgument},
		{"redrive of cause admin keeps version 10", RedriveStartCommand(engine.RedriveParams{Selection: engine.RedriveSelection{Cause: engine.CauseAdmin}}), CommandVersionRedrive, nil},
		{"create with an unknown dead_letter_queue, version 13", CreateQueueCommand(unknownTarget, false), CommandVersionDeadLetterEdges, engine.ErrNotFound},
		{"create with an unknown dead_letter_queue, version 5: accepted as then", withVersion(CreateQueueCommand(unknownTarget, false), CommandVersionQueues), CommandVersionQueues, nil},
		{"create with an existing dead_letter_queue", CreateQueueCommand(engine.QueueConfig{Name: "src2", DeadLetterQueue: "q"}, false), CommandVersionDeadLetterEdges, nil},
		{"update to an unknown dead_letter_queue, version 13", UpdateQueueCommand(retarget), CommandVersionDeadLetterEdges, engine.ErrNotFound},
		{"update to an unknown dead_letter_queue, version 5: accepted as then", withVersion(UpdateQueueCommand(retarget), CommandVersionQueues), CommandVersionQueues, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newRetainingFSM(t)
			applyEntry(t, f, 1, stamped(t0, EnqueueCommand(enqueueParams("q", 0))))
			if got := tc.cmd.GetVersion(); got != tc.wantVer {
				t.Fatalf("command version %d, want %d", got, tc.wantVer)
			}
			res := applyEntry(t, f, 2, stamped(t0.Add(time.Second), tc.cmd))
			if (tc.wantErr == nil) != (res[0].Err == nil) || (tc.wantErr != nil && !errors.Is(res[0].Err, tc.wantErr)) {
				t.Fatalf("applied: %v, want %v", res[0].Err, tc.wantErr)
			}
		})
	}
}

// TestFSM_ForwardKeepsPriorityConfigSet: the ConfigSet of version 13 turns
// forwardKeepsPriority on; the declarative one before it does not.
func TestFSM_ForwardKeepsPriorityConfigSet(t *testing.T) {
	for _, keep := range []bool{false, true} {
		f := newRetainingFSM(t)
		cmd := RecordFieldsConfigCommand(engine.Config{Limits: engine.DefaultLimits()})
		if keep {
			cmd = ForwardKeepsPriorityConfigCommand(cmd)
		}
		if res := applyEntry(t, f, 1, stamped(t0, cmd)); res[0].Err != nil {
			t.Fatal(res[0].Err)
		}
		var got bool
		_ = f.Read(func(e *engine.Engine) error { got = e.ForwardKeepsPriority(); return nil })
		if got != keep || (keep && cmd.GetVersion() != CommandVersionDeadLetterEdges) {
			t.Fatalf("keep %v: engine says %v, command version %d", keep, got, cmd.GetVersion())
		}
	}
}
