package client

import (
	"context"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	seppv1 "github.com/sepp-io/sepp/proto/sepp/v1"
)

// Actions on live jobs. Each answers per id; a job in a state the action
// does not take reports ErrWrongState, an unknown one ErrNotFound.

// DeleteJobs removes Ready or Scheduled jobs for good. After a retry whose
// first attempt may have applied, an id can report ErrNotFound although it
// was deleted.
func (c *Client) DeleteJobs(ctx context.Context, ids []uint64) ([]ActionResult, error) {
	return c.action(ctx, "delete jobs", ids, func(ctx context.Context, admin seppv1.AdminServiceClient) ([]*seppv1.JobActionResult, error) {
		resp, err := admin.DeleteJobs(ctx, &seppv1.DeleteJobsRequest{JobIds: ids}, c.opts.callOptions...)
		return resp.GetResults(), err
	})
}

// RunJobsNow makes Scheduled jobs Ready now.
func (c *Client) RunJobsNow(ctx context.Context, ids []uint64) ([]ActionResult, error) {
	return c.action(ctx, "run jobs now", ids, func(ctx context.Context, admin seppv1.AdminServiceClient) ([]*seppv1.JobActionResult, error) {
		resp, err := admin.RunJobsNow(ctx, &seppv1.RunJobsNowRequest{JobIds: ids}, c.opts.callOptions...)
		return resp.GetResults(), err
	})
}

// RescheduleJobs holds Ready or Scheduled jobs until runAt (at or before
// now: Ready at once).
func (c *Client) RescheduleJobs(ctx context.Context, ids []uint64, runAt time.Time) ([]ActionResult, error) {
	return c.action(ctx, "reschedule jobs", ids, func(ctx context.Context, admin seppv1.AdminServiceClient) ([]*seppv1.JobActionResult, error) {
		resp, err := admin.RescheduleJobs(ctx, &seppv1.RescheduleJobsRequest{JobIds: ids, RunAt: timestamppb.New(runAt)}, c.opts.callOptions...)
		return resp.GetResults(), err
	})
}

// SetJobsPriority gives live jobs a priority (0..9); a Ready job takes its
// place by it and its original enqueue time.
func (c *Client) SetJobsPriority(ctx context.Context, ids []uint64, priority uint32) ([]ActionResult, error) {
	return c.action(ctx, "set jobs priority", ids, func(ctx context.Context, admin seppv1.AdminServiceClient) ([]*seppv1.JobActionResult, error) {
		resp, err := admin.SetJobsPriority(ctx, &seppv1.SetJobsPriorityRequest{JobIds: ids, Priority: priority}, c.opts.callOptions...)
		return resp.GetResults(), err
	})
}

// CancelJobsOptions says what becomes of cancelled jobs.
type CancelJobsOptions struct {
	// Delete removes the jobs for good instead of dead-lettering them with
	// cause cancelled.
	Delete bool
	// Reason is recorded as the cancelled attempt's and the job's last
	// reason; empty: "cancelled by an operator".
	Reason string
}

// CancelJobs cancels Reserved jobs: each lease is revoked at once, so the
// worker's next extend, ack or nack reports ErrLeaseLost (a Worker cancels
// its handler's context on its next heartbeat), and the job becomes a dead
// letter with cause CauseCancelled, or is removed with opts.Delete. A job
// no worker holds reports ErrWrongState. After a retry whose first attempt
// may have applied, an id can report ErrWrongState or ErrNotFound although
// it was cancelled.
func (c *Client) CancelJobs(ctx context.Context, ids []uint64, opts CancelJobsOptions) ([]ActionResult, error) {
	return c.action(ctx, "cancel jobs", ids, func(ctx context.Context, admin seppv1.AdminServiceClient) ([]*seppv1.JobActionResult, error) {
		resp, err := admin.CancelJobs(ctx, &seppv1.CancelJobsRequest{JobIds: ids, Delete: opts.Delete, Reason: opts.Reason}, c.opts.callOptions...)
		return resp.GetResults(), err
	})
}
