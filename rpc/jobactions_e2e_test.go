package rpc_test

import (
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/sepp-io/sepp/engine"
	seppv1 "github.com/sepp-io/sepp/proto/sepp/v1"
)

// Actions on live jobs through gRPC: per-job results with the codes of the
// status table, and the whole call refused for bad input.
func TestAdminJobActions(t *testing.T) {
	env := start(t, nil)
	ctx := ctxT(t)
	a := enqueue(t, env, &seppv1.EnqueueRequest{Queue: "q", Priority: prio(1)}).GetJobId()
	b := enqueue(t, env, &seppv1.EnqueueRequest{Queue: "q", ScheduledAt: timestamppb.New(env.Clock.Now().Add(time.Hour))}).GetJobId()
	reserved := reserveOne(t, env, "q") // a, the only Ready job
	c := enqueue(t, env, &seppv1.EnqueueRequest{Queue: "q"}).GetJobId()

	run, err := env.Admin.RunJobsNow(ctx, &seppv1.RunJobsNowRequest{JobIds: []uint64{b, a}})
	if err != nil || run.GetResults()[0].GetError() != nil || run.GetResults()[1].GetError().GetCode() != int32(codes.FailedPrecondition) {
		t.Fatalf("run now: %v %v", run, err)
	}
	if reserved.GetJob().GetId() != a {
		t.Fatalf("reserved %d, want %d", reserved.GetJob().GetId(), a)
	}
	if got, _ := env.Admin.GetJob(ctx, &seppv1.GetJobRequest{JobId: b}); got.GetJob().GetState() != seppv1.JobState_JOB_STATE_READY {
		t.Fatalf("b after run now: %v", got)
	}

	_, err = env.Admin.SetJobsPriority(ctx, &seppv1.SetJobsPriorityRequest{JobIds: []uint64{c}, Priority: 10})
	requireFieldViolation(t, requireCode(t, err, codes.InvalidArgument), "priority", "0..9")
	pr, err := env.Admin.SetJobsPriority(ctx, &seppv1.SetJobsPriorityRequest{JobIds: []uint64{c}, Priority: 9})
	if err != nil || pr.GetResults()[0].GetError() != nil {
		t.Fatalf("priority: %v %v", pr, err)
	}
	// c now goes first, ahead of b (priority 0, enqueued earlier).
	if next := reserveOne(t, env, "q"); next.GetJob().GetId() != c {
		t.Fatalf("next delivery %d, want the reprioritised %d", next.GetJob().GetId(), c)
	}

	_, err = env.Admin.RescheduleJobs(ctx, &seppv1.RescheduleJobsRequest{JobIds: []uint64{b}})
	requireFieldViolation(t, requireCode(t, err, codes.InvalidArgument), "run_at", "timestamp")
	rs, err := env.Admin.RescheduleJobs(ctx, &seppv1.RescheduleJobsRequest{JobIds: []uint64{b}, RunAt: timestamppb.New(env.Clock.Now().AddDate(1, 0, 0))})
	if err != nil || rs.GetResults()[0].GetError().GetCode() != int32(codes.InvalidArgument) {
		t.Fatalf("reschedule beyond the horizon: %v %v", rs, err)
	}
	rs, err = env.Admin.RescheduleJobs(ctx, &seppv1.RescheduleJobsRequest{JobIds: []uint64{b}, RunAt: timestamppb.New(env.Clock.Now().Add(time.Minute))})
	if err != nil || rs.GetResults()[0].GetError() != nil {
		t.Fatalf("reschedule: %v %v", rs, err)
	}

	del, err := env.Admin.DeleteJobs(ctx, &seppv1.DeleteJobsRequest{JobIds: []uint64{b, 999}})
	if err != nil || del.GetResults()[0].GetError() != nil || del.GetResults()[1].GetError().GetCode() != int32(codes.NotFound) {
		t.Fatalf("delete: %v %v", del, err)
	}
	_, err = env.Admin.GetJob(ctx, &seppv1.GetJobRequest{JobId: b})
	requireCode(t, err, codes.NotFound)
	_, err = env.Admin.DeleteJobs(ctx, &seppv1.DeleteJobsRequest{})
	requireCode(t, err, codes.InvalidArgument)
}

// CancelJobs revokes a running job's lease at once: the worker's extend and
// ack are lease-lost (FailedPrecondition), the job is a dead letter with
// cause CANCELLED and the operator's reason, or gone with delete set; a job
// no worker holds is FailedPrecondition in its own result.
func TestAdminCancelJobs(t *testing.T) {
	cfg := engine.DefaultConfig()
	cfg.Limits.DeadLetterRetention = time.Hour
	env := start(t, &cfg)
	ctx := ctxT(t)
	for range 2 {
		enqueue(t, env, &seppv1.EnqueueRequest{Queue: "q"})
	}
	first, second := reserveOne(t, env, "q"), reserveOne(t, env, "q")
	waiting := enqueue(t, env, &seppv1.EnqueueRequest{Queue: "q"}).GetJobId()

	res, err := env.Admin.CancelJobs(ctx, &seppv1.CancelJobsRequest{JobIds: []uint64{first.GetJob().GetId(), waiting, 999}, Reason: "host drained"})
	if err != nil || len(res.GetResults()) != 3 || res.GetResults()[0].GetError() != nil ||
		res.GetResults()[1].GetError().GetCode() != int32(codes.FailedPrecondition) || res.GetResults()[2].GetError().GetCode() != int32(codes.NotFound) {
		t.Fatalf("cancel: %v %v", res, err)
	}
	if !strings.Contains(res.GetResults()[1].GetError().GetMessage(), "not reserved by a worker") {
		t.Fatalf("cancel of a waiting job: %v", res.GetResults()[1].GetError())
	}
	_, err = env.Queue.ExtendLease(ctx, &seppv1.ExtendLeaseRequest{Ctx: first.GetCtx()})
	requireCode(t, err, codes.FailedPrecondition)
	_, err = env.Queue.Ack(ctx, &seppv1.AckRequest{Ctx: first.GetCtx()})
	requireCode(t, err, codes.FailedPrecondition)
	dl, err := env.Admin.GetDeadLetter(ctx, &seppv1.GetDeadLetterRequest{JobId: first.GetJob().GetId()})
	if err != nil || dl.GetRecord().GetCause() != seppv1.DeadLetterCause_DEAD_LETTER_CAUSE_CANCELLED || dl.GetRecord().GetLastReason() != "host drained" {
		t.Fatalf("dead letter of the cancelled job: %v %v", dl, err)
	}

	del, err := env.Admin.CancelJobs(ctx, &seppv1.CancelJobsRequest{JobIds: []uint64{second.GetJob().GetId()}, Delete: true})
	if err != nil || del.GetResults()[0].GetError() != nil {
		t.Fatalf("cancel and delete: %v %v", del, err)
	}
	_, err = env.Queue.Ack(ctx, &seppv1.AckRequest{Ctx: second.GetCtx()})
	requireCode(t, err, codes.FailedPrecondition)
	_, err = env.Admin.GetJob(ctx, &seppv1.GetJobRequest{JobId: second.GetJob().GetId()})
	requireCode(t, err, codes.NotFound)
	_, err = env.Admin.GetDeadLetter(ctx, &seppv1.GetDeadLetterRequest{JobId: second.GetJob().GetId()})
	requireCode(t, err, codes.NotFound)

	_, err = env.Admin.CancelJobs(ctx, &seppv1.CancelJobsRequest{})
	requireCode(t, err, codes.InvalidArgument)
}
