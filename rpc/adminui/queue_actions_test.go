package adminui_test

import (
	"errors"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/sepp-io/sepp/engine"
	"github.com/sepp-io/sepp/rpc"
	"github.com/sepp-io/sepp/rpc/adminui"
)

// The queue actions of the UI through HTTP: create, purge and delete, each
// destructive one after its confirmation page, and a viewer refused.
func TestQueueActions_CreatePurgeDelete(t *testing.T) {
	e := newEnv(t, adminui.Options{Auth: true, Users: testUsers(t)}, week)
	op := newBrowser(t, e.srv.URL)
	op.signIn(operatorName, operatorPass)
	csrf := op.csrf("/queues")
	post := func(b *browser, path string, form url.Values) response {
		t.Helper()
		if form == nil {
			form = url.Values{}
		}
		form.Set("csrf", csrf)
		return b.post(path, form)
	}
	flash := func(r response) string {
		t.Helper()
		i := strings.Index(r.body, `class="flash`)
		if i < 0 {
			return ""
		}
		end := strings.Index(r.body[i:], "</")
		if end < 0 {
			return r.body[i:]
		}
		return r.body[i : i+end]
	}

	resp := post(op, "/queues/create", url.Values{"name": {"reports.daily"}, "default_priority": {"6"}, "max_length": {"10"}, "paused": {"yes"}})
	if resp.status != http.StatusOK || !strings.Contains(resp.body, "Created queue reports.daily, paused") {
		t.Fatalf("create: %d %s", resp.status, flash(resp))
	}
	var cfg engine.Config
	var stats engine.QueueStats
	read := func(name string) error {
		return e.backend.Read(t.Context(), true, func(en engine.View) error {
			cfg = en.Config()
			var err error
			stats, err = en.QueueStats(e.clock.Now(), name)
			return err
		})
	}
	if err := read("reports.daily"); err != nil || !stats.Paused || !stats.Configured || *cfg.Queues[0].DefaultPriority != 6 || *cfg.Queues[0].MaxLength != 10 {
		t.Fatalf("after create: %+v %+v %v", cfg.Queues, stats, err)
	}
	if resp := post(op, "/queues/create", url.Values{"name": {"reports.daily"}}); !strings.Contains(flash(resp), "already exists") {
		t.Fatalf("second create: %s", flash(resp))
	}
	if resp := post(op, "/queues/create", url.Values{"name": {"x"}, "default_priority": {"high"}}); !strings.Contains(flash(resp), "default_priority must be a whole number") {
		t.Fatalf("create with a bad field: %s", flash(resp))
	}
	if resp := post(op, "/queues/create", url.Values{"name": {"x"}, "default_priority": {"12"}}); !strings.Contains(flash(resp), `default_priority: must be 0..9, got 12`) {
		t.Fatalf("create with priority 12: %s", flash(resp))
	}

	// Purge asks first, showing the counts; confirmed, it removes the
	// waiting jobs of emails (the seeded queue) and leaves the reserved one.
	if err := read("emails"); err != nil {
		t.Fatal(err)
	}
	before := stats
	page := post(op, "/queues/emails/purge", url.Values{"target": {"waiting"}})
	if !strings.Contains(page.body, "Purge waiting jobs emails?") || !strings.Contains(page.body, `id="confirm-form"`) {
		t.Fatalf("purge confirmation page:\n%s", page.body)
	}
	if err := read("emails"); err != nil || stats.Ready != before.Ready {
		t.Fatalf("the confirmation page changed something: %+v", stats)
	}
	done := post(op, "/queues/emails/purge", url.Values{"target": {"waiting"}, "confirmed": {"yes"}})
	if !strings.Contains(flash(done), "waiting job") || !strings.Contains(flash(done), "reserved jobs stay") {
		t.Fatalf("purge: %s", flash(done))
	}
	if err := read("emails"); err != nil || stats.Ready != 0 || stats.Scheduled != 0 || stats.Reserved != before.Reserved {
		t.Fatalf("after purge: %+v (before %+v)", stats, before)
	}

	// Delete without force is refused while the queue holds jobs; forced, it goes.
	page = post(op, "/queues/emails/delete", nil)
	if !strings.Contains(page.body, `id="force"`) {
		t.Fatalf("delete confirmation of a queue holding jobs offers no force:\n%s", page.body)
	}
	if resp := post(op, "/queues/emails/delete", url.Values{"confirmed": {"yes"}}); !strings.Contains(flash(resp), "purge it first or delete with force") {
		t.Fatalf("unforced delete: %s", flash(resp))
	}
	if resp := post(op, "/queues/emails/delete", url.Values{"confirmed": {"yes"}, "force": {"yes"}}); !strings.Contains(flash(resp), "Deleted queue emails") {
		t.Fatalf("forced delete: %s", flash(resp))
	}
	if err := read("emails"); !errors.Is(err, engine.ErrNotFound) {
		t.Fatalf("the deleted queue is still there: %v", err)
	}
	// No ghost queues from a typo.
	if resp := post(op, "/queues/nosuchqueue/pause", nil); !strings.Contains(flash(resp), "does not exist") {
		t.Fatalf("pause of an unknown queue: %s", flash(resp))
	}

	viewer := newBrowser(t, e.srv.URL)
	viewer.signIn(viewerName, viewerPass)
	csrf = viewer.csrf("/queues")
	if resp := post(viewer, "/queues/create", url.Values{"name": {"v"}}); resp.status != http.StatusForbidden {
		t.Fatalf("viewer create: %d, want 403", resp.status)
	}
}

