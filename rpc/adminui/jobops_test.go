package adminui_test

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/sepp-io/sepp/engine"
	"github.com/sepp-io/sepp/rpc"
	"github.com/sepp-io/sepp/rpc/adminui"
)

// Each job action from the job page or ticked rows: a confirmation first,
// then the engine's outcome, per job.
func TestJobActions(t *testing.T) {
	e := newEnv(t, adminui.Options{Auth: true, Users: testUsers(t)}, week)
	b := newBrowser(t, e.srv.URL)
	b.signIn(operatorName, operatorPass)
	csrf := b.csrf("/queues/emails?tab=scheduled")

	ask := b.post("/queues/emails/jobs/act", url.Values{"csrf": {csrf}, "action": {"run-now"}, "tab": {"scheduled"}, "id": ids(e.jobs.scheduled)})
	mustContain(t, "confirmation", ask.body, "Run now", `id="confirm-count">1<`)
	if j, _ := e.job(e.jobs.scheduled); j.State != engine.StateScheduled {
		t.Fatalf("asking changed the job: %v", j.State)
	}
	tests := []struct {
		name  string
		form  url.Values
		id    engine.JobID
		check func(j engine.Job, err error) bool
		flash string
	}{
		{"run now", url.Values{"action": {"run-now"}}, e.jobs.scheduled,
			func(j engine.Job, err error) bool { return err == nil && j.State == engine.StateReady }, "Run now 1 job"},
		{"priority", url.Values{"action": {"priority"}, "priority": {"9"}}, e.jobs.ready2,
			func(j engine.Job, err error) bool { return err == nil && j.Priority == 9 }, "Change priority of 1 job"},
		{"reschedule", url.Values{"action": {"reschedule"}, "delay": {"1h"}}, e.jobs.ready2,
			func(j engine.Job, err error) bool { return err == nil && j.State == engine.StateScheduled }, "held until the new time"},
		{"delete", url.Values{"action": {"delete"}}, e.jobs.ready1,
			func(_ engine.Job, err error) bool { return isNotFound(err) }, "removed for good"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := tc.form
			f.Set("csrf", csrf)
			f.Set("confirmed", "yes")
			f["id"] = ids(tc.id)
			r := b.post("/queues/emails/jobs/act", f)
			mustContain(t, "result", r.body, `class="flash ok"`, tc.flash)
			if j, err := e.job(tc.id); !tc.check(j, err) {
				t.Errorf("job %d after %s: %+v %v", tc.id, tc.name, j, err)
			}
		})
	}
	bad := b.post("/queues/emails/jobs/act", url.Values{"csrf": {csrf}, "action": {"priority"}, "priority": {"12"}, "confirmed": {"yes"}, "id": ids(e.jobs.reportsReady)})
	if bad.status != http.StatusBadRequest || !strings.Contains(bad.body, "priority: must be 0..9") {
		t.Errorf("priority 12: %d %s", bad.status, bad.body)
	}
}

// Cancelling a reserved job revokes its lease: the job is dead-lettered
// with cause cancelled and the worker's ack is refused.
func TestCancelReservedFromUI(t *testing.T) {
	e := newEnv(t, adminui.Options{Auth: true, Users: testUsers(t)}, week)
	ds, err := rpc.Propose(t.Context(), e.backend, engine.ReserveOp{Params: engine.ReserveParams{Queue: "reports", WorkerID: "w-9", N: 1, Lease: time.Hour}})
	if err != nil || len(ds) != 1 {
		t.Fatal(err, len(ds))
	}
	e.clock.Advance(90 * time.Second)
	b := newBrowser(t, e.srv.URL)
	b.signIn(operatorName, operatorPass)
	page := b.get("/queues/reports?tab=reserved")
	mustContain(t, "time held", page.body, "Held for", ">1m 30s<")
	mustContain(t, "reserved tab", page.body, "<code>w-9</code>", `id="sel-cancel"`, "Lease deadline")
	csrf := b.csrf("/queues/reports?tab=reserved")
	r := b.post("/queues/reports/jobs/act", url.Values{"csrf": {csrf}, "confirmed": {"yes"}, "action": {"cancel"}, "tab": {"reserved"},
		"cancel_reason": {"stuck on a bad host"}, "id": ids(ds[0].Job.ID)})
	mustContain(t, "result", r.body, `class="flash ok"`, "lease revoked")
	rec, err := e.deadLetter(ds[0].Job.ID)
	if err != nil || rec.Cause.String() != "cancelled" || rec.LastReason != "stuck on a bad host" {
		t.Fatalf("record after cancel: %+v %v", rec, err)
	}
	if _, err := rpc.Propose(t.Context(), e.backend, engine.AckOp{Ref: engine.LeaseRef{JobID: ds[0].Job.ID, LeaseToken: ds[0].LeaseToken}}); err == nil {
		t.Error("the worker's ack after a cancel succeeded")
	}
}

