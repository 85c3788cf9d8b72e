package engine

import (
	"strconv"
	"time"
)

// DefaultAttemptHistory is the default bound of a job's attempt history
// (Limits.AttemptHistory). An entry is charged attemptOverhead +
// attemptDetailOverhead (80 bytes) plus its worker id and reason; with a
// typical 20-byte worker id and 60-byte reason, 25 entries hold about 4 KB
// per job that failed that often, and the worst case (256-byte worker ids
// and 4 KiB reasons) about 110 KB, which MaxJobBytes counts so the config
// check keeps server.max_message_bytes above it.
const DefaultAttemptHistory = 25

// jobOrigin is where a job forwarded to a dead_letter_queue came from: it
// lives in the job's own fields, so a producer's custom keys (even one
// named sepp.cause) are kept as they arrived and never read as ours.
type jobOrigin struct {
	queue        string
	jobID        JobID
	cause        Cause
	failedAt     int64
	lastReason   string
	finalAttempt uint32
}

// Origin is the view of a forwarded job's origin (Job.Origin).
type Origin struct {
	Queue        string // the queue the job died on
	JobID        JobID  // its id there
	Cause        Cause
	FailedAt     time.Time
	LastReason   string
	FinalAttempt uint32
}

func originCharge(o *jobOrigin) int64 {
	if o == nil {
		return 0
	}
	return originOverhead + int64(len(o.queue)) + int64(len(o.lastReason))
}

// Attempt outcomes as the views name them; a nack's directive is in
// Attempt.Directive.
var directiveNames = [...]string{"", "default", "after", "dead_letter"}

// attemptOf captures a Reserved job's delivery before detach ends it: its
// number, worker and, while recordFields is on, its start and lease.
func (e *Engine) attemptOf(j *job) attemptRecord {
	r := attemptRecord{attempt: j.attempt, worker: e.workers[j.id]}
	if e.recordFields {
		r.startedAt = e.started[j.id]
		r.lease = e.leaseOf(j)
	}
	return r
}

// recordAttempt ends rec now with outcome and reason and appends it to the
// job's history, bounded by Limits.AttemptHistory (the oldest go first).
func (e *Engine) recordAttempt(j *job, rec attemptRecord, outcome uint8, reason string) {
	limit := e.lim.AttemptHistory
	if limit <= 0 {
		return
	}
	x := j.extension()
	rec.outcome, rec.at, rec.reason = outcome, e.now, reason
	if len(x.history) >= limit {
		drop := len(x.history) - limit + 1
		x.history = append(x.history[:0], x.history[drop:]...)
	}
	x.history = append(x.history, rec)
}

func attemptView(h attemptRecord) Attempt {
	a := Attempt{
		Attempt:    h.attempt,
		WorkerID:   h.worker,
		At:         fromNanos(h.at),
		Outcome:    outcomeNames[h.outcome],
		Reason:     h.reason,
		LeaseToken: h.lease,
	}
	if h.startedAt != 0 {
		a.StartedAt = fromNanos(h.startedAt)
		a.Duration = time.Duration(h.at - h.startedAt)
	}
	if int(h.directive) < len(directiveNames) {
		a.Directive = directiveNames[h.directive]
	}
	return a
}

func originView(o *jobOrigin) Origin {
	if o == nil {
		return Origin{}
	}
	return Origin{Queue: o.queue, JobID: o.jobID, Cause: o.cause, FailedAt: fromNanos(o.failedAt), LastReason: o.lastReason, FinalAttempt: o.finalAttempt}
}

// RecordFields reports whether the engine records attempt detail and
// forwards origins in dedicated fields (EnableRecordFields).
func (e *Engine) RecordFields() bool { return e.recordFields }

// EnableRecordFields turns recordFields on: from now on attempts record
// their start, lease token and directive, and a job forwarded to a
// dead_letter_queue carries its origin in its own fields, its custom keys
// as they arrived. Jobs forwarded before, whose origin sits in the five
// sepp.* custom keys, are converted: the keys move into the origin fields.
// The leader proposes it (a ConfigSet of fsm.CommandVersionRecordFields)
// only once every member applies it. Enabling twice changes nothing.
func (e *Engine) EnableRecordFields(now time.Time) {
	e.advance(now)
	if e.recordFields {
		return
	}
	e.recordFields = true
	e.jobs.each(func(j *job) bool {
		e.convertLegacyOrigin(j)
		return true
	})
	for r := e.deadHead; r != nil; r = r.next {
		e.convertLegacyOrigin(r.j)
	}
}

// convertLegacyOrigin moves the origin an older forward wrote into custom
// keys into j's origin fields. It converts only a complete, well-formed
// set (the five keys, a numeric job id and attempt, a known cause), so a
// producer's own key named like one of ours stays where it is.
func (e *Engine) convertLegacyOrigin(j *job) {
	x := j.ext
	if x == nil || x.origin != nil || len(x.custom) < 5 {
		return
	}
	o, ok := legacyOrigin(x.custom)
	if !ok {
		return
	}
	before := e.jobCharge(j)
	for _, k := range legacyOriginKeys {
		delete(x.custom, k)
	}
	if len(x.custom) == 0 {
		x.custom = nil
	}
	o.failedAt = j.enqueuedAt // the forwarded copy was enqueued when the original died
	x.origin = o
	e.charge(j.q, e.jobCharge(j)-before)
}

var legacyOriginKeys = [...]string{FieldOriginQueue, FieldOriginJobID, FieldCause, FieldLastReason, FieldFinalAttempt}

func legacyOrigin(custom map[string]string) (*jobOrigin, bool) {
	for _, k := range legacyOriginKeys {
		if _, ok := custom[k]; !ok {
			return nil, false
		}
	}
	id, err := strconv.ParseUint(custom[FieldOriginJobID], 10, 64)
	if err != nil || id == 0 {
		return nil, false
	}
	final, err := strconv.ParseUint(custom[FieldFinalAttempt], 10, 32)
	if err != nil {
		return nil, false
	}
	cause, ok := causeNamed(custom[FieldCause])
	if !ok {
		return nil, false
	}
	q := custom[FieldOriginQueue]
	if checkQueueName("origin", q) != nil {
		return nil, false
	}
	return &jobOrigin{queue: q, jobID: JobID(id), cause: cause, lastReason: custom[FieldLastReason], finalAttempt: uint32(final)}, true
}

func causeNamed(s string) (Cause, bool) {
	for _, c := range Causes() {
		if c.String() == s {
			return c, true
		}
	}
	return CauseUnknown, false
}
