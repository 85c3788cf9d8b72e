package rpc

import (
	"context"
	"fmt"

	"github.com/sepp-io/sepp/engine"
	seppv1 "github.com/sepp-io/sepp/proto/sepp/v1"
)

// Page sizes of the admin listings (the engine clamps the same way; the rpc
// layer needs them to tell a full page from the last one).
const (
	defaultPageSize = 100
	maxPageSize     = 1000
)

func pageSize(limit uint32) int {
	switch {
	case limit == 0:
		return defaultPageSize
	case limit > maxPageSize:
		return maxPageSize
	}
	return int(limit)
}

// adminService implements sepp.v1.AdminService. Reads go through
// Backend.Read: consistent (leader-confirmed) unless the request allows a
// stale answer, which the response then flags.
type adminService struct {
	seppv1.UnimplementedAdminServiceServer
	*server
}

// isStale reports whether an answer read with allowStale may lag the
// leader: it is read from this node's state and this node does not lead.
func (s *adminService) isStale(allowStale bool) bool {
	return allowStale && s.b.Leader().ID != s.b.Self().ID
}

func (s *adminService) ListQueues(ctx context.Context, req *seppv1.ListQueuesRequest) (*seppv1.ListQueuesResponse, error) {
	filter := make([]engine.TagFilter, 0, len(req.GetTag()))
	for i, term := range req.GetTag() {
		f, err := engine.ParseTagFilter(term)
		if err != nil {
			return nil, renameField(err, "tag", fmt.Sprintf("tag[%d]", i))
		}
		filter = append(filter, f)
	}
	var stats []engine.QueueStats
	if err := s.b.Read(ctx, req.GetAllowStale(), func(e engine.View) error {
		stats = e.Stats(s.now())
		return nil
	}); err != nil {
		return nil, err
	}
	out := &seppv1.ListQueuesResponse{Stale: s.isStale(req.GetAllowStale())}
	for _, q := range stats {
		if engine.MatchTags(q.Tags, filter) {
			out.Queues = append(out.Queues, queueStatsToProto(q))
		}
	}
	return out, nil
}

func (s *adminService) ListJobs(ctx context.Context, req *seppv1.ListJobsRequest) (*seppv1.ListJobsResponse, error) {
	state := jobStateFromProto(req.GetState())
	switch state {
	case engine.StateScheduled, engine.StateReady, engine.StateReserved, engine.StateBlocked, engine.StateCompleted:
	default:
		return nil, invalidField("state", "one of JOB_STATE_SCHEDULED, JOB_STATE_READY, JOB_STATE_RESERVED, JOB_STATE_BLOCKED, JOB_STATE_COMPLETED",
			"must be JOB_STATE_SCHEDULED, JOB_STATE_READY, JOB_STATE_RESERVED, JOB_STATE_BLOCKED or JOB_STATE_COMPLETED (dead jobs: ListDeadLetters)")
	}
	size := pageSize(req.GetLimit())
	var jobs []engine.Job
	if err := s.b.Read(ctx, req.GetAllowStale(), func(e engine.View) error {
		var err error
		jobs, err = e.ListJobs(req.GetQueue(), state, engine.Page{AfterID: engine.JobID(req.GetAfterJobId()), Limit: size})
		return err
	}); err != nil {
		return nil, err
	}
	out := &seppv1.ListJobsResponse{Stale: s.isStale(req.GetAllowStale())}
	for _, j := range jobs {
		out.Jobs = append(out.Jobs, jobToProto(j))
	}
	if len(jobs) == size {
		out.NextAfterJobId = uint64(jobs[len(jobs)-1].ID)
	}
	return out, nil
}

func (s *adminService) GetJob(ctx context.Context, req *seppv1.GetJobRequest) (*seppv1.GetJobResponse, error) {
	if req.GetJobId() == 0 {
		return nil, invalidField("job_id", "> 0", "is required (> 0)")
	}
	var out *seppv1.Job
	if err := s.b.Read(ctx, req.GetAllowStale(), func(e engine.View) error {
		job, err := e.GetJob(engine.JobID(req.GetJobId()))
		if err != nil {
			return err
		}
		out = jobToProto(job)
		if hasCompletedParent(&job) {
			fillParentResults(e, []*seppv1.Job{out}, parentResultsBudget(s.opts.MaxMessageBytes))
		}
		return nil
	}); err != nil {
		return nil, err
	}
	return &seppv1.GetJobResponse{Job: out, Stale: s.isStale(req.GetAllowStale())}, nil
}

