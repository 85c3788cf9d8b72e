package engine

import (
	"cmp"
	"container/heap"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"slices"
	"time"
	"unicode/utf8"
)

// Unique jobs.
//
// An enqueue with UniqueOpts claims a uniqueness key in its queue: the
// producer's explicit key, or one derived from the job type, the payload
// and the chosen custom fields. While the key is held, another enqueue of
// the same key in the same queue is a conflict: it returns the holder
// (Duplicate set) or, with Refuse, fails with a *UniqueConflictError
// (ErrAlreadyExists). A key is held while its job is waiting, scheduled or
// reserved; with CoverDead also while its dead-letter record is retained;
// with CompletedFor also for that long after the job was acked.
//
// The index maps (queue, key) to its holder in O(1). The keys of live jobs
// and retained records are part of their jobs (and of the snapshot through
// them); the keys of acked jobs held for a period are kept in a heap by
// expiry, swept on the tick like the idempotency keys.

// A unique job's key held by another job of its queue is ErrAlreadyExists
// (queues.go), wrapped by a *UniqueConflictError that names the holder.

// UniqueOpts makes an enqueue unique in its queue.
type UniqueOpts struct {
	// Key is the uniqueness key; empty derives one from the job type, the
	// payload and the custom fields named in Fields.
	Key string
	// Fields are custom fields the derived key includes (a field the job
	// lacks counts as absent, distinct from an empty value). With Key set
	// they must be empty.
	Fields []string
	// CoverDead holds the key while the job's dead-letter record is kept.
	CoverDead bool
	// CompletedFor holds the key this long after the job was acked; 0:
	// released at the ack. At most the queue's max_schedule_horizon.
	CompletedFor time.Duration
	// Refuse fails a conflicting enqueue with ErrAlreadyExists instead of
	// returning the existing job.
	Refuse bool
}

// UniqueConflictError names the job holding a unique key.
type UniqueConflictError struct {
	Queue    string
	Key      string
	Existing JobID
	State    State // StateCompleted when the holder was acked (CompletedFor)
}

func (e *UniqueConflictError) Error() string {
	return fmt.Sprintf("unique key %q of queue %q is held by job %d (%v)", e.Key, e.Queue, e.Existing, e.State)
}

func (e *UniqueConflictError) Unwrap() error { return ErrAlreadyExists }

// uniqueRef is a key in its queue. The queue pointer identifies the queue
// for the life of the engine; nothing iterates the map.
type uniqueRef struct {
	q   *queue
	key string
}

// uniqueEntry is a held key. doneUntil is 0 while its job is live or a
// retained record, and the end of the hold once the job was acked.
type uniqueEntry struct {
	ref       uniqueRef
	jobID     JobID
	doneUntil int64
	heapIdx   int
}

// Charges of the unique index (memory.go): a map slot and an entry.
const (
	uniqueEntryOverhead = 96
	maxUniqueKeyBytes   = maxIdempotencyKeyBytes
	// derivedKeyPrefix marks a derived key, so it never equals an explicit
	// key a producer could choose without meaning to.
	derivedKeyPrefix = "sha256:"
)

func uniqueCharge(key string) int64 { return uniqueEntryOverhead + int64(len(key)) }

// uniqueDoneHeap orders the entries of acked jobs by (doneUntil, job id).
type uniqueDoneHeap []*uniqueEntry

func (h uniqueDoneHeap) Len() int { return len(h) }
func (h uniqueDoneHeap) Less(i, j int) bool {
	if h[i].doneUntil != h[j].doneUntil {
		return h[i].doneUntil < h[j].doneUntil
	}
	return h[i].jobID < h[j].jobID
}
func (h uniqueDoneHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].heapIdx, h[j].heapIdx = i, j
}
func (h *uniqueDoneHeap) Push(x any) {
	ent := x.(*uniqueEntry)
	ent.heapIdx = len(*h)
	*h = append(*h, ent)
}
func (h *uniqueDoneHeap) Pop() any {
	old := *h
	ent := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	ent.heapIdx = -1
	return ent
}

// checkUnique checks what of u does not depend on the state.
func (e *Engine) checkUnique(u *UniqueOpts) error {
	switch {
	case len(u.Key) > maxUniqueKeyBytes:
		return invalid("unique.key", "is %d bytes, above the limit of %d", len(u.Key), maxUniqueKeyBytes)
	case !utf8.ValidString(u.Key):
		return invalid("unique.key", "must be valid UTF-8")
	case u.Key != "" && len(u.Fields) > 0:
		return invalid("unique.fields", "must be empty when unique.key is set (fields shape a derived key)")
	case len(u.Fields) > e.lim.MaxCustomFields:
		return invalid("unique.fields", "has %d names, above limits.max_custom_fields %d", len(u.Fields), e.lim.MaxCustomFields)
	case u.CompletedFor < 0:
		return invalid("unique.completed_for", "must not be negative, got %s", u.CompletedFor)
	}
	for i, f := range u.Fields {
		switch {
		case f == "":
			return invalid(fmt.Sprintf("unique.fields[%d]", i), "must not be empty")
		case len(f) > e.lim.MaxCustomFieldBytes:
			return invalid(fmt.Sprintf("unique.fields[%d]", i), "is %d bytes, above limits.max_custom_field_bytes %d", len(f), e.lim.MaxCustomFieldBytes)
		case !utf8.ValidString(f):
			return invalid(fmt.Sprintf("unique.fields[%d]", i), "must be valid UTF-8")
		}
	}
	return nil
}

