package engine

import (
	"cmp"
	"container/heap"
	"errors"
	"fmt"
	"maps"
	"slices"

	storepb "github.com/sepp-io/sepp/proto/seppstore/v1"
)

// The header, queues, jobs, dead letters, idempotency keys, reservations
// and declarations of a layout 19 snapshot (snapshot_pb.go). A job's
// message carries everything the engine keeps of it, where the
// hand-written layouts spread it over sections by job id: its deadline,
// trace context, attempt detail, origin, delivery start, progress and
// parents.

// pbHeader is the snapshot's header.
func (e *Engine) pbHeader(c *encoder) *storepb.EngineHeader {
	return &storepb.EngineHeader{
		Now:                       e.now,
		NextId:                    e.nextID,
		NextLease:                 e.nextLease,
		NextRedrive:               e.nextRedrive,
		Config:                    ConfigToProto(e.cfg),
		RecordFields:              e.recordFields,
		PayloadsOffHeap:           e.payloadsOffHeap,
		CompactCharge:             e.compactCharge,
		TraceUsed:                 e.traceUsed,
		ForwardAsArrived:          e.forwardAsArrived,
		ForwardKeepsPriority:      e.forwardKeepsPriority,
		DeclaredLimits:            e.declaredLimits,
		CancelUsed:                e.cancelUsed,
		ExpiryUsed:                e.expiryUsed,
		PayloadLengths:            c.lengthsOnly,
		CompletedRecordsElsewhere: c.completedSection,
		IdempotencyKeyCount:       uint64(e.keys.len()),
	}
}

func (r *pbRestore) restoreHeader(h *storepb.EngineHeader) error {
	e := r.e
	if h.GetPayloadLengths() != r.d.lengthsOnly || h.GetCompletedRecordsElsewhere() != r.d.completedSection {
		return fmt.Errorf("written with payload lengths %v and completed records elsewhere %v, read as %v and %v",
			h.GetPayloadLengths(), h.GetCompletedRecordsElsewhere(), r.d.lengthsOnly, r.d.completedSection)
	}
	e.now, e.nextID, e.nextLease, e.nextRedrive = h.GetNow(), h.GetNextId(), h.GetNextLease(), h.GetNextRedrive()
	if e.nextID < 1 || e.nextLease < 1 || e.nextID > 1<<63 || e.nextLease > 1<<63 {
		return errors.New("bad id counters")
	}
	cfg := ConfigFromProto(h.GetConfig())
	if err := cfg.Validate(); err != nil {
		return fmt.Errorf("config: %w", err)
	}
	r.cfg = cfg
	e.recordFields = h.GetRecordFields()
	e.payloadsOffHeap = h.GetPayloadsOffHeap()
	e.compactCharge = h.GetCompactCharge()
	e.traceUsed = h.GetTraceUsed()
	e.forwardAsArrived = h.GetForwardAsArrived()
	e.forwardKeepsPriority = h.GetForwardKeepsPriority()
	e.declaredLimits = h.GetDeclaredLimits()
	e.cancelUsed = h.GetCancelUsed()
	e.expiryUsed = h.GetExpiryUsed()
	if n := h.GetIdempotencyKeyCount(); n > 0 {
		if left := r.d.left(); n > 1<<40 || (left >= 0 && n > uint64(left)) {
			return fmt.Errorf("%d idempotency keys: more than the input holds", n)
		}
		e.keys.reserve(int(n))
	}
	r.header = h
	return nil
}

// pbWriteQueues writes every queue in name order.
func (e *Engine) pbWriteQueues(w *pbWriter, qs []*queue) {
	var m storepb.EngineQueue
	for _, q := range qs {
		m = storepb.EngineQueue{
			Name: q.name, Paused: q.paused, Enqueued: q.enqueued, Acked: q.acked,
			DeadLettered: m.DeadLettered[:0],
			Dropped:      q.dropped, DeadRequeued: q.deadRequeued, DeadDrained: q.deadDrained,
			DeadDeleted: q.deadDeleted, DeadExpired: q.deadExpired, RateTat: q.rateTAT, Purged: q.purged,
		}
		for cause := CauseAttemptsExhausted; cause <= maxCause; cause++ {
			m.DeadLettered = append(m.DeadLettered, q.deadLettered[cause])
		}
		w.put(pbQueues, &m)
	}
}

