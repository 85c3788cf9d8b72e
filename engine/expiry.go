package engine

import (
	"container/heap"
	"time"
)

// Expiry of unstarted jobs (EnqueueParams.Expiry: At and TTL, [[queues]]
// max_wait):
//
//   - A job may carry a deadline by which it must be reserved. The job's
//     own deadline is expires_at, or the enqueue's now plus ttl; the
//     queue's max_wait gives one too, counted from when the job first
//     becomes due (its scheduled_at, else the enqueue). The earliest of
//     those is fixed when the job is added and never moves: like the SQS
//     retention period it counts from the first enqueue, so a job retried
//     (waiting for its retry delay, or Ready again after a nack, release
//     or lapsed lease) keeps its original deadline.
//   - A Scheduled or Ready job whose deadline is at or before the now of a
//     command is dead-lettered with the cause expired before the command
//     does anything else (advance), so an expired job is never delivered.
//     The dead-letter rules apply as for every cause: forwarding to the
//     dead_letter_queue, retention, the record's cause.
//   - A Reserved job is never expired: its lease rules apply. If it comes
//     back after its deadline (nack, release, lapsed lease with attempts
//     left) it dies as expired at the next command.
//   - A dead-letter record carries no deadline; a requeued record waits
//     without one. A queue's max_wait applies to the jobs added after it
//     is set (like dead-letter retention), never to those already held.
//
// The deadlines sit in one min-heap by (deadline, id) of the waiting jobs
// that have one, so the pass costs O(log n) per expired job and nothing
// while none is due.

// Bounds of a deadline: a ttl or max_wait of at least a millisecond.
const minExpiry = time.Millisecond

// expiryHeap is the min-heap of waiting jobs with a deadline, by
// (deadline, id). A job's position plus one is kept in its ext.expPos (0:
// not in the heap), since the job also sits in its level or the scheduled
// set through heapIdx.
type expiryHeap []*job

func (h expiryHeap) Len() int { return len(h) }
func (h expiryHeap) Less(a, b int) bool {
	x, y := h[a].ext.expiresAt, h[b].ext.expiresAt
	if x != y {
		return x < y
	}
	return h[a].id < h[b].id
}
func (h expiryHeap) Swap(a, b int) {
	h[a], h[b] = h[b], h[a]
	h[a].ext.expPos = int32(a + 1)
	h[b].ext.expPos = int32(b + 1)
}
func (h *expiryHeap) Push(x any) {
	j := x.(*job)
	j.ext.expPos = int32(len(*h) + 1)
	*h = append(*h, j)
}
func (h *expiryHeap) Pop() any {
	old := *h
	j := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	j.ext.expPos = 0
	return j
}

// hasDeadline reports whether j carries a deadline.
func hasDeadline(j *job) bool { return j.ext != nil && j.ext.expiresAt != 0 }

// watchDeadline files a waiting job with a deadline in the expiry heap.
func (e *Engine) watchDeadline(j *job) {
	if j.ext != nil && j.ext.expiresAt != 0 && j.ext.expPos == 0 {
		heap.Push(&e.expiry, j)
	}
}

// unwatchDeadline takes j out of the expiry heap (it is reserved, or
// leaves the waiting states).
func (e *Engine) unwatchDeadline(j *job) {
	if j.ext != nil && j.ext.expPos != 0 {
		heap.Remove(&e.expiry, int(j.ext.expPos-1))
	}
}

// setDeadline gives j the deadline at unless it has an earlier one (the
// earliest applies), keeping the heap and the held bytes right.
func (e *Engine) setDeadline(j *job, at int64) {
	if at == 0 || (hasDeadline(j) && j.ext.expiresAt <= at) {
		return
	}
	e.expiryUsed = true
	before := e.jobCharge(j)
	x := j.extension()
	x.expiresAt = at
	if x.expPos != 0 {
		heap.Fix(&e.expiry, int(x.expPos-1))
	} else if j.state == StateReady || j.state == StateScheduled {
		e.watchDeadline(j)
	}
	e.charge(j.q, e.jobCharge(j)-before)
}

