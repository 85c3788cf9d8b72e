package engine

import (
	"container/heap"
	"fmt"
	"math/bits"
	"strings"
	"time"
	"unicode/utf8"
)

// Reserve hands out up to N Ready jobs of one queue, highest priority first
// and, within a priority, in original enqueue order, each under a new lease.
// A paused queue, or one not seen yet, hands out nothing. A reserve repeating
// the RequestID of an earlier one returns that reserve's deliveries whose
// leases are still current, and reserves nothing new; with RetryWindow also
// the jobs whose leases lapsed unseen since (ReserveParams.RetryWindow).
func (e *Engine) Reserve(now time.Time, p ReserveParams) ([]Delivery, error) {
	out, err := e.reserve(now, p)
	if !p.WithoutPayloads && !e.payloadsAhead && len(out) > 0 {
		read, done := e.payloadReader() // one reader for the batch of deliveries
		for i := range out {
			out[i].Job.Payload = payloadVia(e.jobs.get(out[i].Job.ID), read)
		}
		done()
	}
	return out, err
}

// reserve is Reserve's deliveries without their payloads.
func (e *Engine) reserve(now time.Time, p ReserveParams) ([]Delivery, error) {
	if err := checkQueueName("queue", p.Queue); err != nil {
		return nil, err
	}
	lease, err := e.leaseDuration("lease", p.Lease)
	if err != nil {
		return nil, err
	}
	if err := checkString("worker_id", p.WorkerID, maxWorkerIDBytes); err != nil {
		return nil, err
	}
	if err := checkString("request_id", p.RequestID, maxRequestIDBytes); err != nil {
		return nil, err
	}
	n := min(max(p.N, 1), e.lim.MaxReserveBatch)
	q := e.queues[p.Queue]
	if q == nil && e.lim.Strict {
		return nil, &FieldError{Field: "queue", Reason: fmt.Sprintf("queue %q is not configured and the server runs strict", p.Queue), Err: ErrUnknownQueue}
	}
	e.advance(now)
	if p.RequestID != "" {
		if r := e.reservations[p.RequestID]; r != nil {
			if p.RetryWindow && r.retryWindow() {
				return e.recoverReservation(r, addSat(e.now, lease), p.WorkerID), nil
			}
			return e.replayReservation(r), nil
		}
		if len(e.reservations) >= e.lim.MaxIdempotencyKeys {
			return nil, &FieldError{Field: "request_id", Reason: fmt.Sprintf("%d reserve request ids are remembered, limits.max_idempotency_keys", len(e.reservations)), Err: ErrCapacity}
		}
	}
	if q == nil || q.paused || q.nReady == 0 {
		return nil, nil
	}
	limited := q.set.limits.set()
	if limited {
		if n = reserveAllowance(q, n, e.now); n == 0 {
			return nil, nil
		}
	}
	deadline := addSat(e.now, lease)
	out := make([]Delivery, 0, min(n, q.nReady))
	for prio := MaxPriority; prio >= 0 && len(out) < n; prio-- {
		for len(out) < n {
			j := e.popReady(q, prio)
			if j == nil {
				break
			}
			if q.keys != nil && q.keys.keyFull(j) {
				q.keys.park(j) // still Ready: back in its place when its key frees
				continue
			}
			q.nReady--
			e.deliver(j, deadline, p.WorkerID)
			out = append(out, e.delivery(j))
		}
	}
	if limited {
		takeTokens(q, len(out), e.now)
	}
	if p.RequestID != "" {
		r := &reservation{requestID: p.RequestID, expiresAt: deadline, ids: make([]JobID, len(out)), tokens: make([]LeaseToken, len(out))}
		for i := range out {
			r.ids[i], r.tokens[i] = out[i].Job.ID, out[i].LeaseToken
		}
		if p.RetryWindow {
			r.expiresAt = addSat(deadline, int64(e.lim.IdempotencyWindow))
			r.ids, r.tokens = append(r.ids, 0), append(r.tokens, retryWindowMark)
			e.indexReservation(r)
		}
		e.reservations[r.requestID] = r
		heap.Push(&e.resHeap, r)
		e.held += reservationCharge(r)
	}
	return out, nil
}