func (r *pbRestore) restoreQueue(m *storepb.EngineQueue) error {
	q := &queue{name: m.GetName()}
	if !ValidQueueName(q.name) || (len(r.qs) > 0 && q.name <= r.qs[len(r.qs)-1].name) {
		return fmt.Errorf("queue %d: bad or unsorted name %q", len(r.qs), q.name)
	}
	if len(m.GetDeadLettered()) > int(maxCause) {
		return fmt.Errorf("queue %q: %d dead-letter causes, at most %d", q.name, len(m.GetDeadLettered()), maxCause)
	}
	q.paused, q.enqueued, q.acked = m.GetPaused(), m.GetEnqueued(), m.GetAcked()
	for i, n := range m.GetDeadLettered() {
		q.deadLettered[CauseAttemptsExhausted+Cause(i)] = n
	}
	q.dropped, q.deadRequeued, q.deadDrained = m.GetDropped(), m.GetDeadRequeued(), m.GetDeadDrained()
	q.deadDeleted, q.deadExpired, q.rateTAT, q.purged = m.GetDeadDeleted(), m.GetDeadExpired(), m.GetRateTat(), m.GetPurged()
	r.qs = append(r.qs, q)
	r.e.queues[q.name] = q
	return nil
}

// queuesRead checks the queues against the configuration and applies it,
// before any job is filed.
func (r *pbRestore) queuesRead() error {
	for _, qc := range r.cfg.Queues {
		if r.e.queues[qc.Name] == nil {
			return fmt.Errorf("configured queue %q missing", qc.Name)
		}
	}
	r.e.applyConfig(r.cfg)
	return nil
}

// pbWriteJobs writes the live jobs in id order.
func (e *Engine) pbWriteJobs(w *pbWriter, qindex map[*queue]uint64) {
	var m storepb.EngineJob
	e.eachJob(func(j *job) bool { // in id order
		e.pbWriteJob(w, &m, j, qindex)
		return w.c.err == nil
	})
}

// pbWriteJob writes j as one element of the jobs, m its scratch message.
func (e *Engine) pbWriteJob(w *pbWriter, m *storepb.EngineJob, j *job, qindex map[*queue]uint64) {
	plain := e.plainPB(j)
	switch {
	case plain && w.c.lengthsOnly:
		at := w.begin(pbJobs)
		w.c.out = e.appendPlainJob(w.c.out, w, j, w.c.queueIndex(j.q, qindex))
		w.end(at)
	case plain:
		// A payload inline may be large: built apart, then written
		// with no copy into the encoder's buffer (encoder.raw).
		w.scratch = e.appendPlainJob(w.scratch[:0], w, j, w.c.queueIndex(j.q, qindex))
		w.putRaw(pbJobs, w.scratch)
	default:
		e.pbJob(w, m, j, qindex)
		w.put(pbJobs, m)
	}
}

