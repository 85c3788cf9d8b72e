package engine

import (
	"container/heap"
	"fmt"
	"math"
	"slices"
	"sync/atomic"
	"time"
)

// Engine is the queue state machine. See the package doc for its guarantees.
type Engine struct {
	cfg Config
	lim Limits

	now       int64  // the latest now seen, unix ns
	nextID    uint64 // the id the next job gets
	nextLease uint64 // the token the next delivery gets

	queues  map[string]*queue
	jobs    jobIndex         // Scheduled, Ready and Reserved jobs
	workers map[JobID]string // worker id of a Reserved job, when it gave one
	sched   jobHeap          // Scheduled jobs by (due, id)
	leases  jobHeap          // Reserved jobs by (lease deadline, id)
	// nCompact counts the compact jobs (compact.go), held in their levels'
	// compact rings and not in jobs.
	nCompact int
	// compactOff keeps every job as a *job (HoldEveryJobFull, tests).
	compactOff bool
	// spareJob is the struct of the job compactify last made compact,
	// referenced nowhere, for the next conversion (compact.go). Not state.
	spareJob *job

	dead               map[JobID]*deadRecord
	deadHead, deadTail *deadRecord
	deadExp            deadExpiryHeap

	keys idemKeys // idempotency keys, in creation order
	// keysForgottenEarly counts keys forgotten before their window ended
	// to make room (forgetOldestKeyEarly). A figure for /metrics, not part
	// of the state: a restored engine starts it at 0, like any counter of
	// a restarted process.
	keysForgottenEarly uint64

	// unique indexes the held unique keys; uniqueDone the holds of acked
	// jobs by expiry (unique.go).
	unique     map[uniqueRef]*uniqueEntry
	uniqueDone uniqueDoneHeap

	reservations map[string]*reservation
	resHeap      reservationHeap
	// resByLease indexes the live lease tokens of RetryWindow reservations,
	// for lease expiry. Derived from the reservations; Restore rebuilds it.
	resByLease map[LeaseToken]*reservation

	// held is the bytes the state is counted to hold: the queues' held
	// bytes plus the reservations' (memory.go). Derived from the state,
	// so not in the snapshot; Restore recounts it.
	held int64

	// rateLimited lists the queues with a rate limit, in config order,
	// for NextDeadline. Derived from the config.
	rateLimited []*queue
	// declared holds, per queue name, the fingerprints of the file
	// definitions ApplyDeclared applied (queues.go), oldest first; nil
	// until the first.
	declared map[string][]uint64
	// forwardAsArrived: a job forwarded to a dead_letter_queue keeps its
	// priority. Set by the first ApplyDeclared, which the leader proposes
	// only once every member applies it, so replicas of older binaries,
	// which forward with the queue's default priority, never disagree.
	forwardAsArrived bool
	// forwardKeepsPriority: a job forwarded to a dead_letter_queue keeps
	// its priority whatever that queue's default_priority (deadletter.go).
	// Set by a ConfigSet of fsm.CommandVersionDeadLetterEdges, which the
	// leader proposes only once every member applies it.
	forwardKeepsPriority bool
	// declaredLimits: a file definition's fingerprint covers its reserve
	// limits (queues.go). Set by ApplyDeclaredReserveLimits, a ConfigSet of
	// fsm.CommandVersionQueueReserveLimits, which the leader proposes only
	// once every member applies it.
	declaredLimits bool

	// schedules are the periodic schedules by name (schedule.go).
	schedules map[string]*schedule
	// cancelUsed: an operator cancelled a reserved job, so records and
	// histories may hold the cause and outcome cancelled, and the snapshot
	// is written in layout snapshotVersionCancel from then on.
	cancelUsed bool
	// redrives are the redrive tasks (redrive.go), running, paused and the
	// last MaxRedriveAudit ended ones, by id; nextRedrive is the last id
	// given.
	redrives    []*redriveTask
	nextRedrive uint64

	// recordFields: attempts record their start, lease and directive, and
	// a job forwarded to a dead_letter_queue carries its origin in its own
	// fields rather than in sepp.* custom keys (attempts.go). Set by a
	// ConfigSet of command version 12, which the leader proposes only once
	// every member applies it.
	recordFields bool
	// started is when each Reserved job's delivery started, while
	// recordFields is on.
	started map[JobID]int64
	// progress is each Reserved job's last reported progress
	// (progress.go); a job leaves it when its delivery ends.
	progress map[JobID]Progress
	// deps and children are the jobs' dependencies (dependencies.go):
	// each live job with parents, and each live parent's blocked
	// children (derived). The snapshot is written in layout
	// snapshotVersionDependencies while a job has parents.
	deps     map[JobID]*jobDeps
	children map[JobID][]JobID

	// expiry holds the waiting jobs with a deadline by (deadline, id)
	// (expiry.go). expiryUsed: a job got a deadline or a queue set
	// max_wait or a fairness key, so the snapshot is written in layout
	// snapshotVersionExpiryFair from then on.
	expiry     expiryHeap
	expiryUsed bool
	// traceUsed: a job got a trace context (trace.go); from then on the
	// snapshot is written in layout snapshotVersionTrace.
	traceUsed bool

	// payloads keeps every live job's and retained record's payload by
	// job id (payloads.go): an in-heap map unless the state machine hands
	// the engine its on-disk store. Where payloads live is a node's own
	// choice and never changes what the engine decides.
	payloads PayloadStore
	// payloadsOffHeap: payloads are no longer charged to the memory budget
	// but to the disk budget (limits.max_disk_bytes). Set by a ConfigSet
	// of command version 16, which the leader proposes only once every
	// member applies it, so that every replica charges alike.
	payloadsOffHeap bool
	// compactCharge: a plain waiting job is charged as the compact entry
	// it is held as (compactJobOverhead, memory.go), not as a full job.
	// Set by a ConfigSet of command version 22, which the leader proposes
	// only once every member applies it, so that every replica charges
	// alike and refuses the same enqueues near a budget.
	compactCharge bool
	// diskHeld is the payload bytes of the live jobs and retained records:
	// what the disk budget counts once payloadsOffHeap is on.
	diskHeld int64
	// payloadRecords counts the live jobs and retained records with a
	// payload: with diskHeld, the size of a snapshot's payload section
	// (PayloadSectionBytes) without a walk over the jobs.
	payloadRecords int64
	// payloadsAhead: the payload store already holds what the commands now
	// applied write (SetPayloadsAhead): a node replaying its log after a
	// restart over the store it kept.
	payloadsAhead bool
	// capturePins counts the snapshot captures not yet released
	// (snapshot_capture.go): while one is, a chunk they share is copied
	// before an apply changes it. Released by the goroutine that writes a
	// capture, hence atomic; a pointer, made at the first capture, so that
	// a restore (which replaces the engine's fields) leaves a capture still
	// being written counting on its own.
	capturePins *atomic.Int32

	// completed keeps completed jobs' records (completed.go): the payload
	// store when it keeps them too (the node's on-disk store), else a map.
	completed CompletedStore
	// completedHeld counts the completed jobs in the queues' FIFOs;
	// completedNext is the earliest of their expiries while completedDue.
	// Derived from the FIFOs and the queues' retentions.
	completedHeld int
	completedNext int64
	completedDue  bool
}

