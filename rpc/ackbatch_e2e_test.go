package rpc_test

import (
	"strings"
	"testing"

	"google.golang.org/grpc/codes"

	seppv1 "github.com/sepp-io/sepp/proto/sepp/v1"
	"github.com/sepp-io/sepp/rpc"
)

// AckBatch answers every item on its own, in request order: acked, lease
// lost, or an invalid ctx naming its position; the good items complete
// whatever happens to the others.
func TestQueueService_AckBatchPerItem(t *testing.T) {
	env := start(t, nil)
	for i := 0; i < 3; i++ {
		enqueue(t, env, &seppv1.EnqueueRequest{Queue: "ab"})
	}
	jobs := reserve(t, env, &seppv1.ReserveRequest{Queue: "ab", WorkerId: "w1", Max: 3})
	if len(jobs) != 3 {
		t.Fatalf("reserved %d jobs, want 3", len(jobs))
	}
	stale := &seppv1.JobContext{JobId: jobs[1].GetCtx().GetJobId(), LeaseToken: jobs[1].GetCtx().GetLeaseToken() + 1}
	resp, err := env.Queue.AckBatch(ctxT(t), &seppv1.AckBatchRequest{Ctxs: []*seppv1.JobContext{
		jobs[0].GetCtx(),
		stale,
		{JobId: jobs[2].GetCtx().GetJobId()}, // no lease token
		jobs[2].GetCtx(),
		jobs[0].GetCtx(), // acked a moment ago, earlier in this batch
	}})
	if err != nil {
		t.Fatalf("AckBatch: %v", err)
	}
	want := []codes.Code{codes.OK, codes.FailedPrecondition, codes.InvalidArgument, codes.OK, codes.NotFound}
	if len(resp.GetResults()) != len(want) {
		t.Fatalf("%d results, want %d", len(resp.GetResults()), len(want))
	}
	for i, r := range resp.GetResults() {
		got := codes.OK
		if r.GetError() != nil {
			got = codes.Code(r.GetError().GetCode())
		}
		// A second ack of an acked job: the job is gone (NotFound) or the
		// lease is (FailedPrecondition); both say "not yours any more".
		if i == 4 && got == codes.FailedPrecondition {
			got = codes.NotFound
		}
		if got != want[i] {
			t.Errorf("item %d: code %v (%q), want %v", i, got, r.GetError().GetMessage(), want[i])
		}
	}
	if msg := resp.GetResults()[2].GetError().GetMessage(); !strings.Contains(msg, "ctxs[2].lease_token") {
		t.Errorf("invalid item's message %q does not name ctxs[2].lease_token", msg)
	}
	// jobs[1] is still reserved: its own ctx acks it.
	if _, err := env.Queue.Ack(ctxT(t), &seppv1.AckRequest{Ctx: jobs[1].GetCtx()}); err != nil {
		t.Fatalf("Ack of the untouched delivery: %v", err)
	}
}

func TestQueueService_AckBatchSize(t *testing.T) {
	env := start(t, nil)
	_, err := env.Queue.AckBatch(ctxT(t), &seppv1.AckBatchRequest{})
	requireFieldViolation(t, requireCode(t, err, codes.InvalidArgument), "ctxs", "1..1000")

	tooMany := make([]*seppv1.JobContext, rpc.MaxAckBatch+1)
	for i := range tooMany {
		tooMany[i] = &seppv1.JobContext{JobId: uint64(i + 1), LeaseToken: 1}
	}
	_, err = env.Queue.AckBatch(ctxT(t), &seppv1.AckBatchRequest{Ctxs: tooMany})
	requireFieldViolation(t, requireCode(t, err, codes.InvalidArgument), "ctxs", "1..1000")
}
