package engine

import (
	"fmt"
	"maps"
	"strings"
	"time"
	"unicode/utf8"
)

// Enqueue adds one job. Bad input is refused with an error naming the field
// and the limit, and nothing changes. An enqueue whose idempotency key was
// seen within the window returns the original job with Duplicate set; its
// State is the original job's current state (StateUnknown once it was acked
// or is no longer kept).
func (e *Engine) Enqueue(now time.Time, p EnqueueParams) (EnqueueResult, error) {
	if len(p.After) > 0 {
		return EnqueueResult{}, invalid("after", "names requests of the same call: only an EnqueueBatch's requests or an ack's follow-ups can wait for each other")
	}
	if err := e.checkParams(&p); err != nil {
		return EnqueueResult{}, err
	}
	q, fresh, err := e.queueForWrite("queue", p.Queue)
	if err != nil {
		return EnqueueResult{}, err
	}
	e.advance(now)
	res, err := e.enqueueChecked(q, &p)
	if fresh && err == nil {
		e.adoptQueue(q)
	}
	return res, err
}

// EnqueueBatch validates and applies each item on its own; a bad item fails
// alone. A batch larger than MaxBatchSize fails whole. A batch whose items
// wait for each other (After: dependencies.go) is decided whole instead:
// every item is applied, or none and the error names the item
// ("jobs[i]...").
func (e *Engine) EnqueueBatch(now time.Time, items []EnqueueParams) ([]BatchItemResult, error) {
	if len(items) > e.lim.MaxBatchSize {
		return nil, invalid("items", "batch of %d exceeds limits.max_batch_size %d", len(items), e.lim.MaxBatchSize)
	}
	e.advance(now)
	if hasAfter(items) {
		return e.enqueueAll(items)
	}
	out := make([]BatchItemResult, len(items))
	for i := range items {
		out[i].Result, out[i].Err = e.enqueueAt("queue", &items[i])
	}
	return out, nil
}

// enqueueAt checks and applies one enqueue at the engine's current time,
// naming the queue's field queueField in an error. A queue it creates is
// registered only once the job is accepted.
func (e *Engine) enqueueAt(queueField string, p *EnqueueParams) (EnqueueResult, error) {
	if err := e.checkParams(p); err != nil {
		return EnqueueResult{}, err
	}
	q, fresh, err := e.queueForWrite(queueField, p.Queue)
	if err != nil {
		return EnqueueResult{}, err
	}
	res, err := e.enqueueChecked(q, p)
	if fresh && err == nil {
		e.adoptQueue(q)
	}
	return res, err
}

// checkParams checks what does not depend on the state.
func (e *Engine) checkParams(p *EnqueueParams) error {
	l := &e.lim
	switch {
	case p.JobType == "":
		return invalid("job_type", "is required")
	case len(p.JobType) > l.MaxJobTypeBytes:
		return invalid("job_type", "is %d bytes, above limits.max_job_type_bytes %d", len(p.JobType), l.MaxJobTypeBytes)
	case !utf8.ValidString(p.JobType):
		return invalid("job_type", "must be valid UTF-8")
	case len(p.Payload) > l.MaxPayloadBytes:
		return invalid("payload", "is %d bytes, above limits.max_payload_bytes %d", len(p.Payload), l.MaxPayloadBytes)
	case p.Priority != nil && *p.Priority > MaxPriority:
		return invalid("priority", "must be 0..%d, got %d", MaxPriority, *p.Priority)
	case len(p.IdempotencyKey) > maxIdempotencyKeyBytes:
		return invalid("idempotency_key", "is %d bytes, above the limit of %d", len(p.IdempotencyKey), maxIdempotencyKeyBytes)
	case !utf8.ValidString(p.IdempotencyKey):
		return invalid("idempotency_key", "must be valid UTF-8")
	case len(p.Custom) > l.MaxCustomFields:
		return invalid("custom", "has %d fields, above limits.max_custom_fields %d", len(p.Custom), l.MaxCustomFields)
	}
	if p.Unique != nil {
		if err := e.checkUnique(p.Unique); err != nil {
			return err
		}
	}
	if err := CheckTraceContext(p.Trace); err != nil {
		return err
	}
	return checkCustom(p.Custom, l.MaxCustomFieldBytes)
}

