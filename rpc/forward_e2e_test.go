package rpc_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/sepp-io/sepp/client"
	"github.com/sepp-io/sepp/cluster/clustertest"
	seppv1 "github.com/sepp-io/sepp/proto/sepp/v1"
	"github.com/sepp-io/sepp/rpc"
	"github.com/sepp-io/sepp/rpc/rpctest"
)

// metadataLog records the metadata of the calls a server received.
type metadataLog struct {
	mu  sync.Mutex
	mds []metadata.MD
}

func (l *metadataLog) intercept(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	md, _ := metadata.FromIncomingContext(ctx)
	l.mu.Lock()
	l.mds = append(l.mds, md.Copy())
	l.mu.Unlock()
	return handler(ctx, req)
}

func (l *metadataLog) withValue(key, value string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, md := range l.mds {
		for _, v := range md.Get(key) {
			if v == value {
				n++
			}
		}
	}
	return n
}

// TestFollowerForwardsToLeader: with a Forwarder, a follower serves writes
// and reads by sending them to the leader with the caller's metadata; a
// long-poll reserve and an already-forwarded call are not forwarded (the
// caller gets the redirect).
func TestFollowerForwardsToLeader(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a three-node cluster")
	}
	const n = 3
	received := make([]*metadataLog, n)
	nodes := rpctest.ServeCluster(t, n, func(i int) rpc.Options {
		received[i] = &metadataLog{}
		fwd := rpc.NewForwarder(fmt.Sprintf("n%d", i), grpc.WithTransportCredentials(insecure.NewCredentials()))
		t.Cleanup(func() { _ = fwd.Close() }) // after the servers stop
		return rpc.Options{
			MaxReserveWait:    200 * time.Millisecond,
			Forwarder:         fwd,
			UnaryInterceptors: []grpc.UnaryServerInterceptor{received[i].intercept},
		}
	})
	addrs := nodes.Addrs()
	leader := nodes.WaitLeader()
	follower := (leader + 1) % n
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cc, err := grpc.NewClient(addrs[follower], grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	qc := seppv1.NewQueueServiceClient(cc)
	ac := seppv1.NewAdminServiceClient(cc)
	callCtx := metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer caller-token")

	// The follower learns the leader's gRPC address from the replicated
	// metadata a moment after the election: until then it has nowhere to
	// forward to and answers Unavailable.
	var jobID uint64
	clustertest.WaitFor(t, 10*time.Second, "an enqueue through the follower", func() bool {
		res, err := qc.Enqueue(callCtx, &seppv1.EnqueueRequest{Queue: "fq", JobType: "t", Payload: []byte("via follower")})
		if err != nil {
			if status.Code(err) != codes.Unavailable {
				t.Fatalf("enqueue through the follower: %v", err)
			}
			return false
		}
		jobID = res.GetJobId()
		return true
	})
	if got := received[leader].withValue(rpc.ForwardedFromHeader, fmt.Sprintf("n%d", follower)); got == 0 {
		t.Fatal("the leader received no call marked as forwarded by the follower")
	}
	if got := received[leader].withValue("authorization", "Bearer caller-token"); got == 0 {
		t.Fatal("the caller's authorization did not reach the leader")
	}

	// Reads that need the leader and the rest of the lifecycle work too.
	job, err := ac.GetJob(callCtx, &seppv1.GetJobRequest{JobId: jobID})
	if err != nil || string(job.GetJob().GetPayload()) != "via follower" {
		t.Fatalf("get job through the follower: %v, %v", job, err)
	}
	res, err := qc.Reserve(callCtx, &seppv1.ReserveRequest{Queue: "fq", WorkerId: "w", Max: 1})
	if err != nil || len(res.GetJobs()) != 1 || res.GetJobs()[0].GetCtx().GetJobId() != jobID {
		t.Fatalf("reserve through the follower: %v, %v", res, err)
	}
	if _, err := qc.Ack(callCtx, &seppv1.AckRequest{Ctx: res.GetJobs()[0].GetCtx()}); err != nil {
		t.Fatalf("ack through the follower: %v", err)
	}

	// Not forwarded: a long poll, and a call that already was forwarded.
	for _, tc := range []struct {
		name string
		call func() error
	}{
		{"long-poll reserve", func() error {
			_, err := qc.Reserve(callCtx, &seppv1.ReserveRequest{Queue: "fq", WorkerId: "w", Max: 1, Wait: durationpb.New(100 * time.Millisecond)})
			return err
		}},
		{"already forwarded", func() error {
			_, err := qc.Enqueue(metadata.AppendToOutgoingContext(ctx, rpc.ForwardedFromHeader, "elsewhere"), &seppv1.EnqueueRequest{Queue: "fq", JobType: "t"})
			return err
		}},
	} {
		err := tc.call()
		st := status.Convert(err)
		var named string
		for _, d := range st.Details() {
			if nl, ok := d.(*seppv1.NotLeader); ok {
				named = nl.GetLeaderGrpcAddr()
			}
		}
		if st.Code() != codes.Unavailable || named != addrs[leader] {
			t.Fatalf("%s through the follower: %v, want Unavailable naming the leader %s", tc.name, err, addrs[leader])
		}
	}
	// The forwarded answer names the leader: the Go client, given only the
	// follower's address, sends its next calls to the leader directly.
	cli, err := client.New(ctx, []string{addrs[follower]})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	if _, err := cli.Enqueue(ctx, client.NewEnqueueRequest("fq", "t")); err != nil {
		t.Fatalf("client enqueue through the follower: %v", err)
	}
	if got := cli.Leader(); got != addrs[leader] {
		t.Fatalf("client believes %q leads after a forwarded call, want the leader %q", got, addrs[leader])
	}

	// Bad input is still refused with its own code.
	if _, err := qc.Enqueue(callCtx, &seppv1.EnqueueRequest{Queue: "", JobType: "t"}); status.Code(err) != codes.InvalidArgument {
		t.Fatalf("invalid enqueue through the follower: %v, want InvalidArgument", err)
	}
	nodes.RequireSameDigest()
}
