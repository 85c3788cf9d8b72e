package engine

import (
	"errors"
	"fmt"
	"time"
)

// PayloadStore keeps job payloads by job id, outside the job records, so
// that a backlog's bodies need not live in the Go heap of every replica
// (issue 35: the state machine hands the engine a store on disk).
//
// The engine calls it from its own goroutine only: PutPayload when a job
// with a non-empty payload is added (ids are never reused, so a payload is
// written once; the store copies it: the slice is the caller's), DeletePayload when the job or its dead-letter record is
// gone for good, and Payload to copy a job out (a delivery, an inspection,
// a snapshot, a forward or a redrive). Payload must return exactly what was
// put, including a payload put earlier in the same uncommitted apply batch;
// a payload the store lacks is a broken store, not a decision input: the
// engine never decides anything from a payload, so replicas stay equal
// wherever each keeps its payloads.
//
// Errors are the store's to handle: a store that cannot write or read
// stops the node (fail-stop) rather than answer without the payload.
type PayloadStore interface {
	PutPayload(id JobID, payload []byte)
	Payload(id JobID) []byte
	DeletePayload(id JobID)
}

// PayloadWalker is a PayloadStore that serves several reads (a walk over
// the whole state, a snapshot or a digest, in ascending id order; a
// reserve's deliveries, in the order handed out) through a reader of its
// own, cheaper than one lookup per payload. done releases the reader; the
// engine writes no payload while a reader is open. Walks may run
// concurrently, each with its reader.
type PayloadWalker interface {
	PayloadStore
	NewPayloadReader() (read func(JobID) []byte, done func())
}

// heapPayloads is the PayloadStore of an engine without an on-disk store
// (tests, tools reading a snapshot): the payloads in a map.
type heapPayloads map[JobID][]byte

func newHeapPayloads() heapPayloads { return make(heapPayloads) }

func (h heapPayloads) PutPayload(id JobID, p []byte) {
	c := make([]byte, len(p)) // exactly its length: no spare capacity held
	copy(c, p)
	h[id] = c
}
func (h heapPayloads) Payload(id JobID) []byte { return h[id] }
func (h heapPayloads) DeletePayload(id JobID)  { delete(h, id) }

// UsePayloadStore makes the engine keep payloads in s. It must be called
// on an engine that holds no job yet (a new one, before Restore or the
// first apply); Restore keeps the store.
func (e *Engine) UsePayloadStore(s PayloadStore) {
	if s == nil {
		panic("engine: UsePayloadStore(nil)")
	}
	if e.liveJobs() > 0 || len(e.dead) > 0 {
		panic("engine: UsePayloadStore on an engine holding jobs")
	}
	e.payloads = s
	if c, ok := s.(CompletedStore); ok {
		e.completed = c
	}
}

// SetPayloadsAhead tells the engine whether its payload store already
// holds the writes of the commands it now applies (and of some after
// them): a node that kept its store across a restart replays the log from
// its last snapshot up to the store's own applied index. While ahead, the
// engine changes its memory exactly as the first time (it decides nothing
// from a payload) but neither writes nor deletes a payload, and reads none
// back: a payload this replay copies (a forward, a redrive) keeps its
// length, and its copy is already stored; deliveries carry no payload
// (their answers reached their callers before the restart). Snapshot
// refuses to run while ahead: the state it would walk is older than the
// store's.
func (e *Engine) SetPayloadsAhead(ahead bool) { e.payloadsAhead = ahead }

// ErrPayloadsAhead is a snapshot of an engine replaying its log over a
// payload store that is ahead of it (SetPayloadsAhead).
var ErrPayloadsAhead = errors.New("engine: the payload store is ahead of the state being replayed")

// putPayload stores j's payload (the engine's own copy) and its length.
func (e *Engine) putPayload(j *job, payload []byte) {
	j.payloadLen = uint32(len(payload))
	e.diskHeld += int64(len(payload))
	if len(payload) > 0 {
		e.payloadRecords++
	}
	if len(payload) > 0 && !e.payloadsAhead {
		e.payloads.PutPayload(j.id, payload)
	}
}

// payloadOf reads j's payload back; nil for an empty one. The slice is the
// caller's: the engine never modifies it and keeps no reference to it
// beyond what the store does. While the store is ahead, it is zeros of
// the payload's length: only a copy to be written (and skipped) reads it.
func (e *Engine) payloadOf(j *job) []byte {
	if e.payloadsAhead {
		return make([]byte, j.payloadLen)
	}
	return payloadVia(j, e.payloads.Payload)
}

// payloadReader is how several reads in a row (a walk over the whole
// state, a reserve's deliveries) read payloads: the store's own reader
// when it has one (PayloadWalker).
func (e *Engine) payloadReader() (read func(JobID) []byte, done func()) {
	if w, ok := e.payloads.(PayloadWalker); ok {
		return w.NewPayloadReader()
	}
	return e.payloads.Payload, func() {}
}

// payloadVia reads j's payload with read, checking its length.
func payloadVia(j *job, read func(JobID) []byte) []byte {
	if j.payloadLen == 0 {
		return nil
	}
	p := read(j.id)
	if uint32(len(p)) != j.payloadLen {
		// The store lost or mangled what the engine put: answering with
		// another payload than the producer's would be silent corruption.
		panic(&PayloadDamageError{ID: j.id, Got: len(p), Want: int(j.payloadLen)})
	}
	return p
}

// PayloadDamageError is what the engine panics with when its store answers
// a payload of another length than the one it put: it stops the node
// rather than hand out another payload than the producer's. The store's
// owner (fsm) recovers it only to mark its store for a rebuild from the
// snapshot and the log, then lets it stop the node.
type PayloadDamageError struct {
	ID        JobID
	Got, Want int
}

