package engine

import (
	"cmp"
	"fmt"
	"slices"

	storepb "github.com/sepp-io/sepp/proto/seppstore/v1"
)

// The fair queues' turn orders and the completed jobs of a layout 19
// snapshot (snapshot_pb.go): what the end of the expiry section
// (snapshot_expiry.go) and the completed section (completed.go) hold in
// the hand-written layouts. Each queue's settings (fairness_key,
// completed_retention) are in the header's config.

// pbWriteFairOrders writes each fair queue's levels' turn orders: by queue
// index, then priority, one element per level that has a line (an empty
// order is left out, and restored as one: fairOrdersRead).
func (e *Engine) pbWriteFairOrders(w *pbWriter, qs []*queue) {
	var m storepb.EngineFairOrder
	var lines []storepb.EngineFairLine
	for qi, q := range qs {
		if q.set.fairKey == "" {
			continue
		}
		for prio := range q.ready {
			order := q.ready[prio].fair.turnOrder()
			if len(order) == 0 {
				continue
			}
			if cap(lines) < len(order) {
				lines = make([]storepb.EngineFairLine, len(order))
			}
			lines = lines[:len(order)]
			m.Queue, m.Priority, m.Lines = uint32(qi), uint32(prio), m.Lines[:0]
			for i, k := range order {
				l := &lines[i]
				l.None, l.Value = k.none, ""
				if !k.none {
					l.Value = k.value
				}
				m.Lines = append(m.Lines, l)
			}
			w.put(pbFairOrders, &m)
		}
	}
}

// restoreFairOrder applies one level's turn order, as the expiry section
// does: the level's queue is fair, the levels come in (queue, priority)
// order, each at most once, and the order is a permutation of the level's
// lines (setTurnOrder). The fair levels skipped on the way got no element:
// their order is empty.
func (r *pbRestore) restoreFairOrder(m *storepb.EngineFairOrder) error {
	q, err := r.queueAt(m.GetQueue())
	if err != nil {
		return err
	}
	qi, prio := int(m.GetQueue()), m.GetPriority()
	switch {
	case q.set.fairKey == "":
		return fmt.Errorf("queue %q priority %d: a turn order for a queue without a fairness key", q.name, prio)
	case prio >= uint32(len(q.ready)):
		return fmt.Errorf("queue %q: priority %d out of range", q.name, prio)
	case qi < r.fairQ || (qi == r.fairQ && int(prio) < r.fairPrio):
		return fmt.Errorf("queue %q priority %d: out of order", q.name, prio)
	case len(m.GetLines()) == 0:
		return fmt.Errorf("queue %q priority %d: an empty turn order (left out when empty)", q.name, prio)
	}
	if err := r.fairEmptyUpTo(qi, int(prio)); err != nil {
		return err
	}
	f := q.ready[prio].fair
	if f == nil {
		return fmt.Errorf("queue %q priority %d: not a fair level", q.name, prio)
	}
	order := make([]*fairKey, 0, len(m.GetLines()))
	for _, l := range m.GetLines() {
		var line *fairKey
		switch {
		case l.GetNone() && l.GetValue() != "":
			return fmt.Errorf("queue %q priority %d: the line of jobs without the field has value %q", q.name, prio, l.GetValue())
		case l.GetNone():
			line = f.none
		default:
			line = f.keys[l.GetValue()]
		}
		order = append(order, line)
	}
	if !f.setTurnOrder(order) {
		return fmt.Errorf("queue %q priority %d: the turn order does not match the Ready jobs' keys", q.name, prio)
	}
	r.fairQ, r.fairPrio = qi, int(prio)+1
	return nil
}

// fairEmptyUpTo gives every fair level from the next one not yet restored
// up to (queue index qi, priority prio), excluded, the empty turn order
// the writer left out: setTurnOrder refuses it for a level with lines.
func (r *pbRestore) fairEmptyUpTo(qi, prio int) error {
	for r.fairQ < len(r.qs) && (r.fairQ < qi || (r.fairQ == qi && r.fairPrio < prio)) {
		q := r.qs[r.fairQ]
		if q.set.fairKey != "" && r.fairPrio < len(q.ready) {
			f := q.ready[r.fairPrio].fair
			if f == nil || !f.setTurnOrder(nil) {
				return fmt.Errorf("queue %q priority %d: no turn order for the Ready jobs' keys", q.name, r.fairPrio)
			}
		}
		r.fairPrio++
		if r.fairPrio >= len(q.ready) {
			r.fairQ, r.fairPrio = r.fairQ+1, 0
		}
	}
	return nil
}

// fairOrdersRead checks, once every turn order is read, that every fair
// level that needs one got one: the levels after the last element get the
// empty order, as those before it did.
func (r *pbRestore) fairOrdersRead() error {
	return r.fairEmptyUpTo(len(r.qs), 0)
}

