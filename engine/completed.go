package engine

import (
	"errors"
	"fmt"
	"slices"
	"time"
)

// Completed jobs (issue 37 item 1). A queue whose completed_retention is
// above zero keeps each job it acks, with the worker's result, for that
// long: GetJob answers COMPLETED with the result, ListJobs lists them,
// WaitJob reports the outcome.
//
// The record itself lives in the engine's CompletedStore (the node's
// on-disk store; a map only without one), written once at the ack's apply
// and deleted once by the tick that passes its expiry. What stays in
// memory per completed job is one pointer-free completedEntry (16 bytes)
// in its queue's FIFO: when it completed and its id. Completions arrive in
// apply order, whose time never runs backwards (advance), so each FIFO is
// in completion time order and its head expires first; an expiry pass
// pops heads, never searches. Nothing in memory depends on a record's
// content, so no transition reads the store (store/DESIGN.md, rule 1):
// a replay over a store that is ahead (SetPayloadsAhead) moves the FIFOs
// exactly as the first time and writes nothing.

// MaxCompletedRetention bounds a queue's completed_retention: 30 days. A
// completed job costs 16 B of memory on every replica for that long, and
// its record costs disk; a longer archive belongs in the worker's own
// database, not in the queue.
const MaxCompletedRetention = 30 * 24 * time.Hour

// completedEntryCharge is what a completed job is counted to hold in the
// memory budget: its FIFO entry.
const completedEntryCharge = 16

// ErrNoCompletedRetention refuses an ack that carries a result on a queue
// whose completed_retention is 0: the queue keeps no completed job, so the
// result would be lost, and a worker that sends one expects it read back
// (WaitJob, GetJob). Nothing changed: the lease still holds, and the
// worker may ack without the result. The wrapping *FieldError names
// completed_retention_ms.
var ErrNoCompletedRetention = errors.New("the queue keeps no completed jobs")

// CompletedInfo is what a completed job's view adds (Job.Completed).
type CompletedInfo struct {
	// Result is the worker's result; nil when it gave none. The caller's.
	Result      []byte
	CompletedAt time.Time
}

// CompletedRecord is a completed job as its queue keeps it.
type CompletedRecord struct {
	ID          JobID
	Queue       string
	JobType     string
	Result      []byte
	EnqueuedAt  time.Time
	StartedAt   time.Time // the completing delivery's start; zero: not recorded
	CompletedAt time.Time
	Attempt     uint32 // the completing delivery
	MaxAttempts uint32
	Priority    uint32
	WorkerID    string
	// History is the job's ended attempts before the completing one.
	History []Attempt
}

// CompletedStore keeps completed jobs' records by job id, outside the
// engine's memory. The engine calls PutCompleted once per id (at the ack)
// and DeleteCompleted once (at expiry, or when the queue goes), from its
// own goroutine, as it calls its PayloadStore; Completed reads one back for
// a view. Like payloads, a record is never an input to a decision.
type CompletedStore interface {
	PutCompleted(r *CompletedRecord)
	DeleteCompleted(id JobID)
	Completed(id JobID) (CompletedRecord, bool)
}

// heapCompleted is the CompletedStore of an engine without an on-disk
// store (tests, tools reading a snapshot).
type heapCompleted map[JobID]CompletedRecord

func (h heapCompleted) PutCompleted(r *CompletedRecord) {
	c := *r
	c.Result = slices.Clone(r.Result)
	c.History = slices.Clone(r.History)
	h[r.ID] = c
}
func (h heapCompleted) DeleteCompleted(id JobID) { delete(h, id) }
func (h heapCompleted) Completed(id JobID) (CompletedRecord, bool) {
	r, ok := h[id]
	return r, ok
}

// completedEntry is one completed job in its queue's FIFO.
type completedEntry struct {
	at int64 // when it completed (the ack's apply time)
	id JobID
}

// completedFIFO is a queue's completed jobs in completion order: a slice
// with a moving head, compacted when the head passes half of it.
type completedFIFO struct {
	items []completedEntry
	head  int
}

