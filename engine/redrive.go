package engine

import (
	"fmt"
	"strings"
	"time"
)

// A redrive task moves the dead-letter records matching a selection back
// into a queue, a bounded number at a time: the leader proposes steps paced
// by its clock at the task's rate, and each step moves the next matching
// records after the task's cursor (the highest record id it has handled),
// so a step replayed after a failover neither skips nor repeats a record.
//
// Records are taken in id order. A task selects only records that failed at
// or before its start: a job requeued by the task that dies again later is
// not picked up a second time, and the selection does not grow while it
// runs.

// RedriveState is where a redrive task is in its life.
type RedriveState uint8

const (
	RedriveUnknown RedriveState = iota
	RedriveRunning
	RedrivePaused
	RedriveCancelled
	RedriveDone
)

var redriveStateNames = [...]string{
	RedriveUnknown:   "unknown",
	RedriveRunning:   "running",
	RedrivePaused:    "paused",
	RedriveCancelled: "cancelled",
	RedriveDone:      "done",
}

func (s RedriveState) String() string {
	if int(s) < len(redriveStateNames) {
		return redriveStateNames[s]
	}
	return fmt.Sprintf("redrive_state(%d)", uint8(s))
}

// Ended reports whether the task has stopped for good.
func (s RedriveState) Ended() bool { return s == RedriveCancelled || s == RedriveDone }

// Redrive bounds and defaults.
const (
	// MaxActiveRedrives bounds the running and paused tasks at once.
	MaxActiveRedrives = 16
	// MaxRedriveAudit is how many ended tasks are kept as audit records;
	// the oldest ended one is forgotten first.
	MaxRedriveAudit = 100
	// DefaultRedriveRate is the rate (jobs/s) of a task that names none.
	DefaultRedriveRate = 100
	// MaxRedriveRate bounds a task's rate.
	MaxRedriveRate = 10000
	// MaxRedriveSample bounds a dry run's sample.
	MaxRedriveSample = 100
	maxRedriveActor  = 256
)

// RedriveSelection picks dead-letter records; an empty field matches all.
type RedriveSelection struct {
	Queue          string // the record's queue
	Cause          Cause  // CauseUnknown: any cause
	JobType        string
	ReasonContains string    // a substring of the last reason
	FailedAfter    time.Time // failed_at >= FailedAfter, when set
	FailedBefore   time.Time // failed_at < FailedBefore, when set
}

// RedriveParams starts a task.
type RedriveParams struct {
	Selection RedriveSelection
	// ToQueue is the queue a fresh replay goes to; "" is each record's own
	// queue. A same-id requeue always returns the job to its own queue.
	ToQueue string
	// Fresh replays each record as a new job (new id, attempt 1), like an
	// enqueue of its fields; otherwise the job itself is requeued with its
	// original id and its attempt counter reset.
	Fresh bool
	Rate  int    // jobs per second; 0 is DefaultRedriveRate
	By    string // who started it, for the audit record
}

// RedriveTask is a view of a task (running, paused, or an audit record).
type RedriveTask struct {
	ID     uint64
	Params RedriveParams
	State  RedriveState
	Moved  uint64
	// Remaining counts the matching records still after the cursor: of a
	// cancelled task, those it left unmoved (as they are now: a record
	// drained or deleted since is no longer counted); 0 once done.
	Remaining int
	Cursor    JobID  // highest record id handled
	LastError string // why the last step stopped short, if it did
	CreatedAt time.Time
	UpdatedAt time.Time
	EndedAt   time.Time // zero until the task ends
	EndedBy   string
}

type redriveTask struct {
	id        uint64
	p         RedriveParams
	state     RedriveState
	moved     uint64
	cursor    JobID
	lastError string
	createdAt int64
	updatedAt int64
	endedAt   int64
	endedBy   string
	// selection bounds as nanoseconds; 0 is unbounded. cutoff is createdAt:
	// only records that failed by the start are selected.
	after, before int64
}

func (t *redriveTask) matches(r *deadRecord) bool {
	s := &t.p.Selection
	switch {
	case r.j.id <= t.cursor,
		r.failedAt > t.createdAt,
		t.after != 0 && r.failedAt < t.after,
		t.before != 0 && r.failedAt >= t.before,
		s.Queue != "" && r.j.q.name != s.Queue,
		s.Cause != CauseUnknown && r.cause != s.Cause,
		s.JobType != "" && r.j.jobType() != s.JobType:
		return false
	}
	if s.ReasonContains != "" {
		reason := ""
		if r.j.ext != nil {
			reason = r.j.ext.lastReason
		}
		if !strings.Contains(reason, s.ReasonContains) {
			return false
		}
	}
	return true
}

