package cluster_test

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sepp-io/sepp/cluster"
	"github.com/sepp-io/sepp/cluster/clustertest"
	"github.com/sepp-io/sepp/engine"
	"github.com/sepp-io/sepp/fsm"
)

// queueTagsOn is a queue's tags in n's replicated config.
func queueTagsOn(n *cluster.Node, name string) []engine.Tag {
	var got []engine.Tag
	_ = n.FSM().Read(func(e *engine.Engine) error {
		for _, q := range e.Config().Queues {
			if q.Name == name {
				got = q.Tags
			}
		}
		return nil
	})
	return got
}

// A rolling upgrade to command version 18: while a member applies only 17,
// creating a tagged queue, setting tags and dropping them are refused
// before anything is proposed, naming the version, and the file's tags
// wait (the file's queue is declared without them); other changes go on.
// Once every member applies 18, the file's tags arrive and the refused
// change goes through.
func TestQueueTags_RollingUpgrade(t *testing.T) {
	var peers atomic.Uint32
	peers.Store(fsm.CommandVersionTraceContext)
	fileTags := []engine.Tag{{Key: "from", Value: "file"}}
	c := clustertest.New(t, 3, clustertest.WithConfig(func(_ int, cfg *cluster.Config) {
		cfg.Engine.Queues = []engine.QueueConfig{{Name: "declared", Tags: fileTags}}
		cfg.PeerCommandVersion = func(context.Context, cluster.NodeInfo) (uint32, error) { return peers.Load(), nil }
	}))
	ctx := context.Background()
	leader := c.Node(c.WaitLeader())
	clustertest.WaitFor(t, 10*time.Second, "the file's queue", func() bool { return len(declarations(leader)) == 1 })
	if got := queueTagsOn(leader, "declared"); got != nil {
		t.Fatalf("the file's tags %v were proposed while a member applies 17", got)
	}
	tags := []engine.Tag{{Key: "env", Value: "prod"}}
	for _, op := range []engine.Op{
		engine.CreateQueueOp{Config: engine.QueueConfig{Name: "tagged", Tags: tags}},
		engine.UpdateQueueOp{Update: engine.QueueUpdate{Name: "declared", SetTags: true, Set: engine.QueueConfig{Tags: tags}}},
		engine.UpdateQueueOp{Update: engine.QueueUpdate{Name: "declared", Inherit: []string{"tags"}}},
	} {
		_, err := leader.Propose(ctx, op)
		if !errors.Is(err, cluster.ErrUpgradeInProgress) || !strings.Contains(err.Error(), "command version 18 (queue_tags)") {
			t.Fatalf("%T during the upgrade: %v, want ErrUpgradeInProgress naming command version 18 (queue_tags)", op, err)
		}
	}
	if _, err := cluster.Do(ctx, leader, engine.CreateQueueOp{Config: engine.QueueConfig{Name: "plain"}}); err != nil {
		t.Fatalf("a create without tags during the upgrade: %v", err)
	}

	peers.Store(fsm.CommandVersion)
	clustertest.WaitFor(t, 20*time.Second, "the file's tags once every member applies 18", func() bool {
		return reflect.DeepEqual(queueTagsOn(leader, "declared"), fileTags)
	})
	if _, err := cluster.Do(ctx, leader, engine.CreateQueueOp{Config: engine.QueueConfig{Name: "tagged", Tags: tags}}); err != nil {
		t.Fatalf("a tagged create after the upgrade: %v", err)
	}
	settle(t, c, leader)
	for i := range 3 {
		if got := queueTagsOn(c.Node(i), "tagged"); !reflect.DeepEqual(got, tags) {
			t.Fatalf("node %d: tags %v, want %v", i, got, tags)
		}
	}
}