func (s *adminService) ListDeadLetters(ctx context.Context, req *seppv1.ListDeadLettersRequest) (*seppv1.ListDeadLettersResponse, error) {
	size := pageSize(req.GetLimit())
	var recs []engine.DeadLetterRecord
	if err := s.b.Read(ctx, req.GetAllowStale(), func(e engine.View) error {
		var err error
		recs, err = e.ListDeadLetters(req.GetQueue(), engine.Page{AfterID: engine.JobID(req.GetAfterJobId()), Limit: size})
		return err
	}); err != nil {
		return nil, err
	}
	out := &seppv1.ListDeadLettersResponse{Records: deadLettersToProto(recs), Stale: s.isStale(req.GetAllowStale())}
	if len(recs) == size {
		out.NextAfterJobId = uint64(recs[len(recs)-1].Job.ID)
	}
	return out, nil
}

func (s *adminService) GetDeadLetter(ctx context.Context, req *seppv1.GetDeadLetterRequest) (*seppv1.GetDeadLetterResponse, error) {
	if req.GetJobId() == 0 {
		return nil, invalidField("job_id", "> 0", "is required (> 0)")
	}
	var rec engine.DeadLetterRecord
	if err := s.b.Read(ctx, req.GetAllowStale(), func(e engine.View) error {
		var err error
		rec, err = e.GetDeadLetter(engine.JobID(req.GetJobId()))
		return err
	}); err != nil {
		return nil, err
	}
	return &seppv1.GetDeadLetterResponse{Record: deadLetterToProto(rec), Stale: s.isStale(req.GetAllowStale())}, nil
}

func (s *adminService) RequeueDeadLetters(ctx context.Context, req *seppv1.RequeueDeadLettersRequest) (*seppv1.RequeueDeadLettersResponse, error) {
	ids, err := jobIDs("job_ids", req.GetJobIds())
	if err != nil {
		return nil, err
	}
	res, err := Propose(ctx, s.b, engine.RequeueDeadLettersOp{IDs: ids})
	if err != nil {
		return nil, err
	}
	return &seppv1.RequeueDeadLettersResponse{Results: itemResultsToProto(res)}, nil
}

func (s *adminService) DeleteDeadLetters(ctx context.Context, req *seppv1.DeleteDeadLettersRequest) (*seppv1.DeleteDeadLettersResponse, error) {
	ids, err := jobIDs("job_ids", req.GetJobIds())
	if err != nil {
		return nil, err
	}
	res, err := Propose(ctx, s.b, engine.DeleteDeadLettersOp{IDs: ids})
	if err != nil {
		return nil, err
	}
	return &seppv1.DeleteDeadLettersResponse{Results: itemResultsToProto(res)}, nil
}

func (s *adminService) DeadLetterJobs(ctx context.Context, req *seppv1.DeadLetterJobsRequest) (*seppv1.DeadLetterJobsResponse, error) {
	ids, err := jobIDs("job_ids", req.GetJobIds())
	if err != nil {
		return nil, err
	}
	res, err := Propose(ctx, s.b, engine.DeadLetterJobsOp{IDs: ids, Reason: truncateReason(req.GetReason())})
	if err != nil {
		return nil, err
	}
	return &seppv1.DeadLetterJobsResponse{Results: itemResultsToProto(res)}, nil
}

func (s *adminService) PauseQueue(ctx context.Context, req *seppv1.PauseQueueRequest) (*seppv1.PauseQueueResponse, error) {
	if _, err := Propose(ctx, s.b, engine.PauseQueueOp{Queue: req.GetQueue()}); err != nil {
		return nil, err
	}
	return &seppv1.PauseQueueResponse{}, nil
}

func (s *adminService) ResumeQueue(ctx context.Context, req *seppv1.ResumeQueueRequest) (*seppv1.ResumeQueueResponse, error) {
	if _, err := Propose(ctx, s.b, engine.ResumeQueueOp{Queue: req.GetQueue()}); err != nil {
		return nil, err
	}
	return &seppv1.ResumeQueueResponse{}, nil
}
