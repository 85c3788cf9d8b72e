package engine

import (
	"container/heap"
	"fmt"
	"slices"
	"strconv"
	"time"
)

// Custom fields a job forwarded to a dead_letter_queue carried before the
// cluster ran recordFields (attempts.go); since then its origin lives in
// Job.Origin and these keys are only read, to convert older jobs.
const (
	FieldOriginQueue  = "sepp.origin_queue"
	FieldOriginJobID  = "sepp.origin_job_id"
	FieldCause        = "sepp.cause"
	FieldLastReason   = "sepp.last_reason"
	FieldFinalAttempt = "sepp.final_attempt"
)

var causeNames = [...]string{
	CauseUnknown:           "unknown",
	CauseAttemptsExhausted: "attempts_exhausted",
	CauseRejected:          "rejected",
	CauseLeaseExpired:      "lease_expired",
	CauseAdmin:             "admin",
	CauseCancelled:         "cancelled",
	CauseExpired:           "expired",
}

// String is the cause's name in the spec: attempts_exhausted, rejected,
// lease_expired, admin, cancelled or expired.
func (c Cause) String() string {
	if int(c) < len(causeNames) {
		return causeNames[c]
	}
	return "cause(" + strconv.Itoa(int(c)) + ")"
}

// Causes lists every cause a record can hold, in a fixed order (for
// output that must not follow a map's iteration order).
func Causes() []Cause {
	return []Cause{CauseAttemptsExhausted, CauseRejected, CauseLeaseExpired, CauseAdmin, CauseCancelled, CauseExpired}
}

var stateNames = [...]string{
	StateUnknown:   "unknown",
	StateScheduled: "scheduled",
	StateReady:     "ready",
	StateReserved:  "reserved",
	StateDead:      "dead",
	StateCompleted: "completed",
	StateBlocked:   "blocked",
}

func (s State) String() string {
	if int(s) < len(stateNames) {
		return stateNames[s]
	}
	return "state(" + strconv.Itoa(int(s)) + ")"
}

// canRetainDead reports whether one more dead job can be kept (or retention
// is off and nothing is kept).
func (e *Engine) canRetainDead() bool {
	return e.lim.DeadLetterRetention <= 0 || len(e.dead) < e.lim.MaxDeadLetters
}

func (e *Engine) deadStoreFull() error {
	return &FieldError{
		Field:  "dead_letters",
		Reason: fmt.Sprintf("the dead-letter store holds %d records, limits.max_dead_letters; drain or delete some first", len(e.dead)),
		Err:    ErrCapacity,
	}
}

// kill dead-letters a detached job: it is forwarded to its queue's
// dead_letter_queue when one is named, then kept as a record while retention
// is on, else dropped and counted. A lease-expiry death (which cannot be
// refused) keeps its record even when the store is at its bound.
func (e *Engine) kill(j *job, cause Cause) {
	q := j.q
	e.dropDeadline(j) // a dead job waits for nothing: a requeued one starts without
	q.deadLettered[cause]++
	e.jobs.del(j.id)
	e.forward(j, cause)
	e.uniqueKilled(j, e.lim.DeadLetterRetention > 0)
	if e.lim.DeadLetterRetention <= 0 {
		e.charge(q, -e.jobHeld(j))
		e.releasePayload(j)
		q.dropped++
		e.settle(j, parentDead, cause)
		return
	}
	before := e.jobCharge(j) // a plain waiting job was charged compact
	j.state = StateDead
	e.charge(q, e.jobCharge(j)-before)
	r := &deadRecord{
		j:            j,
		cause:        cause,
		failedAt:     e.now,
		expiresAt:    addSat(e.now, int64(e.lim.DeadLetterRetention)),
		finalAttempt: j.attempt,
	}
	e.linkDead(r)
	e.settle(j, parentDead, cause)
}

// linkDead appends r at the tail of both failed_at lists.
func (e *Engine) linkDead(r *deadRecord) {
	q := r.j.q
	r.prev = e.deadTail
	if e.deadTail != nil {
		e.deadTail.next = r
	} else {
		e.deadHead = r
	}
	e.deadTail = r
	r.qprev = q.deadTail
	if q.deadTail != nil {
		q.deadTail.qnext = r
	} else {
		q.deadHead = r
	}
	q.deadTail = r
	q.nDead++
	e.charge(q, deadRecordOverhead)
	heap.Push(&e.deadExp, r)
	e.dead[r.j.id] = r
}

