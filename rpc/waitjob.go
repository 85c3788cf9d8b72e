package rpc

import (
	"context"
	"errors"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/sepp-io/sepp/engine"
	seppv1 "github.com/sepp-io/sepp/proto/sepp/v1"
)

// WaitJob's timeout: DefaultWaitJobTimeout when the request names none,
// MaxWaitJobTimeout at most (a longer one is capped, not refused: the
// client loops on terminal false). Both are below the usual gRPC proxy and
// load-balancer idle timeouts of a minute or more.
const (
	DefaultWaitJobTimeout = 30 * time.Second
	MaxWaitJobTimeout     = 60 * time.Second
)

// WaitJob long-polls this node, which must lead, until the job reaches a
// terminal state or the timeout passes. It takes a slot of the long-poll
// limit (MaxConcurrentLongPolls) as a waiting Reserve does, and wakes at
// each applied entry to look again at the applied state: nothing is
// proposed. The outcome is read from the replicated state, so a client
// that retries on a new leader after a leader change reads the same one.
//
// Terminal is dead (a retained dead-letter record: rejected, attempts
// exhausted, lease expired, admin, cancelled, expired) or completed. A job
// this node does not hold, or no longer holds (acked or dead and not
// retained, deleted, purged), is NotFound: there is no outcome to give.
func (s *queueService) WaitJob(ctx context.Context, req *seppv1.WaitJobRequest) (*seppv1.WaitJobResponse, error) {
	if req.GetJobId() == 0 {
		return nil, invalidField("job_id", "> 0", "is required (> 0)")
	}
	timeout, err := waitJobTimeout(req.GetTimeoutMs())
	if err != nil {
		return nil, err
	}
	id := engine.JobID(req.GetJobId())
	// The first look confirms leadership: a follower answers NotLeader,
	// naming the leader, and the client goes there.
	out, err := s.jobOutcome(ctx, false, id)
	if err != nil || out.GetTerminal() {
		return out, err
	}
	select {
	case s.longPolls <- struct{}{}:
		defer func() { <-s.longPolls }()
	default:
		return nil, status.Errorf(codes.ResourceExhausted,
			"timeout_ms: this server already holds its limit of %d waiting calls; retry with a shorter timeout, or later",
			cap(s.longPolls))
	}
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	for {
		// Take the next entry's channel before looking, so an entry
		// applied between the look and the wait still wakes us.
		applied := s.b.Applied()
		// While this node leads its applied state is the one to read;
		// once it no longer does, the confirmed read answers NotLeader
		// and the client retries on the new leader.
		out, err = s.jobOutcome(ctx, !s.leads(), id)
		if err != nil || out.GetTerminal() {
			return out, err
		}
		select {
		case <-applied:
		case <-timer.C:
			return out, nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// waitJobTimeout reads WaitJobRequest.timeout_ms.
func waitJobTimeout(ms int64) (time.Duration, error) {
	switch {
	case ms < 0:
		return 0, invalidField("timeout_ms", ">= 0", "must not be negative, got %d", ms)
	case ms == 0:
		return DefaultWaitJobTimeout, nil
	case ms >= MaxWaitJobTimeout.Milliseconds():
		return MaxWaitJobTimeout, nil
	}
	return time.Duration(ms) * time.Millisecond, nil
}

// jobOutcome reads job id's outcome from the state (confirmed unless
// stale): terminal with its cause when dead or completed, its current
// state otherwise.
func (s *queueService) jobOutcome(ctx context.Context, confirm bool, id engine.JobID) (*seppv1.WaitJobResponse, error) {
	var job engine.Job
	var rec engine.DeadLetterRecord
	err := s.b.Read(ctx, !confirm, func(e engine.View) error {
		var err error
		if job, err = e.GetJob(id); err != nil {
			return err
		}
		if job.State == engine.StateDead {
			rec, err = e.GetDeadLetter(id)
		}
		return err
	})
	if err != nil {
		if errors.Is(err, engine.ErrNotFound) {
			return nil, status.Errorf(codes.NotFound,
				"job %d: not found: never enqueued, or no longer held (acked, or dead, deleted or purged without a record kept)", id)
		}
		return nil, err
	}
	out := &seppv1.WaitJobResponse{Job: jobToProto(job)}
	out.State = out.GetJob().GetState()
	switch job.State {
	case engine.StateDead:
		out.Terminal = true
		out.Cause = causeToProto(rec.Cause)
		out.FinishedAt = timestampOrNil(rec.FailedAt)
	case engine.StateCompleted:
		out.Terminal = true
		if c := job.Completed; c != nil {
			out.Result = c.Result
			out.FinishedAt = timestampOrNil(c.CompletedAt)
		}
	}
	return out, nil
}