// pbWriteCompleted writes each queue's completed jobs: by queue index,
// then in completion order.
func (e *Engine) pbWriteCompleted(w *pbWriter, qs []*queue) {
	var m storepb.EngineCompletedEntry
	for qi, q := range qs {
		for _, ent := range q.completed.live() {
			m.Queue, m.At, m.Id = uint32(qi), ent.at, uint64(ent.id)
			w.put(pbCompleted, &m)
			if w.c.err != nil {
				return
			}
		}
	}
}

// restoreCompleted applies one completed job's entry, checked as the
// completed section checks it: the queues come in index order; a job is
// not 0, held once, neither live nor dead-lettered; a queue's entries are
// in completion order, none after the clock.
func (r *pbRestore) restoreCompleted(m *storepb.EngineCompletedEntry) error {
	q, err := r.queueAt(m.GetQueue())
	if err != nil {
		return err
	}
	e := r.e
	ent := completedEntry{at: m.GetAt(), id: JobID(m.GetId())}
	if r.compOwner == nil {
		r.compOwner = make(map[JobID]uint32)
	} else if m.GetQueue() < r.compQ {
		return fmt.Errorf("queue %q after queue index %d: out of order", q.name, r.compQ)
	}
	if len(r.compOwner) == 0 || m.GetQueue() != r.compQ {
		r.compQ, r.compAt = m.GetQueue(), 0
	}
	switch _, dup := r.compOwner[ent.id]; {
	case ent.id == 0 || dup || e.holdsLive(ent.id) || e.dead[ent.id] != nil:
		return fmt.Errorf("job %d of queue %q is held twice or is 0", ent.id, q.name)
	case ent.at < r.compAt || ent.at > e.now:
		return fmt.Errorf("job %d of queue %q completed at %d, out of order or after the clock", ent.id, q.name, ent.at)
	}
	r.compAt = ent.at
	r.compOwner[ent.id] = m.GetQueue()
	q.completed.push(ent)
	e.completedHeld++
	return nil
}

// pbWriteCompletedRecords writes the completed jobs' records in id order,
// unless the state machine writes them (SnapshotOptions.CompletedSection).
// A record names the queue whose entry holds the job: the restore checks
// the two agree.
func (e *Engine) pbWriteCompletedRecords(w *pbWriter) {
	if w.c.completedSection || e.completedHeld == 0 {
		return
	}
	type held struct {
		id JobID
		q  *queue
	}
	all := make([]held, 0, e.completedHeld)
	for _, q := range e.queues { // sorted below: order does not matter
		for _, c := range q.completed.live() {
			all = append(all, held{c.id, q})
		}
	}
	slices.SortFunc(all, func(a, b held) int { return cmp.Compare(a.id, b.id) })
	var m storepb.EngineCompletedRecord
	var job storepb.EngineCompletedJob
	for _, h := range all {
		r, ok := e.completed.Completed(h.id)
		if !ok {
			panic(&PayloadDamageError{ID: h.id, Got: -1, Want: 0})
		}
		r.Queue = h.q.name
		if err := completedRecordToPB(&job, &r); err != nil {
			w.c.err = fmt.Errorf("completed job %d: %w", h.id, err)
			return
		}
		m.Id, m.Job = uint64(h.id), &job
		w.put(pbCompletedRecords, &m)
		if w.c.err != nil {
			return
		}
	}
}

// restoreCompletedRecord applies one completed job's record: records come
// in id order, one per completed job (completedRead counts them), none
// when the state machine writes them (SnapshotOptions.CompletedSection).
func (r *pbRestore) restoreCompletedRecord(m *storepb.EngineCompletedRecord) error {
	id := JobID(m.GetId())
	if r.d.completedSection {
		return fmt.Errorf("record of job %d: the records are written by the state machine", id)
	}
	if id <= r.compLastRecord {
		return fmt.Errorf("record of job %d after job %d's: out of order", id, r.compLastRecord)
	}
	qi, ok := r.compOwner[id]
	if !ok {
		return fmt.Errorf("record of job %d: not a completed job", id)
	}
	if m.GetJob() == nil {
		return fmt.Errorf("record of job %d: no body", id)
	}
	rec, err := completedRecordFromPB(id, m.GetJob())
	if err != nil {
		return fmt.Errorf("record of job %d: %w", id, err)
	}
	if name := r.qs[qi].name; rec.Queue != name {
		return fmt.Errorf("record of job %d: of queue %q, completed in queue %q", id, rec.Queue, name)
	}
	r.compLastRecord = id
	r.compRecords++
	if !r.d.payloadsAhead {
		r.e.completed.PutCompleted(&rec)
	}
	return nil
}

