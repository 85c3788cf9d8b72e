package cluster_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/sepp-io/sepp/cluster"
	"github.com/sepp-io/sepp/cluster/clustertest"
	"github.com/sepp-io/sepp/engine"
	"github.com/sepp-io/sepp/fsm"
)

// queueAttempts is a queue's default_max_attempts in n's replicated
// config, or 0 when n's config does not name the queue.
func queueAttempts(n *cluster.Node, name string) uint32 {
	var got uint32
	_ = n.FSM().Read(func(e *engine.Engine) error {
		for _, q := range e.Config().Queues {
			if q.Name == name && q.DefaultMaxAttempts != nil {
				got = *q.DefaultMaxAttempts
			}
		}
		return nil
	})
	return got
}

// Queues managed at runtime live in the replicated state: a new leader
// whose file declares the same [[queues]] neither drops a queue created at
// runtime nor undoes a runtime update of a declared one, through two
// leader changes. (Files that differ between nodes: engine's
// TestApplyDeclared, each definition applied once.)
func TestQueues_RuntimeChangesSurviveLeaderChanges(t *testing.T) {
	five := uint32(5)
	c := clustertest.New(t, 3, clustertest.WithConfig(func(_ int, cfg *cluster.Config) {
		cfg.Engine.Queues = []engine.QueueConfig{{Name: "declared", DefaultMaxAttempts: &five}}
		cfg.PeerCommandVersion = func(context.Context, cluster.NodeInfo) (uint32, error) { return fsm.CommandVersion, nil }
	}))
	ctx := context.Background()
	li := c.WaitLeader()
	leader := c.Node(li)
	clustertest.WaitFor(t, 10*time.Second, "the file's queue declared", func() bool {
		return queueAttempts(leader, "declared") == 5 && len(declarations(leader)) == 1
	})
	if _, err := cluster.Do(ctx, leader, engine.CreateQueueOp{Config: engine.QueueConfig{Name: "runtime"}, Paused: true}); err != nil {
		t.Fatal(err)
	}
	nine := uint32(9)
	if _, err := cluster.Do(ctx, leader, engine.UpdateQueueOp{Update: engine.QueueUpdate{Name: "declared", Set: engine.QueueConfig{DefaultMaxAttempts: &nine}}}); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		next := others(c, li)[0]
		if err := leader.TransferLeadership(ctx, c.Node(next).Self().ID); err != nil {
			t.Fatal(err)
		}
		li = c.WaitLeaderAmong([]int{next})
		leader = c.Node(li)
		settle(t, c, leader)
		if got := queueAttempts(leader, "declared"); got != 9 {
			t.Fatalf("after a leader change: attempts %d, want the runtime 9", got)
		}
		s, err := leaderStats(leader, "runtime")
		if err != nil || !s.Paused || !s.Configured {
			t.Fatalf("the queue created at runtime: %+v %v", s, err)
		}
	}
}

// settle waits until the leader is ready, which it is only once its first
// duties of the term ran (the file's config among them), and every member
// holds the same state.
func settle(t *testing.T, c *clustertest.Cluster, leader *cluster.Node) {
	t.Helper()
	clustertest.WaitFor(t, 10*time.Second, "the new leader's first duties", func() bool { return leader.Readiness(1000).Ready })
	c.RequireSameDigest()
}

func declarations(n *cluster.Node) map[string][]uint64 {
	var out map[string][]uint64
	_ = n.FSM().Read(func(e *engine.Engine) error { out = e.Declarations(); return nil })
	return out
}

func leaderStats(n *cluster.Node, queue string) (engine.QueueStats, error) {
	var s engine.QueueStats
	err := n.FSM().Read(func(e *engine.Engine) error {
		var err error
		s, err = e.QueueStats(time.Time{}, queue)
		return err
	})
	return s, err
}

// While a member does not apply command version 5, the queue operations
// are refused before anything is proposed.
func TestQueues_RefusedDuringAnUpgrade(t *testing.T) {
	c := clustertest.New(t, 3, clustertest.WithConfig(func(_ int, cfg *cluster.Config) {
		cfg.PeerCommandVersion = func(context.Context, cluster.NodeInfo) (uint32, error) { return fsm.CommandVersionMemoryBudget, nil }
	}))
	leader := c.Node(c.WaitLeader())
	_, err := cluster.Do(context.Background(), leader, engine.CreateQueueOp{Config: engine.QueueConfig{Name: "q"}, Paused: false})
	if !errors.Is(err, cluster.ErrUpgradeInProgress) {
		t.Fatalf("CreateQueue during an upgrade: %v, want ErrUpgradeInProgress", err)
	}
	if !strings.Contains(err.Error(), "command version 5 (queues)") {
		t.Fatalf("CreateQueue during an upgrade: %q does not name command version 5 (queues)", err)
	}
	if _, err := leaderStats(leader, "q"); !errors.Is(err, engine.ErrNotFound) {
		t.Fatalf("the refused create left a queue: %v", err)
	}
}

// While a member applies the job actions (version 5) but not cancel
// (version 9), a cancel is refused before anything is proposed and the
// worker keeps its lease; the other job actions go on.
func TestJobsCancel_RefusedDuringAnUpgrade(t *testing.T) {
	c := clustertest.New(t, 3, clustertest.WithConfig(func(_ int, cfg *cluster.Config) {
		cfg.PeerCommandVersion = func(context.Context, cluster.NodeInfo) (uint32, error) { return fsm.CommandVersionQueues, nil }
	}))
	leader := c.Node(c.WaitLeader())
	ctx := context.Background()
	var ids []engine.JobID
	for range 2 {
		res, err := cluster.Do(ctx, leader, engine.EnqueueOp{Params: engine.EnqueueParams{Queue: "q", JobType: "t"}})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, res.JobID)
	}
	ds, err := cluster.Do(ctx, leader, engine.ReserveOp{Params: engine.ReserveParams{Queue: "q", WorkerID: "w", N: 1, Lease: time.Minute}})
	if err != nil || len(ds) != 1 {
		t.Fatalf("reserve: %v %v", ds, err)
	}
	_, err = cluster.Do(ctx, leader, engine.ActOnJobsOp{Params: engine.JobActionParams{Action: engine.JobActionCancel, IDs: []engine.JobID{ds[0].Job.ID}}})
	if !errors.Is(err, cluster.ErrUpgradeInProgress) {
		t.Fatalf("cancel during an upgrade: %v, want ErrUpgradeInProgress", err)
	}
	if !strings.Contains(err.Error(), "command version 9 (cancel)") {
		t.Fatalf("cancel during an upgrade: %q does not name command version 9 (cancel)", err)
	}
	if s, err := leaderStats(leader, "q"); err != nil || s.Reserved != 1 {
		t.Fatalf("after the refused cancel: %+v %v; want the job still reserved", s, err)
	}
	res, err := cluster.Do(ctx, leader, engine.ActOnJobsOp{Params: engine.JobActionParams{Action: engine.JobActionDelete, IDs: []engine.JobID{ids[1]}}})
	if err != nil || len(res) != 1 || res[0].Err != nil {
		t.Fatalf("delete during the upgrade: %+v %v", res, err)
	}
}
