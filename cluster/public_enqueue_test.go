package cluster_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/sepp-io/sepp/cluster"
	"github.com/sepp-io/sepp/cluster/clustertest"
	"github.com/sepp-io/sepp/engine"
	"github.com/sepp-io/sepp/fsm"
	cmdpb "github.com/sepp-io/sepp/proto/seppcmd/v1"
)

// TestPublicEnqueue_RollingUpgrade: while a member applies only command
// version 25, the leader writes enqueues in the log's older form
// (EnqueueParams), which that member reads; once every member applies
// fsm.CommandVersionPublicEnqueue it writes the producer's public
// EnqueueRequests, except for a deadline finer than the API's milliseconds,
// which only the older form states. Every replica ends with the same jobs.
func TestPublicEnqueue_RollingUpgrade(t *testing.T) {
	var peers atomic.Uint32
	peers.Store(fsm.CommandVersionPublicEnqueue - 1)
	recorded := &queueCommandLog{cmds: map[string][]*cmdpb.Command{}}
	c := clustertest.New(t, 3, clustertest.WithConfig(func(_ int, cfg *cluster.Config) {
		cfg.PeerCommandVersion = func(context.Context, cluster.NodeInfo) (uint32, error) { return peers.Load(), nil }
		cfg.LogStoreWrapper = func(s raft.LogStore) raft.LogStore { return &recordingStore{LogStore: s, log: recorded} }
	}))
	ctx := context.Background()
	leader := c.Node(c.WaitLeader())
	prio := uint32(7)
	enqueue := func(queue string, expiry *engine.ExpiryOpts) {
		t.Helper()
		p := engine.EnqueueParams{Queue: queue, JobType: "t", Payload: []byte("p"), Priority: &prio,
			ScheduledAt: time.Now().Add(time.Hour).Truncate(time.Microsecond), Custom: map[string]string{"k": "v"}, IdempotencyKey: queue + "-1", Expiry: expiry}
		if _, err := cluster.Do(ctx, leader, engine.EnqueueOp{Params: p}); err != nil {
			t.Fatalf("enqueue to %s: %v", queue, err)
		}
		p.IdempotencyKey = queue + "-2"
		res, err := cluster.Do(ctx, leader, engine.EnqueueBatchOp{Items: []engine.EnqueueParams{p, {Queue: queue, JobType: "u"}}})
		if err != nil || len(res) != 2 || res[0].Err != nil || res[1].Err != nil {
			t.Fatalf("enqueue a batch to %s: %+v, %v", queue, res, err)
		}
	}
	requireForm := func(queue string, public bool) {
		t.Helper()
		// Two commands, each stored by three log stores: the third may
		// store them after the enqueue returned (a majority commits).
		clustertest.WaitFor(t, 10*time.Second, queue+"'s enqueue commands in every log store", func() bool {
			return len(recorded.of(enqueuedTo+queue)) >= 2*3
		})
		for _, cmd := range recorded.of(enqueuedTo + queue) {
			isPublic := cmd.GetJobEnqueue().GetRequest() != nil || len(cmd.GetJobEnqueueBatch().GetRequests()) > 0
			hasOld := cmd.GetJobEnqueue().GetParams() != nil || len(cmd.GetJobEnqueueBatch().GetItems()) > 0
			if isPublic != public || hasOld == public || (cmd.GetVersion() >= fsm.CommandVersionPublicEnqueue) != public {
				t.Fatalf("%s: command of version %d, public form %v, older form %v; want public %v", queue, cmd.GetVersion(), isPublic, hasOld, public)
			}
		}
	}

	enqueue("during", nil)
	requireForm("during", false)

	peers.Store(fsm.CommandVersion)
	clustertest.WaitFor(t, 20*time.Second, "every member applies the public enqueue", func() bool {
		n := 0
		for _, m := range leader.FSM().Nodes() {
			if m.AppliesCommandVersion(fsm.CommandVersionPublicEnqueue) {
				n++
			}
		}
		return n == 3
	})
	enqueue("after", &engine.ExpiryOpts{TTL: 2 * time.Hour})
	requireForm("after", true)
	enqueue("finer", &engine.ExpiryOpts{TTL: 2*time.Hour + time.Microsecond})
	requireForm("finer", false)

	settle(t, c, leader)
	for i := range 3 {
		for _, q := range []string{"during", "after", "finer"} {
			var st engine.QueueStats
			err := c.Node(i).FSM().Read(func(e *engine.Engine) error {
				var err error
				st, err = e.QueueStats(time.Now(), q)
				return err
			})
			if err != nil || st.Scheduled != 2 || st.Ready != 1 {
				t.Fatalf("node %d, queue %s: %+v, %v; want 2 scheduled and 1 ready", i, q, st, err)
			}
		}
	}
}
