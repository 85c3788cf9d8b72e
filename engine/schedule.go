package engine

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"
	"unicode/utf8"
)

// Periodic schedules. A schedule is a named job template the leader fires
// at the ticks of its spec (a cron expression or a fixed interval, in an
// IANA time zone). The engine does not evaluate the spec: it has no clock
// and no time zone database, so the leader computes each tick and the one
// after it and carries both in a ScheduleFire command. What the engine owns
// is the exactly-once rule: a fire whose tick is not after the schedule's
// last fired tick changes nothing, so a tick proposed twice (by an old and a
// new leader, or again after a restart) makes one job.

// ScheduleKind is how a schedule's ticks are defined.
type ScheduleKind uint8

const (
	// ScheduleCron ticks at the instants a cron expression matches in the
	// schedule's time zone.
	ScheduleCron ScheduleKind = 1
	// ScheduleInterval ticks every Interval.
	ScheduleInterval ScheduleKind = 2
)

// OverlapPolicy is what a tick does while the schedule's previous job is
// still waiting, scheduled or reserved.
type OverlapPolicy uint8

const (
	// OverlapSkip fires no job for such a tick (it counts as skipped).
	OverlapSkip OverlapPolicy = 0
	// OverlapAllow fires a job for every tick.
	OverlapAllow OverlapPolicy = 1
)

// CatchUpPolicy is what the leader does with the ticks missed while no
// leader fired them (downtime); the engine stores it for the leader.
type CatchUpPolicy uint8

const (
	// CatchUpOnce fires one job for all the missed ticks, then moves on.
	CatchUpOnce CatchUpPolicy = 0
	// CatchUpSkip fires none of the missed ticks and moves on.
	CatchUpSkip CatchUpPolicy = 1
)

// Bounds of a schedule's fields.
const (
	MaxScheduleNameBytes = 200
	MaxScheduleSpecBytes = 200
	// MaxSchedules bounds how many schedules the state holds.
	MaxSchedules = 10_000
	// MinScheduleInterval is the shortest interval a schedule may have.
	MinScheduleInterval = time.Second
)

// Custom fields every fired job carries, so a worker (or an operator) can
// tell which schedule and which tick made it.
const (
	CustomScheduleName = "sepp_schedule"
	CustomScheduleTick = "sepp_schedule_tick" // the tick, unix ns in decimal
)

// JobTemplate is what each fire of a schedule enqueues.
type JobTemplate struct {
	Queue       string
	JobType     string
	Payload     []byte
	Priority    *uint32 // nil takes the queue's default
	Custom      map[string]string
	MaxAttempts uint32 // 0 takes the queue's default
}

// ScheduleParams creates or replaces a schedule.
type ScheduleParams struct {
	Name     string
	Kind     ScheduleKind
	Cron     string        // ScheduleCron: the expression, as the leader parsed it
	Interval time.Duration // ScheduleInterval
	TimeZone string        // IANA name; empty means UTC
	Template JobTemplate
	Overlap  OverlapPolicy
	CatchUp  CatchUpPolicy
	Paused   bool
	// NextTick is the first tick after the command's now, computed by the
	// leader from the spec. Zero when paused.
	NextTick time.Time
}

// Schedule is a schedule as read from the state.
type Schedule struct {
	ScheduleParams
	// LastFiredTick is the latest tick fired (zero before the first).
	LastFiredTick time.Time
	// LastJob is the job the latest fire enqueued (0 when none did).
	LastJob JobID
	// Fired counts the ticks that enqueued a job, Skipped those that did
	// not (overlap skip, a paused schedule, a refused enqueue).
	Fired, Skipped uint64
	// CreatedAt and UpdatedAt are the commands' now.
	CreatedAt, UpdatedAt time.Time
}

// FireResult is what a ScheduleFire did.
type FireResult struct {
	// Duplicate: the tick was fired already; nothing changed.
	Duplicate bool
	// JobID is the job enqueued (0 when none was).
	JobID JobID
	// Skipped names why no job was enqueued for a new tick: "overlap",
	// "missed", "paused" or the enqueue's error.
	Skipped string
}

type schedule struct {
	p                    ScheduleParams
	lastFired, nextTick  int64
	lastJob              JobID
	fired, skipped       uint64
	createdAt, updatedAt int64
}

func (s *schedule) view() Schedule {
	out := Schedule{
		ScheduleParams: cloneScheduleParams(s.p),
		LastFiredTick:  fromNanos(s.lastFired),
		LastJob:        s.lastJob,
		Fired:          s.fired,
		Skipped:        s.skipped,
		CreatedAt:      fromNanos(s.createdAt),
		UpdatedAt:      fromNanos(s.updatedAt),
	}
	out.NextTick = fromNanos(s.nextTick)
	return out
}

