package cluster_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/sepp-io/sepp/cluster"
	"github.com/sepp-io/sepp/cluster/clustertest"
	"github.com/sepp-io/sepp/engine"
	"github.com/sepp-io/sepp/fsm"
)

// A redrive of N records at a low rate, its leader killed mid-way: the new
// leader resumes from the replicated cursor and every selected record is
// replayed exactly once (a fresh replay, so a double would show as a second
// job of the same payload in the target queue).
func TestRedrive_LeaderKilledMidwayMovesEveryRecordExactlyOnce(t *testing.T) {
	const records = 40
	c := clustertest.New(t, 3, clustertest.WithConfig(func(_ int, cfg *cluster.Config) {
		cfg.Engine.Limits.DeadLetterRetention = time.Hour
		cfg.Engine.Queues = []engine.QueueConfig{{Name: "q"}, {Name: "replays"}}
		cfg.PeerCommandVersion = func(context.Context, cluster.NodeInfo) (uint32, error) { return fsm.CommandVersion, nil }
	}))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	li := c.WaitLeader()
	leader := c.Node(li)
	var ids []engine.JobID
	for i := range records {
		res, err := cluster.Do(ctx, leader, engine.EnqueueOp{Params: engine.EnqueueParams{Queue: "q", JobType: "t", Payload: fmt.Appendf(nil, "job-%02d", i)}})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, res.JobID)
	}
	items, err := cluster.Do(ctx, leader, engine.DeadLetterJobsOp{IDs: ids, Reason: "poison"})
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range items {
		if it.Err != nil {
			t.Fatal(it.Err)
		}
	}
	// A record outside the selection stays.
	other, err := cluster.Do(ctx, leader, engine.EnqueueOp{Params: engine.EnqueueParams{Queue: "q", JobType: "other", Payload: []byte("other")}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cluster.Do(ctx, leader, engine.DeadLetterJobsOp{IDs: []engine.JobID{other.JobID}, Reason: "poison"}); err != nil {
		t.Fatal(err)
	}

	p := engine.RedriveParams{Selection: engine.RedriveSelection{Queue: "q", JobType: "t"}, ToQueue: "replays", Fresh: true, Rate: 20, By: "alice"}
	if n, _, err := leader.RedriveDryRun(p, 0); err != nil || n != records {
		t.Fatalf("dry run: %d %v", n, err)
	}
	var task engine.RedriveTask
	clustertest.WaitFor(t, 10*time.Second, "every member known to apply the redrive commands", func() bool {
		task, err = cluster.Do(ctx, leader, engine.StartRedriveOp{Params: p})
		if err != nil && !errors.Is(err, cluster.ErrUpgradeInProgress) {
			t.Fatal(err)
		}
		return err == nil
	})
	var before engine.RedriveTask
	clustertest.WaitFor(t, 20*time.Second, "the redrive under way", func() bool {
		before, err = leader.GetRedrive(task.ID)
		return err == nil && before.Moved >= records/4
	})
	c.Kill(li)
	if before.State != engine.RedriveRunning || before.Moved >= records {
		t.Fatalf("the redrive was not mid-way when its leader was killed: %+v", before)
	}
	t.Logf("leader killed with %d of %d moved", before.Moved, records)
	li = c.WaitLeader()
	leader = c.Node(li)
	var done engine.RedriveTask
	clustertest.WaitFor(t, 30*time.Second, "the redrive done under the new leader", func() bool {
		done, err = leader.GetRedrive(task.ID)
		return err == nil && done.State == engine.RedriveDone
	})
	if done.Moved != records || done.Params.By != "alice" || done.EndedAt.IsZero() {
		t.Fatalf("audit record %+v", done)
	}
	err = leader.Read(ctx, false, func(e engine.View) error {
		jobs, err := e.ListJobs("replays", engine.StateReady, engine.Page{Limit: 1000})
		if err != nil {
			return err
		}
		seen := make(map[string]int)
		for _, j := range jobs {
			seen[string(j.Payload)]++
		}
		for i := range records {
			if k := fmt.Sprintf("job-%02d", i); seen[k] != 1 {
				return fmt.Errorf("%s replayed %d times", k, seen[k])
			}
		}
		if len(jobs) != records {
			return fmt.Errorf("%d jobs in replays, want %d", len(jobs), records)
		}
		dead, err := e.ListDeadLetters("q", engine.Page{})
		if err != nil {
			return err
		}
		if len(dead) != 1 || dead[0].Job.ID != other.JobID {
			return fmt.Errorf("%d records left in q, want only job %d", len(dead), other.JobID)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	c.RequireSameDigest()
}
