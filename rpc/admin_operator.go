package rpc

import (
	"context"

	"github.com/sepp-io/sepp/apiconv"
	"github.com/sepp-io/sepp/engine"
	seppv1 "github.com/sepp-io/sepp/proto/sepp/v1"
)

// Queues as managed objects (engine/queues.go) on the AdminService: GetQueue
// reads (viewer); CreateQueue, UpdateQueue, DeleteQueue and PurgeQueue act
// (operator) through the log.

func (s *adminService) GetQueue(ctx context.Context, req *seppv1.GetQueueRequest) (*seppv1.GetQueueResponse, error) {
	var stats engine.QueueStats
	var own engine.QueueConfig
	var lim engine.Limits
	if err := s.b.Read(ctx, req.GetAllowStale(), func(e engine.View) error {
		var err error
		if stats, err = e.QueueStats(s.now(), req.GetName()); err != nil {
			return renameField(err, "queue", "name")
		}
		cfg := e.Config()
		lim = cfg.Limits
		own = engine.QueueConfig{Name: req.GetName()}
		for _, q := range cfg.Queues {
			if q.Name == req.GetName() {
				own = q
			}
		}
		return nil
	}); err != nil {
		return nil, err
	}
	return &seppv1.GetQueueResponse{
		Summary:   queueStatsToProto(stats),
		Settings:  apiconv.QueueSettings(own),
		Effective: queueLimitsToProto(own, lim),
		Stale:     s.isStale(req.GetAllowStale()),
	}, nil
}

func (s *adminService) CreateQueue(ctx context.Context, req *seppv1.CreateQueueRequest) (*seppv1.CreateQueueResponse, error) {
	qc, err := apiconv.QueueConfig(req.GetName(), req.GetSettings())
	if err != nil {
		return nil, err
	}
	if _, err := Propose(ctx, s.b, engine.CreateQueueOp{Config: qc, Paused: req.GetPaused()}); err != nil {
		return nil, err
	}
	eff, err := s.effective(ctx, req.GetName())
	if err != nil {
		return nil, err
	}
	return &seppv1.CreateQueueResponse{Effective: eff}, nil
}

func (s *adminService) UpdateQueue(ctx context.Context, req *seppv1.UpdateQueueRequest) (*seppv1.UpdateQueueResponse, error) {
	// The same conversion the state machine applies a command of version
	// 22 with, which holds these settings as they are (apiconv).
	u, err := apiconv.QueueUpdate(req.GetName(), req.GetSettings(), req.GetInherit(), req.Paused)
	if err != nil {
		return nil, err
	}
	if _, err := Propose(ctx, s.b, engine.UpdateQueueOp{Update: u}); err != nil {
		return nil, renameField(err, "queue", "name")
	}
	eff, err := s.effective(ctx, req.GetName())
	if err != nil {
		return nil, err
	}
	return &seppv1.UpdateQueueResponse{Effective: eff}, nil
}

func (s *adminService) DeleteQueue(ctx context.Context, req *seppv1.DeleteQueueRequest) (*seppv1.DeleteQueueResponse, error) {
	res, err := Propose(ctx, s.b, engine.DeleteQueueOp{Queue: req.GetName(), Force: req.GetForce()})
	if err != nil {
		return nil, renameField(err, "queue", "name")
	}
	return &seppv1.DeleteQueueResponse{JobsRemoved: uint64(res.Jobs), DeadLettersRemoved: uint64(res.DeadLetters)}, nil
}

func (s *adminService) PurgeQueue(ctx context.Context, req *seppv1.PurgeQueueRequest) (*seppv1.PurgeQueueResponse, error) {
	var target engine.PurgeTarget
	switch req.GetTarget() {
	case seppv1.PurgeTarget_PURGE_TARGET_WAITING:
		target = engine.PurgeWaiting
	case seppv1.PurgeTarget_PURGE_TARGET_DEAD_LETTERS:
		target = engine.PurgeDeadLetters
	default:
		return nil, invalidField("target", "PURGE_TARGET_WAITING or PURGE_TARGET_DEAD_LETTERS", "must be PURGE_TARGET_WAITING or PURGE_TARGET_DEAD_LETTERS, got %v", req.GetTarget())
	}
	res, err := Propose(ctx, s.b, engine.PurgeQueueOp{Queue: req.GetName(), Target: target})
	if err != nil {
		return nil, renameField(err, "queue", "name")
	}
	return &seppv1.PurgeQueueResponse{JobsRemoved: uint64(res.Jobs), DeadLettersRemoved: uint64(res.DeadLetters)}, nil
}