func (e *Engine) checkRedriveParams(p *RedriveParams) error {
	s := &p.Selection
	if s.Queue != "" {
		if err := checkQueueName("selection.queue", s.Queue); err != nil {
			return err
		}
		if e.queues[s.Queue] == nil {
			return fmt.Errorf("selection.queue %q: %w", s.Queue, ErrNotFound)
		}
	}
	if s.Cause > maxCause {
		return invalid("selection.cause", "unknown cause %d", s.Cause)
	}
	if len(s.ReasonContains) > maxReasonBytes {
		return invalid("selection.reason_contains", "is %d bytes, at most %d", len(s.ReasonContains), maxReasonBytes)
	}
	if len(s.JobType) > maxReasonBytes {
		return invalid("selection.job_type", "is %d bytes, at most %d", len(s.JobType), maxReasonBytes)
	}
	if !s.FailedAfter.IsZero() && !s.FailedBefore.IsZero() && !s.FailedAfter.Before(s.FailedBefore) {
		return invalid("selection.failed_before", "must be after failed_after (%s), got %s", s.FailedAfter.Format(time.RFC3339Nano), s.FailedBefore.Format(time.RFC3339Nano))
	}
	if p.ToQueue != "" {
		if !p.Fresh {
			return invalid("to_queue", "a same-id requeue returns each job to its own queue; replay fresh jobs to send them to %q", p.ToQueue)
		}
		if err := checkQueueName("to_queue", p.ToQueue); err != nil {
			return err
		}
		if e.queues[p.ToQueue] == nil {
			return fmt.Errorf("to_queue %q: %w", p.ToQueue, ErrNotFound)
		}
	}
	switch {
	case p.Rate < 0 || p.Rate > MaxRedriveRate:
		return invalid("rate", "must be 1..%d jobs/s (0 for %d), got %d", MaxRedriveRate, DefaultRedriveRate, p.Rate)
	case p.Rate == 0:
		p.Rate = DefaultRedriveRate
	}
	if len(p.By) > maxRedriveActor {
		return invalid("by", "is %d bytes, at most %d", len(p.By), maxRedriveActor)
	}
	return nil
}

// RedriveDryRun counts the records a task started now with p would move and
// returns up to sample of them, lowest id first. It changes nothing.
func (e *Engine) RedriveDryRun(now time.Time, p RedriveParams, sample int) (int, []DeadLetterRecord, error) {
	if sample < 0 || sample > MaxRedriveSample {
		return 0, nil, invalid("sample", "must be 0..%d, got %d", MaxRedriveSample, sample)
	}
	if err := e.checkRedriveParams(&p); err != nil {
		return 0, nil, err
	}
	t := newRedriveTask(0, p, max(toNanos(now), e.now))
	n := 0
	var picked []*deadRecord
	for r := e.deadHead; r != nil; r = r.next {
		if t.matches(r) {
			n++
			if sample > 0 {
				picked = append(picked, r)
				if len(picked) >= 4*sample+64 {
					picked = smallestRecords(picked, sample)
				}
			}
		}
	}
	var out []DeadLetterRecord
	if sample > 0 {
		for _, r := range smallestRecords(picked, sample) {
			out = append(out, e.recordView(r))
		}
	}
	return n, out, nil
}

func newRedriveTask(id uint64, p RedriveParams, now int64) *redriveTask {
	t := &redriveTask{id: id, p: p, state: RedriveRunning, createdAt: now, updatedAt: now}
	if !p.Selection.FailedAfter.IsZero() {
		t.after = toNanos(p.Selection.FailedAfter)
	}
	if !p.Selection.FailedBefore.IsZero() {
		t.before = toNanos(p.Selection.FailedBefore)
	}
	return t
}

// StartRedrive creates a running task and returns its view. It moves
// nothing itself: RedriveStep does.
func (e *Engine) StartRedrive(now time.Time, p RedriveParams) (RedriveTask, error) {
	if err := e.checkRedriveParams(&p); err != nil {
		return RedriveTask{}, err
	}
	active := 0
	for _, t := range e.redrives {
		if !t.state.Ended() {
			active++
		}
	}
	if active >= MaxActiveRedrives {
		return RedriveTask{}, &FieldError{Field: "redrive", Reason: fmt.Sprintf("%d redrive tasks are running or paused, the most at once; cancel or wait for one", active), Err: ErrCapacity}
	}
	e.advance(now)
	e.nextRedrive++
	t := newRedriveTask(e.nextRedrive, p, e.now)
	e.redrives = append(e.redrives, t)
	return e.redriveView(t), nil
}

