package cluster_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/sepp-io/sepp/cluster"
	"github.com/sepp-io/sepp/cluster/clustertest"
	"github.com/sepp-io/sepp/engine"
	"github.com/sepp-io/sepp/fsm"
)

// CreateScheduleOp refuses a name that exists (ErrAlreadyExists) and
// UpdateScheduleOp one that does not (ErrNotFound), on a real leader; an
// update keeps a paused schedule paused and its last fired tick.
func TestCluster_CreateAndUpdateSchedule(t *testing.T) {
	c := clustertest.New(t, 3, clustertest.WithConfig(func(_ int, cfg *cluster.Config) {
		cfg.PeerCommandVersion = func(context.Context, cluster.NodeInfo) (uint32, error) { return fsm.CommandVersion, nil }
	}))
	leader := c.Node(c.WaitLeader())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	p := engine.ScheduleParams{
		Name: "hourly", Kind: engine.ScheduleCron, Cron: "@hourly",
		Template: engine.JobTemplate{Queue: "q", JobType: "t"}, Paused: true,
	}
	for {
		_, err := leader.Propose(ctx, engine.CreateScheduleOp{Params: p})
		if err == nil {
			break
		}
		if !errors.Is(err, cluster.ErrSchedulesUnavailable) || ctx.Err() != nil {
			t.Fatal(err)
		}
		time.Sleep(10 * time.Millisecond) // until the leader knows every member's version
	}
	if _, err := leader.Propose(ctx, engine.CreateScheduleOp{Params: p}); !errors.Is(err, engine.ErrAlreadyExists) {
		t.Fatalf("second create: %v, want ErrAlreadyExists", err)
	}
	q := p
	q.Name = "nosuch"
	if _, err := leader.Propose(ctx, engine.UpdateScheduleOp{Name: q.Name, Update: func(engine.Schedule) (engine.ScheduleParams, error) { return q, nil }}); !errors.Is(err, engine.ErrNotFound) {
		t.Fatalf("update of an unknown schedule: %v, want ErrNotFound", err)
	}
	u := p
	u.Cron, u.Paused = "*/5 * * * *", false
	if _, err := leader.Propose(ctx, engine.UpdateScheduleOp{Name: u.Name, Update: func(engine.Schedule) (engine.ScheduleParams, error) { return u, nil }}); err != nil {
		t.Fatal(err)
	}
	s, err := leader.Schedule("hourly")
	if err != nil || s.Cron != "*/5 * * * *" || !s.Paused || !s.NextTick.IsZero() {
		t.Fatalf("after the update: %+v %v", s, err)
	}
	c.RequireSameDigest()
}
