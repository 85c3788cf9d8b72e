package rpc_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/fieldmaskpb"

	"github.com/sepp-io/sepp/engine"
	seppv1 "github.com/sepp-io/sepp/proto/sepp/v1"
)

func cronSchedule(name, expr, zone string) *seppv1.Schedule {
	return &seppv1.Schedule{
		Name: name, Cron: expr, TimeZone: zone,
		Template: &seppv1.JobTemplate{Queue: "reports", JobType: "build", Payload: []byte(`{"kind":"daily"}`), Custom: map[string]string{"tenant": "acme"}},
	}
}

// Schedules through gRPC: a create answers the schedule with its next fire
// times (computed in its zone from the server's clock), a duplicate create
// is AlreadyExists, an unknown name NotFound, bad input InvalidArgument
// naming the field; a fire enqueues the template's job; update keeps the
// last fired tick; pause empties the fire times, resume restores them.
func TestAdminSchedules(t *testing.T) {
	env := start(t, nil)
	ctx := ctxT(t)
	// rpctest.Epoch is 2030-01-02 03:04:05 UTC; 09:30 in Berlin (UTC+1 in
	// January) is 08:30 UTC.
	cr, err := env.Admin.CreateSchedule(ctx, &seppv1.CreateScheduleRequest{Schedule: cronSchedule("daily", "30 9 * * *", "Europe/Berlin")})
	if err != nil {
		t.Fatal(err)
	}
	s := cr.GetSchedule()
	want := []time.Time{
		time.Date(2030, 1, 2, 8, 30, 0, 0, time.UTC), time.Date(2030, 1, 3, 8, 30, 0, 0, time.UTC),
		time.Date(2030, 1, 4, 8, 30, 0, 0, time.UTC), time.Date(2030, 1, 5, 8, 30, 0, 0, time.UTC),
		time.Date(2030, 1, 6, 8, 30, 0, 0, time.UTC),
	}
	if len(s.GetNextFireTimes()) != len(want) {
		t.Fatalf("next fire times %v, want %v", s.GetNextFireTimes(), want)
	}
	for i, ts := range s.GetNextFireTimes() {
		if !ts.AsTime().Equal(want[i]) {
			t.Errorf("next fire time %d = %v, want %v", i, ts.AsTime(), want[i])
		}
	}
	if s.GetOverlap() != seppv1.ScheduleOverlap_SCHEDULE_OVERLAP_SKIP || s.GetCatchUp() != seppv1.ScheduleCatchUp_SCHEDULE_CATCH_UP_ONCE || s.GetPaused() || s.GetTimeZone() != "Europe/Berlin" {
		t.Fatalf("created: %v", s)
	}

	_, err = env.Admin.CreateSchedule(ctx, &seppv1.CreateScheduleRequest{Schedule: cronSchedule("daily", "0 * * * *", "")})
	requireCode(t, err, codes.AlreadyExists)
	for _, name := range []string{"nosuch"} {
		_, err = env.Admin.GetSchedule(ctx, &seppv1.GetScheduleRequest{Name: name})
		requireCode(t, err, codes.NotFound)
		_, err = env.Admin.UpdateSchedule(ctx, &seppv1.UpdateScheduleRequest{Schedule: cronSchedule(name, "0 * * * *", "")})
		requireCode(t, err, codes.NotFound)
		_, err = env.Admin.DeleteSchedule(ctx, &seppv1.DeleteScheduleRequest{Name: name})
		requireCode(t, err, codes.NotFound)
		_, err = env.Admin.PauseSchedule(ctx, &seppv1.PauseScheduleRequest{Name: name})
		requireCode(t, err, codes.NotFound)
		_, err = env.Admin.ResumeSchedule(ctx, &seppv1.ResumeScheduleRequest{Name: name})
		requireCode(t, err, codes.NotFound)
	}

	// Fire the first tick: one job, carrying the template and the tick.
	env.Clock.Set(want[0])
	jobs, err := env.Backend.FireDueSchedules(ctx)
	if err != nil || len(jobs) != 1 {
		t.Fatalf("fire: %v %v", jobs, err)
	}
	j, err := env.Admin.GetJob(ctx, &seppv1.GetJobRequest{JobId: uint64(jobs[0])})
	if err != nil || j.GetJob().GetQueue() != "reports" || j.GetJob().GetJobType() != "build" ||
		j.GetJob().GetCustom()[engine.CustomScheduleName] != "daily" || j.GetJob().GetCustom()["tenant"] != "acme" {
		t.Fatalf("fired job: %v %v", j, err)
	}
	g, err := env.Admin.GetSchedule(ctx, &seppv1.GetScheduleRequest{Name: "daily", NextFireTimes: 2})
	if err != nil || g.GetSchedule().GetLastJobId() != uint64(jobs[0]) || !g.GetSchedule().GetLastFireTime().AsTime().Equal(want[0]) ||
		g.GetSchedule().GetFired() != 1 || len(g.GetSchedule().GetNextFireTimes()) != 2 || !g.GetSchedule().GetNextFireTimes()[0].AsTime().Equal(want[1]) {
		t.Fatalf("after the fire: %v %v", g, err)
	}

	// Update to an interval: the last fired tick and counters stay.
	up := &seppv1.Schedule{Name: "daily", Interval: durationpb.New(time.Hour), Template: &seppv1.JobTemplate{Queue: "reports", JobType: "build"}, Overlap: seppv1.ScheduleOverlap_SCHEDULE_OVERLAP_ALLOW}
	u, err := env.Admin.UpdateSchedule(ctx, &seppv1.UpdateScheduleRequest{Schedule: up})
	if err != nil || u.GetSchedule().GetCron() != "" || u.GetSchedule().GetInterval().AsDuration() != time.Hour || u.GetSchedule().GetFired() != 1 ||
		!u.GetSchedule().GetLastFireTime().AsTime().Equal(want[0]) || !u.GetSchedule().GetNextFireTimes()[0].AsTime().Equal(want[0].Add(30*time.Minute)) {
		t.Fatalf("update: %v %v", u, err)
	}

	p, err := env.Admin.PauseSchedule(ctx, &seppv1.PauseScheduleRequest{Name: "daily"})
	if err != nil || !p.GetSchedule().GetPaused() || len(p.GetSchedule().GetNextFireTimes()) != 0 {
		t.Fatalf("pause: %v %v", p, err)
	}
	// An update keeps a paused schedule paused.
	if u, err := env.Admin.UpdateSchedule(ctx, &seppv1.UpdateScheduleRequest{Schedule: up}); err != nil || !u.GetSchedule().GetPaused() {
		t.Fatalf("update while paused: %v %v", u, err)
	}
	env.Clock.Advance(3 * time.Hour)
	if jobs, err := env.Backend.FireDueSchedules(ctx); err != nil || len(jobs) != 0 {
		t.Fatalf("a paused schedule fired: %v %v", jobs, err)
	}
	r, err := env.Admin.ResumeSchedule(ctx, &seppv1.ResumeScheduleRequest{Name: "daily"})
	if err != nil || r.GetSchedule().GetPaused() || !r.GetSchedule().GetNextFireTimes()[0].AsTime().Equal(want[0].Add(3*time.Hour+30*time.Minute)) {
		t.Fatalf("resume (the paused ticks are not caught up): %v %v", r, err)
	}

	if _, err := env.Admin.CreateSchedule(ctx, &seppv1.CreateScheduleRequest{Schedule: func() *seppv1.Schedule {
		s := cronSchedule("a-paused-one", "@hourly", "")
		s.Paused = true
		return s
	}()}); err != nil {
		t.Fatal(err)
	}
	l, err := env.Admin.ListSchedules(ctx, &seppv1.ListSchedulesRequest{})
	if err != nil || len(l.GetSchedules()) != 2 || l.GetSchedules()[0].GetName() != "a-paused-one" || !l.GetSchedules()[0].GetPaused() ||
		len(l.GetSchedules()[1].GetNextFireTimes()) != 1 {
		t.Fatalf("list: %v %v", l, err)
	}
	if _, err := env.Admin.DeleteSchedule(ctx, &seppv1.DeleteScheduleRequest{Name: "daily"}); err != nil {
		t.Fatal(err)
	}
	if _, err := env.Admin.GetJob(ctx, &seppv1.GetJobRequest{JobId: uint64(jobs[0])}); err != nil {
		t.Fatalf("the fired job went with its schedule: %v", err)
	}
}

