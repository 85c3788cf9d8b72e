package cluster_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sepp-io/sepp/cluster"
	"github.com/sepp-io/sepp/cluster/clustertest"
	"github.com/sepp-io/sepp/engine"
	"github.com/sepp-io/sepp/fsm"
)

// queueMaxReserved is a queue's max_reserved in n's replicated config, -1
// when n's config does not name the queue.
func queueMaxReserved(n *cluster.Node, name string) int {
	got := -1
	_ = n.FSM().Read(func(e *engine.Engine) error {
		for _, q := range e.Config().Queues {
			if q.Name == name {
				got = q.MaxReserved
			}
		}
		return nil
	})
	return got
}

func declaredLimitsOn(n *cluster.Node) bool {
	var on bool
	_ = n.FSM().Read(func(e *engine.Engine) error { on = e.DeclaredReserveLimits(); return nil })
	return on
}

// A rolling upgrade to command version 15: while a member applies only 14,
// a runtime change of a reserve limit is refused before anything is
// proposed (naming the version), the other settings and a create with
// limits (version 6) go on, and the file's limits apply as before. Once
// every member applies 15, the leader turns the rule on, converting the
// file's applied entry (the queue keeps what it runs), and the change goes
// through and survives a leader change with the same file.
func TestQueueReserveLimits_RollingUpgrade(t *testing.T) {
	var peers atomic.Uint32
	peers.Store(fsm.CommandVersionReserveRetry)
	c := clustertest.New(t, 3, clustertest.WithConfig(func(_ int, cfg *cluster.Config) {
		cfg.Engine.Queues = []engine.QueueConfig{{Name: "declared", MaxReserved: 3}}
		cfg.PeerCommandVersion = func(context.Context, cluster.NodeInfo) (uint32, error) { return peers.Load(), nil }
	}))
	ctx := context.Background()
	li := c.WaitLeader()
	leader := c.Node(li)
	clustertest.WaitFor(t, 10*time.Second, "the file's queue with its limit", func() bool {
		return queueMaxReserved(leader, "declared") == 3 && len(declarations(leader)) == 1
	})
	if declaredLimitsOn(leader) {
		t.Fatal("the rule of version 15 is on while a member applies 14")
	}
	_, err := cluster.Do(ctx, leader, engine.UpdateQueueOp{Update: engine.QueueUpdate{Name: "declared", Set: engine.QueueConfig{MaxReserved: 1}}})
	if !errors.Is(err, cluster.ErrUpgradeInProgress) || !strings.Contains(err.Error(), "command version 15 (queue_reserve_limits)") {
		t.Fatalf("a limit changed during the upgrade: %v, want ErrUpgradeInProgress naming command version 15 (queue_reserve_limits)", err)
	}
	_, err = cluster.Do(ctx, leader, engine.UpdateQueueOp{Update: engine.QueueUpdate{Name: "declared", Inherit: []string{"max_reserved"}}})
	if !errors.Is(err, cluster.ErrUpgradeInProgress) {
		t.Fatalf("a limit dropped during the upgrade: %v, want ErrUpgradeInProgress", err)
	}
	if got := queueMaxReserved(leader, "declared"); got != 3 {
		t.Fatalf("a refused update changed max_reserved to %d", got)
	}
	two := uint32(2)
	if _, err := cluster.Do(ctx, leader, engine.UpdateQueueOp{Update: engine.QueueUpdate{Name: "declared", Set: engine.QueueConfig{DefaultPriority: &two}}}); err != nil {
		t.Fatalf("another setting during the upgrade: %v", err)
	}
	if _, err := cluster.Do(ctx, leader, engine.CreateQueueOp{Config: engine.QueueConfig{Name: "created", MaxReserved: 4}, Paused: false}); err != nil {
		t.Fatalf("a create with limits during the upgrade: %v", err)
	}
	if got := queueMaxReserved(leader, "created"); got != 4 {
		t.Fatalf("created with max_reserved %d, want 4", got)
	}

	peers.Store(fsm.CommandVersion)
	clustertest.WaitFor(t, 20*time.Second, "the leader to turn the rule of version 15 on", func() bool { return declaredLimitsOn(leader) })
	if got := queueMaxReserved(leader, "declared"); got != 3 || queuePriority(leader, "declared") != 2 {
		t.Fatalf("the conversion changed the queue: max_reserved %d, default_priority %d", got, queuePriority(leader, "declared"))
	}
	if _, err := cluster.Do(ctx, leader, engine.UpdateQueueOp{Update: engine.QueueUpdate{Name: "declared", Set: engine.QueueConfig{MaxReserved: 1}}}); err != nil {
		t.Fatalf("a limit changed after the upgrade: %v", err)
	}
	next := others(c, li)[0]
	if err := leader.TransferLeadership(ctx, c.Node(next).Self().ID); err != nil {
		t.Fatal(err)
	}
	leader = c.Node(c.WaitLeaderAmong([]int{next}))
	settle(t, c, leader)
	if got := queueMaxReserved(leader, "declared"); got != 1 {
		t.Fatalf("after a leader change with the same file: max_reserved %d, want the runtime 1", got)
	}
}

func queuePriority(n *cluster.Node, name string) uint32 {
	var got uint32
	_ = n.FSM().Read(func(e *engine.Engine) error {
		for _, q := range e.Config().Queues {
			if q.Name == name && q.DefaultPriority != nil {
				got = *q.DefaultPriority
			}
		}
		return nil
	})
	return got
}
