package rpc_test

import (
	"context"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/sepp-io/sepp/cluster/clustertest"
	seppv1 "github.com/sepp-io/sepp/proto/sepp/v1"
	"github.com/sepp-io/sepp/rpc"
	"github.com/sepp-io/sepp/rpc/rpctest"
)

// TestThreeNodeCluster_ThroughGRPC runs the API over three real Raft nodes
// on loopback: a follower refuses writes with Unavailable naming the
// leader's gRPC address, the leader serves the whole job lifecycle, and
// every replica ends with the same state.
func TestThreeNodeCluster_ThroughGRPC(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a three-node cluster")
	}
	const n = 3
	nodes := rpctest.ServeCluster(t, n, func(int) rpc.Options { return rpc.Options{MaxReserveWait: 200 * time.Millisecond} })
	addrs := nodes.Addrs()
	leader := nodes.WaitLeader()
	follower := (leader + 1) % n
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	dial := func(addr string) seppv1.QueueServiceClient {
		cc, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cc.Close() })
		return seppv1.NewQueueServiceClient(cc)
	}

	// The follower answers Unavailable with the leader's address. It may
	// not know the leader's address for a moment after the election, so
	// wait for the answer that names it.
	fc := dial(addrs[follower])
	var hint *seppv1.NotLeader
	clustertest.WaitFor(t, 10*time.Second, "follower names the leader", func() bool {
		_, err := fc.Enqueue(ctx, &seppv1.EnqueueRequest{Queue: "q", JobType: "t"})
		st := status.Convert(err)
		if st.Code() != codes.Unavailable {
			t.Fatalf("follower enqueue: %v, want Unavailable", err)
		}
		for _, d := range st.Details() {
			if nl, ok := d.(*seppv1.NotLeader); ok && nl.GetLeaderGrpcAddr() != "" {
				hint = nl
				return true
			}
		}
		return false
	})
	if hint.GetLeaderGrpcAddr() != addrs[leader] {
		t.Fatalf("follower named %q as the leader's address, want %q", hint.GetLeaderGrpcAddr(), addrs[leader])
	}

	// The leader serves enqueue -> reserve -> nack -> reserve -> ack.
	lc := dial(addrs[leader])
	for i := 0; i < 20; i++ {
		p := uint32(i % 10)
		if _, err := lc.Enqueue(ctx, &seppv1.EnqueueRequest{Queue: "q", JobType: "t", Priority: &p, Payload: []byte{byte(i)}}); err != nil {
			t.Fatalf("enqueue %d: %v", i, err)
		}
	}
	res, err := lc.Reserve(ctx, &seppv1.ReserveRequest{Queue: "q", WorkerId: "w", Max: 5})
	if err != nil || len(res.GetJobs()) != 5 {
		t.Fatalf("reserve: %v, %d jobs", err, len(res.GetJobs()))
	}
	// spec: PRI-4 — highest priority first across the cluster too.
	if got := res.GetJobs()[0].GetJob().GetPriority(); got != 9 {
		t.Fatalf("first reserved priority %d, want 9", got)
	}
	first := res.GetJobs()[0].GetCtx()
	if _, err := lc.Nack(ctx, &seppv1.NackRequest{Ctx: first, Directive: &seppv1.RetryDirective{Directive: &seppv1.RetryDirective_Default{}}, Reason: "boom"}); err != nil {
		t.Fatalf("nack: %v", err)
	}
	// A stale lease is FailedPrecondition on the real cluster as well.
	if _, err := lc.Ack(ctx, &seppv1.AckRequest{Ctx: first}); status.Code(err) != codes.FailedPrecondition {
		t.Fatalf("ack of a nacked delivery: %v, want FailedPrecondition", err)
	}
	for _, j := range res.GetJobs()[1:] {
		if _, err := lc.Ack(ctx, &seppv1.AckRequest{Ctx: j.GetCtx()}); err != nil {
			t.Fatalf("ack: %v", err)
		}
	}
	again, err := lc.Reserve(ctx, &seppv1.ReserveRequest{Queue: "q", WorkerId: "w", Max: 1})
	if err != nil || len(again.GetJobs()) != 1 {
		t.Fatalf("reserve again: %v", err)
	}
	// spec: ATT-1 — the retried job comes back first (its priority and
	// original enqueue order) on attempt 2.
	if c := again.GetJobs()[0].GetCtx(); c.GetJobId() != first.GetJobId() || c.GetAttempt() != 2 {
		t.Fatalf("redelivery: job %d attempt %d, want job %d attempt 2", c.GetJobId(), c.GetAttempt(), first.GetJobId())
	}
	nodes.RequireSameDigest()

	// Every node reports its state digest over the API; at equal indexes
	// the digests are equal.
	digests := map[uint64]map[string]bool{}
	clustertest.WaitFor(t, 10*time.Second, "replicas at one index", func() bool {
		digests = map[uint64]map[string]bool{}
		for _, a := range addrs {
			cc, err := grpc.NewClient(a, grpc.WithTransportCredentials(insecure.NewCredentials()))
			if err != nil {
				t.Fatal(err)
			}
			st, err := seppv1.NewClusterServiceClient(cc).Status(ctx, &seppv1.StatusRequest{IncludeDigest: true})
			cc.Close()
			if err != nil {
				t.Fatalf("status of %s: %v", a, err)
			}
			if len(st.GetStateDigest()) != 64 {
				t.Fatalf("state digest %q is not 32 bytes of hex", st.GetStateDigest())
			}
			if digests[st.GetDigestIndex()] == nil {
				digests[st.GetDigestIndex()] = map[string]bool{}
			}
			digests[st.GetDigestIndex()][st.GetStateDigest()] = true
		}
		return len(digests) == 1
	})
	for idx, ds := range digests {
		if len(ds) != 1 {
			t.Fatalf("replicas at index %d disagree: %v", idx, ds)
		}
	}
}
