package engine

import (
	"fmt"
	"maps"
	"slices"
	"time"

	storepb "github.com/sepp-io/sepp/proto/seppstore/v1"
)

// The schedules, the unique keys held by acked jobs and the redrive tasks
// of a layout 19 snapshot (snapshot_pb.go). Each mirrors its legacy section
// (encodeSchedules and decodeSchedules in schedule_snapshot.go, the unique
// holds of encode and decodeUniqueDone in snapshot.go, encodeRedriveSection
// and decodeRedriveSection in snapshot_redrive.go): the same data in the
// same order, and on restore the same checks, made element by element.

// pbWriteSchedules writes the periodic schedules by name.
func (e *Engine) pbWriteSchedules(w *pbWriter) {
	m := new(storepb.EngineSchedule)
	for _, name := range e.scheduleNames() {
		s := e.schedules[name]
		p := &s.p
		t := &p.Template
		m.Name = p.Name
		m.Kind = uint32(p.Kind)
		m.Cron = p.Cron
		m.Interval = int64(p.Interval)
		m.TimeZone = p.TimeZone
		m.Overlap = uint32(p.Overlap)
		m.CatchUp = uint32(p.CatchUp)
		m.Paused = p.Paused
		m.TemplateQueue = t.Queue
		m.TemplateJobType = t.JobType
		m.TemplatePayload = t.Payload
		m.TemplatePriority = t.Priority
		m.TemplateCustom = m.TemplateCustom[:0]
		for _, k := range slices.Sorted(maps.Keys(t.Custom)) {
			m.TemplateCustom = append(m.TemplateCustom, &storepb.EngineCustomField{Key: k, Value: t.Custom[k]})
		}
		m.TemplateMaxAttempts = t.MaxAttempts
		m.LastFired = s.lastFired
		m.NextTick = s.nextTick
		m.LastJob = uint64(s.lastJob)
		m.Fired = s.fired
		m.Skipped = s.skipped
		m.CreatedAt = s.createdAt
		m.UpdatedAt = s.updatedAt
		w.put(pbSchedules, m)
	}
}

// restoreSchedule applies one schedule. Only the shape is checked, as
// decodeSchedules does: the limits a template was checked against when it
// was defined may have changed since.
func (r *pbRestore) restoreSchedule(m *storepb.EngineSchedule) error {
	e := r.e
	if len(e.schedules) >= MaxSchedules {
		return fmt.Errorf("schedule %q: more than %d schedules", m.GetName(), MaxSchedules)
	}
	if n := len(m.GetTemplateCustom()); n > 1<<16 {
		return fmt.Errorf("schedule %q: %d custom fields, above %d", m.GetName(), n, 1<<16)
	}
	s := &schedule{}
	p := &s.p
	p.Name = m.GetName()
	if len(e.schedules) > 0 && p.Name <= r.lastSchedule {
		return fmt.Errorf("schedule %q out of name order", p.Name)
	}
	r.lastSchedule = p.Name
	if err := checkScheduleName(p.Name); err != nil {
		return fmt.Errorf("schedule %q: %w", p.Name, err)
	}
	// Checked before they are narrowed to the engine's 8 bits.
	if kind, overlap, catchUp := m.GetKind(), m.GetOverlap(), m.GetCatchUp(); (kind != uint32(ScheduleCron) && kind != uint32(ScheduleInterval)) || overlap > uint32(OverlapAllow) || catchUp > uint32(CatchUpSkip) {
		return fmt.Errorf("schedule %q: kind %d, overlap %d, catch-up %d out of range", p.Name, kind, overlap, catchUp)
	}
	p.Kind = ScheduleKind(m.GetKind())
	p.Cron = m.GetCron()
	p.Interval = time.Duration(m.GetInterval())
	p.TimeZone = m.GetTimeZone()
	p.Overlap = OverlapPolicy(m.GetOverlap())
	p.CatchUp = CatchUpPolicy(m.GetCatchUp())
	p.Paused = m.GetPaused()
	t := &p.Template
	t.Queue = m.GetTemplateQueue()
	t.JobType = m.GetTemplateJobType()
	if b := m.GetTemplatePayload(); len(b) > 0 {
		t.Payload = slices.Clone(b)
	}
	if m.TemplatePriority != nil {
		v := m.GetTemplatePriority()
		t.Priority = &v
	}
	if cs := m.GetTemplateCustom(); len(cs) > 0 {
		t.Custom = make(map[string]string, len(cs))
		for _, f := range cs {
			t.Custom[f.GetKey()] = f.GetValue()
		}
	}
	t.MaxAttempts = m.GetTemplateMaxAttempts()
	s.lastFired = m.GetLastFired()
	s.nextTick = m.GetNextTick()
	s.lastJob = JobID(m.GetLastJob())
	s.fired = m.GetFired()
	s.skipped = m.GetSkipped()
	s.createdAt = m.GetCreatedAt()
	s.updatedAt = m.GetUpdatedAt()
	e.schedules[p.Name] = s
	return nil
}