// Every bad definition is InvalidArgument naming its field, and nothing is
// created.
func TestAdminSchedules_InvalidArgument(t *testing.T) {
	strict := engine.DefaultLimits()
	strict.Strict = true
	env := start(t, &engine.Config{Limits: strict, Queues: []engine.QueueConfig{{Name: "reports"}}})
	ctx := ctxT(t)
	with := func(f func(s *seppv1.Schedule)) *seppv1.Schedule {
		s := cronSchedule("s", "0 * * * *", "")
		f(s)
		return s
	}
	for _, tc := range []struct {
		name  string
		s     *seppv1.Schedule
		field string
	}{
		{"no schedule", nil, "schedule"},
		{"no name", with(func(s *seppv1.Schedule) { s.Name = "" }), "name"},
		{"bad cron", with(func(s *seppv1.Schedule) { s.Cron = "61 * * * *" }), "cron"},
		{"cron with a zone", with(func(s *seppv1.Schedule) { s.Cron = "TZ=UTC 0 * * * *" }), "cron"},
		{"unknown zone", with(func(s *seppv1.Schedule) { s.TimeZone = "Mars/Olympus" }), "time_zone"},
		{"neither cron nor interval", with(func(s *seppv1.Schedule) { s.Cron = "" }), "cron"},
		{"both cron and interval", with(func(s *seppv1.Schedule) { s.Interval = durationpb.New(time.Minute) }), "interval"},
		{"interval 0", with(func(s *seppv1.Schedule) { s.Cron, s.Interval = "", durationpb.New(0) }), "interval"},
		{"interval below 1s", with(func(s *seppv1.Schedule) { s.Cron, s.Interval = "", durationpb.New(time.Millisecond) }), "interval"},
		{"no template queue", with(func(s *seppv1.Schedule) { s.Template.Queue = "" }), "template.queue"},
		{"bad queue name", with(func(s *seppv1.Schedule) { s.Template.Queue = "a b" }), "template.queue"},
		{"unknown queue when strict", with(func(s *seppv1.Schedule) { s.Template.Queue = "nosuch" }), "template.queue"},
		{"no job type", with(func(s *seppv1.Schedule) { s.Template.JobType = "" }), "template.job_type"},
		{"priority", with(func(s *seppv1.Schedule) { s.Template.Priority = prio(10) }), "template.priority"},
		{"reserved custom field", with(func(s *seppv1.Schedule) { s.Template.Custom = map[string]string{engine.CustomScheduleTick: "1"} }), "template.custom"},
		{"overlap", with(func(s *seppv1.Schedule) { s.Overlap = 9 }), "overlap"},
		{"catch-up", with(func(s *seppv1.Schedule) { s.CatchUp = 9 }), "catch_up"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := env.Admin.CreateSchedule(ctx, &seppv1.CreateScheduleRequest{Schedule: tc.s})
			requireFieldViolation(t, requireCode(t, err, codes.InvalidArgument), tc.field, "")
		})
	}
	_, err := env.Admin.GetSchedule(ctx, &seppv1.GetScheduleRequest{Name: "s", NextFireTimes: 101})
	requireFieldViolation(t, requireCode(t, err, codes.InvalidArgument), "next_fire_times", "")
	if l, err := env.Admin.ListSchedules(ctx, &seppv1.ListSchedulesRequest{}); err != nil || len(l.GetSchedules()) != 0 {
		t.Fatalf("a bad create left a schedule: %v %v", l, err)
	}
	if _, err := env.Admin.CreateSchedule(ctx, &seppv1.CreateScheduleRequest{Schedule: cronSchedule("ok", "0 * * * *", "")}); err != nil {
		t.Fatalf("a configured queue in strict mode: %v", err)
	}
}

