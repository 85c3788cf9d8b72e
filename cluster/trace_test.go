package cluster_test

import (
	"context"
	"testing"
	"time"

	"github.com/sepp-io/sepp/cluster"
	"github.com/sepp-io/sepp/cluster/clustertest"
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
		res, err := cluster.Do(ctx, leader, engine.EnqueueOp{Params: engine.EnqueueParams{Queue: "q", JobType: "t", Trace: trace}})
		if err != nil {
			t.Fatal(err)
		}
		batch, err := cluster.Do(ctx, leader, engine.EnqueueBatchOp{Items: []engine.EnqueueParams{{Queue: "q", JobType: "t", Trace: trace}, {Queue: "q", JobType: "t"}}})
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

// TestTraceContext_SurvivesSnapshotAndRestart: a traced job's trace
// context is in the snapshot and in the replayed log: a node that restarts
// from both still answers it, and its replicas agree.
func TestTraceContext_SurvivesSnapshotAndRestart(t *testing.T) {
	// Every member says it applies this binary's versions, as a node's
	// facts call does in sepp serve (without an answer the leader keeps
	// trace contexts out of the log).
	c := clustertest.New(t, 3, clustertest.WithConfig(func(_ int, cfg *cluster.Config) {
		cfg.PeerCommandVersion = func(context.Context, cluster.NodeInfo) (uint32, error) { return fsm.CommandVersion, nil }
	}))
	leader := c.Node(c.WaitLeader())
	clustertest.WaitFor(t, 10*time.Second, "the members' versions recorded", func() bool {
		n := 0
		for _, m := range leader.FSM().Nodes() {
			if m.AppliesCommandVersion(fsm.CommandVersionTraceContext) {
				n++
			}
		}
		return n == 3
	})
	ctx := context.Background()
	before := &engine.TraceContext{Traceparent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", Tracestate: "a=1"}
	after := &engine.TraceContext{Traceparent: "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}
	first, err := cluster.Do(ctx, leader, engine.EnqueueOp{Params: engine.EnqueueParams{Queue: "q", JobType: "t", Trace: before}})
	if err != nil {
		t.Fatal(err)
	}
	if err := leader.Snapshot(); err != nil {
		t.Fatal(err)
	}
	second, err := cluster.Do(ctx, leader, engine.EnqueueOp{Params: engine.EnqueueParams{Queue: "q", JobType: "t", Trace: after}}) // in the log only
	if err != nil {
		t.Fatal(err)
	}
	c.RequireSameDigest()
	for i := range 3 {
		c.Kill(i)
	}
	for i := range 3 {
		c.Restart(i)
	}
	n := c.Node(c.WaitLeader())
	for id, want := range map[engine.JobID]*engine.TraceContext{first.JobID: before, second.JobID: after} {
		var got *engine.TraceContext
		if err := n.Read(ctx, false, func(e engine.View) error {
			j, err := e.GetJob(id)
			got = j.Trace
			return err
		}); err != nil {
			t.Fatal(err)
		}
		if got == nil || *got != *want {
			t.Fatalf("job %d after restart: trace context %+v, want %+v", id, got, want)
		}
	}
	c.RequireSameDigest()
}