// effective reads a queue's effective settings after a write (on the
// leader, which has just applied it).
func (s *adminService) effective(ctx context.Context, name string) (*seppv1.QueueLimits, error) {
	var out *seppv1.QueueLimits
	err := s.b.Read(ctx, true, func(e engine.View) error {
		cfg := e.Config()
		own := engine.QueueConfig{Name: name}
		for _, q := range cfg.Queues {
			if q.Name == name {
				own = q
			}
		}
		out = queueLimitsToProto(own, cfg.Limits)
		return nil
	})
	return out, err
}

// Actions on live jobs (engine/jobactions.go).

func (s *adminService) actOnJobs(ctx context.Context, rawIDs []uint64, p engine.JobActionParams) ([]*seppv1.JobActionResult, error) {
	ids, err := jobIDs("job_ids", rawIDs)
	if err != nil {
		return nil, err
	}
	p.IDs = ids
	res, err := Propose(ctx, s.b, engine.ActOnJobsOp{Params: p})
	if err != nil {
		return nil, err
	}
	return itemResultsToProto(res), nil
}

func (s *adminService) DeleteJobs(ctx context.Context, req *seppv1.DeleteJobsRequest) (*seppv1.DeleteJobsResponse, error) {
	res, err := s.actOnJobs(ctx, req.GetJobIds(), engine.JobActionParams{Action: engine.JobActionDelete})
	if err != nil {
		return nil, err
	}
	return &seppv1.DeleteJobsResponse{Results: res}, nil
}

func (s *adminService) RunJobsNow(ctx context.Context, req *seppv1.RunJobsNowRequest) (*seppv1.RunJobsNowResponse, error) {
	res, err := s.actOnJobs(ctx, req.GetJobIds(), engine.JobActionParams{Action: engine.JobActionRunNow})
	if err != nil {
		return nil, err
	}
	return &seppv1.RunJobsNowResponse{Results: res}, nil
}

func (s *adminService) RescheduleJobs(ctx context.Context, req *seppv1.RescheduleJobsRequest) (*seppv1.RescheduleJobsResponse, error) {
	if req.GetRunAt() == nil {
		return nil, invalidField("run_at", "a timestamp", "is required: the timestamp the jobs become Ready at")
	}
	if err := req.GetRunAt().CheckValid(); err != nil {
		return nil, invalidField("run_at", "a valid timestamp", "is not a valid timestamp: %v", err)
	}
	res, err := s.actOnJobs(ctx, req.GetJobIds(), engine.JobActionParams{Action: engine.JobActionReschedule, RunAt: req.GetRunAt().AsTime()})
	if err != nil {
		return nil, err
	}
	return &seppv1.RescheduleJobsResponse{Results: res}, nil
}

func (s *adminService) SetJobsPriority(ctx context.Context, req *seppv1.SetJobsPriorityRequest) (*seppv1.SetJobsPriorityResponse, error) {
	res, err := s.actOnJobs(ctx, req.GetJobIds(), engine.JobActionParams{Action: engine.JobActionPriority, Priority: req.GetPriority()})
	if err != nil {
		return nil, err
	}
	return &seppv1.SetJobsPriorityResponse{Results: res}, nil
}

func (s *adminService) CancelJobs(ctx context.Context, req *seppv1.CancelJobsRequest) (*seppv1.CancelJobsResponse, error) {
	action := engine.JobActionCancel
	if req.GetDelete() {
		action = engine.JobActionCancelDelete
	}
	res, err := s.actOnJobs(ctx, req.GetJobIds(), engine.JobActionParams{Action: action, Reason: req.GetReason()})
	if err != nil {
		return nil, err
	}
	return &seppv1.CancelJobsResponse{Results: res}, nil
}