// A filter narrows the list and counts its matches; "act on all matching"
// confirms with that count and acts on exactly those jobs; a count that
// changed in between asks again.
func TestFilterAndActOnAllMatching(t *testing.T) {
	e := newEnv(t, adminui.Options{Auth: true, Users: testUsers(t)}, week)
	ctx := t.Context()
	var bulk []engine.JobID
	for i := range 7 {
		custom := map[string]string{"tenant": "acme"}
		if i%2 == 1 {
			custom["tenant"] = "globex"
		}
		res, err := rpc.Propose(ctx, e.backend, engine.EnqueueOp{Params: engine.EnqueueParams{Queue: "emails", JobType: "bulk", Payload: []byte("{}"), Custom: custom}})
		if err != nil {
			t.Fatal(err)
		}
		if i%2 == 0 {
			bulk = append(bulk, res.JobID)
		}
	}
	b := newBrowser(t, e.srv.URL)
	b.signIn(operatorName, operatorPass)
	list := b.get("/queues/emails?tab=ready&type=bulk&field=tenant%3Dacme")
	mustContain(t, "filtered list", list.body, `id="match-count">4<`, `id="all-delete"`)
	mustNotContain(t, "filtered list", list.body, fmt.Sprintf(`data-job="%d"`, e.jobs.ready1))
	csrf := b.csrf("/queues/emails?tab=ready")
	form := url.Values{"csrf": {csrf}, "action": {"delete"}, "match": {"all"}, "tab": {"ready"}, "type": {"bulk"}, "field": {"tenant=acme"}}
	ask := b.post("/queues/emails/jobs/act", form)
	mustContain(t, "confirmation", ask.body, "Delete all", `id="confirm-count">4<`, `name="count" value="4"`)

	// Another match arrives between the confirmation and the click: ask again.
	if _, err := rpc.Propose(ctx, e.backend, engine.EnqueueOp{Params: engine.EnqueueParams{Queue: "emails", JobType: "bulk", Payload: []byte("{}"), Custom: map[string]string{"tenant": "acme"}}}); err != nil {
		t.Fatal(err)
	}
	form.Set("confirmed", "yes")
	form.Set("count", "4")
	again := b.post("/queues/emails/jobs/act", form)
	mustContain(t, "re-confirmation", again.body, `id="confirm-count">5<`)
	form.Set("count", "5")
	done := b.post("/queues/emails/jobs/act", form)
	mustContain(t, "result", done.body, `class="flash ok"`, "Delete 5 jobs")
	for _, id := range bulk {
		if _, err := e.job(id); !isNotFound(err) {
			t.Errorf("matching job %d survived: %v", id, err)
		}
	}
	left := b.get("/queues/emails?tab=ready&type=bulk")
	mustContain(t, "after", left.body, `id="match-count">3<`)

	// Dead letters: filter by cause, requeue all matching as a redrive task.
	dl := b.get("/queues/emails?tab=dead&cause=rejected")
	mustContain(t, "dead filter", dl.body, `id="match-count">1<`, `id="all-requeue"`)
	rq := b.post("/queues/emails/dead-letters/act-all", url.Values{"csrf": {csrf}, "action": {"requeue"}, "cause": {"rejected"}, "confirmed": {"yes"}, "count": {"1"}})
	mustContain(t, "redrive started", rq.body, "Started redrive task", "1 record")
}

