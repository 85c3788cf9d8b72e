package engine

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
)

// seenJob notes a job found in one of the engine's structures.
type seenJob struct {
	id    JobID
	where uint8
}

const (
	whereRing uint8 = iota
	whereReadyHeap
	whereScheduled
	whereLeases
	whereParked
	whereBlocked
)

var whereNames = [...]string{whereRing: "a ready ring", whereReadyHeap: "a ready heap", whereScheduled: "the scheduled set", whereLeases: "the leases", whereParked: "a concurrency key's parked jobs", whereBlocked: "the blocked jobs"}

// sortSeen sorts the notes by id and reports a job noted twice.
func sortSeen(seen []seenJob) error {
	if !slices.IsSortedFunc(seen, func(a, b seenJob) int { return cmp.Compare(a.id, b.id) }) {
		slices.SortFunc(seen, func(a, b seenJob) int {
			if c := cmp.Compare(a.id, b.id); c != 0 {
				return c
			}
			return cmp.Compare(a.where, b.where)
		})
	}
	for i := 1; i < len(seen); i++ {
		if seen[i].id == seen[i-1].id {
			return fmt.Errorf("job %d is in %s and in %s", seen[i].id, whereNames[seen[i-1].where], whereNames[seen[i].where])
		}
	}
	return nil
}

// CheckInvariants walks the whole state and reports the first broken
// invariant: every job sits in exactly the one structure its state names,
// the structures agree with the counts and with each other, orders hold, and
// per queue every job is accounted for:
//
//	Enqueued + DeadRequeued = Scheduled + Ready + Reserved + Acked + sum(DeadLettered) + Purged
//	sum(DeadLettered) = Dead + Dropped + DeadRequeued + DeadDrained + DeadDeleted + DeadExpired
//
// It is O(n) and reads only; tests call it after every step, Restore on
// every snapshot it accepts.
func (e *Engine) CheckInvariants() error { return e.checkInvariants(everyCheck) }

// invariantChecks says which of CheckInvariants' checks to skip because
// the caller already made them.
type invariantChecks struct {
	// keyLookups finds every idempotency key under its own key in the
	// index: a random access per key.
	keyLookups bool
}

var (
	everyCheck = invariantChecks{keyLookups: true}
	// restoreChecks are Restore's: its index was built by indexRestored,
	// which refused a key appearing twice in the one probe it made to
	// insert each, so every key is where a lookup finds it.
	restoreChecks = invariantChecks{}
)

