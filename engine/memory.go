package engine

import (
	"fmt"
	"time"
)

// Memory accounting and the memory budget.
//
// The engine counts the bytes it holds — the "held bytes" — so that it can
// refuse new jobs before the process runs out of memory (issue 22), as
// Redis does with maxmemory and the noeviction policy and RabbitMQ with its
// memory alarm: producers are refused, everything that drains the backlog
// keeps working.
//
// The count is a model of the heap, not a reading of it: a fixed overhead
// per object plus the length of every byte string the engine keeps. The
// model is a pure function of the replicated state, so every replica holds
// the same count after the same entries, and a budget compared with it
// refuses the same enqueues on every replica — a refusal decided from
// runtime.MemStats would differ between replicas (each has its own garbage
// collector timing and its own allocations outside the engine), and a job
// accepted by the leader and refused by a follower would split the state.
// The budget value (Limits.MaxMemoryBytes, QueueConfig.MaxMemoryBytes) is
// part of the replicated Config, set by the leader's ConfigSet, for the same
// reason: a replica never compares the count with its own local limit.
//
// What is charged, and to whom:
//
//   - a job, live or kept as a dead-letter record: jobOverhead, its payload,
//     its job type (as if not shared: the interning of type strings is not
//     part of the state), and when it uses its extension extOverhead, every
//     custom field (customFieldOverhead + key + value), its last reason and
//     each attempt record (attemptOverhead + worker + reason). Charged to the
//     job's queue.
//   - a dead-letter record: deadRecordOverhead more, to the job's queue.
//   - the worker id of a reserved job: workerOverhead + its length, to the
//     job's queue.
//   - an idempotency key: keyOverhead + its length as kept (a packed key is
//     kept inside the entry), to its queue.
//   - a reserve request id: reservationOverhead + its length + 16 bytes per
//     delivery it remembers; to the engine only (it names no queue).
//
// The engine's count is the sum of its queues' plus the reservations'. Each
// operation changes it by the charge of what it added or removed: O(1) in
// the jobs held, walking only the job's own custom fields and attempt
// records (bounded by the limits) when it has any. A job does not store its
// charge (that would cost it a size class): jobCharge recomputes it from the
// content, and the operations that change the content (a nack, a release,
// a lease expiry, an admin dead-letter's reason) charge the difference;
// Restore recounts from scratch, and CheckInvariants recomputes the whole
// count and compares (so a restored engine's count equals the original's:
// the count is a function of the snapshot's content).
//
// jobOverhead was measured (TestMemory_CountTracksTheHeap, runtime.MemStats
// after a GC) when a job was an 80-byte struct: an engine holding 200,000
// waiting jobs of empty payload, a 3-byte type and no key took 116 bytes
// of heap per job on amd64 with Go 1.26 (the struct, its ring slot, its
// job-index slot, and the slack of pages and ring), counted 147 with
// jobOverhead 144 (1.27x). A job is now a 64-byte struct, and a fresh plain
// waiting one a 24-byte compact entry (compact.go, 24.5 bytes of heap per
// job at 1M and 10M jobs): once the cluster charges so (compactCharge,
// command version 22, every member at once) such a job is charged
// compactJobOverhead (1.3x); before, a full job's charge;
// 50,000 jobs of 1 KiB with a client's 32-hex-digit key take 1217 bytes
// per job, counted 1251 (1.03x). A 1 KiB payload occupies exactly its 1024-byte
// size class. The other overheads are the sizes of the structs and map or
// table slots involved, rounded up. What the count leaves out — the Raft
// log, gRPC buffers, the garbage between collections — is what the server's
// default budget leaves room for (cmd/sepp: a share of the memory limit).
const (
	jobOverhead = 144
	// compactJobOverhead is a plain waiting job once the cluster charges
	// it as what it is (compactCharge, store/DESIGN.md step 2b): a
	// 24-byte readyEntry in its level's compact ring, measured at 24.5
	// bytes of heap per job at 1M and 10M jobs (TestHeapPerWaitingJob),
	// rounded up to the ring's chunk slack. Its type is an index into the
	// queue's interned types: no type bytes are charged.
	compactJobOverhead  = 32
	extOverhead         = 64  // jobExt, in the 64-byte size class
	customFieldOverhead = 48  // two string headers in a map slot, with the map's slack
	attemptOverhead     = 56  // an attemptRecord in its slice, with slack
	deadRecordOverhead  = 128 // deadRecord (80), its dead-map entry and expiry-heap slot
	workerOverhead      = 48  // a workers-map entry
	// startedOverhead is a started-map entry (attempts.go).
	startedOverhead = 32
	// attemptDetailOverhead is what a history entry's detail fields
	// (start, lease, directive) add to attemptOverhead.
	attemptDetailOverhead = 24
	// originOverhead is a jobOrigin (two string headers, id, times).
	originOverhead      = 64
	keyOverhead         = 80  // idemEntry (56 until 2026-12-05, 40 since) in the FIFO plus its index slots at 3/4 load; lowering it is a command version, so replicas charge alike
	reservationOverhead = 160 // reservation, its map entry and heap slot
	deliveryBytes       = 16  // a remembered (job id, lease token)
)

