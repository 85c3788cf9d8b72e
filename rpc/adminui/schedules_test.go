package adminui_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/sepp-io/sepp/engine"
	"github.com/sepp-io/sepp/rpc/adminui"
)

// createSchedules adds two schedules through the backend, as the API
// would: a cron one in Berlin and a paused interval one.
func createSchedules(t *testing.T, e *env) {
	t.Helper()
	ctx := context.Background()
	prio := uint32(7)
	for _, p := range []engine.ScheduleParams{
		{Name: "nightly-report", Kind: engine.ScheduleCron, Cron: "0 3 * * *", TimeZone: "Europe/Berlin",
			Template: engine.JobTemplate{Queue: "reports", JobType: "build", Payload: []byte(`{"kind":"daily"}`), Priority: &prio, Custom: map[string]string{"tenant": "acme"}}},
		{Name: "heartbeat", Kind: engine.ScheduleInterval, Interval: 30 * time.Second, Overlap: engine.OverlapAllow, CatchUp: engine.CatchUpSkip,
			Template: engine.JobTemplate{Queue: "health", JobType: "ping"}},
	} {
		if _, err := e.backend.Propose(ctx, engine.CreateScheduleOp{Params: p}); err != nil {
			t.Fatal(err)
		}
	}
}

// The Schedules page lists every schedule with its spec and next fire
// time; a schedule's page shows its template and five next fire times; an
// operator pauses, resumes and (after a confirmation) deletes; a viewer
// sees no buttons and is refused the actions.
func TestSchedulesPages(t *testing.T) {
	e := newEnv(t, adminui.Options{Auth: true, Users: testUsers(t), SessionKey: testKey}, week)
	createSchedules(t, e)
	op := newBrowser(t, e.srv.URL)
	op.signIn(operatorName, operatorPass)

	r := op.get("/schedules")
	for _, want := range []string{`data-schedule="heartbeat"`, `data-schedule="nightly-report"`, "0 3 * * * (Europe/Berlin)", "every 30s", `data-action="pause-schedule"`, `href="/schedules"`} {
		if r.status != http.StatusOK || !strings.Contains(r.body, want) {
			t.Fatalf("GET /schedules (%d) lacks %q:\n%s", r.status, want, r.body)
		}
	}
	r = op.get("/schedules/nightly-report")
	if r.status != http.StatusOK || strings.Count(r.body, " UTC <span") != 5 || !strings.Contains(r.body, "tenant") || !strings.Contains(r.body, "build") {
		t.Fatalf("GET /schedules/nightly-report (%d):\n%s", r.status, r.body)
	}
	if r := op.get("/schedules/heartbeat"); !strings.Contains(r.body, "allow: every tick fires a job") || !strings.Contains(r.body, "skip: ticks missed during downtime fire nothing") {
		t.Fatalf("GET /schedules/heartbeat: policies not shown:\n%s", r.body)
	}
	if r := op.get("/schedules/nosuch"); r.status != http.StatusNotFound {
		t.Fatalf("unknown schedule: %d", r.status)
	}

	csrf := op.csrf("/schedules")
	r = op.post("/schedules/nightly-report/pause", url.Values{"csrf": {csrf}, "back": {"/schedules"}})
	if !strings.Contains(r.body, "Paused schedule nightly-report") {
		t.Fatalf("pause: %d %s", r.status, r.body)
	}
	e.read(func(en engine.View) error {
		s, err := en.GetSchedule("nightly-report")
		if err == nil && !s.Paused {
			t.Error("not paused")
		}
		return err
	})
	r = op.post("/schedules/nightly-report/resume", url.Values{"csrf": {csrf}})
	if !strings.Contains(r.body, "Resumed schedule nightly-report") || !strings.HasSuffix(r.url, "/schedules/nightly-report") {
		t.Fatalf("resume: %d at %s %s", r.status, r.url, r.body)
	}
	r = op.post("/schedules/heartbeat/delete", url.Values{"csrf": {csrf}})
	if !strings.Contains(r.body, `id="confirm-delete"`) {
		t.Fatalf("delete asks first: %d %s", r.status, r.body)
	}
	r = op.post("/schedules/heartbeat/delete", url.Values{"csrf": {csrf}, "confirmed": {"yes"}})
	if !strings.Contains(r.body, "Deleted schedule heartbeat") || strings.Contains(r.body, `data-schedule="heartbeat"`) {
		t.Fatalf("delete: %d %s", r.status, r.body)
	}

	v := newBrowser(t, e.srv.URL)
	v.signIn(viewerName, viewerPass)
	if r := v.get("/schedules"); strings.Contains(r.body, `data-action="pause-schedule"`) || !strings.Contains(r.body, "nightly-report") {
		t.Fatalf("a viewer's Schedules page: %s", r.body)
	}
	if r := v.post("/schedules/nightly-report/pause", url.Values{"csrf": {v.csrf("/schedules")}}); r.status != http.StatusForbidden {
		t.Fatalf("a viewer's pause: %d", r.status)
	}
}
