package engine_test

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/sepp-io/sepp/engine"
	et "github.com/sepp-io/sepp/engine/enginetest"
)

// The model's periodic schedules. The engine is handed each tick by the
// leader, so the model decides only what a fire does: a tick not after the
// schedule's last fired one is a duplicate and changes nothing (a tick
// fires once, however often a failing-over leader proposes it); a new tick
// is consumed and enqueues the template unless it is marked missed, the
// schedule is paused, or the overlap policy is skip while the schedule's
// previous job is still live (waiting, scheduled or reserved).

// mSched is one schedule in the model.
type mSched struct {
	p                engine.ScheduleParams // NextTick cleared, as the engine stores it
	lastFired, next  time.Time
	lastJob          engine.JobID
	fired, skipped   uint64
	created, updated time.Time
	// jobs is every tick of this schedule that enqueued, with its job: the
	// invariant that a tick fires once is checked against it directly, not
	// only through the model's last-fired rule.
	jobs map[int64]engine.JobID
}

var modelSchedNames = []string{"s0", "s1", "s2"}

// schedule draws one schedule operation, applies it to both engines and the
// model, and checks the results; the caller compares the state.
func (r *modelRun) schedule(i int, now time.Time) string {
	t, m, rng := r.t, r.m, r.rng
	if m.scheds == nil {
		m.scheds = map[string]*mSched{}
	}
	name := modelSchedNames[rng.Intn(len(modelSchedNames))]
	if have := slices.Sorted(maps.Keys(m.scheds)); len(have) > 0 && rng.Intn(4) > 0 {
		name = have[rng.Intn(len(have))] // mostly one that exists
	}
	if rng.Intn(20) == 0 {
		name = "nope" // never created
	}
	s := m.scheds[name]
	notFound := func(op string, err error) bool {
		if s == nil {
			if !errors.Is(err, engine.ErrNotFound) {
				t.Fatalf("step %d: %s %q (no such schedule): %v", i, op, name, err)
			}
			return true
		}
		if err != nil {
			t.Fatalf("step %d: %s %q: %v", i, op, name, err)
		}
		return false
	}
	switch x := rng.Intn(100); {
	case x < 22:
		p := r.drawSchedule(name)
		bad := rng.Intn(10) == 0
		if bad { // refused before anything changes: no clock advance either
			p.Interval, p.Kind = time.Millisecond, engine.ScheduleInterval
		}
		errs := r.both(i, func(e *engine.Engine) any { return e.UpsertSchedule(now, p) })
		if bad {
			if err, _ := errs.(error); err == nil || !errors.Is(err, engine.ErrInvalidArgument) {
				t.Fatalf("step %d: upsert %q with a 1ms interval: %v", i, name, errs)
			}
			return "schedule-upsert-invalid"
		}
		if errs != nil {
			t.Fatalf("step %d: upsert %q: %v", i, name, errs)
		}
		m.advance(now)
		if s == nil {
			s = &mSched{created: m.now, jobs: map[int64]engine.JobID{}}
			m.scheds[name] = s
		}
		s.p, s.next, s.updated = p, p.NextTick, m.now
		s.p.NextTick = time.Time{}
		s.p.Template.Custom = maps.Clone(p.Template.Custom)
		if p.Paused {
			s.next = time.Time{}
		}
		return "schedule-upsert"
	case x < 26:
		err, _ := r.both(i, func(e *engine.Engine) any { return e.DeleteSchedule(now, name) }).(error)
		if notFound("delete", err) {
			return "schedule-delete-missing"
		}
		m.advance(now)
		delete(m.scheds, name)
		return "schedule-delete"
	case x < 38:
		paused := rng.Intn(2) == 0
		var next time.Time
		if !paused {
			next = m.now.Add(time.Duration(1+rng.Intn(5000)) * time.Millisecond)
		}
		err, _ := r.both(i, func(e *engine.Engine) any { return e.SetSchedulePaused(now, name, paused, next) }).(error)
		if notFound("pause", err) {
			return "schedule-pause-missing"
		}
		m.advance(now)
		s.p.Paused, s.next, s.updated = paused, next, m.now
		if paused {
			return "schedule-pause"
		}
		return "schedule-resume"
	}
	// A fire. The tick is mostly a new one, sometimes the last fired one
	// again (a new leader re-proposing it) or an older one (a stale
	// leader's log entry).
	kind := "schedule-fire"
	var tick time.Time
	switch {
	case s != nil && !s.lastFired.IsZero() && rng.Intn(4) == 0:
		tick, kind = s.lastFired, "schedule-fire-repeat"
	case s != nil && !s.lastFired.IsZero() && rng.Intn(5) == 0:
		tick, kind = s.lastFired.Add(-time.Duration(1+rng.Intn(5000))*time.Millisecond), "schedule-fire-old"
	case s != nil && !s.next.IsZero() && rng.Intn(2) == 0:
		tick = s.next
	default:
		tick = m.now.Add(time.Duration(rng.Intn(4000)-2000) * time.Millisecond)
	}
	next := tick.Add(time.Duration(1+rng.Intn(5)) * time.Second)
	missed := rng.Intn(8) == 0
	fire := func() engine.FireResult {
		res := r.both(i, func(e *engine.Engine) any {
			res, err := e.FireSchedule(now, name, tick, next, missed)
			return [2]any{res, err}
		}).([2]any)
		err, _ := res[1].(error)
		if notFound("fire", err) {
			return engine.FireResult{}
		}
		return res[0].(engine.FireResult)
	}
	got := fire()
	if s == nil {
		return "schedule-fire-missing"
	}
	want := m.fire(s, now, tick, next, missed)
	if got.Duplicate != want.Duplicate || got.JobID != want.JobID || (got.Skipped == "") != (want.Skipped == "") ||
		(want.Skipped != "" && got.Skipped != want.Skipped) {
		t.Fatalf("step %d: fire %q tick %v (last %v): engine %+v, model %+v", i, name, tick, s.lastFired, got, want)
	}
	if want.Skipped != "" {
		kind += "-skip-" + want.Skipped
	}
	if got.JobID != 0 && !want.Duplicate {
		if prev, ok := s.jobs[tick.UnixNano()]; ok {
			t.Fatalf("step %d: schedule %q tick %v fired twice: jobs %d and %d", i, name, tick, prev, got.JobID)
		}
		s.jobs[tick.UnixNano()] = got.JobID
		j, err := r.e.GetJob(got.JobID)
		if err != nil || j.JobType != s.p.Template.JobType || !bytes.Equal(j.Payload, s.p.Template.Payload) {
			t.Fatalf("step %d: fired job %d: %+v %v; template %+v", i, got.JobID, j, err, s.p.Template)
		}
	}
	// The same fire again, as a leader retrying after a failover sends it:
	// nothing more happens.
	if rng.Intn(3) == 0 {
		again := fire()
		if !again.Duplicate || again.JobID != s.lastJob || again.Skipped != "" {
			t.Fatalf("step %d: fire %q tick %v again: %+v, want a duplicate of job %d", i, name, tick, again, s.lastJob)
		}
		r.stats["schedule-fire-retried"]++
	}
	return kind
}

