package cluster_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sepp-io/sepp/cluster"
	"github.com/sepp-io/sepp/cluster/clustertest"
	"github.com/sepp-io/sepp/engine"
)

// appliedNow is node n's replicated clock: the latest now it applied.
func appliedNow(t *testing.T, n *cluster.Node) time.Time {
	t.Helper()
	var now time.Time
	if err := n.Read(context.Background(), true, func(e engine.View) error { now = e.Now(); return nil }); err != nil {
		t.Fatal(err)
	}
	return now
}

// TestClockFaults_SkewedLeaderHandsOver shifts the leader's wall clock (its
// monotonic clock runs on) an hour either way: the leader finds its clock
// off both members', says so in ClockStatus and Readiness, and hands the
// lead to a member whose clock agrees; no replica's time ever runs ahead
// of the real time by more than the bound, nor backwards, and the cluster
// keeps taking writes.
func TestClockFaults_SkewedLeaderHandsOver(t *testing.T) {
	const bound = 300 * time.Millisecond
	tests := []struct {
		name  string
		shift time.Duration
	}{
		{"LeaderJumpsAnHourAhead", time.Hour},
		{"LeaderJumpsAnHourBack", -time.Hour},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var shifts [3]atomic.Int64
			var cl atomic.Pointer[clustertest.Cluster]
			started := time.Now()
			c := clustertest.New(t, 3, clustertest.WithInmemTransport(), clustertest.WithConfig(func(i int, cfg *cluster.Config) {
				cfg.MaxClockSkew = bound
				cfg.Clock = func() time.Time { return time.Now().Round(0).Add(time.Duration(shifts[i].Load())) }
				cfg.Monotonic = func() time.Duration { return time.Since(started) }
				cfg.PeerFacts = func(_ context.Context, m cluster.NodeInfo) (cluster.MemberFacts, error) {
					c := cl.Load()
					var j int
					if _, err := fmt.Sscanf(m.ID, "n%d", &j); err != nil || c == nil || c.Node(j) == nil {
						return cluster.MemberFacts{}, errors.New("not reachable")
					}
					return c.Node(j).SelfFacts(), nil
				}
			}))
			cl.Store(c)
			leader := c.WaitLeader()
			old := c.Node(leader)
			clustertest.WaitFor(t, 10*time.Second, "the leader to measure both members' clocks", func() bool {
				return len(old.ClockStatus().Offsets) == 2
			})
			if _, err := cluster.Do(ctxT(t, 5*time.Second), old, engine.EnqueueOp{Params: job("clock", 0)}); err != nil {
				t.Fatal(err)
			}
			before := appliedNow(t, old)

			// Writes go on through the old leader while its clock is off,
			// until it hands over: none may stamp the shifted time.
			stopWrites := make(chan struct{})
			wrote := make(chan int)
			go func() {
				k := 0
				defer func() { wrote <- k }()
				for {
					select {
					case <-stopWrites:
						return
					default:
					}
					ctx, cancel := context.WithTimeout(context.Background(), time.Second)
					if _, err := cluster.Do(ctx, old, engine.EnqueueOp{Params: job("clock", 100+k)}); err == nil {
						k++
					}
					cancel()
				}
			}()
			shifts[leader].Store(int64(tt.shift))
			clustertest.WaitFor(t, 15*time.Second, "another node to lead", func() bool {
				for i := range 3 {
					if i != leader && c.Node(i).IsLeader() {
						return true
					}
				}
				return false
			})
			close(stopWrites)
			if k := <-wrote; k == 0 {
				t.Log("no write went through the old leader while its clock was off")
			}
			st := old.ClockStatus()
			if !st.Skewed || !strings.Contains(st.Reason, "max_clock_skew") {
				t.Fatalf("old leader's clock status %+v, want skewed with a reason", st)
			}
			if r := old.Readiness(64); r.Ready || !strings.Contains(r.Reason, "max_clock_skew") {
				t.Fatalf("old leader's readiness %+v, want not ready for its clock", r)
			}
			status, err := old.Status(ctxT(t, 5*time.Second))
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(status.ClockSkew, "max_clock_skew") || status.MaxClockSkew != bound {
				t.Fatalf("old leader's status says clock skew %q (bound %s), want the reason", status.ClockSkew, status.MaxClockSkew)
			}
			for _, m := range status.Members {
				if m.ID != old.Self().ID && (m.Clock == nil || (m.Clock.Offset+tt.shift).Abs() > bound) {
					t.Fatalf("old leader's status of %s: clock %+v, want an offset near %s", m.ID, m.Clock, -tt.shift)
				}
			}
			for i := range 3 {
				if i != leader && c.Node(i).ClockStatus().Skewed {
					t.Fatalf("node %d, whose clock is right, reports itself skewed: %+v", i, c.Node(i).ClockStatus())
				}
			}
			// The cluster keeps serving under the new leader, on the right time.
			nl := c.Node(c.WaitLeader())
			if _, err := cluster.Do(ctxT(t, 5*time.Second), nl, engine.EnqueueOp{Params: job("clock", 1)}); err != nil {
				t.Fatal(err)
			}
			for i := range 3 {
				now := appliedNow(t, c.Node(i))
				if real := time.Now(); now.After(real.Add(bound)) {
					t.Errorf("node %d applied now %v, ahead of the real time %v by more than %s", i, now, real, bound)
				}
				if now.Before(before) {
					t.Errorf("node %d applied now %v went back before %v", i, now, before)
				}
			}
			// The clock comes right: the node is no longer skewed.
			shifts[leader].Store(0)
			clustertest.WaitFor(t, 15*time.Second, "the old leader's clock to agree again", func() bool {
				return !old.ClockStatus().Skewed && old.Readiness(64).Ready
			})
			// Stop without handing over: a transfer to a member already
			// stopped would outlive the test on the in-memory transport.
			for i := range 3 {
				c.Kill(i)
			}
		})
	}
}
