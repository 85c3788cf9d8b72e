package adminui_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/sepp-io/sepp/engine"
	"github.com/sepp-io/sepp/rpc"
	"github.com/sepp-io/sepp/rpc/adminui"
)

const week = 7 * 24 * time.Hour

func mustContain(t *testing.T, what, body string, wants ...string) {
	t.Helper()
	for _, w := range wants {
		if !strings.Contains(body, w) {
			t.Errorf("%s: want %q in page:\n%s", what, w, body)
			return
		}
	}
}

func mustNotContain(t *testing.T, what, body string, unwanted ...string) {
	t.Helper()
	for _, w := range unwanted {
		if strings.Contains(body, w) {
			t.Errorf("%s: %q must not be in page", what, w)
		}
	}
}

func TestPagesRender(t *testing.T) {
	e := newEnv(t, adminui.Options{}, week)
	b := newBrowser(t, e.srv.URL)
	id := func(j engine.JobID) string { return fmt.Sprint(uint64(j)) }

	tests := []struct {
		name  string
		path  string
		wants []string
	}{
		{"Root redirects to queues", "/", []string{"<h1>Queues</h1>"}},
		{"Queues", "/queues", []string{
			`data-queue="emails"`, `data-queue="reports"`, "Dead-letter retention: <b>7d</b>",
			`href="/queues/emails?tab=dead" class="has-dead">4</a>`, // four retained dead letters
			`href="/queues/emails?tab=ready">2</a>`, `href="/queues/emails?tab=scheduled">1</a>`,
			`data-action="pause"`,
		}},
		{"Cluster", "/cluster", []string{"sepp-1", "Term", "Commit index", "Applied index", "127.0.0.1:7050", "healthy", `<span class="badge leader">leader</span>`}},
		{"Ready tab", "/queues/emails", []string{"#" + id(e.jobs.ready1), "#" + id(e.jobs.ready2), "grace@example.com", `id="dead-letter-selected"`}},
		{"Scheduled tab", "/queues/emails?tab=scheduled", []string{"#" + id(e.jobs.scheduled), "Runs at", "in 1h 59m"}},
		{"Reserved tab", "/queues/emails?tab=reserved", []string{"No reserved jobs on this queue."}},
		{"Dead letters tab", "/queues/emails?tab=dead", []string{
			"#" + id(e.jobs.rejected), "#" + id(e.jobs.exhausted), "#" + id(e.jobs.leaseExpired), "#" + id(e.jobs.admin),
			`cause-rejected">rejected`, `cause-attempts_exhausted">attempts_exhausted`, `cause-lease_expired">lease_expired`, `cause-admin">admin`,
			"invalid address: mailbox does not exist", "SMTP 451: try again later", "pulled for inspection",
			"2026-03-14 09:30:00.000 UTC", // failed at
			"1 of 1",                      // final attempt
			`id="requeue-selected"`, `id="delete-selected"`,
		}},
		{"Dead-letter record with JSON payload", "/queues/emails/dead-letters/" + id(e.jobs.rejected), []string{
			"Dead letter #" + id(e.jobs.rejected), `cause-rejected">rejected`, "invalid address: mailbox does not exist",
			"Died on attempt</dt><dd><b>1</b> of 3",
			`<span class="muted small">JSON`, "&#34;to&#34;: &#34;ada@example.com&#34;,\n  &#34;template&#34;", // indented JSON
			"<th>tenant</th><td><code>acme</code></td>", "<th>trace_id</th>",
			"Attempt history", "worker-7", "Kept until", "2026-03-21 09:30:00.000 UTC",
			"<th class=\"num\">Ran for</th>", "<td>dead_letter</td>", // the attempt's detail: how long it ran, the nack's directive
			`id="requeue-one"`, `id="delete-one"`,
		}},
		{"Dead-letter record with text payload", "/queues/emails/dead-letters/" + id(e.jobs.exhausted), []string{
			`<span class="muted small">text`, "plain text receipt for order 1042", "attempts_exhausted", "SMTP 451",
		}},
		{"Dead-letter record with binary payload", "/queues/emails/dead-letters/" + id(e.jobs.leaseExpired), []string{
			"binary, shown as hex", "25 50 44 46 00 ff fe 01  02", "lease_expired", "its lease expired on the final attempt",
		}},
		{"Live job", "/queues/emails/jobs/" + id(e.jobs.ready1), []string{"Job #" + id(e.jobs.ready1), "Priority</dt><dd>5", `id="dead-letter-one"`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := b.get(tc.path)
			if r.status != http.StatusOK {
				t.Fatalf("GET %s: status %d:\n%s", tc.path, r.status, r.body)
			}
			mustContain(t, tc.path, r.body, tc.wants...)
		})
	}
}

