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

// A rolling upgrade to command version 20 (results): while a member
// applies only 19, an ack carrying a result is refused before anything is
// proposed (ErrResultNotKept, the lease still held: the plain ack then
// works), a queue cannot be given a completed_retention, and the file's
// retention waits. Once every member applies 20, the file's retention
// arrives, an ack with a result keeps the job, and every replica answers
// GetJob with the result.
func TestResults_RollingUpgrade(t *testing.T) {
	var peers atomic.Uint32
	peers.Store(fsm.CommandVersionSnapshotPayloads)
	c := clustertest.New(t, 3, clustertest.WithConfig(func(_ int, cfg *cluster.Config) {
		cfg.Engine.Queues = []engine.QueueConfig{{Name: "declared", CompletedRetention: time.Hour}}
		cfg.PeerCommandVersion = func(context.Context, cluster.NodeInfo) (uint32, error) { return peers.Load(), nil }
	}))
	ctx := context.Background()
	leader := c.Node(c.WaitLeader())
	clustertest.WaitFor(t, 10*time.Second, "the file's queue", func() bool { return len(declarations(leader)) == 1 })
	if got := retentionOn(leader, "declared"); got != 0 {
		t.Fatalf("the file's completed_retention %v was proposed while a member applies 19", got)
	}
	_, err := leader.Propose(ctx, engine.CreateQueueOp{Config: engine.QueueConfig{Name: "kept", CompletedRetention: time.Hour}})
	if !errors.Is(err, cluster.ErrUpgradeInProgress) || !strings.Contains(err.Error(), "command version 20 (results)") {
		t.Fatalf("a create with completed_retention during the upgrade: %v, want ErrUpgradeInProgress naming command version 20 (results)", err)
	}

	ref := enqueueReserve(t, leader, "declared")
	if _, err := leader.Propose(ctx, engine.AckOp{Ref: ref, Result: []byte("42")}); !errors.Is(err, cluster.ErrResultNotKept) {
		t.Fatalf("an ack with a result during the upgrade: %v, want ErrResultNotKept", err)
	}
	if _, err := leader.Propose(ctx, engine.AckOp{Ref: ref}); err != nil {
		t.Fatalf("the plain ack after the refusal (the lease must still hold): %v", err)
	}

	peers.Store(fsm.CommandVersion)
	clustertest.WaitFor(t, 20*time.Second, "the file's retention once every member applies 20", func() bool {
		return retentionOn(leader, "declared") == time.Hour
	})
	ref = enqueueReserve(t, leader, "declared")
	if _, err := leader.Propose(ctx, engine.AckOp{Ref: ref, Result: []byte("42")}); err != nil {
		t.Fatalf("an ack with a result after the upgrade: %v", err)
	}
	settle(t, c, leader)
	for i := range 3 {
		var job engine.Job
		if err := c.Node(i).FSM().Read(func(e *engine.Engine) error {
			var err error
			job, err = e.GetJob(ref.JobID)
			return err
		}); err != nil {
			t.Fatalf("node %d: GetJob of the completed job: %v", i, err)
		}
		if job.State != engine.StateCompleted || job.Completed == nil || string(job.Completed.Result) != "42" {
			t.Fatalf("node %d: %+v, want completed with the result", i, job)
		}
	}
}

func retentionOn(n *cluster.Node, name string) time.Duration {
	var got time.Duration
	_ = n.FSM().Read(func(e *engine.Engine) error {
		for _, q := range e.Config().Queues {
			if q.Name == name {
				got = q.CompletedRetention
			}
		}
		return nil
	})
	return got
}

// enqueueReserve enqueues one job on queue through n and reserves it.
func enqueueReserve(t *testing.T, n *cluster.Node, queue string) engine.LeaseRef {
	t.Helper()
	ctx := context.Background()
	if _, err := cluster.Do(ctx, n, engine.EnqueueOp{Params: engine.EnqueueParams{Queue: queue, JobType: "t"}}); err != nil {
		t.Fatal(err)
	}
	ds, err := cluster.Do(ctx, n, engine.ReserveOp{Params: engine.ReserveParams{Queue: queue, WorkerID: "w", N: 1, Lease: time.Minute}})
	if err != nil || len(ds) != 1 {
		t.Fatalf("reserve: %v, %v", ds, err)
	}
	return engine.LeaseRef{JobID: ds[0].Job.ID, LeaseToken: ds[0].LeaseToken}
}

