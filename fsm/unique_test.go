package fsm

import (
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/sepp-io/sepp/engine"
)

// TestEnqueueCommand_UniqueVersion: an enqueue with unique options carries
// CommandVersionUnique, single or batched, the options survive the log
// (the hand-written encoder hands them to the protobuf one), and a replica
// applying them refuses or returns the holder.
func TestEnqueueCommand_UniqueVersion(t *testing.T) {
	unique := &engine.UniqueOpts{Key: "k", Fields: nil, CoverDead: true, CompletedFor: time.Minute}
	refuse := &engine.UniqueOpts{Fields: []string{"a", "b"}, Refuse: true}
	tests := []struct {
		name        string
		u           *engine.UniqueOpts
		wantVersion uint32
	}{
		{name: "Plain", u: nil, wantVersion: commandV1},
		{name: "ExplicitKey", u: unique, wantVersion: CommandVersionUnique},
		{name: "DerivedRefuse", u: refuse, wantVersion: CommandVersionUnique},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := enqueueParams("q", 1)
			p.Custom = map[string]string{"a": "1"}
			p.Unique = tt.u
			single := EnqueueCommand(p)
			batch := EnqueueBatchCommand([]engine.EnqueueParams{enqueueParams("q", 2), p})
			for _, c := range []uint32{single.GetVersion(), batch.GetVersion()} {
				if c != tt.wantVersion {
					t.Fatalf("version %d, want %d", c, tt.wantVersion)
				}
			}
			data, err := EncodeEntry(stamped(t0, single, batch))
			if err != nil {
				t.Fatal(err)
			}
			entry, err := DecodeEntry(data)
			if err != nil {
				t.Fatal(err)
			}
			got := enqueueParamsFromProto(entry.GetCommands()[0].GetJobEnqueue().GetParams())
			if !reflect.DeepEqual(got.Unique, tt.u) {
				t.Fatalf("round trip %+v, want %+v", got.Unique, tt.u)
			}
			f := newTestFSM(t)
			r := applyEntry(t, f, 1, stamped(t0, single, batch))
			if r[0].Err != nil {
				t.Fatal(r[0].Err)
			}
			second := r[1].Batch[1]
			switch {
			case tt.u == nil:
				if second.Err != nil || second.Result.Duplicate {
					t.Fatalf("plain batch item %+v", second)
				}
			case tt.u.Refuse:
				var ce *engine.UniqueConflictError
				if !errors.As(second.Err, &ce) || ce.Existing != r[0].Enqueue.JobID {
					t.Fatalf("batch item %+v, want a conflict with job %d", second, r[0].Enqueue.JobID)
				}
			default:
				if second.Err != nil || !second.Result.Duplicate || second.Result.JobID != r[0].Enqueue.JobID {
					t.Fatalf("batch item %+v, want a duplicate of job %d", second, r[0].Enqueue.JobID)
				}
			}
		})
	}
}