// MemoryUse is what MemoryHeld reports.
type MemoryUse struct {
	// Held is the engine's count of held bytes; Limit the global budget
	// (limits.max_memory_bytes), 0 when unbounded.
	Held, Limit int64
	// Queues are the queues' own counts and budgets, sorted by name.
	Queues []QueueMemoryUse
}

// QueueMemoryUse is one queue's held bytes and its budget (0: none of its
// own).
type QueueMemoryUse struct {
	Queue       string
	Held, Limit int64
}

// MemoryHeld reports the held bytes against the budgets. A read method.
func (e *Engine) MemoryHeld() MemoryUse {
	out := MemoryUse{Held: e.held, Limit: e.lim.MaxMemoryBytes}
	for _, q := range e.sortedQueues() {
		out.Queues = append(out.Queues, QueueMemoryUse{Queue: q.name, Held: q.held, Limit: q.set.maxMemory})
	}
	return out
}

// MemoryHeldTotal is the engine's count of held bytes, without listing the
// queues (for a gauge read often).
func (e *Engine) MemoryHeldTotal() int64 { return e.held }

func customCharge(custom map[string]string) int64 {
	var n int64
	for k, v := range custom { // a sum: order does not matter
		n += customFieldOverhead + int64(len(k)) + int64(len(v))
	}
	return n
}

// jobHeld is the charge of j's content, its payload included until
// payloads are kept off the heap (payloads.go).
func (e *Engine) jobHeld(j *job) int64 {
	n := e.jobCharge(j)
	if !e.payloadsOffHeap {
		n += int64(j.payloadLen)
	}
	return n
}

// jobCharge is the charge of j's content but its payload: an operation
// that changes the content but not the payload charges the difference of
// two jobCharge, the same wherever the payload lives.
func (e *Engine) jobCharge(j *job) int64 {
	if e.compactCharge && plainWaiting(j) {
		return compactJobOverhead
	}
	n := int64(jobOverhead) + int64(len(j.jobType()))
	if x := j.ext; extCharged(x) {
		n += extOverhead + customCharge(x.custom) + int64(len(x.lastReason)) + int64(len(x.uniqueKey))
		for i := range x.history {
			n += attemptCharge(&x.history[i])
		}
		n += originCharge(x.origin)
		n += traceCharge(x.trace)
	}
	return n
}

// extCharged reports whether x holds anything charged: an extension that
// holds only a job type (typeInExt) or nothing is not.
func extCharged(x *jobExt) bool {
	return x != nil && (x.scheduledAt != 0 || x.lastReason != "" || len(x.custom) > 0 || len(x.history) > 0 || x.uniqueKey != "" || x.origin != nil || x.expiresAt != 0 || x.trace != nil)
}

// plainWaiting reports whether j is charged as a compact entry once the
// cluster charges so (compactCharge): Ready, never delivered, with nothing
// charged in its extension. It is what compactable asks of the content
// alone, without the form's conditions (the ring position, a fairness
// level, an interned type: which types a queue interns depends on the
// order it met them, which a restore changes), so the charge is a function
// of the state: a restored replica holds more jobs compact than one that
// never restarted, and both count the same. A plain job held as a *job
// (on a fair level, or of a type its queue does not intern) is charged as
// a compact one all the same: the budget under-counts it by a job struct.
// (A parked job has a concurrency key, a custom field: it is not plain.)
func plainWaiting(j *job) bool {
	return j.state == StateReady && j.attempt == 0 && !extCharged(j.ext) &&
		j.maxAttempts <= 1<<16-1
}

func attemptCharge(h *attemptRecord) int64 {
	n := attemptOverhead + int64(len(h.worker)) + int64(len(h.reason))
	if h.lease != 0 || h.startedAt != 0 || h.directive != 0 {
		// The detail fields take the record to the next size class; a
		// record without them (written before recordFields) is charged
		// as older binaries charge it, so budgets agree across a cluster.
		n += attemptDetailOverhead
	}
	return n
}