// drawSchedule is a random valid definition of schedule name.
func (r *modelRun) drawSchedule(name string) engine.ScheduleParams {
	rng, m := r.rng, r.m
	p := engine.ScheduleParams{
		Name:    name,
		Kind:    engine.ScheduleInterval,
		Overlap: engine.OverlapPolicy(rng.Intn(2)),
		CatchUp: engine.CatchUpPolicy(rng.Intn(2)),
		Paused:  rng.Intn(5) == 0,
		Template: engine.JobTemplate{
			Queue:       []string{"a", "b"}[rng.Intn(2)],
			JobType:     fmt.Sprint("tpl-", name, "-", rng.Intn(3)),
			MaxAttempts: uint32(rng.Intn(4)),
		},
	}
	if rng.Intn(2) == 0 {
		p.Kind, p.Cron, p.TimeZone = engine.ScheduleCron, fmt.Sprintf("*/%d * * * * *", 1+rng.Intn(5)), "Europe/Berlin"
	} else {
		p.Interval = time.Duration(1+rng.Intn(5)) * time.Second
	}
	if rng.Intn(3) > 0 {
		p.Template.Payload = []byte(fmt.Sprint("payload of ", name))
	}
	if rng.Intn(2) == 0 {
		p.Template.Priority = et.Ptr(uint32(rng.Intn(10)))
	}
	if rng.Intn(2) == 0 {
		p.Template.Custom = map[string]string{modelFairField: fmt.Sprint("t", rng.Intn(4))}
		if rng.Intn(2) == 0 {
			p.Template.Custom[modelKeyField] = fmt.Sprint("c", rng.Intn(3))
		}
	}
	if !p.Paused {
		p.NextTick = m.now.Add(time.Duration(1+rng.Intn(5000)) * time.Millisecond)
	}
	return p
}