// pbJob fills m with j, live or dead.
func (e *Engine) pbJob(w *pbWriter, m *storepb.EngineJob, j *job, qindex map[*queue]uint64) {
	*m = storepb.EngineJob{
		Id:          uint64(j.id),
		Queue:       uint32(w.c.queueIndex(j.q, qindex)),
		JobType:     j.jobType(),
		Priority:    uint32(j.priority),
		State:       uint32(j.state),
		RetryWait:   j.flags&flagRetryWait != 0,
		EnqueuedAt:  j.enqueuedAt,
		Due:         j.due,
		Lease:       uint64(e.leaseOf(j)),
		Attempt:     j.attempt,
		MaxAttempts: j.maxAttempts,
	}
	if w.c.lengthsOnly {
		m.PayloadLength = j.payloadLen
	} else {
		m.Payload = payloadVia(j, w.c.payload)
	}
	if j.state == StateReserved {
		m.Worker = e.workers[j.id]
		m.StartedAt = e.started[j.id]
		if p, ok := e.progress[j.id]; ok {
			m.Progress = &storepb.EngineProgress{Percent: p.Percent, Message: p.Message}
		}
	}
	if d := e.deps[j.id]; d != nil && j.state != StateDead {
		m.Parents = &storepb.EngineParents{Policy: uint32(d.policy)}
		for _, p := range d.parents {
			m.Parents.Parents = append(m.Parents.Parents, &storepb.EngineParent{Id: uint64(p.id), Outcome: uint32(p.outcome), Cause: storepb.Cause(p.cause)})
		}
	}
	x := j.ext
	if x == nil {
		return
	}
	m.ScheduledAt, m.LastReason = x.scheduledAt, x.lastReason
	if len(x.custom) > 0 {
		keys := make([]string, 0, len(x.custom))
		for k := range x.custom {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			m.Custom = append(m.Custom, &storepb.EngineCustomField{Key: k, Value: x.custom[k]})
		}
	}
	for _, h := range x.history {
		m.History = append(m.History, &storepb.EngineAttempt{
			Attempt: h.attempt, Outcome: storepb.AttemptOutcome(h.outcome), AtUnixNano: h.at, Worker: h.worker, Reason: h.reason,
			StartedAtUnixNano: h.startedAt, Lease: uint64(h.lease), Directive: uint32(h.directive),
		})
	}
	if x.uniqueKey != "" {
		m.UniqueKey, m.UniqueDead, m.UniqueDoneFor = x.uniqueKey, x.uniqueDead, x.uniqueDoneFor
	}
	if o := x.origin; o != nil {
		m.Origin = &storepb.EngineOrigin{Queue: o.queue, JobId: uint64(o.jobID), Cause: storepb.Cause(o.cause), FailedAtUnixNano: o.failedAt, LastReason: o.lastReason, FinalAttempt: o.finalAttempt}
	}
	if j.state != StateDead {
		m.ExpiresAt = x.expiresAt
	}
	if t := x.trace; t != nil {
		m.Trace = &storepb.EngineTrace{Traceparent: t.Traceparent, Tracestate: t.Tracestate}
	}
}

// restoreJob files one live job as the hand-written layouts' decoder does
// (decodeEngine): Ready jobs held compact where they can be. m is nil for
// a plain job the fast reader took apart (s alone).
func (r *pbRestore) restoreJob(s *pbJobScalars, m *storepb.EngineJob) error {
	e := r.e
	j, err := r.buildJob(s, m, true)
	if err != nil {
		return err
	}
	if j.id <= r.lastJob {
		return fmt.Errorf("job %d out of order", j.id)
	}
	r.lastJob = j.id
	switch j.state {
	case StateReady:
		e.makeReady(j) // and its deadline watched
		if e.compactify(j) {
			return nil // buildJob reuses its struct for the next job
		}
	case StateScheduled:
		j.q.nScheduled++
		j.heapIdx = int32(len(e.sched.items))
		e.sched.items = append(e.sched.items, j)
		e.watchDeadline(j)
	case StateReserved:
		j.q.nReserved++
		j.heapIdx = int32(len(e.leases.items))
		e.leases.items = append(e.leases.items, j)
		e.leases.tokens = append(e.leases.tokens, LeaseToken(s.lease))
	case StateBlocked:
		j.q.nBlocked++
	default:
		return fmt.Errorf("job %d: state %v is not live", j.id, j.state)
	}
	e.jobs.set(j)
	return nil
}

// pbJobScalars are an EngineJob's scalar fields, the whole of a plain
// job's: from the message, or from the fast reader (parsePlainJob), which
// leaves the bytes in the snapshot's buffer.
type pbJobScalars struct {
	id, lease, startedAt, enqueuedAt, due int64
	queue, payloadLength, priority, state uint32
	attempt, maxAttempts                  uint32
	retryWait                             bool
	jobType, payload, worker              []byte
}

// scalarsOf are m's scalar fields.
func scalarsOf(m *storepb.EngineJob) pbJobScalars {
	return pbJobScalars{
		id: int64(m.GetId()), lease: int64(m.GetLease()), startedAt: m.GetStartedAt(), enqueuedAt: m.GetEnqueuedAt(), due: m.GetDue(),
		queue: m.GetQueue(), payloadLength: m.GetPayloadLength(), priority: m.GetPriority(), state: m.GetState(),
		attempt: m.GetAttempt(), maxAttempts: m.GetMaxAttempts(), retryWait: m.GetRetryWait(),
		jobType: []byte(m.GetJobType()), payload: m.GetPayload(), worker: []byte(m.GetWorker()),
	}
}