func (f *completedFIFO) len() int { return len(f.items) - f.head }

func (f *completedFIFO) push(c completedEntry) { f.items = append(f.items, c) }

func (f *completedFIFO) front() completedEntry { return f.items[f.head] }

func (f *completedFIFO) pop() completedEntry {
	c := f.items[f.head]
	f.head++
	switch {
	case f.head == len(f.items):
		f.items, f.head = f.items[:0], 0
		if cap(f.items) > 1024 {
			f.items = nil // a burst's capacity is not kept for good
		}
	case f.head > 64 && f.head*2 >= len(f.items):
		n := copy(f.items, f.items[f.head:])
		clear(f.items[n:])
		f.items, f.head = f.items[:n], 0
	}
	return c
}

func (f *completedFIFO) live() []completedEntry { return f.items[f.head:] }

// validateCompletedRetention checks a queue's completed_retention.
func validateCompletedRetention(q QueueConfig, key func(string) string) error {
	if q.CompletedRetention < 0 || q.CompletedRetention > MaxCompletedRetention {
		return invalid(key("completed_retention_ms"), "must be 0..%d ms (30 days; 0 keeps none), got %d ms",
			MaxCompletedRetention.Milliseconds(), q.CompletedRetention.Milliseconds())
	}
	if q.CompletedRetention%time.Millisecond != 0 {
		return invalid(key("completed_retention_ms"), "must be whole milliseconds, got %s", q.CompletedRetention)
	}
	return nil
}

// HasCompletedRetention reports whether some queue of cfg keeps completed
// jobs (which every replica must apply alike: fsm command version 20).
func HasCompletedRetention(cfg Config) bool {
	for i := range cfg.Queues {
		if cfg.Queues[i].CompletedRetention != 0 {
			return true
		}
	}
	return false
}

// StripCompletedRetention returns cfg without completed retention: what a
// leader proposes while some member cannot apply it.
func StripCompletedRetention(cfg Config) Config {
	if !HasCompletedRetention(cfg) {
		return cfg
	}
	out := cloneConfig(cfg)
	for i := range out.Queues {
		out.Queues[i].CompletedRetention = 0
	}
	return out
}

// checkResultKept refuses a result j's queue would not keep.
func checkResultKept(j *job, result []byte) error {
	if len(result) > 0 && j.q.set.completedRetention <= 0 {
		return &FieldError{Field: "result",
			Reason: fmt.Sprintf("queue %q keeps no completed jobs (completed_retention_ms is 0), so the result would be lost; set the queue's completed_retention_ms, or ack without a result", j.q.name),
			Err:    ErrNoCompletedRetention}
	}
	return nil
}

// complete keeps j, a Reserved job being acked, as completed when its
// queue keeps completed jobs. It runs before detach, which forgets the
// delivery's worker and start.
func (e *Engine) complete(j *job, result []byte) {
	ret := j.q.set.completedRetention
	if ret <= 0 {
		return
	}
	j.q.completed.push(completedEntry{at: e.now, id: j.id})
	e.completedHeld++
	e.charge(j.q, completedEntryCharge)
	if exp := addSat(e.now, ret); !e.completedDue || exp < e.completedNext {
		e.completedNext, e.completedDue = exp, true
	}
	if e.payloadsAhead {
		return // the store holds the record already
	}
	r := CompletedRecord{
		ID:          j.id,
		Queue:       j.q.name,
		JobType:     j.jobType(),
		Result:      result,
		EnqueuedAt:  fromNanos(j.enqueuedAt),
		CompletedAt: fromNanos(e.now),
		Attempt:     j.attempt,
		MaxAttempts: j.maxAttempts,
		Priority:    uint32(j.priority),
		WorkerID:    e.workers[j.id],
	}
	if at, ok := e.started[j.id]; ok {
		r.StartedAt = fromNanos(at)
	}
	if x := j.ext; x != nil && len(x.history) > 0 {
		r.History = make([]Attempt, len(x.history))
		for i, h := range x.history {
			r.History[i] = attemptView(h)
		}
	}
	e.completed.PutCompleted(&r)
}

