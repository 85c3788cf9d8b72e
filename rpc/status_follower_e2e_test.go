package rpc_test

import (
	"context"
	"testing"
	"time"

	"github.com/sepp-io/sepp/client"
	"github.com/sepp-io/sepp/cluster/clustertest"
	"github.com/sepp-io/sepp/rpc/rpctest"
)

// TestClusterStatus_WhicheverNodeAnswers: `sepp cluster status` (the
// client's ClusterStatus) given only a follower's address shows the
// cluster as the leader sees it, every member healthy; the follower's own
// view (ClusterStatusOf) shows the leader healthy, not false.
func TestClusterStatus_WhicheverNodeAnswers(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a three-node cluster")
	}
	const n = 3
	nodes := rpctest.ServeCluster(t, n, nil)
	addrs := nodes.Addrs()
	leader := nodes.WaitLeader()
	follower := (leader + 1) % n
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := client.New(ctx, []string{addrs[follower]})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	leaderID := nodes.Node(leader).Self().ID

	var last *client.ClusterStatus
	clustertest.WaitFor(t, 15*time.Second, "cluster status through a follower shows every member healthy", func() bool {
		st, err := c.ClusterStatus(ctx)
		if err != nil {
			t.Logf("cluster status: %v", err)
			return false
		}
		last = st
		healthy := 0
		for _, m := range st.Members {
			if m.Healthy {
				healthy++
			}
		}
		return st.State == "Leader" && st.Self.ID == leaderID && healthy == n
	})
	if len(last.Members) != n {
		t.Fatalf("members = %+v", last.Members)
	}
	clustertest.WaitFor(t, 15*time.Second, "the follower's own view shows the leader healthy", func() bool {
		st, err := c.ClusterStatusOf(ctx, addrs[follower])
		if err != nil {
			t.Fatalf("follower's own status: %v", err)
		}
		for _, m := range st.Members {
			if m.Node.ID == leaderID {
				return st.State == "Follower" && m.Leader && m.Healthy
			}
		}
		return false
	})
}