// buildJob builds the job s (and m, unless nil) holds, checked as
// decodeJob checks it, with its attachments (live: those only a live job
// has).
func (r *pbRestore) buildJob(s *pbJobScalars, m *storepb.EngineJob, live bool) (*job, error) {
	e := r.e
	j := e.restoredJob()
	j.id = JobID(s.id)
	q, err := r.queueAt(s.queue)
	if err != nil {
		return nil, fmt.Errorf("job %d: %w", j.id, err)
	}
	j.q = q
	switch {
	case j.id == 0 || uint64(j.id) >= e.nextID:
		return nil, fmt.Errorf("job id %d outside [1, %d)", j.id, e.nextID)
	case len(s.jobType) == 0:
		return nil, fmt.Errorf("job %d: empty job type", j.id)
	case s.priority > MaxPriority:
		return nil, fmt.Errorf("job %d: priority %d above %d", j.id, s.priority, MaxPriority)
	case s.state > 255:
		return nil, fmt.Errorf("job %d: state %d", j.id, s.state)
	case r.d.lengthsOnly && len(s.payload) > 0, !r.d.lengthsOnly && s.payloadLength > 0:
		return nil, fmt.Errorf("job %d: a payload and a payload length", j.id)
	}
	j.setJobTypeBytes(s.jobType)
	if r.d.lengthsOnly {
		j.payloadLen = s.payloadLength // its bytes come with LoadPayload
		e.diskHeld += int64(j.payloadLen)
		if j.payloadLen > 0 {
			e.payloadRecords++
		}
	} else {
		e.putPayload(j, s.payload) // the store copies it
	}
	j.priority = uint8(s.priority)
	j.state = State(s.state)
	if s.retryWait {
		j.flags = flagRetryWait
	}
	j.enqueuedAt, j.due = s.enqueuedAt, s.due
	j.attempt, j.maxAttempts = s.attempt, s.maxAttempts
	reserved := live && j.state == StateReserved
	switch {
	case s.lease != 0 && !reserved:
		// Only a Reserved job has a lease (kept in the leases heap, which
		// holds nothing else).
		return nil, fmt.Errorf("job %d: %v with lease %d", j.id, j.state, s.lease)
	case !reserved && (len(s.worker) > 0 || s.startedAt != 0 || m.GetProgress() != nil):
		return nil, fmt.Errorf("job %d: %v with a worker, a delivery start or progress", j.id, j.state)
	case !live && (m.GetParents() != nil || m.GetExpiresAt() != 0):
		return nil, fmt.Errorf("job %d: dead with parents or a deadline", j.id)
	}
	if len(s.worker) > 0 {
		e.workers[j.id] = string(s.worker)
	}
	if s.startedAt != 0 {
		e.started[j.id] = s.startedAt
	}
	if m == nil {
		return j, nil
	}
	if p := m.GetProgress(); p != nil {
		if err := r.progress(j.id, p); err != nil {
			return nil, err
		}
	}
	if err := r.extension(j, m); err != nil {
		return nil, err
	}
	if p := m.GetParents(); p != nil {
		if err := r.parents(j, p); err != nil {
			return nil, err
		}
	}
	return j, nil
}

