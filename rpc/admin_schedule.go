package rpc

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/sepp-io/sepp/engine"
	seppv1 "github.com/sepp-io/sepp/proto/sepp/v1"
	"github.com/sepp-io/sepp/schedspec"
)

// Periodic schedules (engine/schedule.go, cluster/scheduler.go) on the
// AdminService: CreateSchedule, UpdateSchedule, DeleteSchedule,
// PauseSchedule and ResumeSchedule act (operator) through the log;
// GetSchedule and ListSchedules read (viewer). The leader evaluates the
// spec (schedspec) and the state machine stores the next tick; the next
// fire times an answer shows are that tick and the ones schedspec computes
// after it.

const (
	defaultNextFireTimesGet  = 5
	defaultNextFireTimesList = 1
	// MaxNextFireTimes bounds the fire times one schedule's answer lists.
	MaxNextFireTimes = 100
)

func (s *adminService) CreateSchedule(ctx context.Context, req *seppv1.CreateScheduleRequest) (*seppv1.CreateScheduleResponse, error) {
	p, err := s.scheduleParamsFromProto(ctx, req.GetSchedule())
	if err != nil {
		return nil, err
	}
	if _, err := Propose(ctx, s.b, engine.CreateScheduleOp{Params: p}); err != nil {
		return nil, err
	}
	out, err := s.readSchedule(ctx, p.Name, defaultNextFireTimesGet)
	if err != nil {
		return nil, err
	}
	return &seppv1.CreateScheduleResponse{Schedule: out}, nil
}

func (s *adminService) UpdateSchedule(ctx context.Context, req *seppv1.UpdateScheduleRequest) (*seppv1.UpdateScheduleResponse, error) {
	var (
		name   string
		update func(cur engine.Schedule) (engine.ScheduleParams, error)
	)
	if paths := req.GetUpdateMask().GetPaths(); len(paths) == 0 {
		// The whole definition, validated before the leader's write lock.
		p, err := s.scheduleParamsFromProto(ctx, req.GetSchedule())
		if err != nil {
			return nil, err
		}
		name = p.Name
		update = func(engine.Schedule) (engine.ScheduleParams, error) { return p, nil }
	} else {
		// The fields named, merged into the current definition under the
		// leader's write lock, so that concurrent updates of different
		// fields both take effect.
		name = req.GetSchedule().GetName()
		if name == "" {
			return nil, invalidField("schedule.name", fmt.Sprintf("1..%d bytes", engine.MaxScheduleNameBytes), "is required")
		}
		if err := checkScheduleMask(paths); err != nil {
			return nil, err
		}
		update = func(cur engine.Schedule) (engine.ScheduleParams, error) {
			merged := ScheduleToProto(cur, 0)
			mergeScheduleFields(merged, req.GetSchedule(), paths)
			return s.scheduleParamsFromProto(ctx, merged)
		}
	}
	if _, err := Propose(ctx, s.b, engine.UpdateScheduleOp{Name: name, Update: update}); err != nil {
		return nil, err
	}
	out, err := s.readSchedule(ctx, name, defaultNextFireTimesGet)
	if err != nil {
		return nil, err
	}
	return &seppv1.UpdateScheduleResponse{Schedule: out}, nil
}

func (s *adminService) DeleteSchedule(ctx context.Context, req *seppv1.DeleteScheduleRequest) (*seppv1.DeleteScheduleResponse, error) {
	if _, err := Propose(ctx, s.b, engine.DeleteScheduleOp{Name: req.GetName()}); err != nil {
		return nil, err
	}
	return &seppv1.DeleteScheduleResponse{}, nil
}

func (s *adminService) PauseSchedule(ctx context.Context, req *seppv1.PauseScheduleRequest) (*seppv1.PauseScheduleResponse, error) {
	out, err := s.setSchedulePaused(ctx, req.GetName(), true)
	if err != nil {
		return nil, err
	}
	return &seppv1.PauseScheduleResponse{Schedule: out}, nil
}

