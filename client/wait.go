package client

import (
	"context"
	"time"

	seppv1 "github.com/sepp-io/sepp/proto/sepp/v1"
)

// JobOutcome is what WaitJob answers: the job and, once it reached a
// terminal state, how it ended.
type JobOutcome struct {
	// Job is the job as the server holds it.
	Job Job
	// Terminal is true once the job completed or died.
	Terminal bool
	// State is StateCompleted or StateDead when Terminal, the job's
	// current state otherwise.
	State JobState
	// Result is the worker's result of a completed job (nil when it gave
	// none).
	Result []byte
	// Cause says why a dead job died (CauseRejected, CauseExpired,
	// CauseCancelled, ...); CauseUnknown unless State is StateDead.
	Cause DeadLetterCause
	// FinishedAt is when the job completed or died (zero until then).
	FinishedAt time.Time
}

// waitJobPoll is the wait each WaitJob call asks the server for: the
// server's default, below its 60 s cap.
const waitJobPoll = 30 * time.Second

// WaitJob waits until job id reaches a terminal state, completed or dead
// (rejected, attempts exhausted, lease expired, cancelled, expired, an
// operator's), and returns its outcome; bound the wait with ctx. It
// long-polls the leader and asks again each time a poll runs out; through
// a leader change it retries on the new leader, which gives the same
// answer (the outcome is replicated state). A job the server does not hold
// (never enqueued, or gone without a record kept: see the server's
// completed and dead-letter retention) fails with ErrNotFound. When ctx
// ends first, the error is ctx's.
func (c *Client) WaitJob(ctx context.Context, id uint64) (JobOutcome, error) {
	for {
		out, err := c.waitJobOnce(ctx, id, waitJobPoll)
		if err != nil || out.Terminal {
			return out, err
		}
		if err := ctx.Err(); err != nil {
			return out, err
		}
	}
}

// PollJob is one WaitJob call of at most timeout (the server caps it at
// 60 s): Terminal is false when the job was still running at its end.
func (c *Client) PollJob(ctx context.Context, id uint64, timeout time.Duration) (JobOutcome, error) {
	return c.waitJobOnce(ctx, id, timeout)
}

func (c *Client) waitJobOnce(ctx context.Context, id uint64, timeout time.Duration) (JobOutcome, error) {
	m := &seppv1.WaitJobRequest{JobId: id, TimeoutMs: max(timeout.Milliseconds(), 1)}
	var out JobOutcome
	err := c.call(ctx, "wait job", retrySafe, timeout, func(ctx context.Context, a *attempt) error {
		resp, err := c.queueService(a).WaitJob(ctx, m, c.opts.callOptions...)
		if err != nil {
			return err
		}
		c.confirmLeader(a.addr)
		out = JobOutcome{
			Job:        jobFromProto(resp.GetJob()),
			Terminal:   resp.GetTerminal(),
			State:      JobState(resp.GetState()),
			Result:     resp.GetResult(),
			Cause:      DeadLetterCause(resp.GetCause()),
			FinishedAt: timeFrom(resp.GetFinishedAt()),
		}
		return nil
	})
	return out, err
}

// EnqueueAndWait enqueues req and waits for the job's outcome (Enqueue,
// then WaitJob). The enqueue's result comes back even when the wait fails,
// so that a caller can wait again on res.JobID.
func (c *Client) EnqueueAndWait(ctx context.Context, req *EnqueueRequest) (res EnqueueResult, out JobOutcome, err error) {
	if res, err = c.Enqueue(ctx, req); err != nil {
		return res, out, err
	}
	out, err = c.WaitJob(ctx, res.JobID)
	return res, out, err
}

// AckWithResult completes a delivery with a result for the job's waiters
// (WaitJob) and readers (GetJob), at most the server's max_result_bytes
// (ServerInfo limits; over it ErrInvalidArgument naming result). Unlike
// Ack it is not coalesced into AckBatch calls, which carry no results. The
// job's queue must keep completed jobs (QueueSettings.CompletedRetention):
// where it does not, the server refuses the result with ErrWrongState; a
// cluster not yet upgraded to keep results refuses it with ErrUnsupported
// (which also matches ErrWrongState). Either way nothing was applied and
// the lease is still held: ack without it.
func (c *Client) AckWithResult(ctx context.Context, jc JobContext, result []byte) error {
	m := &seppv1.AckRequest{Ctx: jc.toProto(), Result: result}
	return c.call(ctx, "ack", retrySafe, 0, func(ctx context.Context, a *attempt) error {
		_, err := c.queueService(a).Ack(ctx, m, c.opts.callOptions...)
		return err
	})
}
