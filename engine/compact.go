package engine

import "container/heap"

// Compact jobs (issue 35 item 1, store/DESIGN.md "Step 2", 2a).
//
// Most waiting jobs are fresh and plain: Ready, never delivered, without
// an extension (custom fields, unique key, deadline, trace, schedule,
// origin, history), in a queue without a fairness key. Such a job is held
// as a readyEntry in its level's compact ring and nowhere else: no *job,
// no jobIndex slot. The entry keeps everything a later transition, count
// or snapshot needs (rule 1 of store/DESIGN.md: a transition never depends
// on a store read), so the form is a matter of memory only:
//
//   - A transition that needs the job as a *job (a reserve popping it, an
//     operator's action by id, a purge) converts it first (materialize);
//     that is a function of the replicated state, so replicas convert alike,
//     though nothing requires it: the form is not state.
//   - A read (GetJob, ListJobs, a snapshot, a digest, a count) sees a view:
//     a *job built from the entry and filed nowhere, never a conversion
//     (reads run concurrently and must not change the engine).
//   - Snapshots, digests and charges are functions of the content, so a
//     restored replica, which files every compactable Ready job compact, is
//     equal to an original that holds some of them as *job.
//
// A compact job is found by id (findCompact) by a binary search of every
// level whose compact ring's id range covers the id: ids ascend within a
// ring. That costs O(queues × levels) range checks, paid by operator
// actions by id and by a duplicate enqueue's answer, not by the hot path.

// readyEntry is a compact job in its level's ring: 24 bytes, no pointer, so
// the collector never scans the ring. Its queue and priority are the
// level's.
type readyEntry struct {
	id         JobID
	enqueuedAt int64
	payloadLen uint32
	// maxAttempts is the job's; 0 marks a removed entry (a tombstone): a
	// live job has at least one attempt.
	maxAttempts uint16
	typ         uint16 // index into the queue's types
}

// compactable reports whether j, Ready at the back of its level's ring,
// may be held as a readyEntry.
func compactable(j *job) bool {
	return j.state == StateReady && j.attempt == 0 && j.ext == nil &&
		j.typ != typeInExt && j.maxAttempts <= 1<<16-1 &&
		j.flags == flagInRing && j.q.ready[j.priority].fair == nil &&
		j.due == 0
}

// compactify moves j, a new job (not in the job index) just filed Ready
// at the back of its level's ring, into the level's compact ring, when it
// qualifies, and reports whether it did. j must not be used afterwards
// (its id finds the job); otherwise the caller files it in the index.
func (e *Engine) compactify(j *job) bool {
	if e.compactOff || !compactable(j) {
		return false
	}
	r := &j.q.ready[j.priority]
	if n := r.ring.Len(); n == 0 || r.ring.At(n-1) != j {
		return false
	}
	if n := r.compact.Len(); n > 0 && r.compact.ptr(n-1).id >= j.id {
		return false // keeps the compact ring in id order (never the case for a fresh job)
	}
	r.ring.PopBack()
	r.live--
	r.compact.PushBack(readyEntry{id: j.id, enqueuedAt: j.enqueuedAt, payloadLen: j.payloadLen, maxAttempts: uint16(j.maxAttempts), typ: j.typ})
	r.nCompact++
	e.nCompact++
	e.spareJob = j
	return true
}

// viewOf builds the *job of a compact entry of q's level prio, filed
// nowhere.
func viewOf(q *queue, prio int, ent *readyEntry) *job {
	j := new(job)
	fillView(j, q, prio, ent)
	return j
}

// fillView makes j the job of a compact entry of q's level prio.
func fillView(j *job, q *queue, prio int, ent *readyEntry) {
	*j = job{
		id:          ent.id,
		q:           q,
		enqueuedAt:  ent.enqueuedAt,
		heapIdx:     -1,
		maxAttempts: uint32(ent.maxAttempts),
		payloadLen:  ent.payloadLen,
		typ:         ent.typ,
		priority:    uint8(prio),
		state:       StateReady,
	}
}

// convert builds the *job a compact entry of q's level prio becomes,
// reusing the one compactify last let go (a fresh job's, referenced
// nowhere since): with compact jobs, an enqueue, reserve and ack cycle
// would otherwise allocate a job struct twice.
func (e *Engine) convert(q *queue, prio int, ent *readyEntry) *job {
	j := e.spareJob
	if j == nil {
		j = new(job)
	}
	e.spareJob = nil
	fillView(j, q, prio, ent)
	return j
}