// New returns an empty engine running cfg. cfg must have passed Validate; an
// invalid cfg is a programming error and panics.
func New(cfg Config) *Engine {
	if err := cfg.Validate(); err != nil {
		panic(fmt.Sprintf("engine.New: invalid config: %v", err))
	}
	e := newEmpty()
	e.applyConfig(cfg)
	return e
}

func newEmpty() *Engine {
	return &Engine{
		nextID:       1,
		nextLease:    1,
		queues:       make(map[string]*queue),
		workers:      make(map[JobID]string),
		started:      make(map[JobID]int64),
		progress:     make(map[JobID]Progress),
		children:     make(map[JobID][]JobID),
		leases:       jobHeap{withTokens: true},
		sched:        jobHeap{},
		dead:         make(map[JobID]*deadRecord),
		reservations: make(map[string]*reservation),
		resByLease:   make(map[LeaseToken]*reservation),
		schedules:    make(map[string]*schedule),
		payloads:     newHeapPayloads(),
		completed:    heapCompleted{},
	}
}

// applyConfig installs a validated config: configured queues exist from now
// on, every queue's effective settings are recomputed.
func (e *Engine) applyConfig(cfg Config) {
	e.cfg = cloneConfig(cfg)
	e.lim = e.cfg.Limits
	byName := make(map[string]*QueueConfig, len(e.cfg.Queues))
	for i := range e.cfg.Queues {
		qc := &e.cfg.Queues[i]
		byName[qc.Name] = qc
		if e.queues[qc.Name] == nil {
			e.queues[qc.Name] = &queue{name: qc.Name}
		}
	}
	for name, q := range e.queues { // each queue is updated on its own: order does not matter
		qc := byName[name]
		q.configured = qc != nil
		old, oldFair := q.set.limits, q.set.fairKey
		q.set = resolveSettings(e.lim, qc)
		if q.set.fairKey != oldFair {
			e.rebuildFairness(q)
		}
		if q.set.limits.rateInterval == 0 {
			q.rateTAT = 0 // a state without a rate limit holds no bucket
		}
		if q.set.limits != old || (q.keys == nil) != (q.set.limits.maxPerKey == 0) {
			e.rebuildKeyLimits(q)
		}
	}
	if e.completedHeld > 0 {
		e.findCompletedNext() // a retention may have changed
	}
	e.rateLimited = e.rateLimited[:0]
	for i := range e.cfg.Queues {
		if q := e.queues[e.cfg.Queues[i].Name]; q.set.limits.rateInterval > 0 {
			e.rateLimited = append(e.rateLimited, q)
		}
	}
}