// deliver leases a job taken off the Ready line.
func (e *Engine) deliver(j *job, deadline int64, worker string) {
	if j.ext != nil && j.ext.expPos != 0 {
		e.unwatchDeadline(j) // a reserved job is never expired
	}
	wasPlain := e.compactCharge && plainWaiting(j)
	j.attempt++
	j.state = StateReserved
	j.due = deadline
	if wasPlain { // charged as a compact entry until now
		e.charge(j.q, e.jobCharge(j)-compactJobOverhead)
	}
	j.q.act.Reserved++
	if j.attempt == 1 {
		j.q.act.observeWait(time.Duration(e.now - j.enqueuedAt))
	}
	heap.Push(&e.leases, j)
	e.leases.tokens[j.heapIdx] = LeaseToken(e.nextLease)
	e.nextLease++
	if worker != "" {
		e.workers[j.id] = worker
		e.charge(j.q, workerCharge(worker))
	}
	if e.recordFields {
		e.started[j.id] = e.now
		e.charge(j.q, startedOverhead)
	}
	j.q.nReserved++
	e.keyReserved(j)
}

func (e *Engine) delivery(j *job) Delivery {
	return Delivery{
		Job:           e.viewWithoutPayload(j),
		LeaseToken:    e.leaseOf(j),
		Attempt:       j.attempt,
		MaxAttempts:   j.maxAttempts,
		LeaseDeadline: fromNanos(j.due),
	}
}

func (e *Engine) replayReservation(r *reservation) []Delivery {
	var out []Delivery
	for i, id := range r.ids {
		if j := e.jobs.get(id); j != nil && j.state == StateReserved && e.leaseOf(j) == r.tokens[i] {
			out = append(out, e.delivery(j))
		}
	}
	return out
}

// recoverReservation answers the retry of a RetryWindow reserve: the
// deliveries still under their first lease (renewed to deadline if it ends
// sooner: a lease held past its lapse may have little left) and, back on
// the line, the jobs whose lease expired unseen and that nobody reserved
// since, delivered again on the attempt they lost, under a new lease
// recorded in the reservation (so a retry of the retry finds it too). A
// job of a paused queue, or of one with reserve limits or concurrency keys,
// is left Ready: handing it out would pass those rules.
func (e *Engine) recoverReservation(r *reservation, deadline int64, worker string) []Delivery {
	var out []Delivery
	for i, id := range r.ids {
		j := e.jobs.get(id)
		if j == nil {
			continue
		}
		tok := r.tokens[i]
		switch {
		case liveToken(tok) && j.state == StateReserved && e.leaseOf(j) == tok:
			if j.due < deadline {
				j.due = deadline
				heap.Fix(&e.leases, int(j.heapIdx))
			}
		case tok != retryWindowMark && tok&expiredSlot != 0 && j.state == StateReady &&
			j.attempt == uint32(tok&^expiredSlot) && j.attempt > 0 &&
			!j.q.paused && j.q.keys == nil && !j.q.set.limits.set():
			e.detach(j)
			before := e.jobCharge(j)
			j.attempt-- // the lapsed delivery never reached a worker
			// Without attempt history the job may look plain now; deliver
			// charges from what it looks like.
			e.charge(j.q, e.jobCharge(j)-before)
			e.deliver(j, deadline, worker)
			r.tokens[i] = e.leaseOf(j)
			e.resByLease[r.tokens[i]] = r
		default:
			continue
		}
		out = append(out, e.delivery(j))
	}
	return out
}

// indexReservation indexes a RetryWindow reservation's live tokens.
func (e *Engine) indexReservation(r *reservation) {
	for _, t := range r.tokens {
		if liveToken(t) {
			e.resByLease[t] = r
		}
	}
}

