package rpc_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/sepp-io/sepp/cluster"
	"github.com/sepp-io/sepp/cluster/clustertest"
	seppv1 "github.com/sepp-io/sepp/proto/sepp/v1"
	"github.com/sepp-io/sepp/rpc/rpctest"
)

// TestWaitJob_LeaderChange: a wait answered on one leader is answered the
// same on the next (the outcome is replicated state); a wait under way
// when leadership moves ends with NotLeader, and the retry on the new
// leader gets the outcome.
func TestWaitJob_LeaderChange(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a three-node cluster")
	}
	const n = 3
	nodes := rpctest.ServeCluster(t, n, nil, clustertest.WithConfig(func(_ int, cfg *cluster.Config) {
		cfg.Engine.Limits.DeadLetterRetention = time.Hour
	}))
	li := nodes.WaitLeader()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	lq, _ := dialAPI(t, nodes.Addrs()[li])

	settled, err := lq.Enqueue(ctx, &seppv1.EnqueueRequest{Queue: "q", JobType: "t"})
	if err != nil {
		t.Fatal(err)
	}
	pending, err := lq.Enqueue(ctx, &seppv1.EnqueueRequest{Queue: "q", JobType: "t"})
	if err != nil {
		t.Fatal(err)
	}
	r, err := lq.Reserve(ctx, &seppv1.ReserveRequest{Queue: "q", WorkerId: "w", Max: 1})
	if err != nil || len(r.GetJobs()) != 1 || r.GetJobs()[0].GetCtx().GetJobId() != settled.GetJobId() {
		t.Fatalf("reserve: %v, %v", r, err)
	}
	if _, err := lq.Nack(ctx, &seppv1.NackRequest{Ctx: r.GetJobs()[0].GetCtx(), Directive: directiveDeadLetter(), Reason: "bad"}); err != nil {
		t.Fatal(err)
	}
	before, err := lq.WaitJob(ctx, &seppv1.WaitJobRequest{JobId: settled.GetJobId()})
	if err != nil || !before.GetTerminal() || before.GetCause() != seppv1.DeadLetterCause_DEAD_LETTER_CAUSE_REJECTED {
		t.Fatalf("wait on the first leader: %v, %v; want terminal, cause REJECTED", before, err)
	}

	// A wait on the pending job is under way when leadership moves.
	waited := make(chan error, 1)
	go func() {
		_, err := lq.WaitJob(ctx, &seppv1.WaitJobRequest{JobId: pending.GetJobId(), TimeoutMs: 50000})
		waited <- err
	}()
	time.Sleep(100 * time.Millisecond) // let the wait start (an answer before it would fail the test below)
	f := (li + 1) % n
	if err := nodes.Node(li).TransferLeadership(ctx, nodes.Node(f).Self().ID); err != nil {
		t.Fatal(err)
	}
	clustertest.WaitFor(t, 10*time.Second, "n"+strconv.Itoa(f)+" to lead", func() bool { return nodes.Node(f).IsLeader() })
	select {
	case err := <-waited:
		if st := status.Convert(err); st.Code() != codes.Unavailable {
			t.Fatalf("the wait under way on the deposed leader: %v, want Unavailable (NotLeader)", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the wait on the deposed leader did not end when it lost leadership")
	}

	fq, _ := dialAPI(t, nodes.Addrs()[f])
	var after *seppv1.WaitJobResponse
	clustertest.WaitFor(t, 10*time.Second, "the new leader to answer", func() bool {
		after, err = fq.WaitJob(ctx, &seppv1.WaitJobRequest{JobId: settled.GetJobId()})
		return err == nil
	})
	if !proto.Equal(before, after) {
		t.Fatalf("the new leader answers\n%v\nthe old one answered\n%v", after, before)
	}

	// The retried wait on the pending job is answered by the new leader.
	retried := make(chan *seppv1.WaitJobResponse, 1)
	go func() {
		out, err := fq.WaitJob(ctx, &seppv1.WaitJobRequest{JobId: pending.GetJobId(), TimeoutMs: 50000})
		if err != nil {
			t.Errorf("retried wait: %v", err)
		}
		retried <- out
	}()
	r, err = fq.Reserve(ctx, &seppv1.ReserveRequest{Queue: "q", WorkerId: "w", Max: 1})
	if err != nil || len(r.GetJobs()) != 1 {
		t.Fatalf("reserve on the new leader: %v, %v", r, err)
	}
	if _, err := fq.Nack(ctx, &seppv1.NackRequest{Ctx: r.GetJobs()[0].GetCtx(), Directive: directiveDeadLetter()}); err != nil {
		t.Fatal(err)
	}
	select {
	case out := <-retried:
		if !out.GetTerminal() || out.GetState() != seppv1.JobState_JOB_STATE_DEAD {
			t.Fatalf("retried wait = %v, want terminal DEAD", out)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the retried wait did not wake when the job died")
	}
	nodes.RequireSameDigest()
}
