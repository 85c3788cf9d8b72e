package cluster_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/sepp-io/sepp/cluster"
	"github.com/sepp-io/sepp/cluster/clustertest"
)

// TestReadiness: the leader and a caught-up follower are ready; a node cut
// off from the others, which loses its leader and campaigns, is not, and
// says why; once healed it is ready again.
func TestReadiness(t *testing.T) {
	c := clustertest.New(t, 3, clustertest.WithInmemTransport())
	li := c.WaitLeader()
	fi := (li + 1) % 3
	leader, follower := c.Node(li), c.Node(fi)
	enqueueN(t, leader, 20, 4)
	const maxLag = 1000
	clustertest.WaitFor(t, 10*time.Second, "leader and follower ready", func() bool {
		return leader.Readiness(maxLag).Ready && follower.Readiness(maxLag).Ready
	})
	if r := follower.Readiness(maxLag); r.Leader != leader.Self().ID || r.State != "Follower" || r.Reason != "ready" {
		t.Errorf("follower readiness = %+v, want ready following %s", r, leader.Self().ID)
	}

	c.Partition(fi)
	var r cluster.Readiness
	clustertest.WaitFor(t, 15*time.Second, "cut-off follower becomes a candidate without a leader", func() bool {
		r = follower.Readiness(maxLag)
		return r.State == "Candidate"
	})
	if r.Ready || r.Leader != "" || !strings.Contains(r.Reason, "no leader") {
		t.Errorf("candidate readiness = %+v, want not ready for lack of a leader", r)
	}
	c.Heal()
	clustertest.WaitFor(t, 15*time.Second, "healed node ready again", func() bool {
		return c.Node(fi).Readiness(maxLag).Ready
	})
}

// TestStatus_FollowerShowsLeaderHealthy: a follower's own view of the
// cluster shows the leader healthy (it hears from it), not false.
func TestStatus_FollowerShowsLeaderHealthy(t *testing.T) {
	c := clustertest.New(t, 3)
	li := c.WaitLeader()
	follower := c.Node((li + 1) % 3)
	leaderID := c.Node(li).Self().ID
	var last cluster.Status
	clustertest.WaitFor(t, 10*time.Second, "follower's status shows the leader healthy", func() bool {
		st, err := follower.Status(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		last = st
		for _, m := range st.Members {
			if m.ID == leaderID {
				return m.Leader && m.Healthy && m.LastContact != ""
			}
		}
		return false
	})
	for _, m := range last.Members {
		if m.ID == follower.Self().ID && !m.Healthy {
			t.Errorf("follower shows itself unhealthy: %+v", m)
		}
	}
}