// unindexReservation drops r's tokens from the index.
func (e *Engine) unindexReservation(r *reservation) {
	for _, t := range r.tokens {
		if e.resByLease[t] == r {
			delete(e.resByLease, t)
		}
	}
}

// holdUnseen handles the expiry, at t, of a lease handed out by a
// RetryWindow reserve whose request id is still remembered: the answer may
// never have reached the worker, and a retry would show it. On the job's
// last attempt the lease is held until the id is forgotten (true: the job
// stays Reserved), instead of the job being dead-lettered unseen. On an
// earlier attempt the slot records the attempt (false: the expiry proceeds
// and the job goes back to Ready), so that a retry can hand the job back on
// that attempt if nobody reserved it since.
func (e *Engine) holdUnseen(j *job, t int64) bool {
	lease := e.leaseOf(j)
	r := e.resByLease[lease]
	if r == nil || r.expiresAt <= t {
		return false
	}
	if j.attempt >= j.maxAttempts {
		j.due = r.expiresAt
		heap.Fix(&e.leases, int(j.heapIdx))
		return true
	}
	for i, tok := range r.tokens {
		if tok == lease && r.ids[i] == j.id {
			r.tokens[i] = expiredSlot | LeaseToken(j.attempt)
			break
		}
	}
	delete(e.resByLease, lease)
	return false
}

// leaseDuration resolves a requested lease: 0 takes DefaultLease, longer
// than MaxLease is clamped, negative is refused.
func (e *Engine) leaseDuration(field string, d time.Duration) (int64, error) {
	switch {
	case d < 0:
		return 0, invalid(field, "must not be negative, got %s", d)
	case d == 0:
		return int64(e.lim.DefaultLease), nil
	}
	return int64(min(d, e.lim.MaxLease)), nil
}

func checkString(field, s string, maxBytes int) error {
	if len(s) > maxBytes {
		return invalid(field, "is %d bytes, above the limit of %d", len(s), maxBytes)
	}
	if !utf8.ValidString(s) {
		return invalid(field, "must be valid UTF-8")
	}
	return nil
}

// leased returns the job a lease names, or ErrLeaseLost when it is not the
// job's current lease (expired, redelivered, acked, released, dead).
func (e *Engine) leased(ref LeaseRef) (*job, error) {
	switch {
	case ref.JobID == 0:
		return nil, invalid("job_id", "is required")
	case ref.LeaseToken == 0:
		return nil, invalid("lease_token", "is required")
	case uint64(ref.JobID) >= e.nextID:
		return nil, &FieldError{Field: "job_id", Reason: fmt.Sprintf("job %d was never enqueued", ref.JobID), Err: ErrNotFound}
	}
	j := e.jobs.get(ref.JobID)
	if j == nil || j.state != StateReserved || e.leaseOf(j) != ref.LeaseToken {
		if e.cancelledLease(j, ref) {
			return nil, fmt.Errorf("job %d, lease %d: %w", ref.JobID, ref.LeaseToken, ErrLeaseCancelled)
		}
		return nil, fmt.Errorf("job %d, lease %d: %w", ref.JobID, ref.LeaseToken, ErrLeaseLost)
	}
	return j, nil
}

// cancelledLease reports whether an operator's cancel ended the delivery
// ref names: the job (live, or dead-lettered and retained) records that
// attempt's lease with the outcome cancelled. A job cancelled and deleted,
// or one whose history no longer holds the attempt (or never recorded its
// lease), cannot tell, and its lease is merely lost.
func (e *Engine) cancelledLease(j *job, ref LeaseRef) bool {
	if j == nil {
		r := e.dead[ref.JobID]
		if r == nil {
			return false
		}
		j = r.j
	}
	if j.ext == nil {
		return false
	}
	for _, h := range j.ext.history {
		if h.lease == ref.LeaseToken {
			return h.outcome == outcomeCancelled
		}
	}
	return false
}