// The Connect JSON calls of docs/schedules.md work as written.
func TestAdminSchedules_ConnectJSON(t *testing.T) {
	env := start(t, nil)
	base := "http://" + env.Addr
	hc := &http.Client{}
	defer hc.CloseIdleConnections()
	code, body := postJSON(t, hc, base, "sepp.v1.AdminService/CreateSchedule",
		`{"schedule":{"name":"heartbeat","interval":"30s","template":{"queue":"health","jobType":"ping"},"overlap":"SCHEDULE_OVERLAP_ALLOW"}}`, nil)
	var cr struct {
		Schedule struct {
			Interval string `json:"interval"`
			Overlap  string `json:"overlap"`
		} `json:"schedule"`
	}
	mustOK(t, code, body, &cr)
	if cr.Schedule.Interval != "30s" || cr.Schedule.Overlap != "SCHEDULE_OVERLAP_ALLOW" {
		t.Fatalf("create: %s", body)
	}
	code, body = postJSON(t, hc, base, "sepp.v1.AdminService/GetSchedule", `{"name":"heartbeat","nextFireTimes":3}`, nil)
	var gr struct {
		Schedule struct {
			NextFireTimes []time.Time `json:"nextFireTimes"`
		} `json:"schedule"`
	}
	mustOK(t, code, body, &gr)
	if n := len(gr.Schedule.NextFireTimes); n != 3 || gr.Schedule.NextFireTimes[1].Sub(gr.Schedule.NextFireTimes[0]) != 30*time.Second {
		t.Fatalf("get: %s", body)
	}
}