func TestPagesNotFound(t *testing.T) {
	e := newEnv(t, adminui.Options{}, week)
	b := newBrowser(t, e.srv.URL)
	for _, path := range []string{
		"/queues/nope",
		"/queues/emails/dead-letters/999999",
		fmt.Sprintf("/queues/reports/dead-letters/%d", e.jobs.rejected), // a record of another queue
		"/queues/emails/jobs/999999",
		"/no-such-page",
	} {
		if r := b.get(path); r.status != http.StatusNotFound {
			t.Errorf("GET %s: status %d, want 404", path, r.status)
		}
	}
	if r := b.get("/queues/emails/jobs/abc"); r.status != http.StatusBadRequest || !strings.Contains(r.body, "job id: must be a positive whole number") {
		t.Errorf("bad job id: status %d, body %s", r.status, r.body)
	}
}

// spec: DLQ-11
func TestDeadLetterListDoesNotConsume(t *testing.T) {
	e := newEnv(t, adminui.Options{}, week)
	b := newBrowser(t, e.srv.URL)
	for i := 0; i < 3; i++ {
		r := b.get("/queues/emails?tab=dead")
		if r.status != http.StatusOK || strings.Count(r.body, `class="job-link"`) != 4 {
			t.Fatalf("visit %d: status %d, %d records listed, want 4", i, r.status, strings.Count(r.body, `class="job-link"`))
		}
		b.get(fmt.Sprintf("/queues/emails/dead-letters/%d", e.jobs.rejected))
	}
	if n := e.deadCount("emails"); n != 4 {
		t.Fatalf("after listing and opening: %d records retained, want 4", n)
	}
}

func TestDeadLettersTabSaysRetentionIsOff(t *testing.T) {
	e := newEnv(t, adminui.Options{}, 0)
	b := newBrowser(t, e.srv.URL)
	r := b.get("/queues/emails?tab=dead")
	mustContain(t, "dead tab", r.body, `id="retention-off"`, "Dead-letter retention is off.", "does <em>not</em> mean the queue is clean",
		"So far 4 dead jobs of this queue were dropped.")
	mustNotContain(t, "dead tab", r.body, "No dead letters on this queue", `id="requeue-selected"`)
	mustContain(t, "queues", b.get("/queues").body, "Dead-letter retention is <b>off</b>")
}

func TestPagingThroughATab(t *testing.T) {
	e := newEnv(t, adminui.Options{}, week)
	var last engine.JobID
	for i := 0; i < 60; i++ {
		res, err := rpc.Propose(t.Context(), e.backend, engine.EnqueueOp{Params: engine.EnqueueParams{Queue: "bulk", JobType: "bulk_item", Payload: []byte(fmt.Sprintf(`{"n":%d}`, i))}})
		if err != nil {
			t.Fatal(err)
		}
		last = res.JobID
	}
	b := newBrowser(t, e.srv.URL)
	first := b.get("/queues/bulk?tab=ready")
	if n := strings.Count(first.body, `class="job-link"`); n != 50 {
		t.Fatalf("first page: %d rows, want 50", n)
	}
	i := strings.Index(first.body, `id="next-page"`)
	if i < 0 {
		t.Fatal("first page has no next-page link")
	}
	href := first.body[strings.LastIndex(first.body[:i], `href="`)+len(`href="`):]
	href = strings.ReplaceAll(href[:strings.Index(href, `"`)], "&amp;", "&")
	second := b.get(href)
	if n := strings.Count(second.body, `class="job-link"`); n != 10 {
		t.Fatalf("second page %s: %d rows, want 10", href, n)
	}
	mustContain(t, "second page", second.body, fmt.Sprintf("#%d", last), "« First page")
	mustNotContain(t, "second page", second.body, `id="next-page"`)
}

func TestSecurityHeaders(t *testing.T) {
	e := newEnv(t, adminui.Options{}, week)
	resp, err := http.Get(e.srv.URL + "/queues")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	for k, want := range map[string]string{
		"X-Frame-Options":        "DENY",
		"X-Content-Type-Options": "nosniff",
		"Cache-Control":          "no-store",
	} {
		if got := resp.Header.Get(k); got != want {
			t.Errorf("%s = %q, want %q", k, got, want)
		}
	}
	if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self'") || !strings.Contains(csp, "frame-ancestors 'none'") {
		t.Errorf("Content-Security-Policy = %q", csp)
	}
	for _, path := range []string{"/static/style.css", "/static/app.js"} {
		resp, err := http.Get(e.srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("GET %s: %d", path, resp.StatusCode)
		}
	}
}