func (e *Engine) unlinkDead(r *deadRecord) {
	q := r.j.q
	if r.prev != nil {
		r.prev.next = r.next
	} else {
		e.deadHead = r.next
	}
	if r.next != nil {
		r.next.prev = r.prev
	} else {
		e.deadTail = r.prev
	}
	if r.qprev != nil {
		r.qprev.qnext = r.qnext
	} else {
		q.deadHead = r.qnext
	}
	if r.qnext != nil {
		r.qnext.qprev = r.qprev
	} else {
		q.deadTail = r.qprev
	}
	r.prev, r.next, r.qprev, r.qnext = nil, nil, nil, nil
	q.nDead--
	e.charge(q, -deadRecordOverhead)
	heap.Remove(&e.deadExp, r.expIdx)
	delete(e.dead, r.j.id)
}

// dropDead removes a record and its job for good (drained, deleted,
// expired), releasing the job's charge too.
func (e *Engine) dropDead(r *deadRecord) {
	e.unlinkDead(r)
	e.uniqueDropped(r.j)
	e.charge(r.j.q, -e.jobHeld(r.j))
	e.releasePayload(r.j)
}

// forward enqueues a copy of a dying job onto its queue's dead_letter_queue:
// same type, payload, priority and custom fields, plus fields naming the
// origin, the cause, the last reason and the final attempt. The copy is a
// new job with that queue's max attempts; it keeps the dying job's
// priority (once the cluster runs forwardKeepsPriority; before, unless that
// queue set a default_priority of its own, see ApplyDeclared). It is
// internal, so the queue's max length and the custom-field limits do not
// refuse it: a death is never lost.
func (e *Engine) forward(j *job, cause Cause) {
	name := j.q.set.deadLetterQueue
	if name == "" {
		return
	}
	dq := e.queues[name]
	if dq == nil {
		dq = e.createQueue(name)
	}
	var lastReason string
	var custom map[string]string
	if j.ext != nil {
		lastReason = j.ext.lastReason
		if len(j.ext.custom) > 0 || !e.recordFields {
			custom = make(map[string]string, len(j.ext.custom)+5)
		}
		for k, v := range j.ext.custom {
			custom[k] = v
		}
	} else if !e.recordFields {
		custom = make(map[string]string, 5)
	}
	maxAttempts := min(dq.set.defaultMaxAttempts, e.lim.MaxAttemptsCeiling)
	// The job is forwarded as it arrived, its priority included, unless the
	// dead-letter queue sets a default_priority of its own; before the
	// cluster runs forwardAsArrived (an older binary may be a member), the
	// copy takes that queue's default priority as those binaries do.
	prio := dq.set.defaultPriority
	if e.forwardKeepsPriority || (e.forwardAsArrived && !dq.set.ownPriority) {
		prio = j.priority
	}
	if e.recordFields {
		// Custom keys as they arrived; the origin in the copy's own fields.
		fj := e.addJob(dq, j.jobType(), e.payloadOf(j), prio, maxAttempts, custom, 0)
		before := e.jobCharge(fj)
		fj.extension().origin = &jobOrigin{queue: j.q.name, jobID: j.id, cause: cause, failedAt: e.now, lastReason: lastReason, finalAttempt: j.attempt}
		e.charge(dq, e.jobCharge(fj)-before)
		e.setTrace(fj, traceOf(j))
		return
	}
	custom[FieldOriginQueue] = j.q.name
	custom[FieldOriginJobID] = strconv.FormatUint(uint64(j.id), 10)
	custom[FieldCause] = cause.String()
	custom[FieldLastReason] = lastReason
	custom[FieldFinalAttempt] = strconv.FormatUint(uint64(j.attempt), 10)
	fj := e.addJob(dq, j.jobType(), e.payloadOf(j), prio, maxAttempts, custom, 0)
	e.setTrace(fj, traceOf(j))
}

