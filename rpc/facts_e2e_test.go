package rpc_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/sepp-io/sepp/client"
	"github.com/sepp-io/sepp/cluster"
	"github.com/sepp-io/sepp/cluster/clustertest"
	seppv1 "github.com/sepp-io/sepp/proto/sepp/v1"
	"github.com/sepp-io/sepp/rpc/rpctest"
)

// askFacts is sepp serve's question, through each member's real gRPC
// GetMemberFacts.
func askFacts(ctx context.Context, m cluster.NodeInfo) (cluster.MemberFacts, error) {
	cc, err := grpc.NewClient(m.GRPCAddr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return cluster.MemberFacts{}, err
	}
	defer cc.Close()
	resp, err := seppv1.NewClusterServiceClient(cc).GetMemberFacts(ctx, &seppv1.GetMemberFactsRequest{})
	if err != nil {
		return cluster.MemberFacts{}, err
	}
	f := resp.GetFacts()
	return cluster.MemberFacts{BinaryVersion: f.GetBinaryVersion(), MinCommandVersion: f.GetMinCommandVersion(),
		MaxCommandVersion: f.GetMaxCommandVersion(), MemoryLimitBytes: f.GetMemoryLimitBytes(),
		MemoryLimitFrom: f.GetMemoryLimitFrom(), GOMAXPROCS: int(f.GetGomaxprocs()), Started: f.GetStartTime().AsTime()}, nil
}

// TestMemberFacts_StatusAndServerInfoShowEveryMember: the leader asks each
// member's GetMemberFacts over gRPC and records the answers; `sepp cluster
// status` (the client's ClusterStatus) and GetServerInfo show every
// member's facts, and the budget advertised is the share of the smallest
// member's memory limit.
func TestMemberFacts_StatusAndServerInfoShowEveryMember(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a three-node cluster")
	}
	const n = 3
	limitOf := func(i int) int64 { return int64(i+1) << 30 } // n0 is the smallest
	nodes := rpctest.ServeCluster(t, n, nil, clustertest.WithConfig(func(i int, cfg *cluster.Config) {
		cfg.Facts = cluster.MemberFacts{BinaryVersion: fmt.Sprintf("v-n%d", i), MemoryLimitBytes: limitOf(i),
			MemoryLimitFrom: "cgroup memory limit", GOMAXPROCS: i + 1, Started: time.Unix(1e9, 0)}
		cfg.MemoryShare = 0.25
		cfg.PeerFacts = askFacts
	}))
	addrs := nodes.Addrs()
	leader := nodes.WaitLeader()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := client.New(ctx, addrs)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	clustertest.WaitFor(t, 15*time.Second, "every member's facts in cluster status", func() bool {
		st, err := c.ClusterStatus(ctx)
		if err != nil || len(st.Members) != n {
			return false
		}
		for _, m := range st.Members {
			var i int
			if _, err := fmt.Sscanf(m.Node.ID, "n%d", &i); err != nil {
				t.Fatalf("member %q", m.Node.ID)
			}
			f := m.Facts
			if f == nil || f.BinaryVersion != fmt.Sprintf("v-n%d", i) || f.MemoryLimitBytes != limitOf(i) || f.GOMAXPROCS != i+1 || f.MaxCommandVersion < 2 {
				return false
			}
		}
		return true
	})
	cc, err := grpc.NewClient(addrs[leader], grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	q := seppv1.NewQueueServiceClient(cc)
	clustertest.WaitFor(t, 15*time.Second, "GetServerInfo with every member's facts and the smallest member's budget", func() bool {
		info, err := q.GetServerInfo(ctx, &seppv1.GetServerInfoRequest{})
		if err != nil {
			return false
		}
		return len(info.GetMembers()) == n && info.GetLimits().GetMaxMemoryBytes() == uint64(limitOf(0)/4)
	})
}