func (e *Engine) redriveTask(id uint64) (*redriveTask, error) {
	for _, t := range e.redrives {
		if t.id == id {
			return t, nil
		}
	}
	return nil, fmt.Errorf("redrive task %d: %w", id, ErrNotFound)
}

// RedriveStep moves up to max (1..MaxReserveBatch) of a running task's
// next matching records and returns the task's view. A record its target
// refuses (a queue at max_length) stops the step there, with the reason in
// LastError and the cursor before it, so the next step tries it again. When
// no matching record is left the task is done. A step for a paused or ended
// task moves nothing: the leader may propose one that lands after a pause.
func (e *Engine) RedriveStep(now time.Time, id uint64, maxMoves int) (RedriveTask, error) {
	if maxMoves < 1 || maxMoves > e.lim.MaxReserveBatch {
		return RedriveTask{}, invalid("max", "must be 1..%d, got %d", e.lim.MaxReserveBatch, maxMoves)
	}
	t, err := e.redriveTask(id)
	if err != nil {
		return RedriveTask{}, err
	}
	e.advance(now)
	if t.state != RedriveRunning {
		return e.redriveView(t), nil
	}
	next := e.nextRedriveRecords(t, maxMoves+1)
	t.lastError = ""
	t.updatedAt = e.now
	for i, r := range next {
		if i == maxMoves {
			break
		}
		if err := e.redriveOne(t, r); err != nil {
			t.lastError = err.Error()
			return e.redriveView(t), nil
		}
		t.cursor = r.j.id
		t.moved++
	}
	if len(next) <= maxMoves {
		e.endRedrive(t, RedriveDone, "")
	}
	return e.redriveView(t), nil
}

// nextRedriveRecords returns up to n matching records after t's cursor,
// lowest id first.
func (e *Engine) nextRedriveRecords(t *redriveTask, n int) []*deadRecord {
	var recs []*deadRecord
	for r := e.deadHead; r != nil; r = r.next {
		if t.matches(r) {
			recs = append(recs, r)
			if len(recs) >= 4*n+64 {
				recs = smallestRecords(recs, n)
			}
		}
	}
	return smallestRecords(recs, n)
}

func (e *Engine) redriveOne(t *redriveTask, r *deadRecord) error {
	j := r.j
	if !t.p.Fresh {
		q := j.q
		if q.set.maxLength > 0 && q.live() >= q.set.maxLength {
			return &FieldError{Field: "queue", Reason: fmt.Sprintf("queue %q holds %d jobs, its max_length", q.name, q.set.maxLength), Err: ErrQueueFull}
		}
		e.unlinkDead(r)
		q.deadRequeued++
		before := e.jobCharge(j)
		j.attempt = 0
		e.jobs.set(j)
		e.makeReady(j)
		e.charge(q, e.jobCharge(j)-before) // a plain job is charged compact again
		return nil
	}
	tq := j.q
	if t.p.ToQueue != "" {
		if tq = e.queues[t.p.ToQueue]; tq == nil {
			return fmt.Errorf("to_queue %q: %w", t.p.ToQueue, ErrNotFound)
		}
	}
	if tq.set.maxLength > 0 && tq.live() >= tq.set.maxLength {
		return &FieldError{Field: "to_queue", Reason: fmt.Sprintf("queue %q holds %d jobs, its max_length", tq.name, tq.set.maxLength), Err: ErrQueueFull}
	}
	var custom map[string]string
	if j.ext != nil && len(j.ext.custom) > 0 {
		custom = make(map[string]string, len(j.ext.custom))
		for k, v := range j.ext.custom {
			custom[k] = v
		}
	}
	maxAttempts := min(j.maxAttempts, e.lim.MaxAttemptsCeiling)
	// A replay is a drain of the record and an enqueue of its fields: the
	// record's queue counts it drained, the target counts a new job.
	payload := e.payloadOf(j) // read before dropDead deletes it
	e.dropDead(r)
	j.q.deadDrained++
	rj := e.addJob(tq, j.jobType(), payload, j.priority, maxAttempts, custom, 0)
	e.setTrace(rj, traceOf(j))
	return nil
}