// The Ready tab lists jobs in the order reserves hand them out.
func TestReadyTabInHandOutOrder(t *testing.T) {
	e := newEnv(t, adminui.Options{}, week)
	b := newBrowser(t, e.srv.URL)
	page := b.get("/queues/emails?tab=ready").body
	// ready1 has priority 5, ready2 priority 0 and an earlier id... wait: a
	// larger id. Priority first: ready1 leads.
	i1 := strings.Index(page, fmt.Sprintf(`data-job="%d"`, e.jobs.ready1))
	i2 := strings.Index(page, fmt.Sprintf(`data-job="%d"`, e.jobs.ready2))
	if i1 < 0 || i2 < 0 || i1 > i2 {
		t.Fatalf("ready order: ready1 at %d, ready2 at %d", i1, i2)
	}
	prio := uint32(9)
	res, err := rpc.Propose(t.Context(), e.backend, engine.EnqueueOp{Params: engine.EnqueueParams{Queue: "emails", JobType: "urgent", Payload: []byte("{}"), Priority: &prio}})
	if err != nil {
		t.Fatal(err)
	}
	page = b.get("/queues/emails?tab=ready").body
	if iu := strings.Index(page, fmt.Sprintf(`data-job="%d"`, res.JobID)); iu < 0 || iu > strings.Index(page, fmt.Sprintf(`data-job="%d"`, e.jobs.ready1)) {
		t.Errorf("a priority-9 job is not listed first")
	}
}

// A viewer sees no action buttons, and the server refuses a viewer's
// action (403) whatever the form says.
func TestViewerCannotActOnJobs(t *testing.T) {
	e := newEnv(t, adminui.Options{Auth: true, Users: testUsers(t)}, week)
	b := newBrowser(t, e.srv.URL)
	b.signIn(viewerName, viewerPass)
	for _, path := range []string{"/queues/emails?tab=ready", "/queues/emails?tab=scheduled&type=send_reminder", "/queues/emails?tab=dead&cause=rejected",
		fmt.Sprintf("/queues/emails/jobs/%d", e.jobs.ready1), "/redrive"} {
		page := b.get(path)
		if page.status != http.StatusOK {
			t.Fatalf("GET %s: %d", path, page.status)
		}
		mustNotContain(t, path, page.body, `name="action"`, `id="act-all"`, `id="redrive-start"`)
	}
	csrf := b.csrf("/queues/emails")
	for _, p := range []struct {
		path string
		form url.Values
	}{
		{"/queues/emails/jobs/act", url.Values{"action": {"delete"}, "id": ids(e.jobs.ready1), "confirmed": {"yes"}}},
		{"/queues/emails/dead-letters/act-all", url.Values{"action": {"delete"}, "confirmed": {"yes"}, "count": {"4"}}},
		{"/redrive/start", url.Values{"queue": {"emails"}}},
		{"/redrive/1/cancel", url.Values{}},
	} {
		p.form.Set("csrf", csrf)
		if r := b.post(p.path, p.form); r.status != http.StatusForbidden {
			t.Errorf("viewer POST %s: %d, want 403", p.path, r.status)
		}
	}
	if _, err := e.job(e.jobs.ready1); err != nil {
		t.Errorf("a viewer's delete took effect: %v", err)
	}
}

// The node page shows version, uptime, role, term, indexes and memory.
func TestNodePage(t *testing.T) {
	e := newEnv(t, adminui.Options{Version: "v9.9.9-test", StartedAt: t0.Add(-90 * time.Minute)}, week)
	b := newBrowser(t, e.srv.URL)
	page := b.get("/node")
	mustContain(t, "node page", page.body, `id="node-version">v9.9.9-test<`, "1h 3", `id="node-role">`, `id="node-commit">`, `id="mem-held">`, "Goroutines")
}
