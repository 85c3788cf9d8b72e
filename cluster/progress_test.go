package cluster_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sepp-io/sepp/cluster"
	"github.com/sepp-io/sepp/cluster/clustertest"
	"github.com/sepp-io/sepp/engine"
	"github.com/sepp-io/sepp/fsm"
)

// A rolling upgrade to CommandVersionProgress: while a member applies an
// older version, an extension carrying progress is refused before anything
// is proposed (ErrProgressUnsupported: the lease is not extended, the plain
// extension then works). Once every member applies it, the progress is
// replicated: every node's GetJob shows it.
func TestProgress_RollingUpgrade(t *testing.T) {
	var peers atomic.Uint32
	peers.Store(fsm.CommandVersionProgress - 1)
	c := clustertest.New(t, 3, clustertest.WithConfig(func(_ int, cfg *cluster.Config) {
		cfg.PeerCommandVersion = func(context.Context, cluster.NodeInfo) (uint32, error) { return peers.Load(), nil }
	}))
	ctx := context.Background()
	leader := c.Node(c.WaitLeader())
	ref := enqueueReserve(t, leader, "q")
	report := &engine.Progress{Percent: 30, Message: "a third"}
	if _, err := leader.Propose(ctx, engine.ExtendLeaseOp{Params: engine.ExtendParams{LeaseRef: ref, Lease: time.Minute, Progress: report}}); !errors.Is(err, cluster.ErrProgressUnsupported) {
		t.Fatalf("progress during the upgrade: %v, want ErrProgressUnsupported", err)
	}
	if _, err := leader.Propose(ctx, engine.ExtendLeaseOp{Params: engine.ExtendParams{LeaseRef: ref, Lease: time.Minute}}); err != nil {
		t.Fatalf("the plain extension after the refusal: %v", err)
	}

	peers.Store(fsm.CommandVersion)
	clustertest.WaitFor(t, 20*time.Second, "progress accepted once every member applies it", func() bool {
		_, err := leader.Propose(ctx, engine.ExtendLeaseOp{Params: engine.ExtendParams{LeaseRef: ref, Lease: time.Minute, Progress: report}})
		return err == nil
	})
	settle(t, c, leader)
	for i := range 3 {
		var job engine.Job
		if err := c.Node(i).FSM().Read(func(e *engine.Engine) error {
			var err error
			job, err = e.GetJob(ref.JobID)
			return err
		}); err != nil {
			t.Fatalf("node %d: %v", i, err)
		}
		if job.Progress == nil || *job.Progress != *report {
			t.Fatalf("node %d: progress %+v, want %+v", i, job.Progress, report)
		}
	}
}