func cloneScheduleParams(p ScheduleParams) ScheduleParams {
	p.Template.Payload = slices.Clone(p.Template.Payload)
	p.Template.Custom = maps.Clone(p.Template.Custom)
	if p.Template.Priority != nil {
		v := *p.Template.Priority
		p.Template.Priority = &v
	}
	return p
}

// checkScheduleName is the rule every schedule name follows.
func checkScheduleName(name string) error {
	switch {
	case name == "":
		return invalid("name", "must not be empty")
	case len(name) > MaxScheduleNameBytes:
		return invalid("name", "is %d bytes, the limit is %d", len(name), MaxScheduleNameBytes)
	case !utf8.ValidString(name):
		return invalid("name", "must be valid UTF-8")
	}
	return nil
}

// checkSchedule validates p against the engine's limits: the template must
// be an enqueue the engine accepts, leaving room for the two custom fields
// a fire adds.
func (e *Engine) checkSchedule(p *ScheduleParams) error {
	if err := checkScheduleName(p.Name); err != nil {
		return err
	}
	switch p.Kind {
	case ScheduleCron:
		if p.Cron == "" {
			return invalid("cron", "must not be empty for a cron schedule")
		}
		if len(p.Cron) > MaxScheduleSpecBytes {
			return invalid("cron", "is %d bytes, the limit is %d", len(p.Cron), MaxScheduleSpecBytes)
		}
		if p.Interval != 0 {
			return invalid("interval", "must be unset for a cron schedule")
		}
	case ScheduleInterval:
		if p.Interval < MinScheduleInterval {
			return invalid("interval", "must be at least %s, got %s", MinScheduleInterval, p.Interval)
		}
		if p.Cron != "" {
			return invalid("cron", "must be unset for an interval schedule")
		}
	default:
		return invalid("kind", "must be cron (1) or interval (2), got %d", p.Kind)
	}
	if len(p.TimeZone) > MaxScheduleSpecBytes {
		return invalid("time_zone", "is %d bytes, the limit is %d", len(p.TimeZone), MaxScheduleSpecBytes)
	}
	if p.Overlap > OverlapAllow {
		return invalid("overlap", "must be skip (0) or allow (1), got %d", p.Overlap)
	}
	if p.CatchUp > CatchUpSkip {
		return invalid("catch_up", "must be once (0) or skip (1), got %d", p.CatchUp)
	}
	if !p.Paused && p.NextTick.IsZero() {
		return invalid("next_tick", "must be set for a schedule that is not paused")
	}
	for k := range p.Template.Custom {
		if k == CustomScheduleName || k == CustomScheduleTick {
			return invalid("template.custom", "key %q is set by every fire and cannot be given", k)
		}
	}
	if n := len(p.Template.Custom) + 2; n > e.lim.MaxCustomFields {
		return invalid("template.custom", "has %d fields; with the 2 a fire adds that is %d, limits.max_custom_fields is %d", len(p.Template.Custom), n, e.lim.MaxCustomFields)
	}
	probe := fireParams(p, 0)
	if err := e.checkParams(&probe); err != nil {
		var fe *FieldError
		if errors.As(err, &fe) {
			return &FieldError{Field: "template." + fe.Field, Reason: fe.Reason, Err: fe.Err}
		}
		return err
	}
	return nil
}

// fireParams is the enqueue a fire of p at tick makes.
func fireParams(p *ScheduleParams, tick int64) EnqueueParams {
	custom := make(map[string]string, len(p.Template.Custom)+2)
	maps.Copy(custom, p.Template.Custom)
	custom[CustomScheduleName] = p.Name
	custom[CustomScheduleTick] = fmt.Sprint(tick)
	return EnqueueParams{
		Queue:       p.Template.Queue,
		JobType:     p.Template.JobType,
		Payload:     p.Template.Payload,
		Priority:    p.Template.Priority,
		MaxAttempts: p.Template.MaxAttempts,
		Custom:      custom,
	}
}

// UpsertSchedule creates the schedule p names or replaces its definition.
// A replaced schedule keeps its last fired tick, so redefining it never
// fires a tick twice, and its counters.
func (e *Engine) UpsertSchedule(now time.Time, p ScheduleParams) error {
	p = cloneScheduleParams(p)
	if err := e.checkSchedule(&p); err != nil {
		return err
	}
	s := e.schedules[p.Name]
	if s == nil && len(e.schedules) >= MaxSchedules {
		return &FieldError{Field: "name", Reason: fmt.Sprintf("%d schedules exist, the limit", MaxSchedules), Err: ErrCapacity}
	}
	e.advance(now)
	if s == nil {
		s = &schedule{createdAt: e.now}
		e.schedules[p.Name] = s
	}
	s.p = p
	s.nextTick = toNanos(p.NextTick)
	if p.Paused {
		s.nextTick = 0
	}
	s.p.NextTick = time.Time{}
	s.updatedAt = e.now
	return nil
}

