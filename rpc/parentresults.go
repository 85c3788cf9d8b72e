package rpc

import (
	"github.com/sepp-io/sepp/engine"
	seppv1 "github.com/sepp-io/sepp/proto/sepp/v1"
)

// A job that ran after others (a workflow's step, a batch's callback) reads
// its parents' results: GetJob and the deliveries of Reserve carry them
// inline (JobParent.result_kept, result), so a worker needs neither another
// call per parent nor a token that may read jobs. They are bounded per
// answer by parentResultsBudget; a result beyond it is marked
// result_omitted and read with GetJob of the parent.

// parentResultsBudget is the room an answer gives its jobs' parents'
// results: a quarter of the message limit, so that the payloads keep the
// rest.
func parentResultsBudget(maxMessageBytes int) int { return maxMessageBytes / 4 }

// hasCompletedParent reports whether a job has a parent that completed, whose
// result it may carry.
func hasCompletedParent(j *engine.Job) bool {
	for _, p := range j.Parents {
		if p.Ended && p.State == engine.StateCompleted {
			return true
		}
	}
	return false
}

// fillParentResults sets, on each completed parent of jobs, its kept
// result, within budget bytes for them all; it returns the budget left.
func fillParentResults(e engine.View, jobs []*seppv1.Job, budget int) int {
	for _, j := range jobs {
		for _, p := range j.GetParents() {
			if !p.GetEnded() || p.GetState() != seppv1.JobState_JOB_STATE_COMPLETED {
				continue
			}
			pj, err := e.GetJob(engine.JobID(p.GetJobId()))
			if err != nil || pj.Completed == nil {
				continue // not kept (or no longer)
			}
			p.ResultKept = true
			if n := len(pj.Completed.Result); n > budget {
				p.ResultOmitted = true
				continue
			}
			budget -= len(pj.Completed.Result)
			p.Result = pj.Completed.Result
		}
	}
	return budget
}