// DrainDeadLetters removes and returns up to Max records (default 1, clamped
// to MaxReserveBatch), oldest failed_at first, of one queue or of all.
func (e *Engine) DrainDeadLetters(now time.Time, p DrainParams) ([]DeadLetterRecord, error) {
	if p.Max < 0 {
		return nil, invalid("max", "must not be negative, got %d", p.Max)
	}
	var q *queue
	if p.Queue != "" {
		if err := checkQueueName("queue", p.Queue); err != nil {
			return nil, err
		}
		if q = e.queues[p.Queue]; q == nil {
			e.advance(now)
			return nil, nil
		}
	}
	n := min(max(p.Max, 1), e.lim.MaxReserveBatch)
	e.advance(now)
	var out []DeadLetterRecord
	for len(out) < n {
		var r *deadRecord
		if q != nil {
			r = q.deadHead
		} else {
			r = e.deadHead
		}
		if r == nil {
			break
		}
		out = append(out, e.recordView(r))
		e.dropDead(r)
		r.j.q.deadDrained++
	}
	return out, nil
}

// ListDeadLetters lists retained records without consuming them, by job id
// after page.AfterID; queue "" lists all queues.
func (e *Engine) ListDeadLetters(queue string, page Page) ([]DeadLetterRecord, error) {
	limit, err := pageLimit(page)
	if err != nil {
		return nil, err
	}
	var recs []*deadRecord
	keep := func(r *deadRecord) {
		if r.j.id > page.AfterID {
			recs = append(recs, r)
			if len(recs) >= 4*limit+64 {
				recs = smallestRecords(recs, limit)
			}
		}
	}
	if queue == "" {
		for r := e.deadHead; r != nil; r = r.next {
			keep(r)
		}
	} else {
		q, err := e.queueForRead("queue", queue)
		if err != nil {
			return nil, err
		}
		for r := q.deadHead; r != nil; r = r.qnext {
			keep(r)
		}
	}
	recs = smallestRecords(recs, limit)
	out := make([]DeadLetterRecord, len(recs))
	for i, r := range recs {
		out[i] = e.recordView(r)
	}
	return out, nil
}

func smallestRecords(recs []*deadRecord, limit int) []*deadRecord {
	slices.SortFunc(recs, func(a, b *deadRecord) int { return cmpID(a.j.id, b.j.id) })
	if len(recs) > limit {
		clear(recs[limit:])
		recs = recs[:limit]
	}
	return recs
}

func cmpID(a, b JobID) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// GetDeadLetter returns one retained record.
func (e *Engine) GetDeadLetter(id JobID) (DeadLetterRecord, error) {
	r := e.dead[id]
	if r == nil {
		return DeadLetterRecord{}, fmt.Errorf("dead-letter record of job %d: %w", id, ErrNotFound)
	}
	return e.recordView(r), nil
}

// RequeueDeadLetters puts retained jobs back Ready on their queues with their
// original ids and the attempt counter reset (the next delivery is attempt
// 1). A full queue refuses its item with ErrQueueFull.
func (e *Engine) RequeueDeadLetters(now time.Time, ids []JobID) []ItemResult {
	e.advance(now)
	out := make([]ItemResult, len(ids))
	for i, id := range ids {
		out[i].JobID = id
		r := e.dead[id]
		if r == nil {
			out[i].Err = fmt.Errorf("dead-letter record of job %d: %w", id, ErrNotFound)
			continue
		}
		j := r.j
		q := j.q
		if q.set.maxLength > 0 && q.live() >= q.set.maxLength {
			out[i].Err = &FieldError{Field: "queue", Reason: fmt.Sprintf("queue %q holds %d jobs, its max_length", q.name, q.set.maxLength), Err: ErrQueueFull}
			continue
		}
		e.unlinkDead(r)
		q.deadRequeued++
		before := e.jobCharge(j)
		j.attempt = 0
		e.jobs.set(j)
		e.makeReady(j)
		e.charge(q, e.jobCharge(j)-before) // a plain job is charged compact again
	}
	return out
}

// DeleteDeadLetters removes retained records for good.
func (e *Engine) DeleteDeadLetters(now time.Time, ids []JobID) []ItemResult {
	e.advance(now)
	out := make([]ItemResult, len(ids))
	for i, id := range ids {
		out[i].JobID = id
		r := e.dead[id]
		if r == nil {
			out[i].Err = fmt.Errorf("dead-letter record of job %d: %w", id, ErrNotFound)
			continue
		}
		e.dropDead(r)
		r.j.q.deadDeleted++
	}
	return out
}