// expireCompleted drops the completed jobs whose retention has passed at
// t, queue by queue in name order, and finds the next expiry.
func (e *Engine) expireCompleted(t int64, res *TickResult) {
	if !e.completedDue || e.completedNext > t {
		return
	}
	for _, q := range e.sortedQueues() {
		ret := q.set.completedRetention
		for q.completed.len() > 0 && addSat(q.completed.front().at, ret) <= t {
			e.dropCompleted(q, q.completed.pop())
			res.CompletedExpired++
		}
	}
	e.findCompletedNext()
}

// dropCompleted forgets one completed job of q, popped from its FIFO.
func (e *Engine) dropCompleted(q *queue, c completedEntry) {
	e.completedHeld--
	e.charge(q, -completedEntryCharge)
	if !e.payloadsAhead {
		e.completed.DeleteCompleted(c.id)
	}
}

// dropQueueCompleted forgets every completed job of q (its queue is
// deleted).
func (e *Engine) dropQueueCompleted(q *queue) {
	for q.completed.len() > 0 {
		e.dropCompleted(q, q.completed.pop())
	}
	e.findCompletedNext()
}

// findCompletedNext recomputes the earliest expiry of a completed job: the
// earliest over the queues' FIFO heads (a minimum: the order of the walk
// does not matter).
func (e *Engine) findCompletedNext() {
	e.completedNext, e.completedDue = 0, false
	if e.completedHeld == 0 {
		return
	}
	for _, q := range e.queues { // a minimum: order does not matter
		if q.completed.len() == 0 {
			continue
		}
		if exp := addSat(q.completed.front().at, q.set.completedRetention); !e.completedDue || exp < e.completedNext {
			e.completedNext, e.completedDue = exp, true
		}
	}
}

// CompletedCount is how many completed jobs the engine keeps.
func (e *Engine) CompletedCount() int { return e.completedHeld }

// completedView is a completed job's view from its record.
func completedView(r CompletedRecord) Job {
	return Job{
		ID:          r.ID,
		Queue:       r.Queue,
		JobType:     r.JobType,
		Priority:    r.Priority,
		State:       StateCompleted,
		EnqueuedAt:  r.EnqueuedAt,
		Attempt:     r.Attempt,
		MaxAttempts: r.MaxAttempts,
		WorkerID:    r.WorkerID,
		StartedAt:   r.StartedAt,
		History:     r.History,
		Completed:   &CompletedInfo{Result: r.Result, CompletedAt: r.CompletedAt},
	}
}

// getCompleted reads a completed job's view; ok is false when no queue
// keeps it. While the store is ahead nothing is read: the state machine
// answers no read then (fsm ErrCatchingUp).
func (e *Engine) getCompleted(id JobID) (Job, bool) {
	if e.completedHeld == 0 || e.payloadsAhead {
		return Job{}, false
	}
	r, ok := e.completed.Completed(id)
	if !ok {
		return Job{}, false
	}
	return completedView(r), true
}

// listCompleted lists q's completed jobs by id after afterID, at most
// limit: the FIFO is in completion order, so the ids are collected and
// sorted (an operator's call over one queue's completed jobs, as a list of
// its scheduled jobs walks the schedule).
func (e *Engine) listCompleted(q *queue, afterID JobID, limit int) []Job {
	var ids []JobID
	for _, c := range q.completed.live() {
		if c.id > afterID {
			ids = append(ids, c.id)
			if len(ids) >= 4*limit+64 {
				slices.Sort(ids)
				ids = ids[:limit]
			}
		}
	}
	slices.Sort(ids)
	if len(ids) > limit {
		ids = ids[:limit]
	}
	out := make([]Job, 0, len(ids))
	if e.payloadsAhead {
		return out
	}
	for _, id := range ids {
		r, ok := e.completed.Completed(id)
		if !ok {
			// The store lost a record the engine keeps: a broken store,
			// as a lost payload is.
			panic(&PayloadDamageError{ID: id, Got: -1, Want: 0})
		}
		out = append(out, completedView(r))
	}
	return out
}

