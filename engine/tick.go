package engine

import (
	"container/heap"
	"time"
)

// Tick applies every time-driven transition due at now: promotions, lease
// expiries, retention sweep and the expiry of idempotency keys and reserve
// request ids. Every other mutating operation runs the same pass first, so a
// job whose time has come is never handed out late or acked on a lapsed
// lease just because no tick was proposed yet.
func (e *Engine) Tick(now time.Time) TickResult {
	return e.advance(now)
}

// advance moves the clock to max(last, now) and applies what is due, in a
// fixed order: promotions, lease expiries, expiry of waiting jobs past
// their deadline, retention, keys, reservations.
func (e *Engine) advance(now time.Time) TickResult {
	t := e.tick(now)
	var res TickResult
	for j := e.sched.top(); j != nil && j.due <= t; j = e.sched.top() {
		e.detach(j)
		e.makeReady(j)
		res.Promoted++
	}
	for j := e.leases.top(); j != nil && j.due <= t; j = e.leases.top() {
		if len(e.resByLease) > 0 && e.holdUnseen(j, t) {
			continue
		}
		res.LeasesExpired++
		j.q.act.LeaseExpired++
		rec := e.attemptOf(j)
		e.detach(j)
		before := e.jobCharge(j)
		e.recordAttempt(j, rec, outcomeLeaseExpired, "")
		e.charge(j.q, e.jobCharge(j)-before)
		if j.attempt >= j.maxAttempts {
			e.kill(j, CauseLeaseExpired)
			res.DeadLettered++
			continue
		}
		j.q.act.Retried++
		e.makeReady(j)
	}
	e.expireDue(t, &res)
	e.expireCompleted(t, &res)
	for len(e.deadExp) > 0 && e.deadExp[0].expiresAt <= t {
		r := e.deadExp[0]
		e.dropDead(r)
		r.j.q.deadExpired++
		res.Swept++
	}
	window := int64(e.lim.IdempotencyWindow)
	for e.keys.len() > 0 && addSat(e.keys.front().createdAt, window) <= t {
		e.popKey()
		res.KeysExpired++
	}
	res.UniqueReleased = e.sweepUnique(t)
	for len(e.resHeap) > 0 && e.resHeap[0].expiresAt <= t {
		r := heap.Pop(&e.resHeap).(*reservation)
		delete(e.reservations, r.requestID)
		if r.retryWindow() {
			e.unindexReservation(r)
		}
		e.held -= reservationCharge(r)
	}
	return res
}

// NextDeadline is the earliest time at which Tick would change something:
// the next scheduled run time, lease deadline, retention expiry, idempotency
// key or reserve request id expiry, or the next token of a rate-limited queue
// whose Ready jobs wait for one (the tick then wakes the waiting reserves).
// ok is false when nothing is pending.
func (e *Engine) NextDeadline() (t time.Time, ok bool) {
	return e.nextDue(0)
}

// NextTickAt is when the leader should propose a tick: NextDeadline, except
// that the expiry of an idempotency key or of a reserve request id counts
// only sweepDelay after it. Nobody sees those expiries happen: every
// operation that looks a key or a request id up runs advance first, so a
// retry past its window finds it gone whether a tick dropped it or not; a
// tick at their exact expiry only frees their memory sooner. Chased one by
// one, they kept the leader proposing a tick every few milliseconds (one
// per key, TickMinInterval apart) for a whole idempotency window after the
// traffic stopped, and under load as many ticks as a fifth of the log;
// delayed, one tick drops a sweepDelay's worth of them.
func (e *Engine) NextTickAt(sweepDelay time.Duration) (t time.Time, ok bool) {
	return e.nextDue(int64(max(sweepDelay, 0)))
}

func (e *Engine) nextDue(sweepDelay int64) (t time.Time, ok bool) {
	var next int64
	consider := func(ns int64) {
		if !ok || ns < next {
			next, ok = ns, true
		}
	}
	if j := e.sched.top(); j != nil {
		consider(j.due)
	}
	if j := e.leases.top(); j != nil {
		consider(j.due)
	}
	if len(e.deadExp) > 0 {
		consider(e.deadExp[0].expiresAt)
	}
	if e.completedDue {
		consider(e.completedNext)
	}
	if len(e.expiry) > 0 {
		consider(e.expiry[0].ext.expiresAt)
	}
	if len(e.uniqueDone) > 0 {
		consider(e.uniqueDone[0].doneUntil)
	}
	if e.keys.len() > 0 {
		consider(addSat(addSat(e.keys.front().createdAt, int64(e.lim.IdempotencyWindow)), sweepDelay))
	}
	if len(e.resHeap) > 0 {
		consider(addSat(e.resHeap[0].expiresAt, sweepDelay))
	}
	if at, wake := e.limitsWakeAt(); wake {
		consider(at)
	}
	if !ok {
		return time.Time{}, false
	}
	return time.Unix(0, next).UTC(), true
}