// UniqueKeyOf is the key an enqueue of p claims: its explicit key, or the
// hex SHA-256 of the job type, the payload and the chosen custom fields
// (sorted, duplicates once, each with its value or absent), every part
// length-prefixed so no two inputs share an encoding. "" when p is not
// unique.
func UniqueKeyOf(p *EnqueueParams) string {
	u := p.Unique
	if u == nil {
		return ""
	}
	if u.Key != "" {
		return u.Key
	}
	h := sha256.New()
	var n [binary.MaxVarintLen64]byte
	put := func(b []byte) {
		h.Write(n[:binary.PutUvarint(n[:], uint64(len(b)))])
		h.Write(b)
	}
	put([]byte(p.JobType))
	put(p.Payload)
	fields := slices.Clone(u.Fields)
	slices.Sort(fields)
	fields = slices.Compact(fields)
	for _, f := range fields {
		put([]byte(f))
		if v, ok := p.Custom[f]; ok {
			h.Write([]byte{1})
			put([]byte(v))
		} else {
			h.Write([]byte{0})
		}
	}
	return derivedKeyPrefix + hex.EncodeToString(h.Sum(nil))
}

// uniqueHolder is the entry holding key in q, nil when free. An acked job's
// hold that has ended is released here, so a conflict never outlives its
// period even before the tick sweeps it.
func (e *Engine) uniqueHolder(q *queue, key string) *uniqueEntry {
	ent := e.unique[uniqueRef{q, key}]
	if ent != nil && ent.doneUntil != 0 && ent.doneUntil <= e.now {
		e.dropUniqueDone(ent)
		return nil
	}
	return ent
}

// uniqueConflict is the answer to an enqueue whose key ent holds.
func (e *Engine) uniqueConflict(ent *uniqueEntry, u *UniqueOpts) (EnqueueResult, error) {
	state := StateCompleted // acked, its key held for CompletedFor
	if ent.doneUntil == 0 {
		state = e.stateOf(ent.jobID)
	}
	if u.Refuse {
		return EnqueueResult{}, &UniqueConflictError{Queue: ent.ref.q.name, Key: ent.ref.key, Existing: ent.jobID, State: state}
	}
	return EnqueueResult{JobID: ent.jobID, State: state, Duplicate: true}, nil
}

// claimUnique records j as the holder of key (free: checked by the caller).
func (e *Engine) claimUnique(j *job, key string, u *UniqueOpts) {
	x := j.extension()
	x.uniqueKey = key
	x.uniqueDead = u.CoverDead
	x.uniqueDoneFor = int64(u.CompletedFor)
	e.addUniqueEntry(&uniqueEntry{ref: uniqueRef{j.q, key}, jobID: j.id, heapIdx: -1})
}

func (e *Engine) addUniqueEntry(ent *uniqueEntry) {
	if e.unique == nil {
		e.unique = make(map[uniqueRef]*uniqueEntry)
	}
	e.unique[ent.ref] = ent
	e.charge(ent.ref.q, uniqueEntryOverhead)
}

// uniqueAcked ends or extends the hold of an acked job (whose charge the
// caller has released): with CompletedFor the key stays held for that
// period, charged on its own.
func (e *Engine) uniqueAcked(j *job) {
	if j.ext == nil || j.ext.uniqueKey == "" {
		return
	}
	ent := e.unique[uniqueRef{j.q, j.ext.uniqueKey}]
	if j.ext.uniqueDoneFor <= 0 {
		e.releaseUnique(ent)
		return
	}
	ent.doneUntil = addSat(e.now, j.ext.uniqueDoneFor)
	e.charge(j.q, int64(len(ent.ref.key))) // the key is now the entry's own
	heap.Push(&e.uniqueDone, ent)
}

// uniqueKilled follows a job into death: a record kept under CoverDead
// keeps the key; otherwise (or when the job is dropped) it is released.
// The job's charge loses the key it no longer holds.
func (e *Engine) uniqueKilled(j *job, retained bool) {
	if j.ext == nil || j.ext.uniqueKey == "" || (retained && j.ext.uniqueDead) {
		return
	}
	before := e.jobCharge(j)
	e.releaseUnique(e.unique[uniqueRef{j.q, j.ext.uniqueKey}])
	j.ext.uniqueKey, j.ext.uniqueDead, j.ext.uniqueDoneFor = "", false, 0
	e.charge(j.q, e.jobCharge(j)-before)
}

