package client

import (
	"context"
	"errors"
)

// ParentResult is a parent of a job (JobParent) with its result, read
// from the server while the parent's queue keeps completed jobs
// (QueueSettings.CompletedRetention).
type ParentResult struct {
	JobParent
	// Result is a completed parent's result (nil when it gave none).
	Result []byte
	// Kept: the server still holds the completed parent, so Result is
	// its result; false for a parent that did not complete, or whose
	// queue keeps no completed jobs (or kept it past its retention).
	Kept bool
}

// ParentResults reads the results of parents, a job's Job.Parents (a
// Worker's handler has them in Delivery.Job.Parents). The server sends a
// delivery's and GetJob's parents with their results, up to a bound per
// answer; for a completed parent whose result the answer left out (or that
// came from elsewhere, such as ListJobs), it makes a GetJob of the parent,
// which needs a token with the viewer role. A callback enqueued after a
// batch (WithAfter, ParentFailureRun) reads its members' outcomes and
// results so.
func (c *Client) ParentResults(ctx context.Context, parents []JobParent) ([]ParentResult, error) {
	out := make([]ParentResult, len(parents))
	for i, p := range parents {
		out[i].JobParent = p
		if p.State != StateCompleted {
			continue
		}
		if p.ResultKept && !p.ResultOmitted {
			out[i].Result, out[i].Kept = p.Result, true
			continue // carried by the answer
		}
		j, err := c.GetJob(ctx, p.JobID, false)
		switch {
		case errors.Is(err, ErrNotFound):
			continue // completed, its record not kept
		case err != nil:
			return nil, err
		}
		out[i].Result, out[i].Kept = j.Result, true
	}
	return out, nil
}