// extension fills j's extension from m, when m holds anything for it.
func (r *pbRestore) extension(j *job, m *storepb.EngineJob) error {
	if m.GetScheduledAt() == 0 && m.GetLastReason() == "" && len(m.GetCustom()) == 0 && len(m.GetHistory()) == 0 &&
		m.GetUniqueKey() == "" && m.GetOrigin() == nil && m.GetExpiresAt() == 0 && m.GetTrace() == nil {
		if m.GetUniqueDead() || m.GetUniqueDoneFor() != 0 {
			return fmt.Errorf("job %d: a unique hold without a unique key", j.id)
		}
		return nil
	}
	x := j.extension()
	x.scheduledAt, x.lastReason = m.GetScheduledAt(), m.GetLastReason()
	if cs := m.GetCustom(); len(cs) > 0 {
		if len(cs) > 1<<24 {
			return fmt.Errorf("job %d: %d custom fields", j.id, len(cs))
		}
		x.custom = make(map[string]string, len(cs))
		for i, c := range cs {
			if i > 0 && c.GetKey() <= cs[i-1].GetKey() {
				return fmt.Errorf("job %d: custom keys out of order", j.id)
			}
			x.custom[c.GetKey()] = c.GetValue()
		}
	}
	if hs := m.GetHistory(); len(hs) > 0 {
		if len(hs) > maxAttemptHistory {
			return fmt.Errorf("job %d: %d history entries, at most %d", j.id, len(hs), maxAttemptHistory)
		}
		x.history = make([]attemptRecord, 0, len(hs))
		for _, h := range hs {
			a := attemptRecord{attempt: h.GetAttempt(), outcome: uint8(h.GetOutcome()), at: h.GetAtUnixNano(), worker: h.GetWorker(), reason: h.GetReason(),
				startedAt: h.GetStartedAtUnixNano(), lease: LeaseToken(h.GetLease()), directive: uint8(h.GetDirective())}
			switch {
			case h.GetOutcome() < storepb.AttemptOutcome(outcomeNack) || h.GetOutcome() > storepb.AttemptOutcome(outcomeCancelled):
				return fmt.Errorf("job %d: bad attempt outcome %d", j.id, h.GetOutcome())
			case h.GetDirective() >= uint32(len(directiveNames)):
				return fmt.Errorf("job %d: unknown directive %d", j.id, h.GetDirective())
			}
			x.history = append(x.history, a)
		}
	}
	if x.uniqueKey = m.GetUniqueKey(); x.uniqueKey != "" {
		x.uniqueDead, x.uniqueDoneFor = m.GetUniqueDead(), m.GetUniqueDoneFor()
		if x.uniqueDoneFor < 0 {
			return fmt.Errorf("job %d: negative unique hold after completion", j.id)
		}
	} else if m.GetUniqueDead() || m.GetUniqueDoneFor() != 0 {
		return fmt.Errorf("job %d: a unique hold without a unique key", j.id)
	}
	if po := m.GetOrigin(); po != nil {
		o := &jobOrigin{queue: po.GetQueue(), jobID: JobID(po.GetJobId()), cause: Cause(po.GetCause()), failedAt: po.GetFailedAtUnixNano(), lastReason: po.GetLastReason(), finalAttempt: po.GetFinalAttempt()}
		if o.cause == CauseUnknown || o.cause > maxCause {
			return fmt.Errorf("job %d: unknown origin cause %d", j.id, o.cause)
		}
		if err := checkQueueName("origin", o.queue); err != nil {
			return fmt.Errorf("job %d: %w", j.id, err)
		}
		x.origin = o
	}
	if x.expiresAt = m.GetExpiresAt(); x.expiresAt < 0 {
		return fmt.Errorf("job %d: bad deadline %d", j.id, x.expiresAt)
	}
	if pt := m.GetTrace(); pt != nil {
		t := &TraceContext{Traceparent: pt.GetTraceparent(), Tracestate: pt.GetTracestate()}
		if err := CheckTraceContext(t); err != nil {
			return fmt.Errorf("job %d: trace context: %w", j.id, err)
		}
		x.trace = t
	}
	return nil
}

// progress files a reserved job's progress.
func (r *pbRestore) progress(id JobID, m *storepb.EngineProgress) error {
	if m.GetPercent() > MaxProgressPercent {
		return fmt.Errorf("job %d: progress percent %d above %d", id, m.GetPercent(), MaxProgressPercent)
	}
	p := Progress{Percent: m.GetPercent(), Message: m.GetMessage()}
	if err := CheckProgress(&p); err != nil {
		return fmt.Errorf("job %d: progress: %w", id, err)
	}
	r.e.progress[id] = p
	return nil
}