// dropDeadline clears a detached job's deadline (it dies).
func (e *Engine) dropDeadline(j *job) {
	if !hasDeadline(j) {
		return
	}
	e.unwatchDeadline(j)
	before := e.jobCharge(j)
	j.ext.expiresAt = 0
	e.charge(j.q, e.jobCharge(j)-before)
}

// queueDeadline is the deadline q's max_wait gives a job added now that
// first becomes due at due (0: now); 0 when the queue sets none.
func (e *Engine) queueDeadline(q *queue, due int64) int64 {
	if q.set.maxWait == 0 {
		return 0
	}
	return addSat(max(due, e.now), q.set.maxWait)
}

// jobDeadline resolves an enqueue's own deadline (expires_at, ttl) at the
// engine's now, checking it: a deadline must lie after now and after the
// job's scheduled run time. 0: none.
func (e *Engine) jobDeadline(x *ExpiryOpts, due int64) (int64, error) {
	var at int64
	if x.TTL != 0 {
		if x.TTL < minExpiry {
			return 0, invalid("ttl", "must be at least %s (0 is none), got %s", minExpiry, x.TTL)
		}
		at = addSat(e.now, int64(x.TTL))
	}
	if !x.At.IsZero() {
		t := toNanos(x.At)
		if t <= e.now {
			return 0, invalid("expires_at", "is %s, not after the server's now %s", x.At.UTC().Format(time.RFC3339Nano), fromNanos(e.now).Format(time.RFC3339Nano))
		}
		if at == 0 || t < at {
			at = t
		}
	}
	if at != 0 && due != 0 && at <= due {
		field := "expires_at"
		if x.At.IsZero() {
			field = "ttl"
		}
		return 0, invalid(field, "ends at %s, not after the job's scheduled_at %s: the job could never run", fromNanos(at).Format(time.RFC3339Nano), fromNanos(due).Format(time.RFC3339Nano))
	}
	return at, nil
}

// expireDue dead-letters every waiting job whose deadline is at or before
// t, in (deadline, id) order.
func (e *Engine) expireDue(t int64, res *TickResult) {
	for len(e.expiry) > 0 && e.expiry[0].ext.expiresAt <= t {
		j := e.expiry[0]
		e.detach(j) // takes it out of the expiry heap too
		e.kill(j, CauseExpired)
		res.Expired++
		res.DeadLettered++
	}
}

// Bounds of the queue settings max_wait and fairness_key.
const (
	maxQueueMaxWait     = 100 * 365 * 24 * time.Hour
	maxFairnessKeyBytes = 256
)

func validateExpiryFairness(q QueueConfig, key func(string) string) error {
	switch {
	case q.MaxWait != 0 && (q.MaxWait < minExpiry || q.MaxWait > maxQueueMaxWait):
		return invalid(key("max_wait_ms"), "must be %s..%s (0 is none), got %s", minExpiry, maxQueueMaxWait, q.MaxWait)
	case q.FairnessKey != "" && q.MaxPerKey > 0:
		// A parked job is an index, not state, while the turn order is
		// state: combined, a restored replica could take turns otherwise.
		return invalid(key("fairness_key"), "cannot be combined with max_per_key (concurrency_key %q) yet", q.ConcurrencyKey)
	case len(q.FairnessKey) > maxFairnessKeyBytes:
		return invalid(key("fairness_key"), "is %d bytes, above the limit of %d", len(q.FairnessKey), maxFairnessKeyBytes)
	}
	return nil
}

// HasExpiryFairness reports whether cfg sets max_wait or a fairness key on
// any queue (which a replica must apply alike: see fsm
// CommandVersionExpiryFairness).
func HasExpiryFairness(cfg Config) bool {
	for i := range cfg.Queues {
		if cfg.Queues[i].MaxWait != 0 || cfg.Queues[i].FairnessKey != "" {
			return true
		}
	}
	return false
}

// StripExpiryFairness returns cfg without any queue's max_wait and
// fairness key (for a cluster with a member that does not apply them).
func StripExpiryFairness(cfg Config) Config {
	out := cloneConfig(cfg)
	for i := range out.Queues {
		out.Queues[i].MaxWait, out.Queues[i].FairnessKey = 0, ""
	}
	return out
}