// DeleteSchedule removes a schedule; the jobs it fired stay.
func (e *Engine) DeleteSchedule(now time.Time, name string) error {
	if e.schedules[name] == nil {
		return &FieldError{Field: "name", Reason: fmt.Sprintf("no schedule %q", name), Err: ErrNotFound}
	}
	e.advance(now)
	delete(e.schedules, name)
	return nil
}

// SetSchedulePaused pauses a schedule (it fires nothing and has no next
// tick) or resumes it from nextTick, which the leader computes from the
// command's now: the ticks of the pause are not caught up.
func (e *Engine) SetSchedulePaused(now time.Time, name string, paused bool, nextTick time.Time) error {
	s := e.schedules[name]
	if s == nil {
		return &FieldError{Field: "name", Reason: fmt.Sprintf("no schedule %q", name), Err: ErrNotFound}
	}
	if !paused && nextTick.IsZero() {
		return invalid("next_tick", "must be set to resume a schedule")
	}
	e.advance(now)
	s.p.Paused = paused
	s.nextTick = 0
	if !paused {
		s.nextTick = toNanos(nextTick)
	}
	s.updatedAt = e.now
	return nil
}

// FireSchedule fires tick of a schedule and stores nextTick as its next
// tick. A tick not after the last fired one is a duplicate and changes
// nothing. A new tick is consumed whether or not it enqueues: under
// OverlapSkip while the previous job is Ready, Scheduled or Reserved, while
// paused, or when the enqueue is refused (a full queue, say), it counts as
// skipped. The error is only for a fire that names no schedule or no tick.
//
// missed consumes the tick without a job (counted skipped, "missed"): the
// leader's way to move a CatchUpSkip schedule past the ticks of a downtime
// in the log, so that no later leader fires them.
func (e *Engine) FireSchedule(now time.Time, name string, tick, nextTick time.Time, missed bool) (FireResult, error) {
	s := e.schedules[name]
	if s == nil {
		return FireResult{}, &FieldError{Field: "name", Reason: fmt.Sprintf("no schedule %q", name), Err: ErrNotFound}
	}
	if tick.IsZero() {
		return FireResult{}, invalid("tick", "must be set")
	}
	t := toNanos(tick)
	if t <= s.lastFired {
		return FireResult{Duplicate: true, JobID: s.lastJob}, nil
	}
	e.advance(now)
	s.lastFired = t
	if !s.p.Paused {
		s.nextTick = toNanos(nextTick)
	}
	var res FireResult
	switch {
	case missed:
		res.Skipped = "missed"
	case s.p.Paused:
		res.Skipped = "paused"
	case s.p.Overlap == OverlapSkip && s.lastJob != 0 && e.jobForRead(s.lastJob) != nil:
		res.Skipped = "overlap"
	default:
		p := fireParams(&s.p, t)
		er, err := e.enqueueAt("template.queue", &p)
		if err != nil {
			res.Skipped = err.Error()
		} else {
			res.JobID = er.JobID
			s.lastJob = er.JobID
		}
	}
	if res.JobID != 0 {
		s.fired++
	} else {
		s.skipped++
	}
	return res, nil
}

// GetSchedule returns one schedule.
func (e *Engine) GetSchedule(name string) (Schedule, error) {
	s := e.schedules[name]
	if s == nil {
		return Schedule{}, &FieldError{Field: "name", Reason: fmt.Sprintf("no schedule %q", name), Err: ErrNotFound}
	}
	return s.view(), nil
}

// Schedules returns every schedule, by name.
func (e *Engine) Schedules() []Schedule {
	out := make([]Schedule, 0, len(e.schedules))
	for _, name := range e.scheduleNames() {
		out = append(out, e.schedules[name].view())
	}
	return out
}

func (e *Engine) scheduleNames() []string {
	return slices.Sorted(maps.Keys(e.schedules))
}

// checkSchedules is CheckInvariants' part for schedules: each is filed
// under its own name, a paused one has no next tick, and its last job's id
// was handed out already.
func (e *Engine) checkSchedules() error {
	for _, name := range e.scheduleNames() {
		s := e.schedules[name]
		switch {
		case s.p.Name != name:
			return fmt.Errorf("schedule filed as %q is named %q", name, s.p.Name)
		case s.p.Paused && s.nextTick != 0:
			return fmt.Errorf("schedule %q: paused with a next tick", name)
		case uint64(s.lastJob) >= e.nextID:
			return fmt.Errorf("schedule %q: last job %d not below the next id %d", name, s.lastJob, e.nextID)
		}
	}
	return nil
}
