package client

import (
	"context"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	seppv1 "github.com/sepp-io/sepp/proto/sepp/v1"
)

// RedriveSelection picks dead letters for a redrive; a zero field matches
// all.
type RedriveSelection struct {
	Queue          string
	Cause          DeadLetterCause // CauseUnknown: any
	JobType        string
	ReasonContains string    // a substring of the last reason
	FailedAfter    time.Time // failed at or after, when set
	FailedBefore   time.Time // failed before, when set
}

// RedriveOptions describe a redrive task.
type RedriveOptions struct {
	Selection RedriveSelection
	// ToQueue is where a fresh replay goes; "" is each record's own queue.
	ToQueue string
	// Fresh replays each record as a new job (new id, attempt 1); otherwise
	// the job goes back to its own queue with its id, attempts reset.
	Fresh bool
	// Rate in jobs per second, 1..10000; 0 lets the server use 100.
	Rate uint32
}

// RedriveState is where a redrive task is in its life.
type RedriveState int32

const (
	RedriveUnknown   = RedriveState(seppv1.RedriveState_REDRIVE_STATE_UNSPECIFIED)
	RedriveRunning   = RedriveState(seppv1.RedriveState_REDRIVE_STATE_RUNNING)
	RedrivePaused    = RedriveState(seppv1.RedriveState_REDRIVE_STATE_PAUSED)
	RedriveCancelled = RedriveState(seppv1.RedriveState_REDRIVE_STATE_CANCELLED)
	RedriveDone      = RedriveState(seppv1.RedriveState_REDRIVE_STATE_DONE)
)

func (s RedriveState) String() string {
	switch s {
	case RedriveRunning:
		return "running"
	case RedrivePaused:
		return "paused"
	case RedriveCancelled:
		return "cancelled"
	case RedriveDone:
		return "done"
	}
	return "unknown"
}

// RedriveTask is a redrive task and, once ended, its audit record.
type RedriveTask struct {
	ID        uint64
	Options   RedriveOptions
	State     RedriveState
	Moved     uint64
	Remaining uint64
	Cursor    uint64 // the highest record id handled
	LastError string
	CreatedBy string // token name; "" when admin auth is off
	CreatedAt time.Time
	UpdatedAt time.Time
	EndedAt   time.Time
	EndedBy   string
}

// RedrivePreview is a dry run's answer.
type RedrivePreview struct {
	Matching uint64
	Sample   []DeadLetterRecord
}

func redriveRequest(o RedriveOptions) *seppv1.StartRedriveRequest {
	ts := func(t time.Time) *timestamppb.Timestamp {
		if t.IsZero() {
			return nil
		}
		return timestamppb.New(t)
	}
	s := o.Selection
	return &seppv1.StartRedriveRequest{
		Selection: &seppv1.RedriveSelection{
			Queue: s.Queue, Cause: seppv1.DeadLetterCause(s.Cause), JobType: s.JobType, ReasonContains: s.ReasonContains,
			FailedAfter: ts(s.FailedAfter), FailedBefore: ts(s.FailedBefore),
		},
		ToQueue: o.ToQueue, Fresh: o.Fresh, Rate: o.Rate,
	}
}

func redriveTaskFromProto(m *seppv1.RedriveTask) RedriveTask {
	t := func(ts *timestamppb.Timestamp) time.Time {
		if ts == nil {
			return time.Time{}
		}
		return ts.AsTime()
	}
	s := m.GetSelection()
	return RedriveTask{
		ID: m.GetId(),
		Options: RedriveOptions{
			Selection: RedriveSelection{
				Queue: s.GetQueue(), Cause: DeadLetterCause(s.GetCause()), JobType: s.GetJobType(), ReasonContains: s.GetReasonContains(),
				FailedAfter: t(s.GetFailedAfter()), FailedBefore: t(s.GetFailedBefore()),
			},
			ToQueue: m.GetToQueue(), Fresh: m.GetFresh(), Rate: m.GetRate(),
		},
		State:     RedriveState(m.GetState()),
		Moved:     m.GetMoved(),
		Remaining: m.GetRemaining(),
		Cursor:    m.GetCursor(),
		LastError: m.GetLastError(),
		CreatedBy: m.GetCreatedBy(),
		CreatedAt: t(m.GetCreatedAt()),
		UpdatedAt: t(m.GetUpdatedAt()),
		EndedAt:   t(m.GetEndedAt()),
		EndedBy:   m.GetEndedBy(),
	}
}

