package rpc_test

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"

	"github.com/sepp-io/sepp/engine"
	seppv1 "github.com/sepp-io/sepp/proto/sepp/v1"
	"github.com/sepp-io/sepp/rpc"
	"github.com/sepp-io/sepp/rpc/rpctest"
)

// TestAck_Result checks an Ack's result against max_result_bytes (advertised
// in GetServerInfo) and refuses a result the queue would not keep (its
// completed_retention_ms is 0), leaving the lease held so that the worker
// can ack without it. (The refusal while a member does not apply command
// version 20, VERSION feature=results, is cluster's TestResults_RollingUpgrade
// and the status table's.)
func TestAck_Result(t *testing.T) {
	env := rpctest.Start(t, nil, rpc.Options{Version: "test", MaxResultBytes: 16})
	info, err := env.Queue.GetServerInfo(ctxT(t), &seppv1.GetServerInfoRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if got := info.GetLimits().GetMaxResultBytes(); got != 16 {
		t.Fatalf("GetServerInfo max_result_bytes = %d, want 16", got)
	}
	enqueue(t, env, &seppv1.EnqueueRequest{Queue: "q"})
	d := reserveOne(t, env, "q")

	_, err = env.Queue.Ack(ctxT(t), &seppv1.AckRequest{Ctx: d.GetCtx(), Result: bytes.Repeat([]byte{'r'}, 17)})
	requireFieldViolation(t, requireCode(t, err, codes.InvalidArgument), "result", "max_result_bytes=16")

	_, err = env.Queue.Ack(ctxT(t), &seppv1.AckRequest{Ctx: d.GetCtx(), Result: []byte("done")})
	st := requireCode(t, err, codes.FailedPrecondition)
	pf, ok := detail[*errdetails.PreconditionFailure](st)
	if !ok || len(pf.GetViolations()) != 1 || pf.GetViolations()[0].GetSubject() != "completed_retention_ms" {
		t.Fatalf("PreconditionFailure = %v, want one violation naming completed_retention_ms", pf)
	}

	// Neither refusal settled the delivery: the ack without a result does.
	if _, err := env.Queue.Ack(ctxT(t), &seppv1.AckRequest{Ctx: d.GetCtx()}); err != nil {
		t.Fatalf("Ack without a result after the refusals: %v", err)
	}
}

// TestAck_ResultLimitDefault: a server that sets no limit advertises 64 KiB.
func TestAck_ResultLimitDefault(t *testing.T) {
	env := start(t, nil)
	info, err := env.Queue.GetServerInfo(ctxT(t), &seppv1.GetServerInfoRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if got := info.GetLimits().GetMaxResultBytes(); got != rpc.DefaultMaxResultBytes {
		t.Fatalf("max_result_bytes = %d, want %d", got, rpc.DefaultMaxResultBytes)
	}
}

// TestWaitJob_Outcomes: a wait that runs out answers terminal false with the
// current state; a job dead-lettered during the wait wakes it with the
// cause; an unknown job, and one acked without a kept record, are NotFound.
func TestWaitJob_Outcomes(t *testing.T) {
	env := start(t, retentionConfig())
	id := enqueue(t, env, &seppv1.EnqueueRequest{Queue: "q"}).GetJobId()

	out, err := env.Queue.WaitJob(ctxT(t), &seppv1.WaitJobRequest{JobId: id, TimeoutMs: 50})
	if err != nil {
		t.Fatal(err)
	}
	if out.GetTerminal() || out.GetState() != seppv1.JobState_JOB_STATE_READY || out.GetJob().GetId() != id {
		t.Fatalf("timed-out wait = %v, want terminal false, state READY, job %d", out, id)
	}

	type answer struct {
		out *seppv1.WaitJobResponse
		err error
	}
	waited := make(chan answer, 1)
	go func() {
		out, err := env.Queue.WaitJob(ctxT(t), &seppv1.WaitJobRequest{JobId: id, TimeoutMs: 20000})
		waited <- answer{out, err}
	}()
	d := reserveOne(t, env, "q")
	nack(t, env, d.GetCtx(), directiveDeadLetter(), "bad input")
	select {
	case a := <-waited:
		if a.err != nil {
			t.Fatal(a.err)
		}
		if !a.out.GetTerminal() || a.out.GetState() != seppv1.JobState_JOB_STATE_DEAD ||
			a.out.GetCause() != seppv1.DeadLetterCause_DEAD_LETTER_CAUSE_REJECTED || a.out.GetFinishedAt() == nil {
			t.Fatalf("wait over the dead-lettering = %v, want terminal DEAD, cause REJECTED, finished_at set", a.out)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("WaitJob did not wake when the job was dead-lettered")
	}

	_, err = env.Queue.WaitJob(ctxT(t), &seppv1.WaitJobRequest{JobId: id + 1000})
	requireCode(t, err, codes.NotFound)

	acked := enqueue(t, env, &seppv1.EnqueueRequest{Queue: "q"}).GetJobId()
	d = reserveOne(t, env, "q")
	if _, err := env.Queue.Ack(ctxT(t), &seppv1.AckRequest{Ctx: d.GetCtx()}); err != nil {
		t.Fatal(err)
	}
	_, err = env.Queue.WaitJob(ctxT(t), &seppv1.WaitJobRequest{JobId: acked})
	requireCode(t, err, codes.NotFound)
}

func TestWaitJob_BadInput(t *testing.T) {
	env := start(t, nil)
	_, err := env.Queue.WaitJob(ctxT(t), &seppv1.WaitJobRequest{})
	requireFieldViolation(t, requireCode(t, err, codes.InvalidArgument), "job_id", "required")
	_, err = env.Queue.WaitJob(ctxT(t), &seppv1.WaitJobRequest{JobId: 1, TimeoutMs: -1})
	requireFieldViolation(t, requireCode(t, err, codes.InvalidArgument), "timeout_ms", "negative")
}

// keptConfig has queue "kept", which keeps completed jobs an hour.
func keptConfig() *engine.Config {
	return &engine.Config{Limits: engine.DefaultLimits(), Queues: []engine.QueueConfig{{Name: "kept", CompletedRetention: time.Hour}}}
}

// TestResults_ReadsAnswerCompleted: once a job of a queue that keeps
// completed jobs is acked with a result, GetJob answers COMPLETED with the
// result, completion and run time; ListJobs with state COMPLETED lists it
// (paged); a WaitJob under way wakes with it; and once the retention
// passes, it is gone (NotFound).
func TestResults_ReadsAnswerCompleted(t *testing.T) {
	env := start(t, keptConfig())
	var ids []uint64
	for range 3 {
		ids = append(ids, enqueue(t, env, &seppv1.EnqueueRequest{Queue: "kept"}).GetJobId())
	}
	type answer struct {
		out *seppv1.WaitJobResponse
		err error
	}
	waited := make(chan answer, 1)
	go func() {
		out, err := env.Queue.WaitJob(ctxT(t), &seppv1.WaitJobRequest{JobId: ids[0], TimeoutMs: 20000})
		waited <- answer{out, err}
	}()
	for i := range ids {
		d := reserveOne(t, env, "kept")
		env.Clock.Advance(1500 * time.Millisecond)
		if _, err := env.Queue.Ack(ctxT(t), &seppv1.AckRequest{Ctx: d.GetCtx(), Result: []byte(fmt.Sprintf("result %d", i))}); err != nil {
			t.Fatalf("Ack with a result on a queue that keeps them: %v", err)
		}
	}
	select {
	case a := <-waited:
		if a.err != nil {
			t.Fatal(a.err)
		}
		if !a.out.GetTerminal() || a.out.GetState() != seppv1.JobState_JOB_STATE_COMPLETED || string(a.out.GetResult()) != "result 0" || a.out.GetFinishedAt() == nil {
			t.Fatalf("wait over the ack = %v, want terminal COMPLETED with the result and finished_at", a.out)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("WaitJob did not wake when the job completed")
	}

	got, err := env.Admin.GetJob(ctxT(t), &seppv1.GetJobRequest{JobId: ids[1]})
	if err != nil {
		t.Fatal(err)
	}
	j := got.GetJob()
	if j.GetState() != seppv1.JobState_JOB_STATE_COMPLETED || string(j.GetResult()) != "result 1" || j.GetCompletedAt() == nil ||
		j.GetRunTime().AsDuration() != 1500*time.Millisecond || j.GetAttempt() != 1 {
		t.Fatalf("GetJob = %v, want COMPLETED, its result, completed_at and a run time of 1.5s", j)
	}

	page1, err := env.Admin.ListJobs(ctxT(t), &seppv1.ListJobsRequest{Queue: "kept", State: seppv1.JobState_JOB_STATE_COMPLETED, Limit: 2})
	if err != nil {
		t.Fatal(err)
	}
	page2, err := env.Admin.ListJobs(ctxT(t), &seppv1.ListJobsRequest{Queue: "kept", State: seppv1.JobState_JOB_STATE_COMPLETED, Limit: 2, AfterJobId: page1.GetNextAfterJobId()})
	if err != nil {
		t.Fatal(err)
	}
	var listed []uint64
	for _, j := range append(page1.GetJobs(), page2.GetJobs()...) {
		listed = append(listed, j.GetId())
	}
	if fmt.Sprint(listed) != fmt.Sprint(ids) || page2.GetNextAfterJobId() != 0 {
		t.Fatalf("ListJobs COMPLETED in pages of 2 = %v (next %d), want %v", listed, page2.GetNextAfterJobId(), ids)
	}

	// Past the retention a tick drops them.
	env.Clock.Advance(time.Hour + time.Second)
	env.Backend.Tick()
	_, err = env.Admin.GetJob(ctxT(t), &seppv1.GetJobRequest{JobId: ids[1]})
	requireCode(t, err, codes.NotFound)
}

// TestResults_QueueSetting: completed_retention_ms on CreateQueue and
// UpdateQueue, read back by GetQueue, dropped by inherit; bad values are
// InvalidArgument naming the field and its limit.
func TestResults_QueueSetting(t *testing.T) {
	env := start(t, nil)
	ret := int64(60000)
	if _, err := env.Admin.CreateQueue(ctxT(t), &seppv1.CreateQueueRequest{Name: "r", Settings: &seppv1.QueueSettings{CompletedRetentionMs: &ret}}); err != nil {
		t.Fatal(err)
	}
	q, err := env.Admin.GetQueue(ctxT(t), &seppv1.GetQueueRequest{Name: "r"})
	if err != nil {
		t.Fatal(err)
	}
	if q.GetSettings().GetCompletedRetentionMs() != ret || q.GetEffective().GetCompletedRetentionMs() != ret {
		t.Fatalf("GetQueue settings %v effective %v, want completed_retention_ms %d", q.GetSettings(), q.GetEffective(), ret)
	}
	for _, tc := range []struct {
		name  string
		value int64
		limit string
	}{
		{"zero", 0, "1..2592000000"},
		{"negative", -1, "1..2592000000"},
		{"above 30 days", 2592000001, "1..2592000000"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := tc.value
			_, err := env.Admin.UpdateQueue(ctxT(t), &seppv1.UpdateQueueRequest{Name: "r", Settings: &seppv1.QueueSettings{CompletedRetentionMs: &v}})
			requireFieldViolation(t, requireCode(t, err, codes.InvalidArgument), "settings.completed_retention_ms", tc.limit)
		})
	}
	if _, err := env.Admin.UpdateQueue(ctxT(t), &seppv1.UpdateQueueRequest{Name: "r", Inherit: []string{"completed_retention_ms"}}); err != nil {
		t.Fatal(err)
	}
	q, err = env.Admin.GetQueue(ctxT(t), &seppv1.GetQueueRequest{Name: "r"})
	if err != nil {
		t.Fatal(err)
	}
	if q.GetSettings().CompletedRetentionMs != nil || q.GetEffective().GetCompletedRetentionMs() != 0 {
		t.Fatalf("after inherit: settings %v effective %v, want none", q.GetSettings(), q.GetEffective())
	}
}