// parents files a live job's dependency record; its pending parents list
// it among their children, in id order since jobs come in id order.
func (r *pbRestore) parents(j *job, m *storepb.EngineParents) error {
	e := r.e
	policy := ParentFailure(m.GetPolicy())
	if m.GetPolicy() > uint32(maxParentFailure) || len(m.GetParents()) > MaxParents {
		return fmt.Errorf("job %d: policy %d with %d parents", j.id, m.GetPolicy(), len(m.GetParents()))
	}
	dep := &jobDeps{policy: policy, parents: make([]parentLink, 0, len(m.GetParents()))}
	for _, pp := range m.GetParents() {
		p := parentLink{id: JobID(pp.GetId()), outcome: uint8(pp.GetOutcome()), cause: Cause(pp.GetCause())}
		if pp.GetOutcome() > uint32(maxParentOutcome) || p.id >= j.id || (p.outcome == parentDead) != (p.cause != CauseUnknown) || pp.GetCause() > storepb.Cause(maxCause) {
			return fmt.Errorf("job %d: parent %d outcome %d cause %d", j.id, p.id, p.outcome, p.cause)
		}
		if p.outcome == parentPending {
			dep.pending++
			e.children[p.id] = append(e.children[p.id], j.id)
		}
		dep.parents = append(dep.parents, p)
	}
	if (dep.pending > 0) != (j.state == StateBlocked) {
		return fmt.Errorf("job %d is %v with %d parents pending", j.id, j.state, dep.pending)
	}
	if e.deps == nil {
		e.deps = make(map[JobID]*jobDeps)
	}
	e.deps[j.id] = dep
	return nil
}

// pbWriteDeadLetters writes the retained dead-letter records, oldest
// first.
func (e *Engine) pbWriteDeadLetters(w *pbWriter, qindex map[*queue]uint64) {
	var m storepb.EngineDeadLetter
	var jm storepb.EngineJob
	for d := e.deadHead; d != nil && w.c.err == nil; d = d.next {
		e.pbJob(w, &jm, d.j, qindex)
		m = storepb.EngineDeadLetter{Job: &jm, Cause: storepb.Cause(d.cause), FailedAt: d.failedAt, ExpiresAt: d.expiresAt, FinalAttempt: d.finalAttempt}
		w.put(pbDeadLetters, &m)
	}
}

func (r *pbRestore) restoreDeadLetter(m *storepb.EngineDeadLetter) error {
	e := r.e
	if m.GetJob() == nil {
		return errors.New("a record without its job")
	}
	s := scalarsOf(m.GetJob())
	j, err := r.buildJob(&s, m.GetJob(), false)
	if err != nil {
		return err
	}
	d := &deadRecord{j: j, cause: Cause(m.GetCause()), failedAt: m.GetFailedAt(), expiresAt: m.GetExpiresAt(), finalAttempt: m.GetFinalAttempt()}
	if j.state != StateDead || m.GetCause() < storepb.Cause(CauseAttemptsExhausted) || m.GetCause() > storepb.Cause(maxCause) {
		return fmt.Errorf("dead-letter record of job %d: bad state or cause", j.id)
	}
	if e.holdsLive(j.id) || e.dead[j.id] != nil {
		return fmt.Errorf("job %d appears twice", j.id)
	}
	e.linkDead(d)
	return nil
}

// pbWriteKeys writes the idempotency keys in creation order; a key of 32
// lowercase hex digits as the 16 bytes it spells.
func (e *Engine) pbWriteKeys(w *pbWriter, qindex map[*queue]uint64) {
	for i := 0; i < e.keys.len() && w.c.err == nil; i++ {
		ent := e.keys.at(i)
		at := w.begin(pbIdempotencyKeys)
		w.c.out = appendKeyPB(w.c.out, ent, e.keys.plain, w.c.queueIndex(e.keys.queueOf(ent), qindex))
		w.end(at)
	}
}

// pbKey is an EngineIdempotencyKey's fields, key and hexKey left in the
// snapshot's buffer by the fast reader (parseKey).
type pbKey struct {
	queue       uint32
	key, hexKey []byte
	jobID       uint64
	createdAt   int64
}

func (r *pbRestore) restoreKey(m *pbKey) error {
	e := r.e
	q, err := r.queueAt(m.queue)
	if err != nil {
		return err
	}
	var sk storedKey
	switch {
	case len(m.key) > 0 && len(m.hexKey) == 0:
		sk = storedKeyOf(m.key) // copied
		if sk.packed {
			return fmt.Errorf("key %q of queue %q: 32 hex digits not written as the bytes they spell", m.key, q.name)
		}
	case len(m.key) == 0 && len(m.hexKey) == 16:
		sk = storedKey{packed: true}
		copy(sk.bytes[:], m.hexKey)
	default:
		return fmt.Errorf("a key of queue %q: neither a key nor 16 bytes", q.name)
	}
	jobID, createdAt := JobID(m.jobID), m.createdAt
	if n := e.keys.len(); n > 0 && createdAt < e.keys.at(n-1).createdAt {
		return fmt.Errorf("key %q of queue %q out of creation order", sk.text(), q.name)
	}
	if jobID >= idemPacked {
		return fmt.Errorf("key %q of queue %q: job id %d out of range", sk.text(), q.name, jobID)
	}
	e.keys.appendRestored(q, &sk, jobID, createdAt)
	return nil
}