// dropCompactTombstones removes removed entries at the compact ring's front.
func (r *readyLevel) dropCompactTombstones() {
	for r.compact.Len() > 0 && r.compact.ptr(0).maxAttempts == 0 {
		r.compact.PopFront()
	}
}

// compactFront is the level's first live compact entry, or nil.
func (r *readyLevel) compactFront() *readyEntry {
	for i := 0; i < r.compact.Len(); i++ {
		if ent := r.compact.ptr(i); ent.maxAttempts != 0 {
			return ent
		}
	}
	return nil
}

// compactAfter is the position of the first compact entry with an id
// above after (ids ascend in the ring).
func (r *readyLevel) compactAfter(after JobID) int {
	lo, hi := 0, r.compact.Len()
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		if r.compact.ptr(mid).id <= after {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	return lo
}

// popReady removes and returns q's level prio's next job as a *job filed
// in the job index (Ready, in no structure: what readyLevel.pop returns),
// or nil.
func (e *Engine) popReady(q *queue, prio int) *job {
	r := &q.ready[prio]
	if r.nCompact > 0 {
		r.dropCompactTombstones()
		ent := r.compact.ptr(0)
		if next := r.peek(); next == nil || ent.id < next.id {
			j := e.convert(q, prio, ent)
			r.compact.PopFront()
			r.nCompact--
			e.nCompact--
			r.dropCompactTombstones()
			e.jobs.set(j)
			return j
		}
	}
	return r.pop()
}

// peekReady is q's level prio's next job without changing anything (a view
// when it is compact), or nil.
func peekReady(q *queue, prio int) *job {
	r := &q.ready[prio]
	next := r.peek()
	if ent := r.compactFront(); ent != nil && (next == nil || ent.id < next.id) {
		return viewOf(q, prio, ent)
	}
	return next
}

// findCompact finds the live compact entry of id: its queue, level and
// position in the level's compact ring.
func (e *Engine) findCompact(id JobID) (q *queue, prio, i int, ok bool) {
	if e.nCompact == 0 {
		return nil, 0, 0, false
	}
	for _, q := range e.queues { // at most one ring holds id: order does not matter
		for prio := range q.ready {
			r := &q.ready[prio]
			n := r.compact.Len()
			if r.nCompact == 0 || id < r.compact.ptr(0).id || id > r.compact.ptr(n-1).id {
				continue
			}
			lo, hi := 0, n
			for lo < hi {
				mid := int(uint(lo+hi) >> 1)
				if r.compact.ptr(mid).id < id {
					lo = mid + 1
				} else {
					hi = mid
				}
			}
			if lo < n {
				if ent := r.compact.ptr(lo); ent.id == id && ent.maxAttempts != 0 {
					return q, prio, lo, true
				}
			}
		}
	}
	return nil, 0, 0, false
}

// holdsLive reports whether job id is live, held full or compact.
func (e *Engine) holdsLive(id JobID) bool {
	if e.jobs.get(id) != nil {
		return true
	}
	_, _, _, ok := e.findCompact(id)
	return ok
}

// jobForRead is the live job id, a view when it is compact, or nil. For
// reads, and for transitions that only look.
func (e *Engine) jobForRead(id JobID) *job {
	if j := e.jobs.get(id); j != nil {
		return j
	}
	if q, prio, i, ok := e.findCompact(id); ok {
		return viewOf(q, prio, q.ready[prio].compact.ptr(i))
	}
	return nil
}

// jobForChange is the live job id as a *job filed in the job index, a
// compact one converted (still Ready in its level), or nil. For
// transitions that change the job.
func (e *Engine) jobForChange(id JobID) *job {
	if j := e.jobs.get(id); j != nil {
		return j
	}
	q, prio, i, ok := e.findCompact(id)
	if !ok {
		return nil
	}
	r := &q.ready[prio]
	ent := r.compact.mut(i) // changed below: a snapshot may share its chunk
	j := e.convert(q, prio, ent)
	ent.maxAttempts = 0 // a tombstone
	r.nCompact--
	e.nCompact--
	r.dropCompactTombstones()
	e.jobs.set(j)
	r.push(j) // by id: the ring's back or the returns heap, same place in line
	return j
}

// materializeQueue converts every compact job of q (an operator's bulk
// action on the queue follows).
func (e *Engine) materializeQueue(q *queue) {
	for prio := range q.ready {
		r := &q.ready[prio]
		for r.nCompact > 0 {
			r.dropCompactTombstones()
			ent := r.compact.ptr(0)
			j := e.convert(q, prio, ent)
			r.compact.PopFront()
			r.nCompact--
			e.nCompact--
			e.jobs.set(j)
			r.push(j)
		}
		r.dropCompactTombstones()
	}
}

// compactAll files every compactable job of the rings compact (Restore,
// once the snapshot's sections are all read: a later one may give a job
// an extension).
func (e *Engine) compactAll() {
	if e.compactOff {
		return
	}
	for _, q := range e.queues { // each level on its own: order does not matter
		for prio := range q.ready {
			r := &q.ready[prio]
			if r.fair != nil || r.ring.Len() == 0 {
				continue
			}
			var keep deque[*job]
			for i := 0; i < r.ring.Len(); i++ {
				j := r.ring.At(i)
				if j.flags&flagInRing == 0 {
					continue // a tombstone
				}
				if !compactable(j) || (r.compact.Len() > 0 && r.compact.ptr(r.compact.Len()-1).id >= j.id) {
					keep.PushBack(j)
					continue
				}
				r.live--
				e.jobs.del(j.id)
				r.compact.PushBack(readyEntry{id: j.id, enqueuedAt: j.enqueuedAt, payloadLen: j.payloadLen, maxAttempts: uint16(j.maxAttempts), typ: j.typ})
				r.nCompact++
				e.nCompact++
			}
			r.ring = keep
		}
	}
}

// liveJobs is the count of live jobs, compact ones included.
func (e *Engine) liveJobs() int { return e.jobs.len() + e.nCompact }

// compactCursor walks one level's compact ring for eachJob.
type compactCursor struct {
	q    *queue
	prio int
	i    int
}

type cursorHeap []compactCursor

func (h cursorHeap) id(k int) JobID {
	c := &h[k]
	return c.q.ready[c.prio].compact.ptr(c.i).id
}
func (h cursorHeap) Len() int           { return len(h) }
func (h cursorHeap) Less(a, b int) bool { return h.id(a) < h.id(b) }
func (h cursorHeap) Swap(a, b int)      { h[a], h[b] = h[b], h[a] }
func (h *cursorHeap) Push(x any)        { *h = append(*h, x.(compactCursor)) }
func (h *cursorHeap) Pop() any {
	old := *h
	c := old[len(old)-1]
	*h = old[:len(old)-1]
	return c
}

// skipDead moves c to its ring's next live entry; false when none is left.
func (c *compactCursor) skipDead() bool {
	r := &c.q.ready[c.prio]
	for c.i < r.compact.Len() {
		if r.compact.ptr(c.i).maxAttempts != 0 {
			return true
		}
		c.i++
	}
	return false
}

// eachJob calls fn for every live job in id order, compact ones as a
// view, until fn returns false. The view is one struct refilled for each
// compact job, so that a walk over millions of them (a snapshot, a digest,
// the invariants) leaves no garbage: fn must not keep the pointer.
func (e *Engine) eachJob(fn func(*job) bool) {
	if e.nCompact == 0 {
		e.jobs.each(fn)
		return
	}
	var h cursorHeap
	for _, q := range e.queues { // merged by id below: order does not matter
		for prio := range q.ready {
			c := compactCursor{q: q, prio: prio}
			if q.ready[prio].nCompact > 0 && c.skipDead() {
				h = append(h, c)
			}
		}
	}
	heap.Init(&h)
	var view job
	// emitUpTo yields the compact jobs below limit (all when limit is 0).
	emitUpTo := func(limit JobID) bool {
		for len(h) > 0 {
			c := &h[0]
			ent := c.q.ready[c.prio].compact.ptr(c.i)
			if limit != 0 && ent.id >= limit {
				return true
			}
			fillView(&view, c.q, c.prio, ent)
			if !fn(&view) {
				return false
			}
			c.i++
			if c.skipDead() {
				if len(h) > 1 { // one queue and priority, the common backlog: nothing to reorder
					heap.Fix(&h, 0)
				}
			} else {
				heap.Pop(&h)
			}
		}
		return true
	}
	stopped := false
	e.jobs.each(func(j *job) bool {
		if !emitUpTo(j.id) || !fn(j) {
			stopped = true
			return false
		}
		return true
	})
	if !stopped {
		emitUpTo(0)
	}
}