// SetConfig replaces the running config (proposed by the leader through the
// log). Retention changes apply to records that die afterwards; records kept
// already keep their expiry.
func (e *Engine) SetConfig(now time.Time, cfg Config) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	e.advance(now)
	e.applyConfig(cfg)
	return nil
}

// Config returns a copy of the running config.
func (e *Engine) Config() Config { return cloneConfig(e.cfg) }

// Now is the engine's monotonic clock: the latest now it has seen (zero
// before the first operation).
func (e *Engine) Now() time.Time { return fromNanos(e.now) }

// Work is how many jobs were ever enqueued plus how many deliveries were
// ever made. It only grows, and every replica holds the same figure at the
// same log index, restarts and snapshot installs included: a position in
// the log's work that needs no state of its own, by which each member
// places its snapshots apart from the others' (cluster/replaysnapshot.go).
func (e *Engine) Work() uint64 { return e.nextID - 1 + e.nextLease - 1 }

// Range of instants an int64 of unix nanoseconds holds.
var (
	minTime = time.Unix(0, math.MinInt64+1)
	maxTime = time.Unix(0, math.MaxInt64)
)

// toNanos converts t to unix nanoseconds, saturating outside the int64 range.
func toNanos(t time.Time) int64 {
	switch {
	case t.Before(minTime):
		return math.MinInt64 + 1
	case t.After(maxTime):
		return math.MaxInt64
	}
	return t.UnixNano()
}

// fromNanos is the inverse of toNanos; 0 means unset and gives the zero Time.
func fromNanos(ns int64) time.Time {
	if ns == 0 {
		return time.Time{}
	}
	return time.Unix(0, ns).UTC()
}

// tick moves the clock to max(last, now) and returns it. A zero now does not
// move the clock.
func (e *Engine) tick(now time.Time) int64 {
	if !now.IsZero() {
		if ns := toNanos(now); ns > e.now {
			e.now = ns
		}
	}
	return e.now
}

// addSat adds two nanosecond values without overflowing.
func addSat(a, b int64) int64 {
	if b > 0 && a > math.MaxInt64-b {
		return math.MaxInt64
	}
	if b < 0 && a < math.MinInt64+1-b {
		return math.MinInt64 + 1
	}
	return a + b
}

// queueForWrite returns the queue an enqueue targets. A queue not seen yet
// (unless the engine runs strict) is returned fresh, not yet in the
// engine: the caller registers it with adoptQueue once the enqueue is
// accepted, so a refused enqueue leaves no queue behind.
func (e *Engine) queueForWrite(field, name string) (q *queue, fresh bool, err error) {
	if q := e.queues[name]; q != nil {
		if e.lim.Strict && !q.configured {
			return nil, false, &FieldError{Field: field, Reason: fmt.Sprintf("queue %q is not configured and the server runs strict", name), Err: ErrUnknownQueue}
		}
		return q, false, nil
	}
	if err := checkQueueName(field, name); err != nil {
		return nil, false, err
	}
	if e.lim.Strict {
		return nil, false, &FieldError{Field: field, Reason: fmt.Sprintf("queue %q is not configured and the server runs strict", name), Err: ErrUnknownQueue}
	}
	return &queue{name: name, set: resolveSettings(e.lim, nil)}, true, nil
}