func workerCharge(w string) int64 { return workerOverhead + int64(len(w)) }

// chargeOf is what a remembered key is charged: keyOverhead and the key
// itself when it is not packed in its entry.
func (k *idemKeys) chargeOf(ent *idemEntry) int64 { return keyOverhead + int64(k.plainLen(ent)) }

func reservationCharge(r *reservation) int64 {
	return reservationOverhead + int64(len(r.requestID)) + deliveryBytes*int64(len(r.ids))
}

// enqueueCharge predicts jobCharge of the job an enqueue of p to q would
// add, plus its key's charge.
func enqueueCharge(p *EnqueueParams, sk *storedKey, custom int64, scheduled, payloadOffHeap bool) int64 {
	n := int64(jobOverhead) + int64(len(p.JobType))
	if !payloadOffHeap {
		n += int64(len(p.Payload))
	}
	if custom > 0 || scheduled {
		n += extOverhead + custom
	}
	if p.IdempotencyKey != "" {
		n += keyOverhead
		if !sk.packed {
			n += int64(len(p.IdempotencyKey))
		}
	}
	return n
}

// charge adds n (negative to release) to q's count and the engine's.
func (e *Engine) charge(q *queue, n int64) {
	q.held += n
	e.held += n
}

// checkMemory refuses an addition of need bytes to q once it would take the
// engine or q above its budget.
func (e *Engine) checkMemory(q *queue, need int64) error {
	if m := e.lim.MaxMemoryBytes; m > 0 && e.held+need > m {
		return &MemoryFullError{Held: e.held, Need: need, Limit: m}
	}
	if m := q.set.maxMemory; m > 0 && q.held+need > m {
		return &MemoryFullError{Queue: q.name, Held: q.held, Need: need, Limit: m}
	}
	return nil
}

// MemoryFullError is an enqueue refused by a memory budget: the global one
// (Queue empty) or a queue's. It wraps ErrMemoryFull.
type MemoryFullError struct {
	Queue             string // the queue whose own budget refused; "" for the global one
	Held, Need, Limit int64  // bytes held, the job's charge, the budget
}

// LimitKey is the config key of the budget that refused.
func (e *MemoryFullError) LimitKey() string {
	if e.Queue == "" {
		return "limits.max_memory_bytes"
	}
	return fmt.Sprintf("queues[%q].max_memory_bytes", e.Queue)
}

func (e *MemoryFullError) Error() string {
	if e.Queue == "" {
		return fmt.Sprintf("memory budget reached: the server holds %d bytes of jobs and this one needs %d, above limits.max_memory_bytes %d; retry once workers drain the backlog",
			e.Held, e.Need, e.Limit)
	}
	return fmt.Sprintf("memory budget of queue %q reached: it holds %d bytes of jobs and this one needs %d, above its max_memory_bytes %d; retry once workers drain it",
		e.Queue, e.Held, e.Need, e.Limit)
}

func (e *MemoryFullError) Unwrap() error { return ErrMemoryFull }

// recount sets every charge and count from the state (Restore).
func (e *Engine) recount() {
	e.held = 0
	for _, q := range e.queues {
		q.held = 0
	}
	e.eachJob(func(j *job) bool {
		e.charge(j.q, e.jobHeld(j))
		return true
	})
	for id, w := range e.workers { // sums: order does not matter
		if j := e.jobs.get(id); j != nil { // else CheckInvariants refuses the snapshot
			e.charge(j.q, workerCharge(w))
		}
	}
	for id := range e.started { // sums: order does not matter
		if j := e.jobs.get(id); j != nil {
			e.charge(j.q, startedOverhead)
		}
	}
	for id, p := range e.progress { // sums: order does not matter
		if j := e.jobs.get(id); j != nil {
			e.charge(j.q, progressCharge(p))
		}
	}
	for id, d := range e.deps { // sums: order does not matter
		if j := e.jobForRead(id); j != nil {
			e.charge(j.q, depsCharge(d))
		}
	}
	for r := e.deadHead; r != nil; r = r.next {
		e.charge(r.j.q, e.jobHeld(r.j)+deadRecordOverhead)
	}
	for i := 0; i < e.keys.len(); i++ {
		ent := e.keys.at(i)
		e.charge(e.keys.queueOf(ent), e.keys.chargeOf(ent))
	}
	for _, r := range e.resHeap {
		e.held += reservationCharge(r)
	}
	for _, ent := range e.unique { // sums: order does not matter
		e.charge(ent.ref.q, uniqueEntryOverhead)
	}
	for _, ent := range e.uniqueDone {
		e.charge(ent.ref.q, int64(len(ent.ref.key)))
	}
	for _, q := range e.queues { // sums: order does not matter
		e.charge(q, int64(q.completed.len())*completedEntryCharge)
	}
}

