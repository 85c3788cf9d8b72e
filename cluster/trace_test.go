package cluster_test

import (
	"context"
	"testing"

	"github.com/sepp-io/sepp/engine"
	"github.com/sepp-io/sepp/fsm"
)

// TestTraceContext_KeptOnceEveryMemberApplies: while a follower runs a
// binary older than CommandVersionTraceContext the leader proposes traced
// enqueues without their trace context (the job is added; an older member
// would drop the field and the replicas' states would differ); once every
// member applies it, the job keeps its trace context, single or batched.
func TestTraceContext_KeptOnceEveryMemberApplies(t *testing.T) {
	const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	for _, oddVersion := range []uint32{fsm.CommandVersionPayloadsOffHeap, fsm.CommandVersion} {
		leader := leaderWithOddMember(t, oddVersion)
		ctx := context.Background()
		trace := &engine.TraceContext{Traceparent: tp, Tracestate: "k=v"}
		res, err := leader.Enqueue(ctx, engine.EnqueueParams{Queue: "q", JobType: "t", Trace: trace})
		if err != nil {
			t.Fatal(err)
		}
		batch, err := leader.EnqueueBatch(ctx, []engine.EnqueueParams{{Queue: "q", JobType: "t", Trace: trace}, {Queue: "q", JobType: "t"}})
		if err != nil || len(batch) != 2 || batch[0].Err != nil || batch[1].Err != nil {
			t.Fatalf("batch = %+v, %v", batch, err)
		}
		for _, id := range []engine.JobID{res.JobID, batch[0].Result.JobID} {
			var got *engine.TraceContext
			if err := leader.Read(ctx, false, func(e engine.View) error {
				j, err := e.GetJob(id)
				got = j.Trace
				return err
			}); err != nil {
				t.Fatal(err)
			}
			switch {
			case oddVersion < fsm.CommandVersionTraceContext && got != nil:
				t.Fatalf("old member: job %d kept trace context %+v", id, got)
			case oddVersion >= fsm.CommandVersionTraceContext && (got == nil || *got != *trace):
				t.Fatalf("job %d trace context %+v, want %+v", id, got, trace)
			}
		}
	}
}