func (e *PayloadDamageError) Error() string {
	return fmt.Sprintf("engine: payload of job %d is %d bytes in its store, want %d", e.ID, e.Got, e.Want)
}

// releasePayload deletes j's payload: j is gone for good.
func (e *Engine) releasePayload(j *job) {
	e.diskHeld -= int64(j.payloadLen)
	if j.payloadLen > 0 {
		e.payloadRecords--
	}
	if j.payloadLen > 0 && !e.payloadsAhead {
		e.payloads.DeletePayload(j.id)
	}
}

// checkDisk refuses an addition of need payload bytes once it would take
// the count above limits.max_disk_bytes (only counted once payloads are
// off the heap: before, the memory budget counts them).
func (e *Engine) checkDisk(need int64) error {
	if m := e.lim.MaxDiskBytes; m > 0 && e.payloadsOffHeap && e.diskHeld+need > m {
		return &DiskFullError{Held: e.diskHeld, Need: need, Limit: m}
	}
	return nil
}

// DiskFullError is an enqueue refused by limits.max_disk_bytes. It wraps
// ErrDiskFull.
type DiskFullError struct {
	Held, Need, Limit int64 // payload bytes held, the job's payload, the budget
}

// LimitKey is the config key of the budget that refused.
func (e *DiskFullError) LimitKey() string { return "limits.max_disk_bytes" }

func (e *DiskFullError) Error() string {
	return fmt.Sprintf("disk budget reached: the jobs hold %d bytes of payload and this one has %d, above limits.max_disk_bytes %d; retry once workers drain the backlog",
		e.Held, e.Need, e.Limit)
}

func (e *DiskFullError) Unwrap() error { return ErrDiskFull }

// PayloadsOffHeap reports whether payloads are charged to the disk budget
// instead of the memory budget (EnablePayloadsOffHeap).
func (e *Engine) PayloadsOffHeap() bool { return e.payloadsOffHeap }

// DiskHeld is the payload bytes the live jobs and retained records hold:
// the disk budget's count once PayloadsOffHeap.
func (e *Engine) DiskHeld() int64 { return e.diskHeld }

// EnablePayloadsOffHeap turns payloadsOffHeap on: from now on the memory
// budget counts no payload byte (payloads live in the node's store, not in
// its heap) and the disk budget counts them all. Every job held is
// recharged at once, so the count stays a function of the state. The
// leader proposes it (a ConfigSet of command version 16) once every member
// applies that version: a member still charging payloads to memory would
// refuse enqueues the others accept.
func (e *Engine) EnablePayloadsOffHeap(now time.Time) {
	e.advance(now)
	if e.payloadsOffHeap {
		return
	}
	type change struct {
		q *queue
		n int64
	}
	var changes []change
	e.eachJob(func(j *job) bool {
		changes = append(changes, change{j.q, -int64(j.payloadLen)})
		return true
	})
	for r := e.deadHead; r != nil; r = r.next {
		changes = append(changes, change{r.j.q, -int64(r.j.payloadLen)})
	}
	e.payloadsOffHeap = true
	for _, c := range changes { // sums: order does not matter
		e.charge(c.q, c.n)
	}
}

// PayloadLen is the payload length of the live job or retained
// dead-letter record id; ok is false when the engine holds neither.
func (e *Engine) PayloadLen(id JobID) (n uint32, ok bool) {
	if j := e.jobForRead(id); j != nil {
		return j.payloadLen, true
	}
	if r := e.dead[id]; r != nil {
		return r.j.payloadLen, true
	}
	return 0, false
}

// PayloadCount is how many live jobs and retained records have a
// non-empty payload: the records a snapshot's payload section holds.
func (e *Engine) PayloadCount() int {
	n := 0
	e.eachJob(func(j *job) bool {
		if j.payloadLen > 0 {
			n++
		}
		return true
	})
	for _, r := range e.dead {
		if r.j.payloadLen > 0 {
			n++
		}
	}
	return n
}

// PayloadsLoaded says that the LoadPayload calls after a RestoreWith of
// a PayloadLengths stream are done: the engine then holds its fresh plain
// waiting jobs compact (compact.go), which it defers until then. Without
// the call they stay in the job index: the same state, more memory.
func (e *Engine) PayloadsLoaded() { e.compactAll() }

// LoadPayload puts the payload of job id after a RestoreWith of a stream
// written with PayloadLengths: the job (or record) must be held with a
// payload of exactly len(p) bytes, else the input is corrupt
// (ErrCorruptSnapshot) and nothing is put. While the store is ahead
// (SetPayloadsAhead) it only checks: the store holds the payload already.
func (e *Engine) LoadPayload(id JobID, p []byte) error {
	n, ok := e.PayloadLen(id)
	switch {
	case !ok:
		return fmt.Errorf("%w: payload of job %d, which the snapshot does not hold", ErrCorruptSnapshot, id)
	case n == 0 || int(n) != len(p):
		return fmt.Errorf("%w: payload of job %d is %d bytes, the snapshot's job has %d", ErrCorruptSnapshot, id, len(p), n)
	}
	if !e.payloadsAhead {
		e.payloads.PutPayload(id, p)
	}
	return nil
}

// PayloadSectionBytes is the size of the payload section a snapshot of
// this state carries (fsm/snapshot.go): per live job or retained record
// with a payload, its id (8 bytes), length (4) and payload, then the
// section's end (8). A node whose snapshot's payloads stay in a checkpoint
// of its store (fsm, snapshot checkpoints) states the size from here,
// without reading a payload, when it sends the snapshot. O(1): it is
// taken under the lock that holds applies.
func (e *Engine) PayloadSectionBytes() int64 {
	const recordHeader, sectionEnd = 12, 8
	return sectionEnd + recordHeader*e.payloadRecords + e.diskHeld
}
