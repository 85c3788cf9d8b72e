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

// A schedule ticking every second fires each tick at most once across a
// leader kill, and once per tick that some leader was there for: the jobs,
// counted by their tick field, are one per tick; the schedule's fired count
// equals the jobs; the new leader keeps firing; replicas end equal.
func TestCluster_ScheduleFiresEachTickOnceAcrossFailover(t *testing.T) {
	c := clustertest.New(t, 3, clustertest.WithConfig(func(_ int, cfg *cluster.Config) {
		cfg.PeerCommandVersion = func(context.Context, cluster.NodeInfo) (uint32, error) { return fsm.CommandVersion, nil }
	}))
	li := c.WaitLeader()
	leader := c.Node(li)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	p := engine.ScheduleParams{
		Name: "every-second", Kind: engine.ScheduleInterval, Interval: time.Second,
		Template: engine.JobTemplate{Queue: "q", JobType: "tick"},
		Overlap:  engine.OverlapAllow, CatchUp: engine.CatchUpOnce,
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
	waitFired(t, leader, 3)
	c.Kill(li)
	nl := c.Node(c.WaitLeaderAmong(others(c, li)))
	before := fired(t, nl)
	waitFired(t, nl, before+3)
	c.Restart(li)
	// Leadership may move again around the restart (two candidates after
	// the kill, one deposed by the other's term): pause through whichever
	// node leads when asked.
	for deadline := time.Now().Add(20 * time.Second); ; {
		cur := c.Node(c.WaitLeader())
		_, err := cur.Propose(ctx, engine.SetSchedulePausedOp{Name: p.Name, Paused: true})
		if err == nil {
			nl = cur
			break
		}
		if !errors.Is(err, cluster.ErrNotLeader) && !errors.Is(err, cluster.ErrNoLeader) || time.Now().After(deadline) {
			t.Fatal(err)
		}
	}
	c.RequireSameDigest()

	s, err := nl.Schedule(p.Name)
	if err != nil {
		t.Fatal(err)
	}
	byTick := map[string]int{}
	if err := nl.FSM().Read(func(e *engine.Engine) error {
		jobs, err := e.ListJobs("q", engine.StateReady, engine.Page{Limit: 1000})
		for _, j := range jobs {
			byTick[j.Custom[engine.CustomScheduleTick]]++
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
	for tick, n := range byTick {
		if n != 1 {
			t.Errorf("tick %s made %d jobs", tick, n)
		}
	}
	if uint64(len(byTick)) != s.Fired {
		t.Fatalf("%d distinct ticks in jobs, the schedule says it fired %d", len(byTick), s.Fired)
	}
}

func fired(t *testing.T, n *cluster.Node) uint64 {
	t.Helper()
	s, err := n.Schedule("every-second")
	if err != nil {
		return 0
	}
	return s.Fired
}

func waitFired(t *testing.T, n *cluster.Node, atLeast uint64) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); fired(t, n) < atLeast; {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %d fires (have %d)", atLeast, fired(t, n))
		}
		time.Sleep(20 * time.Millisecond) // polling a condition with a deadline
	}
}

// During a rolling upgrade (a member applies only command version 6) the
// leader refuses schedule definitions with ErrSchedulesUnavailable, once it
// knows that member's version, and proposes no schedule command.
func TestCluster_SchedulesWaitForEveryMember(t *testing.T) {
	c := clustertest.New(t, 3, clustertest.WithConfig(func(_ int, cfg *cluster.Config) {
		cfg.PeerCommandVersion = func(context.Context, cluster.NodeInfo) (uint32, error) {
			return fsm.CommandVersionReserveLimits, nil
		}
	}))
	leader := c.Node(c.WaitLeader())
	for deadline := time.Now().Add(20 * time.Second); ; {
		known := 0
		for _, m := range leader.FSM().Nodes() {
			if m.MaxCommandVersion == fsm.CommandVersionReserveLimits {
				known++
			}
		}
		if known >= 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("timed out waiting for the leader to learn the members' versions")
		}
		time.Sleep(10 * time.Millisecond) // polling a condition with a deadline
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := leader.Propose(ctx, engine.CreateScheduleOp{Params: engine.ScheduleParams{
		Name: "s", Kind: engine.ScheduleInterval, Interval: time.Second, Template: engine.JobTemplate{Queue: "q", JobType: "t"},
	}})
	if !errors.Is(err, cluster.ErrSchedulesUnavailable) {
		t.Fatalf("upsert with a version 6 member: %v, want ErrSchedulesUnavailable", err)
	}
	if n := len(leader.Schedules()); n != 0 {
		t.Fatalf("%d schedules exist", n)
	}
}
