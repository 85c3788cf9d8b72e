package rpc_test

import (
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/sepp-io/sepp/engine"
	seppv1 "github.com/sepp-io/sepp/proto/sepp/v1"
)

// TestAck_FollowUps: an Ack's follow-ups are checked as Enqueue checks a
// request, a bad one InvalidArgument naming follow_ups[i].<field> and its
// limit, with nothing applied (the job still reserved, no job enqueued);
// more than max_batch_size is InvalidArgument naming follow_ups; a good
// ack answers each follow-up as Enqueue would, a key already held a
// duplicate; the retried ack finds its lease gone and enqueues nothing.
func TestAck_FollowUps(t *testing.T) {
	env := start(t, func() *engine.Config {
		cfg := engine.DefaultConfig()
		cfg.Limits.MaxBatchSize = 3
		return &cfg
	}())
	id := enqueue(t, env, &seppv1.EnqueueRequest{Queue: "q"}).GetJobId()
	d := reserveOne(t, env, "q")

	refusals := []struct {
		name         string
		followUps    []*seppv1.EnqueueRequest
		code         codes.Code
		field, limit string
	}{
		{"NoJobType", []*seppv1.EnqueueRequest{{Queue: "next", JobType: "t"}, {Queue: "next"}}, codes.InvalidArgument, "follow_ups[1].job_type", "required"},
		{"TTLOutOfRange", []*seppv1.EnqueueRequest{{Queue: "next", JobType: "t", TtlMs: -1}}, codes.InvalidArgument, "follow_ups[0].ttl_ms", "out of range"},
		{"BadTraceContext", []*seppv1.EnqueueRequest{{Queue: "next", JobType: "t", TraceContext: &seppv1.TraceContext{Traceparent: "nope"}}}, codes.InvalidArgument, "follow_ups[0].trace_context.traceparent", "hex digits"},
		{"AboveMaxBatchSize", make4(), codes.InvalidArgument, "follow_ups", "max_batch_size"},
		{"PriorityOutOfRange", []*seppv1.EnqueueRequest{{Queue: "next", JobType: "t", Priority: ptrU32(10)}}, codes.InvalidArgument, "follow_ups[0].priority", "0..9"},
	}
	for _, tt := range refusals {
		t.Run(tt.name, func(t *testing.T) {
			_, err := env.Queue.Ack(ctxT(t), &seppv1.AckRequest{Ctx: d.GetCtx(), FollowUps: tt.followUps})
			st := requireCode(t, err, tt.code)
			if tt.code == codes.InvalidArgument {
				requireFieldViolation(t, st, tt.field, tt.limit)
			}
			job, err := env.Admin.GetJob(ctxT(t), &seppv1.GetJobRequest{JobId: id})
			if err != nil || job.GetJob().GetState() != seppv1.JobState_JOB_STATE_RESERVED {
				t.Fatalf("the job after a refused ack: %v (%v), want reserved", job.GetJob().GetState(), err)
			}
			list, err := env.Admin.ListJobs(ctxT(t), &seppv1.ListJobsRequest{Queue: "next", State: seppv1.JobState_JOB_STATE_READY})
			// The queue a follow-up would have created does not exist.
			if status.Code(err) != codes.NotFound || len(list.GetJobs()) > 0 {
				t.Fatalf("after a refused ack, queue next: %v (%v), want none", list.GetJobs(), err)
			}
		})
	}

	held := enqueue(t, env, &seppv1.EnqueueRequest{Queue: "next", IdempotencyKey: "held"}).GetJobId()
	resp, err := env.Queue.Ack(ctxT(t), &seppv1.AckRequest{Ctx: d.GetCtx(), FollowUps: []*seppv1.EnqueueRequest{
		{Queue: "next", JobType: "t", IdempotencyKey: "step-2"},
		{Queue: "next", JobType: "t", IdempotencyKey: "held"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	got := resp.GetFollowUps()
	if len(got) != 2 || got[0].GetDuplicate() || got[0].GetState() != seppv1.JobState_JOB_STATE_READY ||
		!got[1].GetDuplicate() || got[1].GetJobId() != held {
		t.Fatalf("follow-ups %v: want a new ready job and a duplicate of %d", got, held)
	}
	// The retry of an ack whose answer was lost: its lease is gone, so it
	// fails as a repeated ack does and enqueues nothing more.
	_, err = env.Queue.Ack(ctxT(t), &seppv1.AckRequest{Ctx: d.GetCtx(), FollowUps: []*seppv1.EnqueueRequest{{Queue: "next", JobType: "t", IdempotencyKey: "step-2"}, {Queue: "next", JobType: "t"}}})
	requireCode(t, err, codes.FailedPrecondition)
	list, err := env.Admin.ListJobs(ctxT(t), &seppv1.ListJobsRequest{Queue: "next", State: seppv1.JobState_JOB_STATE_READY})
	if err != nil || len(list.GetJobs()) != 2 {
		t.Fatalf("queue next after the retry: %v (%v), want the held job and the one follow-up", list.GetJobs(), err)
	}
}

func make4() []*seppv1.EnqueueRequest {
	out := make([]*seppv1.EnqueueRequest, 4)
	for i := range out {
		out[i] = &seppv1.EnqueueRequest{Queue: "next", JobType: "t"}
	}
	return out
}

func ptrU32(v uint32) *uint32 { return &v }
