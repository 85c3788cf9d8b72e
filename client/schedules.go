package client

import (
	"context"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/fieldmaskpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	seppv1 "github.com/sepp-io/sepp/proto/sepp/v1"
)

// ScheduleOverlap is what a tick does while the schedule's previous job is
// still waiting or reserved.
type ScheduleOverlap int32

const (
	// OverlapSkip fires no job for such a tick (the default).
	OverlapSkip = ScheduleOverlap(seppv1.ScheduleOverlap_SCHEDULE_OVERLAP_SKIP)
	// OverlapAllow fires a job for every tick.
	OverlapAllow = ScheduleOverlap(seppv1.ScheduleOverlap_SCHEDULE_OVERLAP_ALLOW)
)

func (o ScheduleOverlap) String() string {
	if o == OverlapAllow {
		return "allow"
	}
	return "skip"
}

// ScheduleCatchUp is what the ticks missed while no leader could fire them
// make once one is back.
type ScheduleCatchUp int32

const (
	// CatchUpOnce fires one job for all the missed ticks (the default).
	CatchUpOnce = ScheduleCatchUp(seppv1.ScheduleCatchUp_SCHEDULE_CATCH_UP_ONCE)
	// CatchUpSkip fires none of them.
	CatchUpSkip = ScheduleCatchUp(seppv1.ScheduleCatchUp_SCHEDULE_CATCH_UP_SKIP)
)

func (c ScheduleCatchUp) String() string {
	if c == CatchUpSkip {
		return "skip"
	}
	return "once"
}

// JobTemplate is the job each tick of a schedule enqueues. Every fired job
// also carries the custom fields sepp_schedule (the schedule's name) and
// sepp_schedule_tick (the tick in unix nanoseconds).
type JobTemplate struct {
	Queue       string
	JobType     string
	Payload     []byte
	Priority    *uint32 // nil takes the queue's default
	Custom      map[string]string
	MaxAttempts uint32 // 0 takes the queue's default
}

// ScheduleDefinition is what defines a schedule. Set exactly one of Cron
// and Interval.
type ScheduleDefinition struct {
	Name string
	// Cron is a cron expression (five fields, six with leading seconds, or
	// a descriptor such as @hourly), read in TimeZone.
	Cron string
	// Interval ticks at the multiples of it since the unix epoch; >= 1s.
	Interval time.Duration
	// TimeZone is an IANA name; "" is UTC.
	TimeZone string
	Template JobTemplate
	Overlap  ScheduleOverlap // 0: skip
	CatchUp  ScheduleCatchUp // 0: once
	// Paused creates the schedule paused (CreateSchedule only).
	Paused bool
}

// Schedule is a schedule as the server holds it.
type Schedule struct {
	ScheduleDefinition
	// NextFireTimes are the next ticks, soonest first; none while paused.
	NextFireTimes []time.Time
	// LastFireTime is the latest tick fired (zero before the first), and
	// LastJobID the job it enqueued (0 when none did).
	LastFireTime time.Time
	LastJobID    uint64
	// Fired counts the ticks that enqueued a job, Skipped those that did not.
	Fired, Skipped       uint64
	CreatedAt, UpdatedAt time.Time
}

func scheduleToProto(d ScheduleDefinition) *seppv1.Schedule {
	m := &seppv1.Schedule{
		Name: d.Name, Cron: d.Cron, TimeZone: d.TimeZone, Paused: d.Paused,
		Overlap: seppv1.ScheduleOverlap(d.Overlap), CatchUp: seppv1.ScheduleCatchUp(d.CatchUp),
		Template: &seppv1.JobTemplate{
			Queue: d.Template.Queue, JobType: d.Template.JobType, Payload: d.Template.Payload,
			Priority: d.Template.Priority, Custom: d.Template.Custom, MaxAttempts: d.Template.MaxAttempts,
		},
	}
	if d.Interval != 0 {
		m.Interval = durationpb.New(d.Interval)
	}
	return m
}