// CompletedIDs are the ids of every completed job kept, ascending: what a
// snapshot's completed section must hold, one record each.
func (e *Engine) CompletedIDs() []JobID {
	ids := make([]JobID, 0, e.completedHeld)
	for _, q := range e.queues { // sorted below: order does not matter
		for _, c := range q.completed.live() {
			ids = append(ids, c.id)
		}
	}
	slices.Sort(ids)
	return ids
}

// LoadCompleted puts the record of completed job r.ID after a RestoreWith
// of a stream written with CompletedSection (the state machine checks the
// ids against CompletedIDs). While the store is ahead (SetPayloadsAhead)
// it only checks: the store holds the record already.
func (e *Engine) LoadCompleted(r *CompletedRecord) {
	if !e.payloadsAhead {
		e.completed.PutCompleted(r)
	}
}

// The completed section of a layout 15 snapshot: each configured queue's
// completed_retention in the config's order; then the number of queues
// with completed jobs and, per queue in name order, its name, its count
// and its entries in completion order (time, id); then, unless the state
// machine writes the records itself (SnapshotOptions.CompletedSection),
// every record in id order.

func (e *Engine) encodeCompletedSection(c *encoder, qs []*queue) {
	c.uvarint(uint64(len(e.cfg.Queues)))
	for _, qc := range e.cfg.Queues {
		c.varint(int64(qc.CompletedRetention))
	}
	n := 0
	for _, q := range qs {
		if q.completed.len() > 0 {
			n++
		}
	}
	c.uvarint(uint64(n))
	for _, q := range qs {
		if q.completed.len() == 0 {
			continue
		}
		c.string(q.name)
		c.uvarint(uint64(q.completed.len()))
		for _, ent := range q.completed.live() {
			c.varint(ent.at)
			c.uvarint(uint64(ent.id))
		}
	}
	if c.completedSection {
		return
	}
	for _, id := range e.CompletedIDs() {
		r, ok := e.completed.Completed(id)
		if !ok {
			panic(&PayloadDamageError{ID: id, Got: -1, Want: 0})
		}
		encodeCompletedRecord(c, &r)
	}
}

func encodeCompletedRecord(c *encoder, r *CompletedRecord) {
	c.uvarint(uint64(r.ID))
	c.string(r.JobType)
	c.bytes(r.Result)
	c.varint(nanosOrZero(r.EnqueuedAt))
	c.varint(nanosOrZero(r.StartedAt))
	c.varint(nanosOrZero(r.CompletedAt))
	c.uvarint(uint64(r.Attempt))
	c.uvarint(uint64(r.MaxAttempts))
	c.uvarint(uint64(r.Priority))
	c.string(r.WorkerID)
	c.uvarint(uint64(len(r.History)))
	for _, h := range r.History {
		c.uvarint(uint64(h.Attempt))
		c.string(h.WorkerID)
		c.varint(nanosOrZero(h.At))
		c.string(h.Outcome)
		c.string(h.Reason)
		c.varint(nanosOrZero(h.StartedAt))
		c.uvarint(uint64(h.LeaseToken))
		c.string(h.Directive)
	}
}