// checkCustom reports the smallest offending key, so the error does not
// depend on map iteration order.
func checkCustom(custom map[string]string, maxBytes int) error {
	var bad, why string
	found := false
	for k, v := range custom {
		var reason string
		switch {
		case k == "":
			reason = "key must not be empty"
		case len(k)+len(v) > maxBytes:
			reason = fmt.Sprintf("key plus value is %d bytes, above limits.max_custom_field_bytes %d", len(k)+len(v), maxBytes)
		case !utf8.ValidString(k) || !utf8.ValidString(v):
			reason = "key and value must be valid UTF-8"
		default:
			continue
		}
		if !found || k < bad {
			bad, why, found = k, reason, true
		}
	}
	if found {
		return invalid(fmt.Sprintf("custom[%s]", quoteShort(bad)), "%s", why)
	}
	return nil
}

// enqueueChecked applies a checked enqueue to q at e.now.
func (e *Engine) enqueueChecked(q *queue, p *EnqueueParams) (EnqueueResult, error) {
	a, err := e.admit(q, p, nil)
	if err != nil {
		return EnqueueResult{}, err
	}
	return e.commitEnqueue(q, p, &a), nil
}

// admission is what admit found out about an enqueue that commitEnqueue
// needs: an enqueue is decided (admit, which may refuse) apart from being
// applied (commitEnqueue, which cannot fail), so that an ack's follow-ups
// are all decided before any is applied (followups.go).
type admission struct {
	sk        storedKey
	uniqueKey string
	due       int64
	deadline  int64
	// need is the memory the job and its keys are charged.
	need int64
	// dup answers the enqueue without a job (an idempotency or unique
	// key another job holds); dupInBatch: that job is an earlier
	// follow-up of the same ack, whose state is read once it exists.
	dup        bool
	dupInBatch bool
	res        EnqueueResult
	// parents are the jobs the new job waits for (p.After resolved by the
	// caller: dependencies.go); nil for a job without. id is the job's id
	// (a follow-up's, known at admission).
	parents []parentLink
	id      JobID
}