// TestResults_SurviveSnapshotAndRestart: completed jobs and their results
// are in the snapshot (format 3 once every member applies 20) and in the
// replayed log: every node restarted from both still answers them, and
// the replicas agree.
func TestResults_SurviveSnapshotAndRestart(t *testing.T) {
	c := clustertest.New(t, 3, clustertest.WithConfig(func(_ int, cfg *cluster.Config) {
		cfg.PeerCommandVersion = func(context.Context, cluster.NodeInfo) (uint32, error) { return fsm.CommandVersion, nil }
	}))
	leader := c.Node(c.WaitLeader())
	clustertest.WaitFor(t, 10*time.Second, "the members' versions recorded", func() bool {
		n := 0
		for _, m := range leader.FSM().Nodes() {
			if m.AppliesCommandVersion(fsm.CommandVersionResults) {
				n++
			}
		}
		return n == 3
	})
	ctx := context.Background()
	if _, err := cluster.Do(ctx, leader, engine.CreateQueueOp{Config: engine.QueueConfig{Name: "kept", CompletedRetention: time.Hour}}); err != nil {
		t.Fatal(err)
	}
	first := enqueueReserve(t, leader, "kept")
	if _, err := leader.Propose(ctx, engine.AckOp{Ref: first, Result: []byte("before the snapshot")}); err != nil {
		t.Fatal(err)
	}
	if err := leader.Snapshot(); err != nil {
		t.Fatal(err)
	}
	second := enqueueReserve(t, leader, "kept")
	if _, err := leader.Propose(ctx, engine.AckOp{Ref: second, Result: []byte("in the log only")}); err != nil {
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
	for id, want := range map[engine.JobID]string{first.JobID: "before the snapshot", second.JobID: "in the log only"} {
		var job engine.Job
		if err := n.Read(ctx, false, func(e engine.View) error {
			var err error
			job, err = e.GetJob(id)
			return err
		}); err != nil {
			t.Fatalf("job %d after restart: %v", id, err)
		}
		if job.State != engine.StateCompleted || job.Completed == nil || string(job.Completed.Result) != want {
			t.Fatalf("job %d after restart: %+v, want completed with %q", id, job, want)
		}
	}
	c.RequireSameDigest()
}

// TestResults_NewClusterReadyWithTheFilesRetention: a new cluster's first
// leader learns which command versions its members apply before it is
// ready, so the first request it serves finds the file's settings that
// need a version in force: an ack with a result, the moment the leader is
// ready, keeps the job. The members answer slowly (150 ms), which a
// leader ready before its first round of questions would serve through.
func TestResults_NewClusterReadyWithTheFilesRetention(t *testing.T) {
	c := clustertest.New(t, 3, clustertest.WithConfig(func(_ int, cfg *cluster.Config) {
		cfg.Engine.Queues = []engine.QueueConfig{{Name: "declared", CompletedRetention: time.Hour}}
		cfg.PeerFacts = func(ctx context.Context, _ cluster.NodeInfo) (cluster.MemberFacts, error) {
			select {
			case <-time.After(150 * time.Millisecond):
			case <-ctx.Done():
				return cluster.MemberFacts{}, ctx.Err()
			}
			return factsOf(fsm.CommandVersion, 1<<30), nil
		}
	}))
	leader := c.Node(c.WaitLeader())
	var got time.Duration
	if err := leader.Read(context.Background(), false, func(e engine.View) error { // waits for the leader to be ready
		for _, q := range e.Config().Queues {
			if q.Name == "declared" {
				got = q.CompletedRetention
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if got != time.Hour {
		t.Fatalf("the ready leader's config keeps %v of completed jobs on the file's queue, want 1h", got)
	}
	ref := enqueueReserve(t, leader, "declared")
	if _, err := leader.Propose(context.Background(), engine.AckOp{Ref: ref, Result: []byte("42")}); err != nil {
		t.Fatalf("an ack with a result on a new cluster: %v", err)
	}
}
