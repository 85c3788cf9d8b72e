package client

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"

	seppv1 "github.com/sepp-io/sepp/proto/sepp/v1"
)

// AckWithFollowUps completes a delivery and enqueues followUps in the same
// log entry, all or nothing, and returns the follow-ups' results in order
// (as Enqueue's: Duplicate when a job already holds the idempotency or
// unique key). result, when not empty, is kept as AckWithResult keeps it.
//
// Fenced by the lease: when the lease is lost the call fails with
// ErrLeaseLost and no follow-up exists. When any follow-up is refused
// (ErrInvalidArgument naming follow_ups[i], a full queue or budget, a
// refusing unique key) nothing is applied and the lease is still held. A
// cluster not yet upgraded to follow-ups refuses them with ErrUnsupported,
// nothing applied.
//
// Each follow-up gets an idempotency key (generated unless set), so a
// retry after a lost answer cannot enqueue one twice; a retry that finds
// the lease gone because the first attempt applied answers
// ErrUnknownOutcome, as Ack does: the follow-ups' keys then tell whether
// they exist. At most the server's max_batch_size follow-ups.
func (c *Client) AckWithFollowUps(ctx context.Context, jc JobContext, result []byte, followUps []*EnqueueRequest) ([]EnqueueResult, error) {
	m := &seppv1.AckRequest{Ctx: jc.toProto(), Result: result, FollowUps: make([]*seppv1.EnqueueRequest, len(followUps))}
	keys := make([]string, len(followUps))
	for i, r := range followUps {
		if err := r.validate(followUpName(i)); err != nil {
			return nil, &Error{Op: "ack", Kinds: []error{ErrInvalidArgument}, Detail: err}
		}
		keys[i] = r.IdempotencyKey
		if keys[i] == "" {
			keys[i] = newKey()
		}
		m.FollowUps[i] = r.toProto(keys[i])
	}
	var end func(uint64, error)
	if i := slices.IndexFunc(m.FollowUps, func(m *seppv1.EnqueueRequest) bool { return m.TraceContext == nil }); i >= 0 {
		// One send span for the follow-ups, as for a batch; those with a
		// trace context of their own keep it.
		var tc *TraceContext
		ctx, tc, end = c.startSend(ctx, followUps[i].Queue, followUps[i].JobType, len(followUps))
		for _, f := range m.FollowUps {
			setTraceContext(f, tc)
		}
	}
	var out []EnqueueResult
	err := c.call(ctx, "ack", retrySafe, 0, func(ctx context.Context, a *attempt) error {
		resp, err := c.queueService(a).Ack(ctx, m, c.opts.callOptions...)
		if err != nil {
			return err
		}
		c.confirmLeader(a.addr)
		if len(resp.GetFollowUps()) != len(followUps) {
			return &Error{Op: "ack", Kinds: []error{ErrUnsupported}, Message: "server answered " + strconv.Itoa(len(resp.GetFollowUps())) + " follow-up results for " + strconv.Itoa(len(followUps)) + " follow-ups (a server older than follow-ups ignores them)"}
		}
		out = make([]EnqueueResult, len(followUps))
		for i, r := range resp.GetFollowUps() {
			out[i] = EnqueueResult{
				JobID:          r.GetJobId(),
				State:          JobState(r.GetState()),
				Duplicate:      r.GetDuplicate() && !a.maybeApplied,
				IdempotencyKey: keys[i],
			}
		}
		return nil
	})
	if end != nil {
		end(0, err)
	}
	if err != nil {
		return nil, err
	}
	return out, nil
}

// followUpName names follow-up i as the server does.
func followUpName(i int) string { return "follow_ups[" + strconv.Itoa(i) + "]" }

// AddFollowUp adds a job to enqueue with this job's ack, for a handler run
// by a Worker: when the handler then returns nil, the Worker acks with its
// result (SetResult) and every follow-up in one call (AckWithFollowUps),
// all or nothing, fenced by the lease: a handler whose lease was lost
// enqueues none. Follow-ups the server refuses leave the job uncompleted:
// the Worker reports the refusal (WorkerOptions.OnError) and nacks the job,
// which runs again by its queue's retry policy rather than completing
// without them. Set each one's IdempotencyKey when a rerun must not enqueue
// it twice (a rerun's follow-ups are new requests).
func (d *Delivery) AddFollowUp(req *EnqueueRequest) { d.followUps = append(d.followUps, req) }

// ackFollowUps is the Worker's ack of a delivery whose handler added
// follow-ups; see Delivery.AddFollowUp for what a refusal does. A result
// the queue does not keep (ErrWrongState) is dropped, as the plain ack
// drops it, and the follow-ups are sent without it.
func (w *Worker) ackFollowUps(ctx context.Context, d *Delivery) error {
	_, err := w.c.AckWithFollowUps(ctx, d.Ctx, d.result, d.followUps)
	if len(d.result) > 0 && errors.Is(err, ErrWrongState) && !errors.Is(err, ErrUnsupported) && !errors.Is(err, ErrLeaseLost) {
		w.report(fmt.Errorf("sepp worker: job %d: result refused, acking its follow-ups without it: %w", d.Ctx.JobID, err))
		_, err = w.c.AckWithFollowUps(ctx, d.Ctx, nil, d.followUps)
	}
	if err == nil || errors.Is(err, ErrLeaseLost) || errors.Is(err, ErrUnknownOutcome) || errors.Is(err, ErrJobCancelled) || ctx.Err() != nil {
		return err
	}
	// Refused: nothing was applied and the lease is held. The job is not
	// done without its follow-ups, so it goes back to run again.
	w.report(fmt.Errorf("sepp worker: job %d: follow-ups refused, the job is nacked to run again: %w", d.Ctx.JobID, err))
	w.nack(*d, DefaultRetry(), "follow-ups refused: "+err.Error())
	return nil
}