// admit checks an enqueue of p to q against the state at e.now, plus what
// the earlier items of ov will have added (nil: none). It changes nothing
// but what an enqueue's checks always did: an acked job's unique hold that
// has ended is dropped, and, without ov, a full key store forgets its
// oldest key early (forgetOldestKeyEarly).
func (e *Engine) admit(q *queue, p *EnqueueParams, ov *enqueueOverlay) (admission, error) {
	now := e.now
	var a admission
	key := p.IdempotencyKey
	if key != "" {
		a.sk = storedKeyOf(key)
		if ent := e.keys.getStored(q, &a.sk); ent != nil {
			a.dup, a.res = true, EnqueueResult{JobID: ent.jobID(), State: e.stateOf(ent.jobID()), Duplicate: true}
			return a, nil
		}
		if id, ok := ov.keyHolder(q.name, key); ok {
			a.dup, a.dupInBatch, a.res = true, true, EnqueueResult{JobID: id, Duplicate: true}
			return a, nil
		}
	}
	if p.Unique != nil {
		if horizon := time.Duration(q.set.horizon); p.Unique.CompletedFor > horizon {
			return a, invalid("unique.completed_for", "is %s, above the max_schedule_horizon of queue %q (%s)", p.Unique.CompletedFor, q.name, horizon)
		}
		a.uniqueKey = UniqueKeyOf(p)
		if ent := e.uniqueHolder(q, a.uniqueKey); ent != nil {
			res, err := e.uniqueConflict(ent, p.Unique)
			a.dup, a.res = true, res
			return a, err
		}
		if id, state, ok := ov.uniqueHolder(q.name, a.uniqueKey); ok {
			if p.Unique.Refuse {
				return a, &UniqueConflictError{Queue: q.name, Key: a.uniqueKey, Existing: id, State: state}
			}
			a.dup, a.dupInBatch, a.res = true, true, EnqueueResult{JobID: id, Duplicate: true}
			return a, nil
		}
	}
	if !p.ScheduledAt.IsZero() {
		latest := addSat(now, q.set.horizon)
		if at := toNanos(p.ScheduledAt); at > latest || p.ScheduledAt.After(maxTime) {
			return a, &ScheduledTooFarError{
				Queue: q.name, Horizon: time.Duration(q.set.horizon), Requested: p.ScheduledAt, Latest: fromNanos(latest),
			}
		} else if at > now {
			a.due = at
		}
	}
	due := a.due
	if p.Expiry != nil {
		var err error
		if a.deadline, err = e.jobDeadline(p.Expiry, due); err != nil {
			return a, err
		}
	}
	deadline := a.deadline
	if q.set.maxLength > 0 && q.live()+ov.liveIn(q) >= q.set.maxLength {
		return a, &FieldError{Field: "queue", Reason: fmt.Sprintf("queue %q holds %d jobs, its max_length", q.name, q.set.maxLength), Err: ErrQueueFull}
	}
	var customBytes int64
	if len(p.Custom) > 0 {
		customBytes = customCharge(p.Custom)
	}
	need := enqueueCharge(p, &a.sk, customBytes, due != 0 || deadline != 0 || q.set.maxWait != 0, e.payloadsOffHeap)
	if e.compactCharge && customBytes == 0 && due == 0 && deadline == 0 && q.set.maxWait == 0 && a.uniqueKey == "" && p.Trace == nil && len(p.After) == 0 {
		need -= jobOverhead + int64(len(p.JobType)) - compactJobOverhead // a plain waiting job
	}
	if len(p.After) > 0 {
		need += depsCharge(&jobDeps{parents: make([]parentLink, len(p.After))})
	}
	if a.uniqueKey != "" {
		need += uniqueCharge(a.uniqueKey)
		if customBytes == 0 && due == 0 {
			need += extOverhead
		}
	}
	if p.Trace != nil {
		need += traceCharge(p.Trace)
		if customBytes == 0 && due == 0 && deadline == 0 && q.set.maxWait == 0 && a.uniqueKey == "" {
			need += extOverhead
		}
	}
	a.need = need
	if err := e.checkMemoryOver(q, need, ov); err != nil {
		return a, err
	}
	if err := e.checkDisk(int64(len(p.Payload)) + ov.diskBytes()); err != nil {
		return a, err
	}
	if key != "" && e.keys.len()+ov.keyCount() >= e.lim.MaxIdempotencyKeys && (ov != nil || !e.forgetOldestKeyEarly(now)) {
		// A batch's items do not forget keys early: forgetting one is a
		// change, and an item decided on may not change anything yet.
		reason := fmt.Sprintf("%d keys are remembered, limits.max_idempotency_keys; retry once older keys expire", e.keys.len()+ov.keyCount())
		if e.lim.IdempotencyMinWindow > 0 {
			reason = fmt.Sprintf("%d keys are remembered, limits.max_idempotency_keys, the oldest for less than limits.idempotency_min_window_ms (%s); retry once older keys expire", e.keys.len()+ov.keyCount(), e.lim.IdempotencyMinWindow)
		}
		return a, &FieldError{Field: "idempotency_key", Reason: reason, Err: ErrCapacity}
	}
	return a, nil
}