// checkMemoryCounts recomputes every charge and compares it with the
// incremental counts (CheckInvariants).
func (e *Engine) checkMemoryCounts() error {
	perQueue := make(map[*queue]int64, len(e.queues))
	e.eachJob(func(j *job) bool {
		perQueue[j.q] += e.jobHeld(j)
		return true
	})
	for id, w := range e.workers {
		perQueue[e.jobs.get(id).q] += workerCharge(w)
	}
	for id := range e.started {
		if j := e.jobs.get(id); j != nil && j.state == StateReserved {
			perQueue[j.q] += startedOverhead
		} else {
			return fmt.Errorf("job %d has a delivery start but is not reserved", id)
		}
	}
	for id, p := range e.progress { // any job breaking it fails: order does not matter
		if j := e.jobs.get(id); j != nil && j.state == StateReserved {
			perQueue[j.q] += progressCharge(p)
		} else {
			return fmt.Errorf("job %d has progress but is not reserved", id)
		}
	}
	for r := e.deadHead; r != nil; r = r.next {
		perQueue[r.j.q] += e.jobHeld(r.j) + deadRecordOverhead
	}
	for id, d := range e.deps { // sums: order does not matter
		if j := e.jobForRead(id); j != nil {
			perQueue[j.q] += depsCharge(d)
		}
	}
	for i := 0; i < e.keys.len(); i++ {
		ent := e.keys.at(i)
		perQueue[e.keys.queueOf(ent)] += e.keys.chargeOf(ent)
	}
	for _, ent := range e.unique {
		perQueue[ent.ref.q] += uniqueEntryOverhead
	}
	for _, ent := range e.uniqueDone {
		perQueue[ent.ref.q] += int64(len(ent.ref.key))
	}
	completed := 0
	for _, q := range e.queues {
		perQueue[q] += int64(q.completed.len()) * completedEntryCharge
		completed += q.completed.len()
	}
	if completed != e.completedHeld {
		return fmt.Errorf("engine counts %d completed jobs, holds %d", e.completedHeld, completed)
	}
	var total int64
	for _, r := range e.resHeap {
		total += reservationCharge(r)
	}
	for _, q := range e.queues {
		if perQueue[q] != q.held {
			return fmt.Errorf("queue %q: counts %d held bytes, holds %d", q.name, q.held, perQueue[q])
		}
		total += q.held
	}
	if total != e.held {
		return fmt.Errorf("engine counts %d held bytes, holds %d", e.held, total)
	}
	var disk, records int64
	e.eachJob(func(j *job) bool {
		disk += int64(j.payloadLen)
		records += min(int64(j.payloadLen), 1)
		return true
	})
	for r := e.deadHead; r != nil; r = r.next {
		disk += int64(r.j.payloadLen)
		records += min(int64(r.j.payloadLen), 1)
	}
	if disk != e.diskHeld {
		return fmt.Errorf("engine counts %d payload bytes, holds %d", e.diskHeld, disk)
	}
	if records != e.payloadRecords {
		return fmt.Errorf("engine counts %d payload records, holds %d", e.payloadRecords, records)
	}
	return nil
}

// CompactCharge reports whether a plain waiting job is charged as a
// compact entry (EnableCompactCharge).
func (e *Engine) CompactCharge() bool { return e.compactCharge }

// EnableCompactCharge turns compactCharge on: from now on a plain waiting
// job (plainWaiting: Ready, never delivered, nothing in its extension) is
// charged compactJobOverhead, what its compact entry takes, instead of a
// full job's charge; a reserve or any change that makes it a full job
// charges the difference. Every count is recomputed at once, so it stays a
// function of the state. The leader proposes it (a ConfigSet of command
// version 22) once every member applies that version: a member still
// charging full jobs would refuse enqueues the others accept. Enabling
// twice changes nothing.
func (e *Engine) EnableCompactCharge(now time.Time) {
	e.advance(now)
	if e.compactCharge {
		return
	}
	e.compactCharge = true
	e.recount()
}