// The reserve limits in the UI: the New queue form sets them, the queue
// page shows operators a form with the queue's own that replaces them (an
// empty field drops one) and holds the next reserve back at once; a bad
// value changes nothing and says why; viewers get no form and a 403.
func TestQueueActions_ReserveLimits(t *testing.T) {
	e := newEnv(t, adminui.Options{Auth: true, Users: testUsers(t)}, week)
	op := newBrowser(t, e.srv.URL)
	op.signIn(operatorName, operatorPass)
	csrf := op.csrf("/queues")
	post := func(b *browser, path string, form url.Values) response {
		t.Helper()
		form.Set("csrf", csrf)
		return b.post(path, form)
	}
	own := func() engine.QueueConfig {
		t.Helper()
		var out engine.QueueConfig
		if err := e.backend.Read(t.Context(), true, func(en engine.View) error {
			for _, q := range en.Config().Queues {
				if q.Name == "lim" {
					out = q
				}
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		return out
	}

	resp := post(op, "/queues/create", url.Values{"name": {"lim"}, "max_reserved": {"2"}, "rate_limit": {"5"}, "rate_period_ms": {"60000"},
		"concurrency_key": {"customer"}, "max_per_key": {"1"}})
	if !strings.Contains(resp.body, "Created queue lim.") {
		t.Fatalf("create with limits: %d\n%s", resp.status, resp.body)
	}
	if q := own(); q.MaxReserved != 2 || q.RateLimit != 5 || q.RatePeriod != time.Minute || q.ConcurrencyKey != "customer" || q.MaxPerKey != 1 {
		t.Fatalf("after create: %+v", q)
	}
	if resp := post(op, "/queues/create", url.Values{"name": {"x"}, "max_reserved": {"lots"}}); !strings.Contains(resp.body, "max_reserved must be a whole number 0..1000000") {
		t.Fatalf("create with a bad max_reserved:\n%s", resp.body)
	}
	mustContain(t, "the queue page's form", op.get("/queues/lim").body, `id="set-reserve-limits"`, `name="max_reserved"`, `value="2"`,
		`value="60000"`, `value="customer"`)

	// The form replaces all six: max_reserved 1, the rate and key dropped.
	resp = post(op, "/queues/lim/limits", url.Values{"max_reserved": {"1"}, "rate_limit": {""}, "concurrency_key": {""}, "max_per_key": {"0"}})
	if !strings.Contains(resp.body, "Set the reserve limits of queue lim: at most 1 reserved at once.") {
		t.Fatalf("set limits: %d\n%s", resp.status, resp.body)
	}
	if q := own(); q.MaxReserved != 1 || q.RateLimit != 0 || q.RatePeriod != 0 || q.ConcurrencyKey != "" || q.MaxPerKey != 0 {
		t.Fatalf("after the form: %+v", q)
	}
	for range 2 {
		if _, err := rpc.Propose(t.Context(), e.backend, engine.EnqueueOp{Params: engine.EnqueueParams{Queue: "lim", JobType: "t"}}); err != nil {
			t.Fatal(err)
		}
	}
	ds, err := rpc.Propose(t.Context(), e.backend, engine.ReserveOp{Params: engine.ReserveParams{Queue: "lim", N: 5, WorkerID: "w", Lease: time.Minute}})
	if err != nil || len(ds) != 1 {
		t.Fatalf("reserve under the form's max_reserved 1: %d jobs, %v", len(ds), err)
	}

	// Refused: nothing changes, the flash says why.
	if resp := post(op, "/queues/lim/limits", url.Values{"max_per_key": {"1"}}); !strings.Contains(resp.body, "concurrency_key: must name a custom field when max_per_key is set") {
		t.Fatalf("max_per_key without a key:\n%s", resp.body)
	}
	if resp := post(op, "/queues/lim/limits", url.Values{"rate_period_ms": {"9999999"}}); !strings.Contains(resp.body, "The reserve limits were not changed: rate_period_ms must be") {
		t.Fatalf("a bad rate period:\n%s", resp.body)
	}
	if q := own(); q.MaxReserved != 1 || q.MaxPerKey != 0 || q.RatePeriod != 0 {
		t.Fatalf("a refused form changed the limits: %+v", q)
	}

	viewer := newBrowser(t, e.srv.URL)
	viewer.signIn(viewerName, viewerPass)
	mustNotContain(t, "the viewer's queue page", viewer.get("/queues/lim").body, `id="set-reserve-limits"`)
	csrf = viewer.csrf("/queues")
	if resp := post(viewer, "/queues/lim/limits", url.Values{"max_reserved": {"9"}}); resp.status != http.StatusForbidden {
		t.Fatalf("viewer set limits: %d, want 403", resp.status)
	}
}
