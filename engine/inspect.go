package engine

import (
	"fmt"
	"slices"
	"time"
)

// view copies a job out of the engine. The payload is the store's
// (payloads.go): the engine never modifies it, and callers must not either.
func (e *Engine) view(j *job) Job {
	v := e.viewWithoutPayload(j)
	v.Payload = e.payloadOf(j)
	return v
}

// viewWithoutPayload is view with Payload left nil: no read of the payload
// store.
func (e *Engine) viewWithoutPayload(j *job) Job {
	v := Job{
		ID:          j.id,
		Queue:       j.q.name,
		JobType:     j.jobType(),
		Priority:    uint32(j.priority),
		State:       j.state,
		EnqueuedAt:  fromNanos(j.enqueuedAt),
		Attempt:     j.attempt,
		MaxAttempts: j.maxAttempts,
	}
	switch j.state {
	case StateScheduled:
		if j.flags&flagRetryWait != 0 {
			v.NextAttemptAt = fromNanos(j.due)
		}
	case StateReserved:
		v.WorkerID = e.workers[j.id]
		v.LeaseDeadline = fromNanos(j.due)
		if at, ok := e.started[j.id]; ok {
			v.StartedAt = fromNanos(at)
		}
		v.Progress = e.progressOf(j)
	}
	if len(e.deps) > 0 {
		if v.Parents = e.parentsView(j.id); v.Parents != nil {
			v.RunsAfterParentFailure = e.deps[j.id].policy == ParentFailureRun
		}
	}
	if x := j.ext; x != nil {
		v.ScheduledAt = fromNanos(x.scheduledAt)
		v.LastReason = x.lastReason
		v.ExpiresAtNanos = x.expiresAt
		if len(x.custom) > 0 {
			v.Custom = make(map[string]string, len(x.custom))
			for k, val := range x.custom {
				v.Custom[k] = val
			}
		}
		if len(x.history) > 0 {
			v.History = make([]Attempt, len(x.history))
			for i, h := range x.history {
				v.History[i] = attemptView(h)
			}
		}
		v.Origin = originView(x.origin)
		v.Trace = cloneTrace(x.trace)
	}
	return v
}

// GetJob returns a live job (Scheduled, Ready, Reserved or Blocked), a
// retained dead one or a kept completed one. Only GetJob fills
// WaitingChildren: listings and deliveries, which are many jobs at once,
// leave it empty.
func (e *Engine) GetJob(id JobID) (Job, error) {
	if j := e.jobForRead(id); j != nil {
		v := e.view(j)
		v.WaitingChildren, v.WaitingChildrenTotal = e.waitingChildren(id)
		return v, nil
	}
	if r := e.dead[id]; r != nil {
		return e.view(r.j), nil
	}
	if v, ok := e.getCompleted(id); ok {
		return v, nil
	}
	return Job{}, fmt.Errorf("job %d: %w", id, ErrNotFound)
}

func pageLimit(p Page) (int, error) {
	switch {
	case p.Limit < 0:
		return 0, invalid("limit", "must not be negative, got %d", p.Limit)
	case p.Limit == 0:
		return 100, nil
	}
	return min(p.Limit, 1000), nil
}

// ListJobs lists a queue's jobs in one state (Scheduled, Ready, Reserved or
// Dead) by job id after page.AfterID. It reads the queue's structures for
// that state only; it is an operator call, not a hot path.
func (e *Engine) ListJobs(queue string, state State, page Page) ([]Job, error) {
	limit, err := pageLimit(page)
	if err != nil {
		return nil, err
	}
	q, err := e.queueForRead("queue", queue)
	if err != nil {
		return nil, err
	}
	var found []*job
	keep := func(j *job) {
		if j.q == q && j.id > page.AfterID {
			found = append(found, j)
			if len(found) >= 4*limit+64 {
				found = smallestJobs(found, limit)
			}
		}
	}
	switch state {
	case StateReady:
		for prio := range q.ready {
			q.ready[prio].lines(func(level *readyLevel) {
				// The ring is in id order: start after AfterID, stop after limit live jobs.
				ring := &level.ring
				lo, hi := 0, ring.Len()
				for lo < hi {
					mid := int(uint(lo+hi) >> 1)
					if ring.At(mid).id <= page.AfterID {
						lo = mid + 1
					} else {
						hi = mid
					}
				}
				taken := 0
				for i := lo; i < ring.Len() && taken < limit; i++ {
					if j := ring.At(i); j.flags&flagInRing != 0 {
						keep(j)
						taken++
					}
				}
				taken = 0
				for i := level.compactAfter(page.AfterID); i < level.compact.Len() && taken < limit; i++ {
					if ent := level.compact.ptr(i); ent.maxAttempts != 0 {
						keep(viewOf(q, prio, ent))
						taken++
					}
				}
				for _, j := range level.returns.items {
					keep(j)
				}
			})
		}
		if q.keys != nil {
			for _, h := range q.keys.parked { // kept, then sorted by id: order does not matter
				for _, j := range h.items {
					keep(j)
				}
			}
		}
	case StateScheduled:
		for _, j := range e.sched.items {
			keep(j)
		}
	case StateReserved:
		for _, j := range e.leases.items {
			keep(j)
		}
	case StateBlocked:
		for id := range e.deps { // sorted by smallestJobs: order does not matter
			if j := e.jobs.get(id); j != nil && j.state == StateBlocked {
				keep(j)
			}
		}
	case StateDead:
		for r := q.deadHead; r != nil; r = r.qnext {
			keep(r.j)
		}
	case StateCompleted:
		return e.listCompleted(q, page.AfterID, limit), nil
	default:
		return nil, invalid("state", "must be scheduled, ready, reserved, blocked, dead or completed, got %v", state)
	}
	found = smallestJobs(found, limit)
	out := make([]Job, len(found))
	for i, j := range found {
		out[i] = e.view(j)
	}
	return out, nil
}