// PreviewRedrive counts the dead letters a redrive with o would move and
// returns up to sample of them (0: the server's 10). It starts nothing.
func (c *Client) PreviewRedrive(ctx context.Context, o RedriveOptions, sample uint32) (RedrivePreview, error) {
	var out RedrivePreview
	err := c.call(ctx, "preview redrive", retrySafe, 0, func(ctx context.Context, a *attempt) error {
		resp, err := seppv1.NewAdminServiceClient(a.cc).PreviewRedrive(ctx, &seppv1.PreviewRedriveRequest{Redrive: redriveRequest(o), Sample: sample}, c.opts.callOptions...)
		if err != nil {
			return err
		}
		out = RedrivePreview{Matching: resp.GetMatching()}
		for _, r := range resp.GetSample() {
			out.Sample = append(out.Sample, deadLetterFromProto(r))
		}
		return nil
	})
	return out, err
}

// StartRedrive starts a redrive task. Not retried once it may have been
// applied (a retry could start a second task).
func (c *Client) StartRedrive(ctx context.Context, o RedriveOptions) (RedriveTask, error) {
	var out RedriveTask
	err := c.call(ctx, "start redrive", retryNotSent, 0, func(ctx context.Context, a *attempt) error {
		resp, err := seppv1.NewAdminServiceClient(a.cc).StartRedrive(ctx, redriveRequest(o), c.opts.callOptions...)
		if err != nil {
			return err
		}
		out = redriveTaskFromProto(resp.GetTask())
		return nil
	})
	return out, err
}

// ListRedrives lists the running and paused tasks and the audit records of
// ended ones, by id.
func (c *Client) ListRedrives(ctx context.Context, stale bool) ([]RedriveTask, error) {
	var out []RedriveTask
	err := c.call(ctx, "list redrives", retrySafe, 0, func(ctx context.Context, a *attempt) error {
		resp, err := seppv1.NewAdminServiceClient(a.cc).ListRedrives(ctx, &seppv1.ListRedrivesRequest{AllowStale: stale}, c.opts.callOptions...)
		if err != nil {
			return err
		}
		out = out[:0]
		for _, t := range resp.GetTasks() {
			out = append(out, redriveTaskFromProto(t))
		}
		return nil
	})
	return out, err
}

// GetRedrive returns one task or audit record.
func (c *Client) GetRedrive(ctx context.Context, id uint64, stale bool) (RedriveTask, error) {
	var out RedriveTask
	err := c.call(ctx, "get redrive", retrySafe, 0, func(ctx context.Context, a *attempt) error {
		resp, err := seppv1.NewAdminServiceClient(a.cc).GetRedrive(ctx, &seppv1.GetRedriveRequest{Id: id, AllowStale: stale}, c.opts.callOptions...)
		if err != nil {
			return err
		}
		out = redriveTaskFromProto(resp.GetTask())
		return nil
	})
	return out, err
}

// PauseRedrive, ResumeRedrive and CancelRedrive change a task's state (a
// task not in a state that allows it is FailedPrecondition). A repeat after
// a lost answer is refused, not applied twice, so they are not retried once
// sent.
func (c *Client) PauseRedrive(ctx context.Context, id uint64) (RedriveTask, error) {
	return c.redriveAction(ctx, "pause redrive", func(ctx context.Context, ac seppv1.AdminServiceClient) (*seppv1.RedriveTask, error) {
		resp, err := ac.PauseRedrive(ctx, &seppv1.PauseRedriveRequest{Id: id}, c.opts.callOptions...)
		return resp.GetTask(), err
	})
}

func (c *Client) ResumeRedrive(ctx context.Context, id uint64) (RedriveTask, error) {
	return c.redriveAction(ctx, "resume redrive", func(ctx context.Context, ac seppv1.AdminServiceClient) (*seppv1.RedriveTask, error) {
		resp, err := ac.ResumeRedrive(ctx, &seppv1.ResumeRedriveRequest{Id: id}, c.opts.callOptions...)
		return resp.GetTask(), err
	})
}

func (c *Client) CancelRedrive(ctx context.Context, id uint64) (RedriveTask, error) {
	return c.redriveAction(ctx, "cancel redrive", func(ctx context.Context, ac seppv1.AdminServiceClient) (*seppv1.RedriveTask, error) {
		resp, err := ac.CancelRedrive(ctx, &seppv1.CancelRedriveRequest{Id: id}, c.opts.callOptions...)
		return resp.GetTask(), err
	})
}

// redriveAction runs one of the state changes, not retried once sent.
func (c *Client) redriveAction(ctx context.Context, op string, rpc func(context.Context, seppv1.AdminServiceClient) (*seppv1.RedriveTask, error)) (RedriveTask, error) {
	var out RedriveTask
	err := c.call(ctx, op, retryNotSent, 0, func(ctx context.Context, a *attempt) error {
		task, err := rpc(ctx, seppv1.NewAdminServiceClient(a.cc))
		if err != nil {
			return err
		}
		out = redriveTaskFromProto(task)
		return nil
	})
	return out, err
}