func (e *Engine) checkInvariants(o invariantChecks) error {
	// Every job found in a structure is noted with where it was; sorted by
	// id, the notes must list each job of the index exactly once. (A slice
	// and a sort cost a fraction of a map of a million ids, and Restore runs
	// this on every snapshot.) Compact jobs are not noted: their rings are
	// each in id order, and the walk in id order below (eachJob, which
	// merges them with the index) finds one held twice. Noting them cost
	// 16 bytes per waiting job at every restore, 80 MB at 5M jobs, beside
	// a node's whole state in a small memory limit.
	seen := make([]seenJob, 0, e.jobs.len())
	nCompact := 0
	mark := func(j *job, where uint8) { seen = append(seen, seenJob{id: j.id, where: where}) }
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
		case j.state != StateScheduled && j.flags&flagRetryWait != 0:
			return fmt.Errorf("job %d: %v marked as waiting for a retry", j.id, j.state)
		case j.state != StateReady && j.flags&flagInRing != 0:
			return fmt.Errorf("job %d: %v marked as in a ready ring", j.id, j.state)
		}
		return nil
	}

	type counts struct{ ready, sched, reserved, dead, blocked int }
	got := make(map[*queue]*counts, len(e.queues))
	for name, q := range e.queues {
		if q.name != name {
			return fmt.Errorf("queue %q filed under %q", q.name, name)
		}
		got[q] = &counts{}
		for prio := range q.ready {
			if err := checkFairLevel(q, prio); err != nil {
				return err
			}
			var lineErr error
			q.ready[prio].lines(func(level *readyLevel) {
				if lineErr != nil {
					return
				}
				lineErr = func() error {
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
						mark(j, whereRing)
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
					// Compact jobs (compact.go): in id order, live ones
					// counted, only on a level without fairness, of a type
					// the queue interns.
					live = 0
					for i := 0; i < level.compact.Len(); i++ {
						ent := level.compact.ptr(i)
						if i > 0 && ent.id <= last {
							return fmt.Errorf("queue %q priority %d: compact ring out of id order at %d", q.name, prio, ent.id)
						}
						last = ent.id
						if ent.maxAttempts == 0 {
							continue
						}
						live++
						if int(ent.typ) >= len(q.types) || q.ready[prio].fair != nil {
							return fmt.Errorf("job %d: compact in queue %q priority %d with type %d of %d, fairness %v", ent.id, q.name, prio, ent.typ, len(q.types), q.ready[prio].fair != nil)
						}
					}
					if level.compact.Len() > 0 && level.compact.ptr(0).maxAttempts == 0 {
						return fmt.Errorf("queue %q priority %d: compact ring starts with a removed entry", q.name, prio)
					}
					if live != level.nCompact {
						return fmt.Errorf("queue %q priority %d: compact ring holds %d live jobs, counted %d", q.name, prio, live, level.nCompact)
					}
					nCompact += live
					for _, j := range level.returns.items {
						mark(j, whereReadyHeap)
						if j.state != StateReady || j.q != q || int(j.priority) != prio || j.due != 0 {
							return fmt.Errorf("job %d: in queue %q priority %d heap but is %v", j.id, q.name, prio, j.state)
						}
					}
					got[q].ready += level.len()
					return nil
				}()
			})
			if lineErr != nil {
				return lineErr
			}
		}
		parked, err := e.checkKeyLimits(q, mark)
		if err != nil {
			return err
		}
		got[q].ready += parked
	}
	if err := checkHeap(&e.sched); err != nil {
		return fmt.Errorf("scheduled set: %w", err)
	}
	for _, j := range e.sched.items {
		mark(j, whereScheduled)
		if j.state != StateScheduled || j.due == 0 {
			return fmt.Errorf("job %d: in the scheduled set but %v due %d", j.id, j.state, j.due)
		}
		got[j.q].sched++
	}
	if err := checkHeap(&e.leases); err != nil {
		return fmt.Errorf("leases: %w", err)
	}
	if len(e.leases.tokens) != len(e.leases.items) {
		return fmt.Errorf("leases: %d tokens for %d jobs", len(e.leases.tokens), len(e.leases.items))
	}
	for i, j := range e.leases.items {
		mark(j, whereLeases)
		// A job is Reserved exactly while it is here, so its heap
		// position finds its token (Engine.leaseOf); a stale position
		// would hand out another job's lease.
		lease := e.leases.tokens[i]
		if j.state != StateReserved || int(j.heapIdx) != i || j.due == 0 || lease == 0 || uint64(lease) >= e.nextLease || j.attempt < 1 {
			return fmt.Errorf("job %d: leased but %v at %d of %d deadline %d lease %d attempt %d", j.id, j.state, j.heapIdx, i, j.due, lease, j.attempt)
		}
		got[j.q].reserved++
	}
	if nCompact != e.nCompact {
		return fmt.Errorf("compact rings hold %d jobs, counted %d", nCompact, e.nCompact)
	}
	for id, d := range e.deps { // marks sorted below: order does not matter
		if j := e.jobs.get(id); j != nil && j.state == StateBlocked && d.pending > 0 {
			mark(j, whereBlocked)
			got[j.q].blocked++
		}
	}
	if err := e.checkDeps(); err != nil {
		return err
	}
	if err := sortSeen(seen); err != nil {
		return err
	}
	if len(seen) != e.jobs.len() {
		return fmt.Errorf("%d jobs in structures other than the compact rings, %d in the job index", len(seen), e.jobs.len())
	}
	// The walk yields the index's jobs and the compact rings' in one id
	// order: a job is a compact one's view unless the index holds it.
	walked, indexed := 0, 0
	var last JobID
	var indexErr error
	e.eachJob(func(j *job) bool {
		inIndex := e.jobs.get(j.id) == j
		switch {
		case walked > 0 && j.id <= last:
			indexErr = fmt.Errorf("job %d is held twice (compact, or compact and in the job index)", j.id)
		case !inIndex && e.jobs.get(j.id) != nil:
			// The index walk met a job its id does not find.
			indexErr = fmt.Errorf("job %d: the job index holds another job under its id", j.id)
		case inIndex && indexed >= len(seen):
			indexErr = fmt.Errorf("job index holds more than its count of %d jobs", e.jobs.len())
		case inIndex && seen[indexed].id != j.id:
			indexErr = fmt.Errorf("job %d is in no structure", min(j.id, seen[indexed].id))
		default:
			indexErr = checkJob(j)
		}
		if inIndex {
			indexed++
		}
		walked++
		last = j.id
		return indexErr == nil
	})
	if indexErr != nil {
		return indexErr
	}
	if walked != e.liveJobs() || indexed != e.jobs.len() {
		return fmt.Errorf("job index and compact rings hold %d jobs (%d indexed), count %d (%d indexed)", walked, indexed, e.liveJobs(), e.jobs.len())
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
	if err := e.checkExpiry(); err != nil {
		return err
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
		_, live := slices.BinarySearchFunc(seen, r.j.id, func(s seenJob, id JobID) int { return cmp.Compare(s.id, id) })
		if _, _, _, compact := e.findCompact(r.j.id); live || compact {
			return fmt.Errorf("job %d is live and in the dead letters", r.j.id)
		}
		if r.j.state != StateDead || r.cause < CauseAttemptsExhausted || r.cause > maxCause {
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
		if c.blocked != q.nBlocked {
			return fmt.Errorf("queue %q: holds %d blocked jobs, counted %d", q.name, c.blocked, q.nBlocked)
		}
		if c.ready != q.nReady || c.sched != q.nScheduled || c.reserved != q.nReserved || c.dead != q.nDead {
			return fmt.Errorf("queue %q: holds ready/scheduled/reserved/dead %d/%d/%d/%d, counted %d/%d/%d/%d",
				q.name, c.ready, c.sched, c.reserved, c.dead, q.nReady, q.nScheduled, q.nReserved, q.nDead)
		}
		var died uint64
		for _, v := range q.deadLettered {
			died += v
		}
		if in, out := q.enqueued+q.deadRequeued, uint64(q.live())+q.acked+died+q.purged; in != out {
			return fmt.Errorf("queue %q: %d jobs in (enqueued %d + requeued %d), %d accounted for (live %d + acked %d + dead-lettered %d + purged %d)",
				q.name, in, q.enqueued, q.deadRequeued, out, q.live(), q.acked, died, q.purged)
		}
		if gone := uint64(q.nDead) + q.dropped + q.deadRequeued + q.deadDrained + q.deadDeleted + q.deadExpired; gone != died {
			return fmt.Errorf("queue %q: %d dead-lettered, %d accounted for", q.name, died, gone)
		}
	}

	// Idempotency keys: the FIFO and the index agree, in creation order.
	if err := e.keys.check(e.queues, o.keyLookups); err != nil {
		return err
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
	// The RetryWindow index holds exactly their live tokens.
	liveTokens := 0
	for _, r := range e.resHeap {
		if !r.retryWindow() {
			continue
		}
		for _, t := range r.tokens {
			if liveToken(t) {
				if e.resByLease[t] != r {
					return fmt.Errorf("reservation %q: token %d not indexed", r.requestID, t)
				}
				liveTokens++
			}
		}
	}
	if liveTokens != len(e.resByLease) {
		return fmt.Errorf("reservation index holds %d tokens, the reservations %d", len(e.resByLease), liveTokens)
	}
	if err := e.checkSchedules(); err != nil {
		return err
	}
	// Held bytes: the incremental counts equal a count from scratch.
	if err := e.checkUniqueIndex(); err != nil {
		return err
	}
	return e.checkMemoryCounts()
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

// checkFairLevel verifies a level's fairness layout: present exactly when
// its queue names a fairness key, every live line in the rotation once,
// filed under its value and holding Ready jobs of that value only, the
// front live, and the counts right.
func checkFairLevel(q *queue, prio int) error {
	f := q.ready[prio].fair
	if (f != nil) != (q.set.fairKey != "") {
		return fmt.Errorf("queue %q priority %d: fair level present %v, fairness key %q", q.name, prio, f != nil, q.set.fairKey)
	}
	if f == nil {
		return nil
	}
	if f.rot.Len() > 0 && !f.rot.Front().inRot {
		return fmt.Errorf("queue %q priority %d: a stale line at the rotation's front", q.name, prio)
	}
	n, stale, live := 0, 0, 0
	inRot := map[*fairKey]bool{}
	for i := 0; i < f.rot.Len(); i++ {
		k := f.rot.At(i)
		if !k.inRot {
			stale++
			continue
		}
		if inRot[k] {
			return fmt.Errorf("queue %q priority %d: line %q twice in the rotation", q.name, prio, k.value)
		}
		inRot[k] = true
		live++
		if k.lvl.len() == 0 {
			return fmt.Errorf("queue %q priority %d: empty line %q in the rotation", q.name, prio, k.value)
		}
		if filed := f.line(k.lvl.peek(), false); filed != k {
			return fmt.Errorf("queue %q priority %d: line %q holds a job of another key", q.name, prio, k.value)
		}
		n += k.lvl.len()
	}
	if stale != f.stale || n != f.n || live != len(f.keys)+btoi(f.none != nil) {
		return fmt.Errorf("queue %q priority %d: rotation %d live, %d stale, %d jobs; counted %d lines, %d stale, %d jobs", q.name, prio, live, stale, n, len(f.keys)+btoi(f.none != nil), f.stale, f.n)
	}
	return nil
}

// checkExpiry verifies the expiry heap: a valid heap holding exactly the
// waiting jobs with a deadline, each at its recorded position.
func (e *Engine) checkExpiry() error {
	for i, j := range e.expiry {
		if j.ext == nil || int(j.ext.expPos) != i+1 || j.ext.expiresAt == 0 {
			return fmt.Errorf("expiry heap: job %d at %d misfiled", j.id, i)
		}
		if i > 0 && e.expiry.Less(i, (i-1)/2) {
			return errors.New("expiry heap out of order")
		}
		if j.state != StateReady && j.state != StateScheduled {
			return fmt.Errorf("expiry heap: job %d is %v", j.id, j.state)
		}
		if e.jobs.get(j.id) != j {
			return fmt.Errorf("expiry heap: job %d is not live", j.id)
		}
	}
	n := 0
	var err error
	e.jobs.each(func(j *job) bool {
		if hasDeadline(j) && j.state != StateReserved && j.state != StateBlocked { // a blocked job's deadline is watched once it is released
			n++
			if j.ext.expPos == 0 {
				err = fmt.Errorf("job %d: %v with a deadline but not in the expiry heap", j.id, j.state)
				return false
			}
		}
		return true
	})
	if err == nil && n != len(e.expiry) {
		err = fmt.Errorf("expiry heap holds %d jobs, %d wait with a deadline", len(e.expiry), n)
	}
	return err
}
