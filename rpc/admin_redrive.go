package rpc

import (
	"context"
	"fmt"
	"time"

	"google.golang.org/grpc/peer"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/sepp-io/sepp/auth"
	"github.com/sepp-io/sepp/engine"
	seppv1 "github.com/sepp-io/sepp/proto/sepp/v1"
)

// Redrive tasks (engine/redrive.go) on the AdminService: StartRedrive,
// PauseRedrive, ResumeRedrive and CancelRedrive act (operator) through the
// log, naming the caller's token in the audit record; ListRedrives,
// GetRedrive and PreviewRedrive (a dry run) read (viewer).

const defaultRedriveSample = 10

// auditActor is who an audit record names: the caller's token name, or,
// with admin auth off (no token), "anonymous" and the address the call
// came from (a follower's, when it forwarded the call to the leader).
func auditActor(ctx context.Context) string {
	if name := auth.Caller(ctx); name != "" {
		return name
	}
	if p, ok := peer.FromContext(ctx); ok && p.Addr != nil {
		return "anonymous (" + p.Addr.String() + ")"
	}
	return "anonymous"
}

func (s *adminService) StartRedrive(ctx context.Context, req *seppv1.StartRedriveRequest) (*seppv1.StartRedriveResponse, error) {
	p, err := redriveParamsFromProto(req)
	if err != nil {
		return nil, err
	}
	p.By = auditActor(ctx)
	task, err := Propose(ctx, s.b, engine.StartRedriveOp{Params: p})
	if err != nil {
		return nil, err
	}
	return &seppv1.StartRedriveResponse{Task: redriveTaskToProto(task)}, nil
}

func (s *adminService) PreviewRedrive(ctx context.Context, req *seppv1.PreviewRedriveRequest) (*seppv1.PreviewRedriveResponse, error) {
	p, err := redriveParamsFromProto(req.GetRedrive())
	if err != nil {
		return nil, err
	}
	sample := int(req.GetSample())
	if req.GetSample() == 0 {
		sample = defaultRedriveSample
	} else if req.GetSample() > engine.MaxRedriveSample {
		return nil, &engine.FieldError{Field: "sample", Reason: fmt.Sprintf("must be 0..%d, got %d", engine.MaxRedriveSample, req.GetSample()), Err: engine.ErrInvalidArgument}
	}
	var (
		n    int
		recs []engine.DeadLetterRecord
	)
	if err := s.b.Read(ctx, false, func(e engine.View) error {
		var err error
		n, recs, err = e.RedriveDryRun(s.now(), p, sample)
		return err
	}); err != nil {
		return nil, err
	}
	return &seppv1.PreviewRedriveResponse{Matching: uint64(n), Sample: deadLettersToProto(recs)}, nil
}

func (s *adminService) ListRedrives(ctx context.Context, req *seppv1.ListRedrivesRequest) (*seppv1.ListRedrivesResponse, error) {
	var tasks []engine.RedriveTask
	if err := s.b.Read(ctx, req.GetAllowStale(), func(e engine.View) error {
		tasks = e.RedriveTasks()
		return nil
	}); err != nil {
		return nil, err
	}
	out := &seppv1.ListRedrivesResponse{Tasks: make([]*seppv1.RedriveTask, len(tasks)), Stale: s.isStale(req.GetAllowStale())}
	for i, t := range tasks {
		out.Tasks[i] = redriveTaskToProto(t)
	}
	return out, nil
}

func (s *adminService) GetRedrive(ctx context.Context, req *seppv1.GetRedriveRequest) (*seppv1.GetRedriveResponse, error) {
	var task engine.RedriveTask
	if err := s.b.Read(ctx, req.GetAllowStale(), func(e engine.View) error {
		var err error
		task, err = e.GetRedrive(req.GetId())
		return err
	}); err != nil {
		return nil, err
	}
	return &seppv1.GetRedriveResponse{Task: redriveTaskToProto(task), Stale: s.isStale(req.GetAllowStale())}, nil
}

func (s *adminService) PauseRedrive(ctx context.Context, req *seppv1.PauseRedriveRequest) (*seppv1.PauseRedriveResponse, error) {
	task, err := s.setRedriveState(ctx, req.GetId(), engine.RedrivePaused)
	if err != nil {
		return nil, err
	}
	return &seppv1.PauseRedriveResponse{Task: task}, nil
}

func (s *adminService) ResumeRedrive(ctx context.Context, req *seppv1.ResumeRedriveRequest) (*seppv1.ResumeRedriveResponse, error) {
	task, err := s.setRedriveState(ctx, req.GetId(), engine.RedriveRunning)
	if err != nil {
		return nil, err
	}
	return &seppv1.ResumeRedriveResponse{Task: task}, nil
}

func (s *adminService) CancelRedrive(ctx context.Context, req *seppv1.CancelRedriveRequest) (*seppv1.CancelRedriveResponse, error) {
	task, err := s.setRedriveState(ctx, req.GetId(), engine.RedriveCancelled)
	if err != nil {
		return nil, err
	}
	return &seppv1.CancelRedriveResponse{Task: task}, nil
}