// PauseRedrive stops a running task's steps until ResumeRedrive.
func (e *Engine) PauseRedrive(now time.Time, id uint64) (RedriveTask, error) {
	return e.setRedriveState(now, id, RedriveRunning, RedrivePaused, "")
}

// ResumeRedrive lets a paused task's steps move records again.
func (e *Engine) ResumeRedrive(now time.Time, id uint64) (RedriveTask, error) {
	return e.setRedriveState(now, id, RedrivePaused, RedriveRunning, "")
}

// CancelRedrive ends a running or paused task; records it moved stay moved.
func (e *Engine) CancelRedrive(now time.Time, id uint64, by string) (RedriveTask, error) {
	if len(by) > maxRedriveActor {
		return RedriveTask{}, invalid("by", "is %d bytes, at most %d", len(by), maxRedriveActor)
	}
	return e.setRedriveState(now, id, RedriveUnknown, RedriveCancelled, by)
}

// setRedriveState moves task id from state from (RedriveUnknown: any state
// not ended) to state to.
func (e *Engine) setRedriveState(now time.Time, id uint64, from, to RedriveState, by string) (RedriveTask, error) {
	t, err := e.redriveTask(id)
	if err != nil {
		return RedriveTask{}, err
	}
	if t.state.Ended() || (from != RedriveUnknown && t.state != from) {
		return RedriveTask{}, fmt.Errorf("redrive task %d is %s, not %s: %w", id, t.state, orAny(from), ErrWrongState)
	}
	e.advance(now)
	t.updatedAt = e.now
	if to.Ended() {
		e.endRedrive(t, to, by)
	} else {
		t.state = to
	}
	return e.redriveView(t), nil
}

func orAny(s RedriveState) string {
	if s == RedriveUnknown {
		return "running or paused"
	}
	return s.String()
}

// endRedrive ends t, keeping it as an audit record and forgetting the oldest
// ended task beyond MaxRedriveAudit. Tasks stay in id order.
func (e *Engine) endRedrive(t *redriveTask, s RedriveState, by string) {
	t.state = s
	t.endedAt = e.now
	t.endedBy = by
	ended := 0
	for _, x := range e.redrives {
		if x.state.Ended() {
			ended++
		}
	}
	for i := 0; ended > MaxRedriveAudit && i < len(e.redrives); {
		if e.redrives[i].state.Ended() {
			e.redrives = append(e.redrives[:i], e.redrives[i+1:]...)
			ended--
			continue
		}
		i++
	}
}

// RedriveTasks lists the running and paused tasks and the audit records of
// ended ones, by id.
func (e *Engine) RedriveTasks() []RedriveTask {
	out := make([]RedriveTask, len(e.redrives))
	for i, t := range e.redrives {
		out[i] = e.redriveView(t)
	}
	return out
}

// GetRedrive returns one task or audit record.
func (e *Engine) GetRedrive(id uint64) (RedriveTask, error) {
	t, err := e.redriveTask(id)
	if err != nil {
		return RedriveTask{}, err
	}
	return e.redriveView(t), nil
}

func (e *Engine) redriveView(t *redriveTask) RedriveTask {
	v := RedriveTask{
		ID:        t.id,
		Params:    t.p,
		State:     t.state,
		Moved:     t.moved,
		Cursor:    t.cursor,
		LastError: t.lastError,
		CreatedAt: fromNanos(t.createdAt),
		UpdatedAt: fromNanos(t.updatedAt),
		EndedBy:   t.endedBy,
	}
	if t.endedAt != 0 {
		v.EndedAt = fromNanos(t.endedAt)
	}
	if t.state != RedriveDone {
		for r := e.deadHead; r != nil; r = r.next {
			if t.matches(r) {
				v.Remaining++
			}
		}
	}
	return v
}

// RedriveRun is what the leader needs to pace a running task's steps.
type RedriveRun struct {
	ID   uint64
	Rate int // jobs per second
	// MaxStep is the most one step may move (limits.max_reserve_batch).
	MaxStep int
}

// RunningRedrives lists the running tasks, by id, without counting what
// they have left (which RedriveTasks does).
func (e *Engine) RunningRedrives() []RedriveRun {
	var out []RedriveRun
	for _, t := range e.redrives {
		if t.state == RedriveRunning {
			out = append(out, RedriveRun{ID: t.id, Rate: t.p.Rate, MaxStep: e.lim.MaxReserveBatch})
		}
	}
	return out
}