// completedRead finishes the completed jobs once every field is read (the
// core's finish calls it): every completed job got its record, unless the
// state machine writes them, and the next expiry is found.
func (r *pbRestore) completedRead() error {
	if !r.d.completedSection && r.compRecords != len(r.compOwner) {
		return fmt.Errorf("completed_records: %d records for %d completed jobs", r.compRecords, len(r.compOwner))
	}
	r.compOwner = nil
	r.e.findCompletedNext()
	return nil
}

// completedRecordToPB fills c with r (less its id, the element's), as the
// hand-written layouts write it; a history outcome or directive the engine
// does not name is refused: the enum could not carry it back.
func completedRecordToPB(c *storepb.EngineCompletedJob, r *CompletedRecord) error {
	hist := c.History[:0]
	*c = storepb.EngineCompletedJob{
		Queue:               r.Queue,
		JobType:             r.JobType,
		Result:              r.Result,
		CompletedAtUnixNano: nanosOrZero(r.CompletedAt),
		StartedAtUnixNano:   nanosOrZero(r.StartedAt),
		EnqueuedAtUnixNano:  nanosOrZero(r.EnqueuedAt),
		Attempt:             r.Attempt,
		MaxAttempts:         r.MaxAttempts,
		Priority:            r.Priority,
		Worker:              r.WorkerID,
	}
	for i, h := range r.History {
		o := slices.Index(outcomeNames[:], h.Outcome)
		if o < 0 {
			return fmt.Errorf("attempt %d: outcome %q", h.Attempt, h.Outcome)
		}
		d := slices.Index(directiveNames[:], h.Directive)
		if d < 0 {
			return fmt.Errorf("attempt %d: directive %q", h.Attempt, h.Directive)
		}
		if i < cap(hist) {
			hist = hist[:i+1]
		} else {
			hist = append(hist, nil)
		}
		if hist[i] == nil {
			hist[i] = new(storepb.EngineAttempt)
		}
		*hist[i] = storepb.EngineAttempt{
			Attempt:           h.Attempt,
			Outcome:           storepb.AttemptOutcome(o),
			AtUnixNano:        nanosOrZero(h.At),
			Worker:            h.WorkerID,
			Reason:            h.Reason,
			StartedAtUnixNano: nanosOrZero(h.StartedAt),
			Lease:             uint64(h.LeaseToken),
			Directive:         uint32(d),
		}
	}
	if len(r.History) > 0 {
		c.History = hist
	}
	return nil
}

// completedRecordFromPB is job id's record from c, as the hand-written
// layouts read it (a history attempt's Duration is recomputed); it copies
// what it keeps.
func completedRecordFromPB(id JobID, c *storepb.EngineCompletedJob) (CompletedRecord, error) {
	r := CompletedRecord{
		ID:          id,
		Queue:       c.GetQueue(),
		JobType:     c.GetJobType(),
		Result:      slices.Clone(c.GetResult()),
		EnqueuedAt:  fromNanos(c.GetEnqueuedAtUnixNano()),
		StartedAt:   fromNanos(c.GetStartedAtUnixNano()),
		CompletedAt: fromNanos(c.GetCompletedAtUnixNano()),
		Attempt:     c.GetAttempt(),
		MaxAttempts: c.GetMaxAttempts(),
		Priority:    c.GetPriority(),
		WorkerID:    c.GetWorker(),
	}
	if len(r.Result) == 0 {
		r.Result = nil
	}
	if n := len(c.GetHistory()); n > 0 {
		r.History = make([]Attempt, 0, n)
		for _, h := range c.GetHistory() {
			o, d := h.GetOutcome(), h.GetDirective()
			if o < 0 || int(o) >= len(outcomeNames) {
				return CompletedRecord{}, fmt.Errorf("attempt %d: unknown outcome %d", h.GetAttempt(), o)
			}
			if int64(d) >= int64(len(directiveNames)) {
				return CompletedRecord{}, fmt.Errorf("attempt %d: unknown directive %d", h.GetAttempt(), d)
			}
			a := Attempt{
				Attempt:    h.GetAttempt(),
				WorkerID:   h.GetWorker(),
				At:         fromNanos(h.GetAtUnixNano()),
				Outcome:    outcomeNames[o],
				Reason:     h.GetReason(),
				StartedAt:  fromNanos(h.GetStartedAtUnixNano()),
				LeaseToken: LeaseToken(h.GetLease()),
				Directive:  directiveNames[d],
			}
			if !a.StartedAt.IsZero() {
				a.Duration = a.At.Sub(a.StartedAt)
			}
			r.History = append(r.History, a)
		}
	}
	return r, nil
}