// Ack completes a delivery: the job leaves the engine.
func (e *Engine) Ack(now time.Time, ref LeaseRef) error {
	return e.AckWithResult(now, ref, nil)
}

// AckWithResult is Ack keeping result with the completed job: its queue
// must keep completed jobs (completed_retention above 0), else it is
// refused with ErrNoCompletedRetention and nothing changes. On a queue
// that keeps them every ack keeps its job, with or without a result.
func (e *Engine) AckWithResult(now time.Time, ref LeaseRef, result []byte) error {
	e.advance(now)
	j, err := e.leased(ref)
	if err != nil {
		return err
	}
	if err := checkResultKept(j, result); err != nil {
		return err
	}
	e.ackLeased(j, result)
	return nil
}

// ackLeased completes j, whose lease was checked, keeping result.
func (e *Engine) ackLeased(j *job, result []byte) {
	e.complete(j, result)
	if at, ok := e.started[j.id]; ok { // recorded once every member keeps attempt detail
		j.q.act.observeRun(time.Duration(e.now - at))
	}
	e.detach(j)
	e.jobs.del(j.id)
	e.charge(j.q, -e.jobHeld(j))
	e.releasePayload(j)
	e.uniqueAcked(j)
	j.q.acked++
	e.settle(j, parentCompleted, CauseUnknown)
}

// Nack fails a delivery. DirectiveDeadLetter dead-letters it at once (cause
// rejected); otherwise a failing final attempt dead-letters it (cause
// attempts_exhausted) and an earlier one is retried: after the queue's retry
// policy (DirectiveDefault) or after p.After (DirectiveAfter), the delay
// clamped to the queue's schedule horizon. A zero delay makes it Ready at
// once.
func (e *Engine) Nack(now time.Time, p NackParams) (NackResult, error) {
	switch {
	case p.Directive > DirectiveDeadLetter:
		return NackResult{}, invalid("directive", "must be default, after or dead_letter, got %d", p.Directive)
	case p.Directive == DirectiveAfter && p.After < 0:
		return NackResult{}, invalid("after", "must not be negative, got %s", p.After)
	}
	e.advance(now)
	j, err := e.leased(p.LeaseRef)
	if err != nil {
		return NackResult{}, err
	}
	var cause Cause
	switch {
	case p.Directive == DirectiveDeadLetter:
		cause = CauseRejected
	case j.attempt >= j.maxAttempts:
		cause = CauseAttemptsExhausted
	}
	if cause != CauseUnknown && !e.canRetainDead() {
		return NackResult{}, e.deadStoreFull()
	}
	switch p.Directive {
	case DirectiveDeadLetter:
		j.q.act.NackedDeadLetter++
	case DirectiveAfter:
		j.q.act.NackedAfter++
	default:
		j.q.act.NackedDefault++
	}
	if cause == CauseUnknown {
		j.q.act.Retried++
	}
	reason := cleanReason(p.Reason)
	rec := e.attemptOf(j)
	if e.recordFields {
		rec.directive = uint8(p.Directive) + 1
	}
	e.detach(j)
	before := e.jobCharge(j)
	e.recordAttempt(j, rec, outcomeNack, reason)
	j.extension().lastReason = reason
	e.charge(j.q, e.jobCharge(j)-before)
	if cause != CauseUnknown {
		e.kill(j, cause)
		return NackResult{DeadLettered: true}, nil
	}
	var delay int64
	if p.Directive == DirectiveAfter {
		delay = int64(p.After)
	} else {
		delay = retryDelay(j.q.set, j.id, j.attempt)
	}
	delay = min(delay, j.q.set.horizon)
	if delay <= 0 {
		e.makeReady(j)
		return NackResult{NextAttemptAt: fromNanos(e.now)}, nil
	}
	at := addSat(e.now, delay)
	e.makeScheduled(j, at, true)
	return NackResult{NextAttemptAt: fromNanos(at)}, nil
}