// adoptQueue registers a fresh queue of queueForWrite once its first job
// was accepted.
func (e *Engine) adoptQueue(q *queue) { e.queues[q.name] = q }

func (e *Engine) createQueue(name string) *queue {
	q := &queue{name: name, set: resolveSettings(e.lim, nil)}
	e.queues[name] = q
	return q
}

// queueForRead returns an existing queue without creating one.
func (e *Engine) queueForRead(field, name string) (*queue, error) {
	if q := e.queues[name]; q != nil {
		return q, nil
	}
	if err := checkQueueName(field, name); err != nil {
		return nil, err
	}
	return nil, &FieldError{Field: field, Reason: fmt.Sprintf("queue %q does not exist", name), Err: ErrNotFound}
}

// sortedQueues lists the queues by name, for everything whose order shows.
func (e *Engine) sortedQueues() []*queue {
	qs := make([]*queue, 0, len(e.queues))
	for _, q := range e.queues {
		qs = append(qs, q)
	}
	slices.SortFunc(qs, func(a, b *queue) int {
		switch {
		case a.name < b.name:
			return -1
		case a.name > b.name:
			return 1
		}
		return 0
	})
	return qs
}

// PauseQueue stops a queue handing out jobs; it still accepts enqueues. A
// queue that does not exist is ErrNotFound: a typo creates nothing.
func (e *Engine) PauseQueue(now time.Time, name string) error {
	return e.setPaused(now, name, true)
}

// ResumeQueue lets a paused queue hand out jobs again.
func (e *Engine) ResumeQueue(now time.Time, name string) error {
	return e.setPaused(now, name, false)
}

func (e *Engine) setPaused(now time.Time, name string, paused bool) error {
	q, err := e.queueForRead("queue", name)
	if err != nil {
		return err
	}
	e.advance(now)
	q.paused = paused
	return nil
}

// detach takes a live job out of whatever structure holds it, fixing the
// counts; it stays in the jobs map. The job keeps its other fields.
func (e *Engine) detach(j *job) {
	q := j.q
	switch j.state {
	case StateReady:
		e.unwatchDeadline(j)
		if j.flags&flagParked != 0 {
			q.keys.unpark(j)
		} else {
			q.ready[j.priority].remove(j)
			if q.keys != nil {
				q.keys.keyLeftReady(j)
			}
		}
		q.nReady--
	case StateScheduled:
		e.unwatchDeadline(j)
		heap.Remove(&e.sched, int(j.heapIdx))
		q.nScheduled--
	case StateReserved:
		heap.Remove(&e.leases, int(j.heapIdx))
		if w, ok := e.workers[j.id]; ok {
			e.charge(q, -workerCharge(w))
			delete(e.workers, j.id)
		}
		if _, ok := e.started[j.id]; ok {
			e.charge(q, -startedOverhead)
			delete(e.started, j.id)
		}
		e.clearProgress(j)
		q.nReserved--
		e.keyUnreserved(j)
	case StateBlocked:
		q.nBlocked--
	default:
		panic(fmt.Sprintf("engine: detach of job %d in state %v", j.id, j.state))
	}
	j.due = 0
	j.flags &^= flagRetryWait
}

// leaseOf is j's current lease token while it is Reserved (kept beside it
// in the leases heap, jobHeap.tokens), else 0.
func (e *Engine) leaseOf(j *job) LeaseToken {
	if j.state != StateReserved || j.heapIdx < 0 {
		return 0
	}
	return e.leases.tokens[j.heapIdx]
}

// makeReady puts a job (not in any structure) on its queue's Ready line.
func (e *Engine) makeReady(j *job) {
	j.flags &^= flagRetryWait
	j.q.ready[j.priority].push(j)
	j.q.nReady++
	if j.ext != nil && j.ext.expiresAt != 0 {
		e.watchDeadline(j)
	}
}

// makeScheduled holds a job (not in any structure) until due.
func (e *Engine) makeScheduled(j *job, due int64, retry bool) {
	j.state = StateScheduled
	j.due = due
	if retry {
		j.flags |= flagRetryWait
	} else {
		j.flags &^= flagRetryWait
	}
	heap.Push(&e.sched, j)
	j.q.nScheduled++
	if j.ext != nil && j.ext.expiresAt != 0 {
		e.watchDeadline(j)
	}
}