// commitEnqueue applies an enqueue admit admitted, at e.now. It cannot
// fail: every refusal is admit's.
func (e *Engine) commitEnqueue(q *queue, p *EnqueueParams, a *admission) EnqueueResult {
	if a.dup {
		res := a.res
		if a.dupInBatch {
			res.State = e.stateOf(res.JobID)
		}
		return res
	}
	now := e.now
	key, uniqueKey, due, deadline := p.IdempotencyKey, a.uniqueKey, a.due, a.deadline
	prio := q.set.defaultPriority
	if p.Priority != nil {
		prio = uint8(*p.Priority)
	}
	maxAttempts := p.MaxAttempts
	if maxAttempts == 0 {
		maxAttempts = q.set.defaultMaxAttempts
	}
	maxAttempts = min(maxAttempts, e.lim.MaxAttemptsCeiling)

	// The engine keeps copies, never the caller's memory: params are values,
	// whatever buffer they were decoded from. The payload store copies the
	// payload (PayloadStore.PutPayload).
	var custom map[string]string
	if len(p.Custom) > 0 {
		custom = maps.Clone(p.Custom)
	}
	j := e.newJob(q, p.JobType, p.Payload, prio, maxAttempts, custom, due)
	if deadline != 0 {
		e.setDeadline(j, deadline)
	}
	e.setTrace(j, p.Trace)
	if uniqueKey != "" {
		before := e.jobCharge(j)
		if p.Unique.Key != "" {
			uniqueKey = strings.Clone(uniqueKey)
		}
		e.claimUnique(j, uniqueKey, p.Unique)
		e.charge(q, e.jobCharge(j)-before)
	}
	if key != "" {
		sk := a.sk
		if !sk.packed {
			// Own a copy: the key may share the memory of a larger string
			// the caller decoded. (A packed key is a copy already.)
			sk.plain = strings.Clone(key)
		}
		e.charge(q, e.keys.chargeOf(e.keys.add(q, &sk, j.id, now)))
	}
	if a.parents != nil {
		e.blockAfter(j, a.parents, p.OnParentFailure)
		e.jobs.set(j)
		e.decideBlocked(j)
		return EnqueueResult{JobID: j.id, State: e.stateOf(j.id)}
	}
	res := EnqueueResult{JobID: j.id, State: j.state}
	if !e.compactify(j) {
		e.jobs.set(j)
	}
	return res
}

// addJob creates a job with the next id: Scheduled until due when due is
// set, else Ready.
func (e *Engine) addJob(q *queue, jobType string, payload []byte, prio uint8, maxAttempts uint32, custom map[string]string, due int64) *job {
	j := e.newJob(q, jobType, payload, prio, maxAttempts, custom, due)
	e.jobs.set(j)
	return j
}

// newJob is addJob but for the job index: the caller files the job there
// or compact (compactify), deciding once the job is complete. (Filing it
// and taking it out again would create and free an index page per job
// when most jobs are compact.)
func (e *Engine) newJob(q *queue, jobType string, payload []byte, prio uint8, maxAttempts uint32, custom map[string]string, due int64) *job {
	j := &job{
		id:          JobID(e.nextID),
		q:           q,
		enqueuedAt:  e.now,
		heapIdx:     -1,
		maxAttempts: maxAttempts,
		priority:    prio,
	}
	e.nextID++
	j.setJobType(jobType)
	e.putPayload(j, payload)
	if custom != nil {
		j.extension().custom = custom
	}
	q.enqueued++
	if due != 0 {
		j.extension().scheduledAt = due
		e.makeScheduled(j, due, false)
	} else {
		e.makeReady(j)
	}
	e.charge(q, e.jobHeld(j))
	if q.set.maxWait != 0 {
		e.setDeadline(j, e.queueDeadline(q, due))
	}
	return j
}

// stateOf is a job's state, StateDead for a retained record, else unknown.
func (e *Engine) stateOf(id JobID) State {
	if j := e.jobForRead(id); j != nil {
		return j.state
	}
	if e.dead[id] != nil {
		return StateDead
	}
	return StateUnknown
}

// forgetOldestKeyEarly makes room for a new key in a full key store: it
// forgets the oldest key before its window ends if the key has been kept
// for limits.idempotency_min_window, and reports whether it did. A burst
// above max_idempotency_keys per window thus shortens the window, down to
// the minimum, instead of refusing keyed enqueues (which the Go client's
// every job is); only a sustained rate above max_idempotency_keys per
// minimum window is refused.
func (e *Engine) forgetOldestKeyEarly(now int64) bool {
	// A minimum above the window is the window: a key that old has expired.
	minWindow := min(int64(e.lim.IdempotencyMinWindow), int64(e.lim.IdempotencyWindow))
	if minWindow <= 0 || e.keys.len() == 0 || addSat(e.keys.front().createdAt, minWindow) > now {
		return false
	}
	e.popKey()
	e.keysForgottenEarly++
	return true
}

// popKey forgets the oldest idempotency key, releasing its charge.
func (e *Engine) popKey() {
	ent := e.keys.front()
	e.charge(e.keys.queueOf(ent), -e.keys.chargeOf(ent))
	e.keys.popFront()
}
