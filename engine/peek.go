package engine

import "time"

// Read-only looks at what a Reserve would find, for the long-poll reserve of
// the rpc layer: a waiting Reserve proposes (spends a replicated log entry)
// only when the leader's applied state shows there is something to hand
// out. Like the other read methods they change nothing, may run
// concurrently with each other and with the other read methods, and read
// no clock: now is the caller's.

// CanReserve reports whether Reserve(now, p) might answer anything but an
// empty result without error. It is false only when the state alone shows
// that the reserve would hand out nothing: the queue is paused, unknown or
// has no Ready job, nothing that advance(now) would run first (a promotion
// or a lease expiry due at now) could make one Ready, p does not repeat the
// request id of a remembered reservation, and p passes Reserve's checks. A
// true answer may still end in an empty reserve (a stale state, a due
// transition on another queue): it errs towards proposing, never towards
// leaving a job or an error unreported.
func (e *Engine) CanReserve(now time.Time, p ReserveParams) bool {
	// Whatever Reserve would refuse is worth proposing: the refusal is the
	// answer the caller must get.
	if checkQueueName("queue", p.Queue) != nil ||
		p.Lease < 0 ||
		checkString("worker_id", p.WorkerID, maxWorkerIDBytes) != nil ||
		checkString("request_id", p.RequestID, maxRequestIDBytes) != nil {
		return true
	}
	q := e.queues[p.Queue]
	if q == nil && e.lim.Strict {
		return true
	}
	if p.RequestID != "" {
		// A retry replays its reservation (even one whose expiry is due:
		// only the proposal's advance may drop it); a new id may be
		// refused for capacity.
		if e.reservations[p.RequestID] != nil || len(e.reservations) >= e.lim.MaxIdempotencyKeys {
			return true
		}
	}
	if q != nil && q.paused {
		return false
	}
	// Reserve first runs what is due at max(last now, now). A due
	// promotion or lease expiry may make a job of this queue Ready; the
	// heaps hold every queue's jobs, so any due top counts (a tick will
	// run it soon anyway).
	t := e.now
	if !now.IsZero() {
		t = max(t, toNanos(now))
	}
	if j := e.sched.top(); j != nil && j.due <= t {
		return true
	}
	if j := e.leases.top(); j != nil && j.due <= t {
		return true
	}
	return q != nil && q.nReady-q.parkedCount() > 0 && (!q.set.limits.set() || reserveAllowance(q, 1, t) > 0)
}

// Reservable returns how many jobs of queue a Reserve could take as the
// state stands: its Ready jobs not parked behind a full concurrency key,
// within what max_reserved and the rate limit allow at the engine's clock,
// 0 when the queue is paused or unknown. It
// does not look at transitions due at a later now: a waiting reserve is
// woken by the tick that runs them.
func (e *Engine) Reservable(queue string) int {
	q := e.queues[queue]
	if q == nil || q.paused {
		return 0
	}
	n := q.nReady - q.parkedCount()
	if q.set.limits.set() {
		n = reserveAllowance(q, n, e.now)
	}
	return n
}
