package engine

import (
	"fmt"
	"time"
)

// Actions on live jobs an operator takes: delete a waiting job, run a
// scheduled one now, reschedule, change priority, cancel a reserved one.
// Each acts on a list of
// ids and answers per id, like the dead-letter actions; a job in a state the
// action does not take is ErrWrongState, an unknown id ErrNotFound, and the
// others go ahead.

// JobAction names an action on live jobs.
type JobAction uint8

// The actions.
const (
	JobActionUnknown      JobAction = iota
	JobActionDelete                 // remove a Ready or Scheduled job for good (counted as purged)
	JobActionRunNow                 // make a Scheduled job Ready now
	JobActionReschedule             // hold a Ready or Scheduled job until RunAt (now or earlier: Ready)
	JobActionPriority               // give a live job Priority; a Ready one takes its place by it and its original enqueue time
	JobActionCancel                 // revoke a Reserved job's lease and dead-letter it, cause cancelled
	JobActionCancelDelete           // revoke a Reserved job's lease and remove it for good (counted as purged)
)

// DefaultCancelReason is the reason a cancelled attempt records when the
// operator gives none.
const DefaultCancelReason = "cancelled by an operator"

func (a JobAction) String() string {
	switch a {
	case JobActionDelete:
		return "delete"
	case JobActionRunNow:
		return "run-now"
	case JobActionReschedule:
		return "reschedule"
	case JobActionPriority:
		return "priority"
	case JobActionCancel:
		return "cancel"
	case JobActionCancelDelete:
		return "cancel-delete"
	}
	return fmt.Sprintf("JobAction(%d)", uint8(a))
}

// JobActionParams is one action on a list of jobs.
type JobActionParams struct {
	Action   JobAction
	IDs      []JobID
	RunAt    time.Time // JobActionReschedule
	Priority uint32    // JobActionPriority, 0..9
	Reason   string    // JobActionCancel, JobActionCancelDelete: recorded as the attempt's and the job's last reason
}

// ActOnJobs applies p to each id in order. A bad action or priority fails
// the whole call (ErrInvalidArgument) and changes nothing.
func (e *Engine) ActOnJobs(now time.Time, p JobActionParams) ([]ItemResult, error) {
	switch p.Action {
	case JobActionDelete, JobActionRunNow, JobActionReschedule, JobActionCancel, JobActionCancelDelete:
	case JobActionPriority:
		if p.Priority > MaxPriority {
			return nil, invalid("priority", "must be 0..%d, got %d", MaxPriority, p.Priority)
		}
	default:
		return nil, invalid("action", "must be delete, run-now, reschedule, priority, cancel or cancel-delete, got %d", p.Action)
	}
	e.advance(now)
	out := make([]ItemResult, len(p.IDs))
	for i, id := range p.IDs {
		out[i] = ItemResult{JobID: id, Err: e.actOnJob(p, id)}
	}
	return out, nil
}

func (e *Engine) actOnJob(p JobActionParams, id JobID) error {
	j := e.jobForChange(id)
	switch {
	case j == nil && e.dead[id] != nil:
		return fmt.Errorf("job %d is dead-lettered; requeue or delete its record instead: %w", id, ErrWrongState)
	case j == nil:
		return fmt.Errorf("job %d: %w", id, ErrNotFound)
	}
	switch p.Action {
	case JobActionCancel, JobActionCancelDelete:
		return e.cancelJob(j, p)
	case JobActionDelete:
		if j.state == StateReserved {
			return fmt.Errorf("job %d is reserved by a worker; only ready or scheduled jobs can be deleted: %w", id, ErrWrongState)
		}
		e.removeLive(j)
	case JobActionRunNow:
		switch j.state {
		case StateReady:
			return nil // already runnable
		case StateBlocked:
			return fmt.Errorf("job %d is blocked until its parents end; it cannot run before them: %w", id, ErrWrongState)
		case StateReserved:
			return fmt.Errorf("job %d is reserved by a worker, running already: %w", id, ErrWrongState)
		}
		e.detach(j)
		e.makeReady(j)
	case JobActionReschedule:
		if j.state == StateBlocked {
			return fmt.Errorf("job %d is blocked until its parents end; only ready or scheduled jobs can be rescheduled: %w", id, ErrWrongState)
		}
		if j.state == StateReserved {
			return fmt.Errorf("job %d is reserved by a worker; only ready or scheduled jobs can be rescheduled: %w", id, ErrWrongState)
		}
		latest := addSat(e.now, j.q.set.horizon)
		at := toNanos(p.RunAt)
		if at > latest || p.RunAt.After(maxTime) {
			return &ScheduledTooFarError{Queue: j.q.name, Horizon: time.Duration(j.q.set.horizon), Requested: p.RunAt, Latest: fromNanos(latest)}
		}
		e.detach(j)
		before := e.jobCharge(j)
		if at > e.now {
			j.extension().scheduledAt = at
			e.makeScheduled(j, at, false)
		} else {
			if j.ext != nil {
				j.ext.scheduledAt = 0
			}
			e.makeReady(j)
		}
		e.charge(j.q, e.jobCharge(j)-before)
	case JobActionPriority:
		prio := uint8(p.Priority)
		if j.state != StateReady {
			j.priority = prio // a Scheduled job is lined up by it when promoted, a Reserved one on its next delivery
			return nil
		}
		e.detach(j)
		j.priority = prio
		e.makeReady(j) // by id: its original enqueue order within the new level
	}
	return nil
}

// cancelJob revokes a Reserved job's lease at once: the worker's next
// extend, ack or nack names a lease that is gone and gets ErrLeaseLost. The
// attempt is recorded with the outcome cancelled and the job is
// dead-lettered (cause cancelled, without retry whatever attempts are
// left) or, for JobActionCancelDelete, removed and counted as purged.
func (e *Engine) cancelJob(j *job, p JobActionParams) error {
	if j.state != StateReserved {
		return fmt.Errorf("job %d is %v, not reserved by a worker; delete or dead-letter it instead: %w", j.id, j.state, ErrWrongState)
	}
	if p.Action == JobActionCancel && !e.canRetainDead() {
		return e.deadStoreFull()
	}
	reason := cleanReason(p.Reason)
	if reason == "" {
		reason = DefaultCancelReason
	}
	rec := e.attemptOf(j)
	e.detach(j)
	if p.Action == JobActionCancelDelete {
		e.jobs.del(j.id)
		e.charge(j.q, -e.jobHeld(j))
		e.releasePayload(j)
		j.q.purged++
		e.settle(j, parentRemoved, CauseUnknown)
		return nil
	}
	before := e.jobCharge(j)
	e.recordAttempt(j, rec, outcomeCancelled, reason)
	j.extension().lastReason = reason
	e.charge(j.q, e.jobCharge(j)-before)
	e.cancelUsed = true
	e.kill(j, CauseCancelled)
	return nil
}
