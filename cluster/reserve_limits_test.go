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

// A queue's max_reserved holds across a leader kill: the new leader counts
// the jobs the old one handed out, hands out none past the cap, and one
// again once an old lease is acked; every replica ends with the same state.
func TestCluster_ReserveLimitHoldsAcrossFailover(t *testing.T) {
	const maxReserved = 2
	c := clustertest.New(t, 3, clustertest.WithConfig(func(_ int, cfg *cluster.Config) {
		cfg.Engine.Queues = append(cfg.Engine.Queues, engine.QueueConfig{Name: "q", MaxReserved: maxReserved})
		// Every member says it applies this binary's commands, so the
		// leader proposes the limits (held back for an older member).
		cfg.PeerCommandVersion = func(context.Context, cluster.NodeInfo) (uint32, error) { return fsm.CommandVersion, nil }
	}))
	li := c.WaitLeader()
	leader := c.Node(li)
	waitLimits(t, leader)
	ids := enqueueN(t, leader, 5, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ds, err := cluster.Do(ctx, leader, engine.ReserveOp{Params: engine.ReserveParams{Queue: "q", N: 5, WorkerID: "w", Lease: time.Minute}})
	if err != nil || len(ds) != maxReserved {
		t.Fatalf("reserve under max_reserved %d: %d jobs, %v", maxReserved, len(ds), err)
	}

	c.Kill(li)
	nl := c.Node(c.WaitLeaderAmong(others(c, li)))
	more, err := cluster.Do(ctx, nl, engine.ReserveOp{Params: engine.ReserveParams{Queue: "q", N: 5, WorkerID: "w"}})
	if err != nil || len(more) != 0 {
		t.Fatalf("the new leader handed out %d jobs past max_reserved (%v)", len(more), err)
	}
	if _, err := cluster.Do(ctx, nl, engine.AckOp{Ref: engine.LeaseRef{JobID: ds[0].Job.ID, LeaseToken: ds[0].LeaseToken}}); err != nil {
		t.Fatal(err)
	}
	more, err = cluster.Do(ctx, nl, engine.ReserveOp{Params: engine.ReserveParams{Queue: "q", N: 5, WorkerID: "w"}})
	if err != nil || len(more) != 1 || more[0].Job.ID != ids[maxReserved] {
		t.Fatalf("after an ack the new leader handed out %v (%v), want job %d", more, err, ids[maxReserved])
	}
	c.Restart(li)
	c.RequireSameDigest()
}

// waitLimits waits until the leader has proposed the configured limits,
// which it does once it knows every member applies them.
func waitLimits(t *testing.T, n *cluster.Node) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); ; {
		var on bool
		_ = n.FSM().Read(func(e *engine.Engine) error { on = engine.HasReserveLimits(e.Config()); return nil })
		if on {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("timed out waiting for the leader to propose the reserve limits")
		}
		time.Sleep(5 * time.Millisecond) // polling a condition with a deadline
	}
}