// fire is the model's ScheduleFire.
func (m *model) fire(s *mSched, now, tick, next time.Time, missed bool) engine.FireResult {
	if !tick.After(s.lastFired) {
		return engine.FireResult{Duplicate: true, JobID: s.lastJob}
	}
	m.advance(now)
	s.lastFired = tick
	if !s.p.Paused {
		s.next = next
	}
	var res engine.FireResult
	switch {
	case missed:
		res.Skipped = "missed"
	case s.p.Paused:
		res.Skipped = "paused"
	case s.p.Overlap == engine.OverlapSkip && m.jobs[s.lastJob] != nil:
		res.Skipped = "overlap"
	default:
		tp := s.p.Template
		prio := uint32(0)
		if tp.Priority != nil {
			prio = *tp.Priority
		}
		maxA := tp.MaxAttempts
		if maxA == 0 {
			maxA = 3
		}
		custom := maps.Clone(tp.Custom)
		if custom == nil {
			custom = map[string]string{}
		}
		custom[engine.CustomScheduleName] = s.p.Name
		custom[engine.CustomScheduleTick] = fmt.Sprint(tick.UnixNano())
		j := m.add(tp.Queue, prio, maxA, custom, time.Time{})
		res.JobID, s.lastJob = j.id, j.id
	}
	if res.JobID != 0 {
		s.fired++
	} else {
		s.skipped++
	}
	return res
}

// compareSchedules checks every schedule the engine holds against the
// model: definition, last fired tick and job, next tick, counters.
func (r *modelRun) compareSchedules(i int) {
	t, m := r.t, r.m
	got := r.e.Schedules()
	names := slices.Sorted(maps.Keys(m.scheds))
	if len(got) != len(names) {
		t.Fatalf("step %d: engine holds %d schedules, model %v", i, len(got), names)
	}
	for k, name := range names {
		g, w := got[k], m.scheds[name]
		gp, wp := g.ScheduleParams, w.p
		same := gp.Name == wp.Name && gp.Kind == wp.Kind && gp.Cron == wp.Cron && gp.Interval == wp.Interval &&
			gp.TimeZone == wp.TimeZone && gp.Overlap == wp.Overlap && gp.CatchUp == wp.CatchUp && gp.Paused == wp.Paused &&
			gp.Template.Queue == wp.Template.Queue && gp.Template.JobType == wp.Template.JobType &&
			bytes.Equal(gp.Template.Payload, wp.Template.Payload) && maps.Equal(gp.Template.Custom, wp.Template.Custom) &&
			gp.Template.MaxAttempts == wp.Template.MaxAttempts &&
			(gp.Template.Priority == nil) == (wp.Template.Priority == nil) &&
			(gp.Template.Priority == nil || *gp.Template.Priority == *wp.Template.Priority)
		if !same {
			t.Fatalf("step %d: schedule %q definition:\n engine %+v\n model  %+v", i, name, gp, wp)
		}
		if !g.NextTick.Equal(w.next) || !g.LastFiredTick.Equal(w.lastFired) || g.LastJob != w.lastJob ||
			g.Fired != w.fired || g.Skipped != w.skipped || !g.CreatedAt.Equal(w.created) || !g.UpdatedAt.Equal(w.updated) {
			t.Fatalf("step %d: schedule %q: engine next %v last %v job %d fired %d skipped %d created %v updated %v;"+
				" model next %v last %v job %d fired %d skipped %d created %v updated %v", i, name,
				g.NextTick, g.LastFiredTick, g.LastJob, g.Fired, g.Skipped, g.CreatedAt, g.UpdatedAt,
				w.next, w.lastFired, w.lastJob, w.fired, w.skipped, w.created, w.updated)
		}
	}
}