func (d *decoder) decodeCompletedRecord(queue string) CompletedRecord {
	r := CompletedRecord{ID: JobID(d.uvarint()), Queue: queue}
	r.JobType = d.string()
	r.Result = d.bytes()
	r.EnqueuedAt = fromNanos(d.varint())
	r.StartedAt = fromNanos(d.varint())
	r.CompletedAt = fromNanos(d.varint())
	r.Attempt = uint32(d.uvarint())
	r.MaxAttempts = uint32(d.uvarint())
	r.Priority = uint32(d.uvarint())
	r.WorkerID = d.string()
	if n := d.count(1 << 20); n > 0 {
		r.History = make([]Attempt, 0, min(n, 64))
		for i := 0; i < n && d.err == nil; i++ {
			h := Attempt{Attempt: uint32(d.uvarint()), WorkerID: d.string(), At: fromNanos(d.varint())}
			h.Outcome = d.string()
			h.Reason = d.string()
			h.StartedAt = fromNanos(d.varint())
			if !h.StartedAt.IsZero() {
				h.Duration = h.At.Sub(h.StartedAt)
			}
			h.LeaseToken = LeaseToken(d.uvarint())
			h.Directive = d.string()
			r.History = append(r.History, h)
		}
	}
	return r
}

func (d *decoder) decodeCompletedSection(e *Engine) error {
	if n := d.count(1 << 32); d.err == nil && n != len(e.cfg.Queues) {
		return fmt.Errorf("completed section: %d retentions for %d configured queues", n, len(e.cfg.Queues))
	}
	for i := range e.cfg.Queues {
		if d.err != nil {
			break
		}
		e.cfg.Queues[i].CompletedRetention = time.Duration(d.varint())
		qc := &e.cfg.Queues[i]
		if err := validateCompletedRetention(*qc, func(k string) string { return fmt.Sprintf("queues[%q].%s", qc.Name, k) }); err != nil {
			return fmt.Errorf("completed section: %w", err)
		}
		if q := e.queues[qc.Name]; q != nil {
			q.set.completedRetention = int64(qc.CompletedRetention)
		}
	}
	nq := d.count(1 << 32)
	prev := ""
	owner := make(map[JobID]string)
	for i := 0; i < nq && d.err == nil; i++ {
		name := d.string()
		if d.err != nil {
			break
		}
		q := e.queues[name]
		switch {
		case q == nil:
			return fmt.Errorf("completed section: queue %q is not in the snapshot", name)
		case i > 0 && name <= prev:
			return fmt.Errorf("completed section: queue %q after %q", name, prev)
		}
		prev = name
		n := d.count(1 << 40)
		var last int64
		for k := 0; k < n && d.err == nil; k++ {
			ent := completedEntry{at: d.varint(), id: JobID(d.uvarint())}
			if d.err != nil {
				break
			}
			switch _, dup := owner[ent.id]; {
			case ent.id == 0 || dup || e.holdsLive(ent.id) || e.dead[ent.id] != nil:
				return fmt.Errorf("completed section: job %d of queue %q is held twice or is 0", ent.id, name)
			case ent.at < last || ent.at > e.now:
				return fmt.Errorf("completed section: job %d of queue %q completed at %d, out of order or after the clock", ent.id, name, ent.at)
			}
			last = ent.at
			owner[ent.id] = name
			q.completed.push(ent)
			e.completedHeld++
		}
	}
	if d.err != nil {
		return d.err
	}
	// Layout 15 is written only while used; a later layout carries the
	// section whether or not it holds anything.
	if d.version == snapshotVersionCompleted && e.completedHeld == 0 && !HasCompletedRetention(e.cfg) {
		return errors.New("completed section: layout 15 written without completed retention or a completed job")
	}
	if !d.completedSection {
		ids := make([]JobID, 0, len(owner))
		for id := range owner { // sorted below: order does not matter
			ids = append(ids, id)
		}
		slices.Sort(ids)
		for _, want := range ids {
			r := d.decodeCompletedRecord(owner[want])
			if d.err != nil {
				return d.err
			}
			if r.ID != want {
				return fmt.Errorf("completed section: record of job %d where job %d's is due", r.ID, want)
			}
			if !d.payloadsAhead {
				e.completed.PutCompleted(&r)
			}
		}
	}
	e.findCompletedNext()
	return nil
}

// nanosOrZero is fromNanos's inverse: 0 for the zero time.
func nanosOrZero(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}
