package rpc_test

import (
	"bytes"
	"testing"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"

	seppv1 "github.com/sepp-io/sepp/proto/sepp/v1"
	"github.com/sepp-io/sepp/rpc"
	"github.com/sepp-io/sepp/rpc/rpctest"
)

// TestAck_Result checks an Ack's result against max_result_bytes (advertised
// in GetServerInfo) and refuses a result the server would not keep, leaving
// the lease held so that the worker can ack without it.
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
	if !ok || len(pf.GetViolations()) != 1 || pf.GetViolations()[0].GetSubject() != "feature=results" {
		t.Fatalf("PreconditionFailure = %v, want one violation naming feature=results", pf)
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
