package engine

import (
	"errors"
	"fmt"
)

// CheckInvariants walks the whole state and reports the first broken
// invariant: every job sits in exactly the one structure its state names,
// the structures agree with the counts and with each other, orders hold, and
// per queue every job is accounted for:
//
//	Enqueued + DeadRequeued = Scheduled + Ready + Reserved + Acked + sum(DeadLettered)
//	sum(DeadLettered) = Dead + Dropped + DeadRequeued + DeadDrained + DeadDeleted + DeadExpired
//
// It is O(n) and reads only; tests call it after every step, Restore on
// every snapshot it accepts.
func (e *Engine) CheckInvariants() error {
	seen := make(map[JobID]string, e.jobs.len())
	mark := func(j *job, where string) error {
		if prev, dup := seen[j.id]; dup {
			return fmt.Errorf("job %d is in %s and in %s", j.id, prev, where)
		}
		seen[j.id] = where
		return nil
	}
	checkJob := func(j *job) error {
		switch {
		case j.q == nil || e.queues[j.q.name] != j.q:
			return fmt.Errorf("job %d: queue not in the engine", j.id)
		case j.id == 0 || uint64(j.id) >= e.nextID:
			return fmt.Errorf("job %d: id outside [1, %d)", j.id, e.nextID)
		case j.maxAttempts < 1:
			return fmt.Errorf("job %d: max attempts 0", j.id)
		case j.attempt > j.maxAttempts:
			return fmt.Errorf("job %d: attempt %d above max attempts %d", j.id, j.attempt, j.maxAttempts)
		case j.priority > MaxPriority:
			return fmt.Errorf("job %d: priority %d", j.id, j.priority)
		case j.state != StateReserved && j.lease != 0:
			return fmt.Errorf("job %d: %v with lease %d", j.id, j.state, j.lease)
		case j.state != StateScheduled && j.flags&flagRetryWait != 0:
			return fmt.Errorf("job %d: %v marked as waiting for a retry", j.id, j.state)
		case j.state != StateReady && j.flags&flagInRing != 0:
			return fmt.Errorf("job %d: %v marked as in a ready ring", j.id, j.state)
		}
		return nil
	}

	type counts struct{ ready, sched, reserved, dead int }
	got := make(map[*queue]*counts, len(e.queues))
	for name, q := range e.queues {
		if q.name != name {
			return fmt.Errorf("queue %q filed under %q", q.name, name)
		}
		got[q] = &counts{}
		for prio := range q.ready {
			level := &q.ready[prio]
			live := 0
			var last JobID
			for i := 0; i < level.ring.Len(); i++ {
				j := level.ring.At(i)
				if i > 0 && j.id <= last {
					return fmt.Errorf("queue %q priority %d: ring out of id order at %d", q.name, prio, j.id)
				}
				last = j.id
				if j.flags&flagInRing == 0 {
					continue
				}
				live++
				if err := mark(j, "a ready ring"); err != nil {
					return err
				}
				if j.state != StateReady || j.q != q || int(j.priority) != prio || j.heapIdx != -1 || j.due != 0 {
					return fmt.Errorf("job %d: in queue %q priority %d ring but is %v/%q/%d", j.id, q.name, prio, j.state, j.q.name, j.priority)
				}
			}
			if live != level.live {
				return fmt.Errorf("queue %q priority %d: ring holds %d live jobs, counted %d", q.name, prio, live, level.live)
			}
			if err := checkHeap(&level.returns); err != nil {
				return fmt.Errorf("queue %q priority %d returns: %w", q.name, prio, err)
			}
			for _, j := range level.returns.items {
				if err := mark(j, "a ready heap"); err != nil {
					return err
				}
				if j.state != StateReady || j.q != q || int(j.priority) != prio || j.due != 0 {
					return fmt.Errorf("job %d: in queue %q priority %d heap but is %v", j.id, q.name, prio, j.state)
				}
			}
			got[q].ready += level.len()
		}
	}
	if err := checkHeap(&e.sched); err != nil {
		return fmt.Errorf("scheduled set: %w", err)
	}
	for _, j := range e.sched.items {
		if err := mark(j, "the scheduled set"); err != nil {
			return err
		}
		if j.state != StateScheduled || j.due == 0 {
			return fmt.Errorf("job %d: in the scheduled set but %v due %d", j.id, j.state, j.due)
		}
		got[j.q].sched++
	}
	if err := checkHeap(&e.leases); err != nil {
		return fmt.Errorf("leases: %w", err)
	}
	for _, j := range e.leases.items {
		if err := mark(j, "the leases"); err != nil {
			return err
		}
		if j.state != StateReserved || j.due == 0 || j.lease == 0 || uint64(j.lease) >= e.nextLease || j.attempt < 1 {
			return fmt.Errorf("job %d: leased but %v deadline %d lease %d attempt %d", j.id, j.state, j.due, j.lease, j.attempt)
		}
		got[j.q].reserved++
	}
	if len(seen) != e.jobs.len() {
		return fmt.Errorf("%d jobs in structures, %d in the job index", len(seen), e.jobs.len())
	}
	indexed := 0
	var indexErr error
	e.jobs.each(func(j *job) bool {
		indexed++
		if e.jobs.get(j.id) != j {
			indexErr = fmt.Errorf("job %d filed under another id", j.id)
		} else if _, ok := seen[j.id]; !ok {
			indexErr = fmt.Errorf("job %d is in no structure", j.id)
		} else {
			indexErr = checkJob(j)
		}
		return indexErr == nil
	})
	if indexErr != nil {
		return indexErr
	}
	if indexed != e.jobs.len() {
		return fmt.Errorf("job index holds %d jobs, counts %d", indexed, e.jobs.len())
	}
	for _, page := range e.jobs.pages {
		if page != nil && page.n == 0 {
			return errors.New("job index keeps an empty page")
		}
	}
	for id := range e.workers {
		if j := e.jobs.get(id); j == nil || j.state != StateReserved {
			return fmt.Errorf("worker recorded for job %d, which is not reserved", id)
		}
	}

	// Dead letters: the global list, the per-queue lists, the map and the
	// expiry heap hold the same records, in failed_at order.
	n := 0
	var prev *deadRecord
	for r := e.deadHead; r != nil; r = r.next {
		if r.prev != prev {
			return fmt.Errorf("dead list: broken back link at job %d", r.j.id)
		}
		if prev != nil && r.failedAt < prev.failedAt {
			return fmt.Errorf("dead list: job %d failed before job %d", r.j.id, prev.j.id)
		}
		if e.dead[r.j.id] != r {
			return fmt.Errorf("dead list: job %d not in the dead map", r.j.id)
		}
		if err := mark(r.j, "the dead letters"); err != nil {
			return err
		}
		if r.j.state != StateDead || r.cause < CauseAttemptsExhausted || r.cause > CauseAdmin {
			return fmt.Errorf("dead record of job %d: state %v cause %v", r.j.id, r.j.state, r.cause)
		}
		if err := checkJob(r.j); err != nil {
			return err
		}
		if r.expIdx < 0 || r.expIdx >= len(e.deadExp) || e.deadExp[r.expIdx] != r {
			return fmt.Errorf("dead record of job %d: expiry index %d wrong", r.j.id, r.expIdx)
		}
		got[r.j.q].dead++
		prev = r
		n++
	}
	if prev != e.deadTail {
		return errors.New("dead list: tail does not match")
	}
	if n != len(e.dead) || n != len(e.deadExp) {
		return fmt.Errorf("dead letters: list %d, map %d, expiry heap %d", n, len(e.dead), len(e.deadExp))
	}
	for i := 1; i < len(e.deadExp); i++ {
		if e.deadExp.Less(i, (i-1)/2) {
			return errors.New("dead expiry heap out of order")
		}
	}
	for _, q := range e.queues {
		m := 0
		var qprev *deadRecord
		for r := q.deadHead; r != nil; r = r.qnext {
			if r.qprev != qprev || r.j.q != q || e.dead[r.j.id] != r {
				return fmt.Errorf("queue %q dead list broken at job %d", q.name, r.j.id)
			}
			if qprev != nil && r.failedAt < qprev.failedAt {
				return fmt.Errorf("queue %q dead list out of order at job %d", q.name, r.j.id)
			}
			qprev = r
			m++
		}
		if qprev != q.deadTail || m != q.nDead {
			return fmt.Errorf("queue %q: dead list holds %d, counted %d", q.name, m, q.nDead)
		}
		c := got[q]
		if c.ready != q.nReady || c.sched != q.nScheduled || c.reserved != q.nReserved || c.dead != q.nDead {
			return fmt.Errorf("queue %q: holds ready/scheduled/reserved/dead %d/%d/%d/%d, counted %d/%d/%d/%d",
				q.name, c.ready, c.sched, c.reserved, c.dead, q.nReady, q.nScheduled, q.nReserved, q.nDead)
		}
		var died uint64
		for _, v := range q.deadLettered {
			died += v
		}
		if in, out := q.enqueued+q.deadRequeued, uint64(q.live())+q.acked+died; in != out {
			return fmt.Errorf("queue %q: %d jobs in (enqueued %d + requeued %d), %d accounted for (live %d + acked %d + dead-lettered %d)",
				q.name, in, q.enqueued, q.deadRequeued, out, q.live(), q.acked, died)
		}
		if gone := uint64(q.nDead) + q.dropped + q.deadRequeued + q.deadDrained + q.deadDeleted + q.deadExpired; gone != died {
			return fmt.Errorf("queue %q: %d dead-lettered, %d accounted for", q.name, died, gone)
		}
	}

	// Idempotency keys: the FIFO and the map agree, in creation order.
	if e.keyFIFO.Len() != len(e.keys) {
		return fmt.Errorf("idempotency keys: FIFO %d, map %d", e.keyFIFO.Len(), len(e.keys))
	}
	for i := 0; i < e.keyFIFO.Len(); i++ {
		ent := e.keyFIFO.At(i)
		if e.keys[ent.key] != ent {
			return fmt.Errorf("idempotency key %q: FIFO and map disagree", ent.key)
		}
		if i > 0 && ent.createdAt < e.keyFIFO.At(i-1).createdAt {
			return fmt.Errorf("idempotency key %q out of creation order", ent.key)
		}
	}
	if len(e.reservations) != len(e.resHeap) {
		return fmt.Errorf("reservations: map %d, heap %d", len(e.reservations), len(e.resHeap))
	}
	for i, r := range e.resHeap {
		if r.idx != i || e.reservations[r.requestID] != r || len(r.ids) != len(r.tokens) {
			return fmt.Errorf("reservation %q inconsistent", r.requestID)
		}
		if i > 0 && e.resHeap.Less(i, (i-1)/2) {
			return errors.New("reservation heap out of order")
		}
	}
	return nil
}

func checkHeap(h *jobHeap) error {
	for i, j := range h.items {
		if int(j.heapIdx) != i {
			return fmt.Errorf("job %d at %d records index %d", j.id, i, j.heapIdx)
		}
		if j.flags&flagInRing != 0 {
			return fmt.Errorf("job %d in a heap marked as in a ring", j.id)
		}
		if i > 0 && h.Less(i, (i-1)/2) {
			return fmt.Errorf("heap order broken at job %d", j.id)
		}
	}
	return nil
}