func smallestJobs(js []*job, limit int) []*job {
	slices.SortFunc(js, func(a, b *job) int { return cmpID(a.id, b.id) })
	if len(js) > limit {
		clear(js[limit:])
		js = js[:limit]
	}
	return js
}

// RememberedKeys counts what the engine remembers to answer a retried call
// with its first result: the idempotency keys of enqueues, held for
// limits.idempotency_window, and the request ids of reserves, held until the
// lease that reserve granted ends. Each kind is capped at
// limits.max_idempotency_keys (Limit); past it the oldest idempotency key
// is forgotten early if it is limits.idempotency_min_window old, and else
// the new one is refused with ErrCapacity, as a new request id is.
type RememberedKeys struct {
	IdempotencyKeys   int
	ReserveRequestIDs int
	Limit             int
	// ForgottenEarly counts idempotency keys this engine forgot before
	// their window ended, to make room once Limit were held (since it
	// started or was restored: not part of the state).
	ForgottenEarly uint64
}

// RememberedKeys returns the counts as of the last applied tick: a key is
// forgotten by the tick that passes its expiry, not when it is read.
func (e *Engine) RememberedKeys() RememberedKeys {
	return RememberedKeys{IdempotencyKeys: e.keys.len(), ReserveRequestIDs: len(e.reservations), Limit: e.lim.MaxIdempotencyKeys, ForgottenEarly: e.keysForgottenEarly}
}

// Stats returns every queue's counts, by queue name.
func (e *Engine) Stats(now time.Time) []QueueStats {
	qs := e.sortedQueues()
	out := make([]QueueStats, len(qs))
	for i, q := range qs {
		out[i] = e.queueStats(now, q)
	}
	return out
}

// QueueStats returns one queue's counts.
func (e *Engine) QueueStats(now time.Time, queue string) (QueueStats, error) {
	q, err := e.queueForRead("queue", queue)
	if err != nil {
		return QueueStats{}, err
	}
	return e.queueStats(now, q), nil
}

// queueStats reads q at now (the engine's clock when now is earlier). The
// oldest Ready age is measured from the enqueue time of the Ready job that
// has waited longest in line (the smallest enqueue sequence).
func (e *Engine) queueStats(now time.Time, q *queue) QueueStats {
	t := e.now
	if !now.IsZero() {
		t = max(t, toNanos(now))
	}
	s := QueueStats{
		Name:         q.name,
		Paused:       q.paused,
		Configured:   q.configured,
		Scheduled:    q.nScheduled,
		Ready:        q.nReady,
		Reserved:     q.nReserved,
		Blocked:      q.nBlocked,
		Dead:         q.nDead,
		HeldBytes:    q.held,
		Enqueued:     q.enqueued,
		Acked:        q.acked,
		DeadLettered: make(map[Cause]uint64, int(maxCause)),
		Dropped:      q.dropped,
		DeadRequeued: q.deadRequeued,
		DeadDrained:  q.deadDrained,
		DeadDeleted:  q.deadDeleted,
		DeadExpired:  q.deadExpired,
		Purged:       q.purged,
		Activity:     q.act,
	}
	s.MaxMemoryBytes = q.set.maxMemory
	s.Limits = reserveLimitsView(q, e.queueConfig(q.name), t)
	s.Fairness = fairnessView(q)
	s.MaxWait = time.Duration(q.set.maxWait)
	s.Completed = q.completed.len()
	s.CompletedRetention = time.Duration(q.set.completedRetention)
	if qc := e.queueConfig(q.name); qc != nil {
		s.Tags = slices.Clone(qc.Tags)
	}
	for c := CauseAttemptsExhausted; c <= maxCause; c++ {
		s.DeadLettered[c] = q.deadLettered[c]
	}
	var oldest *job
	for prio := range q.ready {
		if j := peekReady(q, prio); j != nil && (oldest == nil || j.id < oldest.id) {
			oldest = j
		}
	}
	if q.keys != nil {
		for _, h := range q.keys.parked { // a minimum: order does not matter
			for _, j := range h.items { // O(parked): a stats read, like the listings
				if oldest == nil || j.id < oldest.id {
					oldest = j
				}
			}
		}
	}
	if oldest != nil && t > oldest.enqueuedAt {
		s.OldestReadyAge = time.Duration(t - oldest.enqueuedAt)
	}
	return s
}