func (s *adminService) ResumeSchedule(ctx context.Context, req *seppv1.ResumeScheduleRequest) (*seppv1.ResumeScheduleResponse, error) {
	out, err := s.setSchedulePaused(ctx, req.GetName(), false)
	if err != nil {
		return nil, err
	}
	return &seppv1.ResumeScheduleResponse{Schedule: out}, nil
}

func (s *adminService) setSchedulePaused(ctx context.Context, name string, paused bool) (*seppv1.Schedule, error) {
	if _, err := Propose(ctx, s.b, engine.SetSchedulePausedOp{Name: name, Paused: paused}); err != nil {
		return nil, err
	}
	return s.readSchedule(ctx, name, defaultNextFireTimesGet)
}

func (s *adminService) GetSchedule(ctx context.Context, req *seppv1.GetScheduleRequest) (*seppv1.GetScheduleResponse, error) {
	n, err := nextFireTimesArg(req.GetNextFireTimes(), defaultNextFireTimesGet)
	if err != nil {
		return nil, err
	}
	var sc engine.Schedule
	if err := s.b.Read(ctx, req.GetAllowStale(), func(e engine.View) error {
		var err error
		sc, err = e.GetSchedule(req.GetName())
		return err
	}); err != nil {
		return nil, err
	}
	return &seppv1.GetScheduleResponse{Schedule: ScheduleToProto(sc, n), Stale: s.isStale(req.GetAllowStale())}, nil
}

func (s *adminService) ListSchedules(ctx context.Context, req *seppv1.ListSchedulesRequest) (*seppv1.ListSchedulesResponse, error) {
	n, err := nextFireTimesArg(req.GetNextFireTimes(), defaultNextFireTimesList)
	if err != nil {
		return nil, err
	}
	var list []engine.Schedule
	if err := s.b.Read(ctx, req.GetAllowStale(), func(e engine.View) error {
		list = e.Schedules()
		return nil
	}); err != nil {
		return nil, err
	}
	out := &seppv1.ListSchedulesResponse{Schedules: make([]*seppv1.Schedule, len(list)), Stale: s.isStale(req.GetAllowStale())}
	for i, sc := range list {
		out.Schedules[i] = ScheduleToProto(sc, n)
	}
	return out, nil
}

// readSchedule is a write's answer: the schedule as the leader holds it.
func (s *adminService) readSchedule(ctx context.Context, name string, n int) (*seppv1.Schedule, error) {
	var sc engine.Schedule
	if err := s.b.Read(ctx, false, func(e engine.View) error {
		var err error
		sc, err = e.GetSchedule(name)
		return err
	}); err != nil {
		return nil, err
	}
	return ScheduleToProto(sc, n), nil
}

func nextFireTimesArg(v uint32, def int) (int, error) {
	switch {
	case v == 0:
		return def, nil
	case v > MaxNextFireTimes:
		return 0, invalidField("next_fire_times", fmt.Sprintf("0..%d", MaxNextFireTimes), "must be 0..%d, got %d", MaxNextFireTimes, v)
	}
	return int(v), nil
}