// pbWriteReservations writes the remembered reserve requests by request
// id.
func (e *Engine) pbWriteReservations(w *pbWriter) {
	rs := slices.Clone([]*reservation(e.resHeap))
	slices.SortFunc(rs, func(a, b *reservation) int { return cmp.Compare(a.requestID, b.requestID) })
	for _, res := range rs {
		m := &storepb.EngineReservation{RequestId: res.requestID, ExpiresAt: res.expiresAt, JobIds: make([]uint64, len(res.ids)), Leases: make([]uint64, len(res.tokens))}
		for i := range res.ids {
			m.JobIds[i], m.Leases[i] = uint64(res.ids[i]), uint64(res.tokens[i])
		}
		w.put(pbReservations, m)
	}
}

func (r *pbRestore) restoreReservation(m *storepb.EngineReservation) error {
	e := r.e
	if len(m.GetJobIds()) != len(m.GetLeases()) {
		return fmt.Errorf("reserve request id %q: %d jobs, %d leases", m.GetRequestId(), len(m.GetJobIds()), len(m.GetLeases()))
	}
	if len(r.lastRequest) > 0 && m.GetRequestId() <= r.lastRequest {
		return fmt.Errorf("reserve request id %q: out of order or twice", m.GetRequestId())
	}
	r.lastRequest = m.GetRequestId()
	res := &reservation{requestID: m.GetRequestId(), expiresAt: m.GetExpiresAt()}
	for i, id := range m.GetJobIds() {
		res.ids = append(res.ids, JobID(id))
		res.tokens = append(res.tokens, LeaseToken(m.GetLeases()[i]))
	}
	if e.reservations[res.requestID] != nil {
		return fmt.Errorf("reserve request id %q appears twice", res.requestID)
	}
	e.reservations[res.requestID] = res
	heap.Push(&e.resHeap, res)
	if res.retryWindow() {
		e.indexReservation(res)
	}
	return nil
}

// pbWriteDeclared writes the applied declarations by queue name.
func (e *Engine) pbWriteDeclared(w *pbWriter) {
	for _, name := range slices.Sorted(maps.Keys(e.declared)) {
		w.put(pbDeclared, &storepb.EngineDeclaration{Queue: name, Fingerprints: e.declared[name]})
	}
}

func (r *pbRestore) restoreDeclaration(m *storepb.EngineDeclaration) error {
	e := r.e
	name := m.GetQueue()
	if !ValidQueueName(name) || (len(e.declared) > 0 && name <= r.lastDeclared) {
		return fmt.Errorf("bad or unsorted queue name %q", name)
	}
	r.lastDeclared = name
	if n := len(m.GetFingerprints()); n == 0 || n > maxDeclarationsKept {
		return fmt.Errorf("queue %q: %d declarations, 1 to %d", name, n, maxDeclarationsKept)
	}
	if e.declared == nil {
		e.declared = make(map[string][]uint64)
	}
	e.declared[name] = slices.Clone(m.GetFingerprints())
	return nil
}

// finish ends the restore as decodeEngine ends every layout's.
func (r *pbRestore) finish() error {
	e := r.e
	if err := r.fairOrdersRead(); err != nil {
		return fmt.Errorf("fair_orders: %w", err)
	}
	if err := e.rebuildUnique(); err != nil {
		return err
	}
	for _, q := range r.qs {
		if q.rateTAT != 0 && q.set.limits.rateInterval == 0 {
			return fmt.Errorf("queue %q: a token bucket without a rate limit", q.name)
		}
		if q.keys != nil {
			e.rebuildKeyLimits(q) // the leases were loaded after the config
		}
	}
	if err := r.completedRead(); err != nil {
		return fmt.Errorf("completed: %w", err)
	}
	e.recount()
	return nil
}