func scheduleFromProto(m *seppv1.Schedule) Schedule {
	t := func(ts *timestamppb.Timestamp) time.Time {
		if ts == nil {
			return time.Time{}
		}
		return ts.AsTime()
	}
	tp := m.GetTemplate()
	s := Schedule{
		ScheduleDefinition: ScheduleDefinition{
			Name: m.GetName(), Cron: m.GetCron(), TimeZone: m.GetTimeZone(), Paused: m.GetPaused(),
			Overlap: ScheduleOverlap(m.GetOverlap()), CatchUp: ScheduleCatchUp(m.GetCatchUp()),
			Template: JobTemplate{
				Queue: tp.GetQueue(), JobType: tp.GetJobType(), Payload: tp.GetPayload(),
				Custom: tp.GetCustom(), MaxAttempts: tp.GetMaxAttempts(),
			},
		},
		LastFireTime: t(m.GetLastFireTime()),
		LastJobID:    m.GetLastJobId(),
		Fired:        m.GetFired(),
		Skipped:      m.GetSkipped(),
		CreatedAt:    t(m.GetCreatedAt()),
		UpdatedAt:    t(m.GetUpdatedAt()),
	}
	if tp.Priority != nil {
		v := tp.GetPriority()
		s.Template.Priority = &v
	}
	if m.GetInterval() != nil {
		s.Interval = m.GetInterval().AsDuration()
	}
	for _, ts := range m.GetNextFireTimes() {
		s.NextFireTimes = append(s.NextFireTimes, ts.AsTime())
	}
	return s
}

// CreateSchedule creates a schedule; one of that name existing is
// AlreadyExists, a bad spec, zone or template InvalidArgument naming the
// field. Not retried once it may have been applied (the retry would be
// AlreadyExists).
func (c *Client) CreateSchedule(ctx context.Context, d ScheduleDefinition) (Schedule, error) {
	var out Schedule
	err := c.call(ctx, "create schedule", retryNotSent, 0, func(ctx context.Context, a *attempt) error {
		resp, err := seppv1.NewAdminServiceClient(a.cc).CreateSchedule(ctx, &seppv1.CreateScheduleRequest{Schedule: scheduleToProto(d)}, c.opts.callOptions...)
		if err != nil {
			return err
		}
		out = scheduleFromProto(resp.GetSchedule())
		return nil
	})
	return out, err
}

// UpdateSchedule replaces a schedule's definition (d.Paused is ignored:
// the schedule keeps its paused state). It keeps the last fired tick, so
// no tick fires twice. An unknown name is NotFound. Retried: applying the
// same definition twice is the same as once.
func (c *Client) UpdateSchedule(ctx context.Context, d ScheduleDefinition) (Schedule, error) {
	var out Schedule
	err := c.call(ctx, "update schedule", retrySafe, 0, func(ctx context.Context, a *attempt) error {
		resp, err := seppv1.NewAdminServiceClient(a.cc).UpdateSchedule(ctx, &seppv1.UpdateScheduleRequest{Schedule: scheduleToProto(d)}, c.opts.callOptions...)
		if err != nil {
			return err
		}
		out = scheduleFromProto(resp.GetSchedule())
		return nil
	})
	return out, err
}

// Schedule fields an UpdateScheduleFields call can name.
const (
	ScheduleFieldCron                = "cron"     // sets Cron and clears Interval
	ScheduleFieldInterval            = "interval" // sets Interval and clears Cron
	ScheduleFieldTimeZone            = "time_zone"
	ScheduleFieldTemplate            = "template" // the whole Template
	ScheduleFieldTemplateQueue       = "template.queue"
	ScheduleFieldTemplateJobType     = "template.job_type"
	ScheduleFieldTemplatePayload     = "template.payload"
	ScheduleFieldTemplatePriority    = "template.priority" // nil: the queue's default
	ScheduleFieldTemplateCustom      = "template.custom"
	ScheduleFieldTemplateMaxAttempts = "template.max_attempts"
	ScheduleFieldOverlap             = "overlap"
	ScheduleFieldCatchUp             = "catch_up"
)