// scheduleParamsFromProto checks what the engine and schedspec do not: the
// kind (exactly one of cron and interval), the enums, and the template's
// queue (required, a valid name, configured when the server runs strict).
// The spec and zone are parsed again by the leader (schedspec.Parse); the
// check here answers a bad one with the same field before anything is
// proposed.
func (s *adminService) scheduleParamsFromProto(ctx context.Context, sc *seppv1.Schedule) (engine.ScheduleParams, error) {
	if sc == nil {
		return engine.ScheduleParams{}, invalidField("schedule", "", "is required")
	}
	t := sc.GetTemplate()
	p := engine.ScheduleParams{
		Name:     sc.GetName(),
		Cron:     sc.GetCron(),
		TimeZone: sc.GetTimeZone(),
		Paused:   sc.GetPaused(),
		Template: engine.JobTemplate{
			Queue: t.GetQueue(), JobType: t.GetJobType(), Payload: t.GetPayload(),
			Custom: t.GetCustom(), MaxAttempts: t.GetMaxAttempts(),
		},
	}
	if t.Priority != nil {
		v := t.GetPriority()
		p.Template.Priority = &v
	}
	switch {
	case p.Name == "":
		return p, invalidField("name", fmt.Sprintf("1..%d bytes", engine.MaxScheduleNameBytes), "is required")
	case len(p.Name) > engine.MaxScheduleNameBytes:
		return p, invalidField("name", fmt.Sprintf("1..%d bytes", engine.MaxScheduleNameBytes), "is %d bytes, the limit is %d", len(p.Name), engine.MaxScheduleNameBytes)
	}
	switch {
	case p.Cron != "" && sc.GetInterval() != nil:
		return p, invalidField("interval", "", "set cron or interval, not both")
	case p.Cron != "":
		p.Kind = engine.ScheduleCron
	case sc.GetInterval() != nil:
		p.Kind = engine.ScheduleInterval
		iv, err := validateDuration("interval", sc.GetInterval())
		if err != nil {
			return p, err
		}
		if iv < engine.MinScheduleInterval {
			return p, invalidField("interval", ">= "+engine.MinScheduleInterval.String(), "must be at least %s, got %s", engine.MinScheduleInterval, iv)
		}
		p.Interval = iv
	default:
		return p, invalidField("cron", "", "set cron (an expression) or interval (a duration)")
	}
	switch sc.GetOverlap() {
	case seppv1.ScheduleOverlap_SCHEDULE_OVERLAP_UNSPECIFIED, seppv1.ScheduleOverlap_SCHEDULE_OVERLAP_SKIP:
		p.Overlap = engine.OverlapSkip
	case seppv1.ScheduleOverlap_SCHEDULE_OVERLAP_ALLOW:
		p.Overlap = engine.OverlapAllow
	default:
		return p, invalidField("overlap", "SKIP or ALLOW", "unknown overlap policy %d", sc.GetOverlap())
	}
	switch sc.GetCatchUp() {
	case seppv1.ScheduleCatchUp_SCHEDULE_CATCH_UP_UNSPECIFIED, seppv1.ScheduleCatchUp_SCHEDULE_CATCH_UP_ONCE:
		p.CatchUp = engine.CatchUpOnce
	case seppv1.ScheduleCatchUp_SCHEDULE_CATCH_UP_SKIP:
		p.CatchUp = engine.CatchUpSkip
	default:
		return p, invalidField("catch_up", "ONCE or SKIP", "unknown catch-up policy %d", sc.GetCatchUp())
	}
	if _, err := schedspec.Parse(p); err != nil {
		return p, err
	}
	switch q := p.Template.Queue; {
	case q == "":
		return p, invalidField("template.queue", "", "is required")
	case !engine.ValidQueueName(q):
		return p, invalidField("template.queue", fmt.Sprintf("1..%d bytes of [A-Za-z0-9._:-]", engine.MaxQueueNameBytes), "is not a valid queue name")
	}
	var strictUnknown bool
	if err := s.b.Read(ctx, true, func(e engine.View) error {
		if !e.Config().Limits.Strict {
			return nil
		}
		st, err := e.QueueStats(time.Time{}, p.Template.Queue)
		strictUnknown = err != nil || !st.Configured
		return nil
	}); err != nil {
		return p, err
	}
	if strictUnknown {
		return p, invalidField("template.queue", "a configured queue (strict)", "queue %q is not configured and the server runs strict", p.Template.Queue)
	}
	return p, nil
}

// scheduleMaskPaths are the update_mask paths UpdateSchedule takes.
var scheduleMaskPaths = []string{
	"cron", "interval", "time_zone", "template", "template.queue", "template.job_type", "template.payload",
	"template.priority", "template.custom", "template.max_attempts", "overlap", "catch_up",
}

func checkScheduleMask(paths []string) error {
	for _, p := range paths {
		if !slices.Contains(scheduleMaskPaths, p) {
			return invalidField("update_mask", strings.Join(scheduleMaskPaths, ", "), "path %q is not a field an update can change", p)
		}
	}
	return nil
}