// DeadLetterJobs dead-letters live Ready or Scheduled jobs with cause admin;
// reason becomes the record's last reason. A Reserved job is refused with
// ErrWrongState (its worker holds it).
func (e *Engine) DeadLetterJobs(now time.Time, ids []JobID, reason string) []ItemResult {
	e.advance(now)
	reason = cleanReason(reason)
	out := make([]ItemResult, len(ids))
	for i, id := range ids {
		out[i].JobID = id
		j := e.jobForChange(id)
		switch {
		case j == nil && e.dead[id] != nil:
			out[i].Err = fmt.Errorf("job %d is already dead-lettered: %w", id, ErrWrongState)
			continue
		case j == nil:
			out[i].Err = fmt.Errorf("job %d: %w", id, ErrNotFound)
			continue
		case j.state == StateReserved:
			out[i].Err = fmt.Errorf("job %d is reserved by a worker; only ready, scheduled or blocked jobs can be dead-lettered: %w", id, ErrWrongState)
			continue
		case !e.canRetainDead():
			out[i].Err = e.deadStoreFull()
			continue
		}
		e.detach(j)
		if reason != "" {
			before := e.jobCharge(j)
			j.extension().lastReason = reason
			e.charge(j.q, e.jobCharge(j)-before)
		}
		e.kill(j, CauseAdmin)
	}
	return out
}

func (e *Engine) recordView(r *deadRecord) DeadLetterRecord {
	v := DeadLetterRecord{
		Job:          e.view(r.j),
		Cause:        r.cause,
		FailedAt:     fromNanos(r.failedAt),
		FinalAttempt: r.finalAttempt,
	}
	v.LastReason = v.Job.LastReason
	return v
}

// ToEnqueue rebuilds an enqueue request for the record's queue: replaying it
// adds a fresh job (new id, attempt 1) with the same type, payload, priority,
// custom fields and max attempts.
func (r DeadLetterRecord) ToEnqueue() EnqueueParams {
	prio := r.Job.Priority
	var custom map[string]string
	if len(r.Job.Custom) > 0 {
		custom = make(map[string]string, len(r.Job.Custom))
		for k, v := range r.Job.Custom {
			custom[k] = v
		}
	}
	return EnqueueParams{
		Queue:       r.Job.Queue,
		JobType:     r.Job.JobType,
		Payload:     slices.Clone(r.Job.Payload),
		Priority:    &prio,
		MaxAttempts: r.Job.MaxAttempts,
		Custom:      custom,
	}
}

// ForwardKeepsPriority reports whether a forwarded job keeps its priority
// whatever its dead_letter_queue's default_priority
// (EnableForwardKeepsPriority).
func (e *Engine) ForwardKeepsPriority() bool { return e.forwardKeepsPriority }

// EnableForwardKeepsPriority turns forwardKeepsPriority on: from now on a
// job forwarded to a dead_letter_queue arrives with the priority it had,
// as the subscriber spec forwards a job "as it arrived"; that queue's
// default_priority applies only to jobs enqueued without one. The leader
// proposes it (a ConfigSet of fsm.CommandVersionDeadLetterEdges) only once
// every member applies it. Enabling twice changes nothing.
func (e *Engine) EnableForwardKeepsPriority(now time.Time) {
	e.advance(now)
	e.forwardKeepsPriority = true
}

// CheckDeadLetterTarget refuses, with ErrNotFound naming it, a
// dead_letter_queue that names no existing queue: a typo would otherwise
// send dead jobs to a queue nobody watches, created by the first death.
// Empty (no forwarding) passes. The fsm calls it for a QueueCreate or
// QueueUpdate of fsm.CommandVersionDeadLetterEdges; older entries keep
// their old behaviour.
func (e *Engine) CheckDeadLetterTarget(field, target string) error {
	if target == "" || e.queues[target] != nil {
		return nil
	}
	return &FieldError{Field: field, Reason: fmt.Sprintf("queue %q does not exist; create it first (a dead_letter_queue must name an existing queue)", target), Err: ErrNotFound}
}