// UpdateScheduleFields changes only the named fields (ScheduleField*) of
// schedule d.Name to their values in d; the others keep what the server
// holds. The leader merges them under its schedule write lock, so two
// concurrent updates of different fields both take effect. With no fields
// it is UpdateSchedule. Retried like UpdateSchedule.
func (c *Client) UpdateScheduleFields(ctx context.Context, d ScheduleDefinition, fields ...string) (Schedule, error) {
	req := &seppv1.UpdateScheduleRequest{Schedule: scheduleToProto(d)}
	if len(fields) > 0 {
		req.UpdateMask = &fieldmaskpb.FieldMask{Paths: fields}
	}
	var out Schedule
	err := c.call(ctx, "update schedule", retrySafe, 0, func(ctx context.Context, a *attempt) error {
		resp, err := seppv1.NewAdminServiceClient(a.cc).UpdateSchedule(ctx, req, c.opts.callOptions...)
		if err != nil {
			return err
		}
		out = scheduleFromProto(resp.GetSchedule())
		return nil
	})
	return out, err
}

// DeleteSchedule removes a schedule (the jobs it fired stay); an unknown
// name is NotFound. Not retried once it may have been applied.
func (c *Client) DeleteSchedule(ctx context.Context, name string) error {
	return c.call(ctx, "delete schedule", retryNotSent, 0, func(ctx context.Context, a *attempt) error {
		_, err := seppv1.NewAdminServiceClient(a.cc).DeleteSchedule(ctx, &seppv1.DeleteScheduleRequest{Name: name}, c.opts.callOptions...)
		return err
	})
}

// GetSchedule returns one schedule with up to next fire times (0: the
// server's 5).
func (c *Client) GetSchedule(ctx context.Context, name string, next uint32, stale bool) (Schedule, error) {
	var out Schedule
	err := c.call(ctx, "get schedule", retrySafe, 0, func(ctx context.Context, a *attempt) error {
		resp, err := seppv1.NewAdminServiceClient(a.cc).GetSchedule(ctx, &seppv1.GetScheduleRequest{Name: name, NextFireTimes: next, AllowStale: stale}, c.opts.callOptions...)
		if err != nil {
			return err
		}
		out = scheduleFromProto(resp.GetSchedule())
		return nil
	})
	return out, err
}

// ListSchedules lists every schedule by name, each with up to next fire
// times (0: the server's 1).
func (c *Client) ListSchedules(ctx context.Context, next uint32, stale bool) ([]Schedule, error) {
	var out []Schedule
	err := c.call(ctx, "list schedules", retrySafe, 0, func(ctx context.Context, a *attempt) error {
		resp, err := seppv1.NewAdminServiceClient(a.cc).ListSchedules(ctx, &seppv1.ListSchedulesRequest{NextFireTimes: next, AllowStale: stale}, c.opts.callOptions...)
		if err != nil {
			return err
		}
		out = out[:0]
		for _, s := range resp.GetSchedules() {
			out = append(out, scheduleFromProto(s))
		}
		return nil
	})
	return out, err
}

// PauseSchedule stops a schedule firing. Retried: pausing twice is pausing.
func (c *Client) PauseSchedule(ctx context.Context, name string) (Schedule, error) {
	var out Schedule
	err := c.call(ctx, "pause schedule", retrySafe, 0, func(ctx context.Context, a *attempt) error {
		resp, err := seppv1.NewAdminServiceClient(a.cc).PauseSchedule(ctx, &seppv1.PauseScheduleRequest{Name: name}, c.opts.callOptions...)
		if err != nil {
			return err
		}
		out = scheduleFromProto(resp.GetSchedule())
		return nil
	})
	return out, err
}

// ResumeSchedule restarts a paused schedule from its first tick after now
// (the paused ticks are not caught up). Retried: a second resume only
// recomputes the next tick.
func (c *Client) ResumeSchedule(ctx context.Context, name string) (Schedule, error) {
	var out Schedule
	err := c.call(ctx, "resume schedule", retrySafe, 0, func(ctx context.Context, a *attempt) error {
		resp, err := seppv1.NewAdminServiceClient(a.cc).ResumeSchedule(ctx, &seppv1.ResumeScheduleRequest{Name: name}, c.opts.callOptions...)
		if err != nil {
			return err
		}
		out = scheduleFromProto(resp.GetSchedule())
		return nil
	})
	return out, err
}