// pbWriteUniqueHolds writes the unique keys acked jobs hold, in
// (done_until, job id) order.
func (e *Engine) pbWriteUniqueHolds(w *pbWriter, qindex map[*queue]uint64) {
	m := new(storepb.EngineUniqueHold)
	for _, ent := range e.sortedUniqueDone() {
		m.Queue = uint32(qindex[ent.ref.q])
		m.Key = ent.ref.key
		m.JobId = uint64(ent.jobID)
		m.DoneUntil = ent.doneUntil
		w.put(pbUniqueHolds, m)
	}
}

// restoreUniqueHold applies one such hold. The holds come in (done_until,
// job id) order, so the heap they are appended to is valid as it stands.
// e.unique holds only these holds until the finish indexes the keys of the
// live jobs and records (rebuildUnique), as in every layout.
func (r *pbRestore) restoreUniqueHold(m *storepb.EngineUniqueHold) error {
	e := r.e
	if uint64(len(e.uniqueDone)) >= 1<<40 {
		return fmt.Errorf("more than %d unique key holds", uint64(1<<40))
	}
	q, _ := r.queueAt(m.GetQueue()) // nil when out of range: refused below
	return e.restoreUniqueHold(q, m.GetKey(), JobID(m.GetJobId()), m.GetDoneUntil())
}

// pbWriteRedrives writes the redrive tasks in id order. The last task id
// given is the header's (next_redrive).
func (e *Engine) pbWriteRedrives(w *pbWriter) {
	m := new(storepb.EngineRedrive)
	for _, t := range e.redrives {
		s := &t.p.Selection
		m.Id = t.id
		m.State = uint32(t.state)
		m.Queue = s.Queue
		m.Cause = storepb.Cause(s.Cause)
		m.JobType = s.JobType
		m.ReasonContains = s.ReasonContains
		m.After = t.after
		m.Before = t.before
		m.ToQueue = t.p.ToQueue
		m.Fresh = t.p.Fresh
		m.Rate = uint32(t.p.Rate)
		m.By = t.p.By
		m.Moved = t.moved
		m.Cursor = uint64(t.cursor)
		m.LastError = t.lastError
		m.CreatedAt = t.createdAt
		m.UpdatedAt = t.updatedAt
		m.EndedAt = t.endedAt
		m.EndedBy = t.endedBy
		w.put(pbRedrives, m)
	}
}

// restoreRedrive applies one redrive task, checked as decodeRedriveSection
// checks it: its id against the header's last id given (r.e.nextRedrive,
// set before the tasks come) and the task before it, and the bounds on the
// active and ended tasks as each is counted (they only grow, so this
// refuses what the legacy check after the last task refuses).
func (r *pbRestore) restoreRedrive(m *storepb.EngineRedrive) error {
	e := r.e
	i := len(e.redrives)
	t := &redriveTask{id: m.GetId()}
	switch st, cause, rate := m.GetState(), m.GetCause(), m.GetRate(); {
	case t.id == 0 || t.id > e.nextRedrive || (i > 0 && t.id <= e.redrives[i-1].id):
		return fmt.Errorf("task %d: id %d out of order or above the last given %d", i, t.id, e.nextRedrive)
	case st == uint32(RedriveUnknown) || st > uint32(RedriveDone):
		return fmt.Errorf("task %d: unknown state %d", t.id, st)
	case cause < 0 || cause > storepb.Cause(maxCause):
		return fmt.Errorf("task %d: unknown cause %d", t.id, cause)
	case rate < 1 || rate > MaxRedriveRate:
		return fmt.Errorf("task %d: rate %d out of range", t.id, rate)
	case m.GetToQueue() != "" && !m.GetFresh():
		return fmt.Errorf("task %d: same-id requeue with a target queue", t.id)
	case RedriveState(st).Ended() != (m.GetEndedAt() != 0):
		return fmt.Errorf("task %d: state %s with ended_at %d", t.id, RedriveState(st), m.GetEndedAt())
	}
	t.state = RedriveState(m.GetState())
	s := &t.p.Selection
	s.Queue = m.GetQueue()
	s.Cause = Cause(m.GetCause())
	s.JobType = m.GetJobType()
	s.ReasonContains = m.GetReasonContains()
	t.after = m.GetAfter()
	t.before = m.GetBefore()
	t.p.ToQueue = m.GetToQueue()
	t.p.Fresh = m.GetFresh()
	t.p.Rate = int(m.GetRate())
	t.p.By = m.GetBy()
	t.moved = m.GetMoved()
	t.cursor = JobID(m.GetCursor())
	t.lastError = m.GetLastError()
	t.createdAt = m.GetCreatedAt()
	t.updatedAt = m.GetUpdatedAt()
	t.endedAt = m.GetEndedAt()
	t.endedBy = m.GetEndedBy()
	if t.after != 0 {
		s.FailedAfter = time.Unix(0, t.after)
	}
	if t.before != 0 {
		s.FailedBefore = time.Unix(0, t.before)
	}
	if t.state.Ended() {
		r.redrivesEnded++
	} else {
		r.redrivesActive++
	}
	if r.redrivesActive > MaxActiveRedrives || r.redrivesEnded > MaxRedriveAudit {
		return fmt.Errorf("%d active and %d ended tasks, above the bounds %d and %d", r.redrivesActive, r.redrivesEnded, MaxActiveRedrives, MaxRedriveAudit)
	}
	e.redrives = append(e.redrives, t)
	return nil
}