// mergeScheduleFields copies the fields paths name from src into dst.
// Setting cron clears interval and the other way round: a schedule has one
// spec.
func mergeScheduleFields(dst, src *seppv1.Schedule, paths []string) {
	if dst.Template == nil {
		dst.Template = &seppv1.JobTemplate{}
	}
	st := src.GetTemplate()
	for _, p := range paths {
		switch p {
		case "cron":
			dst.Cron, dst.Interval = src.GetCron(), nil
		case "interval":
			dst.Interval, dst.Cron = src.GetInterval(), ""
		case "time_zone":
			dst.TimeZone = src.GetTimeZone()
		case "template":
			dst.Template = st
		case "template.queue":
			dst.Template.Queue = st.GetQueue()
		case "template.job_type":
			dst.Template.JobType = st.GetJobType()
		case "template.payload":
			dst.Template.Payload = st.GetPayload()
		case "template.priority":
			dst.Template.Priority = nil
			if st != nil && st.Priority != nil {
				v := st.GetPriority()
				dst.Template.Priority = &v
			}
		case "template.custom":
			dst.Template.Custom = st.GetCustom()
		case "template.max_attempts":
			dst.Template.MaxAttempts = st.GetMaxAttempts()
		case "overlap":
			dst.Overlap = src.GetOverlap()
		case "catch_up":
			dst.CatchUp = src.GetCatchUp()
		}
	}
}

// ScheduleToProto is a schedule's public form with up to n next fire times.
func ScheduleToProto(sc engine.Schedule, n int) *seppv1.Schedule {
	t := sc.Template
	out := &seppv1.Schedule{
		Name:     sc.Name,
		Cron:     sc.Cron,
		TimeZone: sc.TimeZone,
		Template: &seppv1.JobTemplate{
			Queue: t.Queue, JobType: t.JobType, Payload: t.Payload,
			Custom: t.Custom, MaxAttempts: t.MaxAttempts,
		},
		Paused:        sc.Paused,
		LastFireTime:  timestampOrNil(sc.LastFiredTick),
		LastJobId:     uint64(sc.LastJob),
		Fired:         sc.Fired,
		Skipped:       sc.Skipped,
		CreatedAt:     timestampOrNil(sc.CreatedAt),
		UpdatedAt:     timestampOrNil(sc.UpdatedAt),
		NextFireTimes: []*timestamppb.Timestamp{},
	}
	if t.Priority != nil {
		v := *t.Priority
		out.Template.Priority = &v
	}
	if sc.Kind == engine.ScheduleInterval {
		out.Interval = durationpb.New(sc.Interval)
	}
	out.Overlap = seppv1.ScheduleOverlap_SCHEDULE_OVERLAP_SKIP
	if sc.Overlap == engine.OverlapAllow {
		out.Overlap = seppv1.ScheduleOverlap_SCHEDULE_OVERLAP_ALLOW
	}
	out.CatchUp = seppv1.ScheduleCatchUp_SCHEDULE_CATCH_UP_ONCE
	if sc.CatchUp == engine.CatchUpSkip {
		out.CatchUp = seppv1.ScheduleCatchUp_SCHEDULE_CATCH_UP_SKIP
	}
	for _, ft := range NextFireTimes(sc, n) {
		out.NextFireTimes = append(out.NextFireTimes, timestamppb.New(ft))
	}
	return out
}

// NextFireTimes are up to n ticks the schedule fires next: its stored next
// tick (the leader computed it from its clock) and the ones after it by
// the spec. None while paused or when the spec no longer parses.
func NextFireTimes(sc engine.Schedule, n int) []time.Time {
	if sc.Paused || sc.NextTick.IsZero() || n <= 0 {
		return nil
	}
	spec, err := schedspec.Parse(sc.ScheduleParams)
	if err != nil {
		return nil
	}
	t := sc.NextTick
	if !t.After(sc.LastFiredTick) {
		// As the scheduler does: a stored tick not after the last fired
		// one is stepped over.
		t = spec.Next(sc.LastFiredTick)
	}
	out := make([]time.Time, 0, n)
	for len(out) < n && !t.IsZero() {
		out = append(out, t)
		t = spec.Next(t)
	}
	return out
}