// uniqueDropped releases the key of a record removed for good.
func (e *Engine) uniqueDropped(j *job) {
	if j.ext != nil && j.ext.uniqueKey != "" {
		e.releaseUnique(e.unique[uniqueRef{j.q, j.ext.uniqueKey}])
	}
}

func (e *Engine) releaseUnique(ent *uniqueEntry) {
	delete(e.unique, ent.ref)
	e.charge(ent.ref.q, -uniqueEntryOverhead)
}

func (e *Engine) dropUniqueDone(ent *uniqueEntry) {
	heap.Remove(&e.uniqueDone, ent.heapIdx)
	e.charge(ent.ref.q, -int64(len(ent.ref.key)))
	e.releaseUnique(ent)
}

// sweepUnique ends the holds of acked jobs whose period is over.
func (e *Engine) sweepUnique(t int64) (n int) {
	for len(e.uniqueDone) > 0 && e.uniqueDone[0].doneUntil <= t {
		e.dropUniqueDone(e.uniqueDone[0])
		n++
	}
	return n
}

// UniqueHolder reports which job holds key in queue, if any.
func (e *Engine) UniqueHolder(queue, key string) (JobID, bool) {
	q := e.queues[queue]
	if q == nil {
		return 0, false
	}
	ent := e.unique[uniqueRef{q, key}]
	if ent == nil || (ent.doneUntil != 0 && ent.doneUntil <= e.now) {
		return 0, false
	}
	return ent.jobID, true
}

// rebuildUnique indexes the keys of the live jobs and retained records
// (Restore; the acked jobs' holds were read already).
func (e *Engine) rebuildUnique() error {
	add := func(j *job) error {
		if j.ext == nil || j.ext.uniqueKey == "" {
			return nil
		}
		ref := uniqueRef{j.q, j.ext.uniqueKey}
		if e.unique[ref] != nil {
			return fmt.Errorf("unique key %s of queue %q held twice", quoteShort(ref.key), j.q.name)
		}
		if j.state == StateDead && !j.ext.uniqueDead {
			return fmt.Errorf("dead job %d holds a unique key without covering dead", j.id)
		}
		if e.unique == nil {
			e.unique = make(map[uniqueRef]*uniqueEntry)
		}
		e.unique[ref] = &uniqueEntry{ref: ref, jobID: j.id, heapIdx: -1}
		return nil
	}
	var err error
	e.jobs.each(func(j *job) bool {
		err = add(j)
		return err == nil
	})
	for r := e.deadHead; r != nil && err == nil; r = r.next {
		err = add(r.j)
	}
	return err
}

// checkUniqueIndex checks that the index holds exactly the keys of the
// jobs and records that claim one, plus the acked jobs' holds (CheckInvariants).
func (e *Engine) checkUniqueIndex() error {
	claims := 0
	check := func(j *job) error {
		if j.ext == nil || j.ext.uniqueKey == "" {
			return nil
		}
		claims++
		ent := e.unique[uniqueRef{j.q, j.ext.uniqueKey}]
		if ent == nil || ent.jobID != j.id || ent.doneUntil != 0 {
			return fmt.Errorf("job %d: its unique key is not indexed to it", j.id)
		}
		return nil
	}
	var err error
	e.jobs.each(func(j *job) bool {
		err = check(j)
		return err == nil
	})
	for r := e.deadHead; r != nil && err == nil; r = r.next {
		err = check(r.j)
	}
	if err != nil {
		return err
	}
	if claims+len(e.uniqueDone) != len(e.unique) {
		return fmt.Errorf("unique index holds %d keys, jobs claim %d and acked jobs %d", len(e.unique), claims, len(e.uniqueDone))
	}
	for i, ent := range e.uniqueDone {
		if ent.heapIdx != i || ent.doneUntil == 0 || e.unique[ent.ref] != ent || e.jobs.get(ent.jobID) != nil {
			return fmt.Errorf("unique key %s of queue %q: bad hold of acked job %d", quoteShort(ent.ref.key), ent.ref.q.name, ent.jobID)
		}
	}
	return nil
}

// sortedUniqueDone lists the acked jobs' holds in (doneUntil, id) order,
// for the snapshot.
func (e *Engine) sortedUniqueDone() []*uniqueEntry {
	out := slices.Clone([]*uniqueEntry(e.uniqueDone))
	slices.SortFunc(out, func(a, b *uniqueEntry) int {
		return cmp.Or(cmp.Compare(a.doneUntil, b.doneUntil), cmp.Compare(a.jobID, b.jobID))
	})
	return out
}