func (s *adminService) setRedriveState(ctx context.Context, id uint64, state engine.RedriveState) (*seppv1.RedriveTask, error) {
	task, err := Propose(ctx, s.b, engine.SetRedriveStateOp{ID: id, State: state, By: auditActor(ctx)})
	if err != nil {
		return nil, err
	}
	return redriveTaskToProto(task), nil
}

func redriveParamsFromProto(req *seppv1.StartRedriveRequest) (engine.RedriveParams, error) {
	sel := req.GetSelection()
	p := engine.RedriveParams{
		Selection: engine.RedriveSelection{Queue: sel.GetQueue(), JobType: sel.GetJobType(), ReasonContains: sel.GetReasonContains()},
		ToQueue:   req.GetToQueue(),
		Fresh:     req.GetFresh(),
	}
	switch c := sel.GetCause(); c {
	case seppv1.DeadLetterCause_DEAD_LETTER_CAUSE_UNSPECIFIED:
	case seppv1.DeadLetterCause_DEAD_LETTER_CAUSE_ATTEMPTS_EXHAUSTED:
		p.Selection.Cause = engine.CauseAttemptsExhausted
	case seppv1.DeadLetterCause_DEAD_LETTER_CAUSE_REJECTED:
		p.Selection.Cause = engine.CauseRejected
	case seppv1.DeadLetterCause_DEAD_LETTER_CAUSE_LEASE_EXPIRED:
		p.Selection.Cause = engine.CauseLeaseExpired
	case seppv1.DeadLetterCause_DEAD_LETTER_CAUSE_ADMIN:
		p.Selection.Cause = engine.CauseAdmin
	case seppv1.DeadLetterCause_DEAD_LETTER_CAUSE_CANCELLED:
		p.Selection.Cause = engine.CauseCancelled
	case seppv1.DeadLetterCause_DEAD_LETTER_CAUSE_EXPIRED:
		p.Selection.Cause = engine.CauseExpired
	default:
		return p, &engine.FieldError{Field: "selection.cause", Reason: fmt.Sprintf("unknown cause %d", c), Err: engine.ErrInvalidArgument}
	}
	var err error
	if p.Selection.FailedAfter, err = optionalTime("selection.failed_after", sel.GetFailedAfter()); err != nil {
		return p, err
	}
	if p.Selection.FailedBefore, err = optionalTime("selection.failed_before", sel.GetFailedBefore()); err != nil {
		return p, err
	}
	if req.GetRate() > engine.MaxRedriveRate {
		return p, &engine.FieldError{Field: "rate", Reason: fmt.Sprintf("must be 1..%d jobs/s (0 for %d), got %d", engine.MaxRedriveRate, engine.DefaultRedriveRate, req.GetRate()), Err: engine.ErrInvalidArgument}
	}
	p.Rate = int(req.GetRate())
	return p, nil
}

func optionalTime(field string, ts *timestamppb.Timestamp) (time.Time, error) {
	if ts == nil {
		return time.Time{}, nil
	}
	if err := ts.CheckValid(); err != nil {
		return time.Time{}, &engine.FieldError{Field: field, Reason: err.Error(), Err: engine.ErrInvalidArgument}
	}
	return ts.AsTime(), nil
}

var redriveStates = map[engine.RedriveState]seppv1.RedriveState{
	engine.RedriveRunning:   seppv1.RedriveState_REDRIVE_STATE_RUNNING,
	engine.RedrivePaused:    seppv1.RedriveState_REDRIVE_STATE_PAUSED,
	engine.RedriveCancelled: seppv1.RedriveState_REDRIVE_STATE_CANCELLED,
	engine.RedriveDone:      seppv1.RedriveState_REDRIVE_STATE_DONE,
}

func redriveTaskToProto(t engine.RedriveTask) *seppv1.RedriveTask {
	s := t.Params.Selection
	return &seppv1.RedriveTask{
		Id: t.ID,
		Selection: &seppv1.RedriveSelection{
			Queue: s.Queue, Cause: causeToProto(s.Cause), JobType: s.JobType, ReasonContains: s.ReasonContains,
			FailedAfter: timestampOrNil(s.FailedAfter), FailedBefore: timestampOrNil(s.FailedBefore),
		},
		ToQueue:   t.Params.ToQueue,
		Fresh:     t.Params.Fresh,
		Rate:      uint32(t.Params.Rate),
		State:     redriveStates[t.State],
		Moved:     t.Moved,
		Remaining: uint64(t.Remaining),
		Cursor:    uint64(t.Cursor),
		LastError: t.LastError,
		CreatedBy: t.Params.By,
		CreatedAt: timestampOrNil(t.CreatedAt),
		UpdatedAt: timestampOrNil(t.UpdatedAt),
		EndedAt:   timestampOrNil(t.EndedAt),
		EndedBy:   t.EndedBy,
	}
}