// Release hands a delivery back without burning an attempt: the job is Ready
// again at once, in its original place, and its next delivery carries the
// same attempt number as this one.
func (e *Engine) Release(now time.Time, ref LeaseRef) error {
	e.advance(now)
	j, err := e.leased(ref)
	if err != nil {
		return err
	}
	j.q.act.Released++
	rec := e.attemptOf(j)
	e.detach(j)
	before := e.jobCharge(j)
	e.recordAttempt(j, rec, outcomeReleased, "")
	j.attempt--
	e.makeReady(j)
	// Without attempt history a released first delivery is plain again.
	e.charge(j.q, e.jobCharge(j)-before)
	return nil
}

// ExtendLease moves a lease's deadline to now+Lease and returns it.
func (e *Engine) ExtendLease(now time.Time, p ExtendParams) (time.Time, error) {
	lease, err := e.leaseDuration("lease", p.Lease)
	if err != nil {
		return time.Time{}, err
	}
	if err := CheckProgress(p.Progress); err != nil {
		return time.Time{}, err
	}
	e.advance(now)
	j, err := e.leased(p.LeaseRef)
	if err != nil {
		return time.Time{}, err
	}
	j.due = addSat(e.now, lease)
	heap.Fix(&e.leases, int(j.heapIdx))
	if p.Progress != nil {
		e.setProgress(j, *p.Progress)
	}
	return fromNanos(j.due), nil
}

// ExtendAllLeases pushes every live lease's deadline out by grace; a new
// leader proposes it first so an election does not redeliver jobs in flight.
// It returns the number of leases extended.
func (e *Engine) ExtendAllLeases(now time.Time, grace time.Duration) int {
	e.advance(now)
	if grace <= 0 {
		return 0
	}
	for _, j := range e.leases.items {
		j.due = addSat(j.due, int64(grace)) // every key moves alike: the heap order holds
	}
	for _, r := range e.resHeap {
		r.expiresAt = addSat(r.expiresAt, int64(grace))
	}
	return len(e.leases.items)
}

// retryDelay is the policy delay before the retry that follows failing
// attempt n: the base delay, doubled per attempt when exponential, capped at
// the max, less up to 25% jitter derived from the job id.
func retryDelay(s settings, id JobID, n uint32) int64 {
	d := s.retryDelay
	if d <= 0 {
		return 0
	}
	if s.backoff == BackoffExponential {
		shift := n - 1
		if shift >= 63 || d > s.retryDelayMax>>shift {
			d = s.retryDelayMax
		} else {
			d = min(d<<shift, s.retryDelayMax)
		}
	}
	return d - jitter(id, d)
}

// jitter is the part of d, below d/4, that a retry of job id subtracts.
func jitter(id JobID, d int64) int64 {
	frac := splitmix64(uint64(id)) & 0xFFFF // 0..65535, out of 65536
	hi, lo := bits.Mul64(uint64(d), frac)
	q, _ := bits.Div64(hi, lo, 1<<18) // d * frac / 65536 / 4
	return int64(q)
}

// splitmix64 is a fixed 64-bit mixer (Steele, Lea, Flood), so jitter spreads
// evenly across consecutive ids.
func splitmix64(x uint64) uint64 {
	x += 0x9E3779B97F4A7C15
	x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9
	x = (x ^ (x >> 27)) * 0x94D049BB133111EB
	return x ^ (x >> 31)
}

// RetryJitter is the delay a retry of job id subtracts from a policy delay d:
// in [0, d/4), the same on every replica. Exported for tests and tools.
func RetryJitter(id JobID, d time.Duration) time.Duration {
	if d <= 0 {
		return 0
	}
	return time.Duration(jitter(id, int64(d)))
}

// cleanReason bounds a reason and makes it valid UTF-8, so a record always
// encodes.
func cleanReason(s string) string {
	if len(s) > maxReasonBytes {
		cut := maxReasonBytes
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut]
	}
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	return s
}
