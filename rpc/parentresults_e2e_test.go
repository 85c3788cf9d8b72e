package rpc_test

import (
	"testing"

	seppv1 "github.com/sepp-io/sepp/proto/sepp/v1"
	"github.com/sepp-io/sepp/rpc"
	"github.com/sepp-io/sepp/rpc/rpctest"
)

// TestParentResults_Inline: a batch's callback reserved after its members
// ended carries their outcomes and the completed ones' kept results in the
// delivery and in GetJob; a result beyond the answer's bound (a quarter of
// max_message_bytes) is marked omitted, not sent; a member that died has
// none.
func TestParentResults_Inline(t *testing.T) {
	env := rpctest.Start(t, keptConfig(), rpc.Options{MaxMessageBytes: 4 << 10})
	run := seppv1.ParentFailurePolicy_PARENT_FAILURE_POLICY_RUN
	res, err := env.Queue.EnqueueBatch(ctxT(t), &seppv1.EnqueueBatchRequest{Jobs: []*seppv1.EnqueueRequest{
		{Queue: "kept", JobType: "small"},
		{Queue: "kept", JobType: "large"},
		{Queue: "kept", JobType: "dies"},
		{Queue: "cb", JobType: "callback", After: []uint32{0, 1, 2}, OnParentFailure: run},
	}})
	if err != nil {
		t.Fatal(err)
	}
	ids := make([]uint64, 4)
	for i, r := range res.GetResults() {
		ids[i] = r.GetEnqueued().GetJobId()
	}
	small := reserveOne(t, env, "kept")
	if _, err := env.Queue.Ack(ctxT(t), &seppv1.AckRequest{Ctx: small.GetCtx(), Result: []byte("small result")}); err != nil {
		t.Fatal(err)
	}
	large := reserveOne(t, env, "kept")
	big := make([]byte, 2<<10) // above a quarter of 4 KiB
	if _, err := env.Queue.Ack(ctxT(t), &seppv1.AckRequest{Ctx: large.GetCtx(), Result: big}); err != nil {
		t.Fatal(err)
	}
	dies := reserveOne(t, env, "kept")
	if _, err := env.Queue.Nack(ctxT(t), &seppv1.NackRequest{Ctx: dies.GetCtx(), Directive: directiveDeadLetter()}); err != nil {
		t.Fatal(err)
	}

	check := func(where string, parents []*seppv1.JobParent) {
		t.Helper()
		if len(parents) != 3 {
			t.Fatalf("%s: %d parents, want 3", where, len(parents))
		}
		if p := parents[0]; !p.GetResultKept() || string(p.GetResult()) != "small result" || p.GetResultOmitted() {
			t.Errorf("%s: the small parent %v, want its result inline", where, p)
		}
		if p := parents[1]; !p.GetResultKept() || len(p.GetResult()) != 0 || !p.GetResultOmitted() {
			t.Errorf("%s: the large parent %v, want kept and omitted", where, p)
		}
		if p := parents[2]; p.GetResultKept() || p.GetState() != seppv1.JobState_JOB_STATE_DEAD {
			t.Errorf("%s: the dead parent %v, want dead without a result", where, p)
		}
	}
	cb := reserveOne(t, env, "cb")
	if cb.GetJob().GetId() != ids[3] {
		t.Fatalf("reserved job %d, want the callback %d", cb.GetJob().GetId(), ids[3])
	}
	check("delivery", cb.GetJob().GetParents())
	got, err := env.Admin.GetJob(ctxT(t), &seppv1.GetJobRequest{JobId: ids[3]})
	if err != nil {
		t.Fatal(err)
	}
	check("GetJob", got.GetJob().GetParents())
}
