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

// A rolling upgrade to CommandVersionFollowUps: while a member applies an
// older version, an ack carrying follow-ups is refused before anything is
// proposed (ErrFollowUpsUnsupported: the job still reserved, nothing
// enqueued). Once every member applies it, the ack and its follow-ups are
// one entry, replicated: every node holds the follow-ups and not the job,
// and the replicas agree.
func TestFollowUps_RollingUpgrade(t *testing.T) {
	var peers atomic.Uint32
	peers.Store(fsm.CommandVersionFollowUps - 1)
	c := clustertest.New(t, 3, clustertest.WithConfig(func(_ int, cfg *cluster.Config) {
		cfg.PeerCommandVersion = func(context.Context, cluster.NodeInfo) (uint32, error) { return peers.Load(), nil }
	}))
	ctx := context.Background()
	leader := c.Node(c.WaitLeader())
	ref := enqueueReserve(t, leader, "q")
	op := engine.AckFollowUpsOp{Ref: ref, FollowUps: []engine.EnqueueParams{
		{Queue: "next", JobType: "t", IdempotencyKey: "step-2"},
		{Queue: "next", JobType: "t", Payload: []byte("p")},
	}}
	if _, err := cluster.Do(ctx, leader, op); !errors.Is(err, cluster.ErrFollowUpsUnsupported) {
		t.Fatalf("follow-ups during the upgrade: %v, want ErrFollowUpsUnsupported", err)
	}

	peers.Store(fsm.CommandVersion)
	var got []engine.EnqueueResult
	clustertest.WaitFor(t, 20*time.Second, "follow-ups accepted once every member applies them", func() bool {
		var err error
		got, err = cluster.Do(ctx, leader, op)
		return err == nil
	})
	if len(got) != 2 || got[0].Duplicate || got[1].Duplicate || got[0].JobID == got[1].JobID {
		t.Fatalf("follow-ups %+v", got)
	}
	settle(t, c, leader)
	for i := range 3 {
		if err := c.Node(i).FSM().Read(func(e *engine.Engine) error {
			if _, err := e.GetJob(ref.JobID); !errors.Is(err, engine.ErrNotFound) {
				t.Fatalf("node %d: the acked job: %v, want gone", i, err)
			}
			for _, r := range got {
				j, err := e.GetJob(r.JobID)
				if err != nil || j.Queue != "next" {
					t.Fatalf("node %d: follow-up %d: %+v, %v", i, r.JobID, j, err)
				}
			}
			return nil
		}); err != nil {
			t.Fatalf("node %d: %v", i, err)
		}
	}
}