// UpdateSchedule with an update_mask changes the fields named and keeps the
// others; concurrent updates of different fields all take effect (the
// leader merges each under its schedule write lock); a path it does not
// know is InvalidArgument naming update_mask.
func TestAdminSchedules_UpdateMask(t *testing.T) {
	env := start(t, nil)
	ctx := ctxT(t)
	base := cronSchedule("nightly", "0 3 * * *", "Europe/Berlin")
	three := uint32(3)
	base.Template.Priority = &three
	base.Template.MaxAttempts = 4
	base.Overlap = seppv1.ScheduleOverlap_SCHEDULE_OVERLAP_ALLOW
	if _, err := env.Admin.CreateSchedule(ctx, &seppv1.CreateScheduleRequest{Schedule: base}); err != nil {
		t.Fatal(err)
	}
	seven := uint32(7)
	updates := []*seppv1.UpdateScheduleRequest{
		{Schedule: &seppv1.Schedule{Name: "nightly", Template: &seppv1.JobTemplate{Priority: &seven}}, UpdateMask: &fieldmaskpb.FieldMask{Paths: []string{"template.priority"}}},
		{Schedule: &seppv1.Schedule{Name: "nightly", Cron: "0 4 * * *"}, UpdateMask: &fieldmaskpb.FieldMask{Paths: []string{"cron"}}},
		{Schedule: &seppv1.Schedule{Name: "nightly", Template: &seppv1.JobTemplate{JobType: "rebuild"}}, UpdateMask: &fieldmaskpb.FieldMask{Paths: []string{"template.job_type"}}},
		{Schedule: &seppv1.Schedule{Name: "nightly", CatchUp: seppv1.ScheduleCatchUp_SCHEDULE_CATCH_UP_SKIP}, UpdateMask: &fieldmaskpb.FieldMask{Paths: []string{"catch_up"}}},
	}
	errs := make(chan error, len(updates))
	for _, u := range updates {
		go func() {
			_, err := env.Admin.UpdateSchedule(ctx, u)
			errs <- err
		}()
	}
	for range updates {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	g, err := env.Admin.GetSchedule(ctx, &seppv1.GetScheduleRequest{Name: "nightly"})
	if err != nil {
		t.Fatal(err)
	}
	s := g.GetSchedule()
	tp := s.GetTemplate()
	if s.GetCron() != "0 4 * * *" || s.GetTimeZone() != "Europe/Berlin" || tp.GetPriority() != 7 || tp.GetJobType() != "rebuild" ||
		tp.GetQueue() != "reports" || tp.GetMaxAttempts() != 4 || tp.GetCustom()["tenant"] != "acme" || string(tp.GetPayload()) != `{"kind":"daily"}` ||
		s.GetOverlap() != seppv1.ScheduleOverlap_SCHEDULE_OVERLAP_ALLOW || s.GetCatchUp() != seppv1.ScheduleCatchUp_SCHEDULE_CATCH_UP_SKIP {
		t.Fatalf("after the partial updates: %v", s)
	}
	// interval replaces cron.
	u, err := env.Admin.UpdateSchedule(ctx, &seppv1.UpdateScheduleRequest{
		Schedule: &seppv1.Schedule{Name: "nightly", Interval: durationpb.New(time.Hour)}, UpdateMask: &fieldmaskpb.FieldMask{Paths: []string{"interval"}}})
	if err != nil || u.GetSchedule().GetCron() != "" || u.GetSchedule().GetInterval().AsDuration() != time.Hour || u.GetSchedule().GetTemplate().GetPriority() != 7 {
		t.Fatalf("interval update: %v %v", u.GetSchedule(), err)
	}
	for _, tc := range []struct {
		name  string
		req   *seppv1.UpdateScheduleRequest
		code  codes.Code
		field string
	}{
		{"UnknownPath", &seppv1.UpdateScheduleRequest{Schedule: &seppv1.Schedule{Name: "nightly"}, UpdateMask: &fieldmaskpb.FieldMask{Paths: []string{"fired"}}}, codes.InvalidArgument, "update_mask"},
		{"NoName", &seppv1.UpdateScheduleRequest{Schedule: &seppv1.Schedule{}, UpdateMask: &fieldmaskpb.FieldMask{Paths: []string{"cron"}}}, codes.InvalidArgument, "schedule.name"},
		{"UnknownSchedule", &seppv1.UpdateScheduleRequest{Schedule: &seppv1.Schedule{Name: "nosuch", Cron: "@daily"}, UpdateMask: &fieldmaskpb.FieldMask{Paths: []string{"cron"}}}, codes.NotFound, ""},
		{"MergedValueChecked", &seppv1.UpdateScheduleRequest{Schedule: &seppv1.Schedule{Name: "nightly", Cron: "61 * * * *"}, UpdateMask: &fieldmaskpb.FieldMask{Paths: []string{"cron"}}}, codes.InvalidArgument, "cron"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := env.Admin.UpdateSchedule(ctx, tc.req)
			if status.Code(err) != tc.code || !strings.Contains(fmt.Sprint(err), tc.field) {
				t.Fatalf("err %v, want %s naming %q", err, tc.code, tc.field)
			}
		})
	}
}
