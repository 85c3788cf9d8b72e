package adminui_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/sepp-io/sepp/engine"
	"github.com/sepp-io/sepp/rpc"
	"github.com/sepp-io/sepp/rpc/adminui"
)

// traffic runs steps of a varying workload on e's engine, each 10 s apart
// on the test clock, and samples ring after each, as a node's sampler
// would: the charts then have history on the first visit.
func traffic(t *testing.T, e *env, ring *adminui.RateRing, steps int) {
	t.Helper()
	ctx := context.Background()
	for i := range steps {
		// A ramp up to a steady load with a little jitter, as a real
		// queue's traffic looks (not a periodic sawtooth the charts would
		// faithfully draw as one).
		n := 12 + min(i, 36)/2 + []int{0, 2, 1, 3, 1}[i%5]
		for j := range n {
			q := "images.resize"
			if j%3 == 0 {
				q = "emails"
			}
			if _, err := rpc.Propose(ctx, e.backend, engine.EnqueueOp{Params: engine.EnqueueParams{Queue: q, JobType: "resize", Payload: []byte(`{"w":640}`),
				Custom: map[string]string{"tenant": []string{"acme", "globex"}[j%2]}}}); err != nil {
				t.Fatal(err)
			}
		}
		ds, err := rpc.Propose(ctx, e.backend, engine.ReserveOp{Params: engine.ReserveParams{Queue: "images.resize", WorkerID: fmt.Sprintf("resizer-%d", i%3), N: n - 4, Lease: time.Hour}})
		if err != nil {
			t.Fatal(err)
		}
		for k, d := range ds {
			ref := engine.LeaseRef{JobID: d.Job.ID, LeaseToken: d.LeaseToken}
			switch {
			case k == 0 && i%5 == 0:
				if _, err := rpc.Propose(ctx, e.backend, engine.NackOp{Params: engine.NackParams{LeaseRef: ref, Directive: engine.DirectiveDeadLetter, Reason: "corrupt image header"}}); err != nil {
					t.Fatal(err)
				}
			case k < len(ds)-2:
				if _, err := rpc.Propose(ctx, e.backend, engine.AckOp{Ref: ref}); err != nil {
					t.Fatal(err)
				}
			}
		}
		e.clock.Advance(10 * time.Second)
		e.read(func(eng engine.View) error {
			ring.Sample(e.clock.Now(), eng.Stats(e.clock.Now()))
			return nil
		})
	}
}

// An operator, in a real browser: the queue page draws its charts from
// the server's ring on the first visit; a filter narrows the Ready list
// and "act on all matching" changes the priority of exactly the matches
// after a confirmation naming their count; a reserved job is cancelled
// from its row; dead letters are redriven from the redrive page; the node
// page shows the node.
func TestBrowserOperatorActsOnJobs(t *testing.T) {
	tab := newTab(t)
	ring := adminui.NewRateRing(10*time.Second, time.Hour)
	e := newEnv(t, adminui.Options{}, week)
	traffic(t, e, ring, 12)
	h, err := adminui.New(e.backend, adminui.Options{Auth: true, Users: testUsers(t), Clock: e.clock.Now, Rates: ring, Version: "test", StartedAt: t0})
	if err != nil {
		t.Fatal(err)
	}
	base := newServer(t, h)
	browserSignIn(t, tab, base, operatorName, operatorPass)
	if n := eval[int](t, tab, `document.querySelectorAll("#charts svg.chart polyline").length`); n < 5 {
		t.Fatalf("the Queues page draws %d chart lines on the first visit, want the five rates and more", n)
	}

	// Filter Ready on emails by a custom field, then act on all matching.
	do(t, tab, "filter the ready list",
		chromedp.Navigate(base+"/queues/emails?tab=ready"),
		chromedp.WaitVisible(chromedp.CSS("#filter")),
		chromedp.SendKeys(chromedp.CSS("#f-field"), "tenant=acme"),
		submit("#apply-filter", "#matchbar"),
	)
	matched := text(t, tab, "#match-count")
	do(t, tab, "ask to reprioritise all matching",
		chromedp.Click(chromedp.CSS("#all-priority")),
		chromedp.WaitVisible(chromedp.CSS("#act-confirm")),
	)
	if got := text(t, tab, "#confirm-count"); got != matched {
		t.Fatalf("the confirmation names %s jobs, the filter matched %s", got, matched)
	}
	do(t, tab, "confirm priority 9",
		chromedp.SendKeys(chromedp.CSS(`input[name="priority"]`), "9"),
		submit("#confirm", "#flash"),
	)
	if got := text(t, tab, "#flash"); !strings.Contains(got, "Change priority of: "+matched+" jobs") && !strings.Contains(got, "Change priority of "+matched+" job") {
		t.Fatalf("flash after priority: %q", got)
	}
	e.read(func(eng engine.View) error {
		js, err := eng.ListReadyInOrder("emails", 0, 1)
		if err != nil || len(js) != 1 || js[0].Priority != 9 || js[0].Custom["tenant"] != "acme" {
			t.Errorf("the first job to hand out: %+v %v; want an acme job at priority 9", js, err)
		}
		return err
	})

	// Cancel a reserved job from the Reserved tab.
	do(t, tab, "cancel a reserved job",
		chromedp.Navigate(base+"/queues/images.resize?tab=reserved"),
		chromedp.WaitVisible(chromedp.CSS("#jobs")),
		chromedp.Click(chromedp.CSS(`#jobs tbody tr:first-child input[name="id"]`)),
		chromedp.Click(chromedp.CSS("#sel-cancel")),
		chromedp.WaitVisible(chromedp.CSS("#act-confirm")),
		chromedp.SendKeys(chromedp.CSS(`input[name="cancel_reason"]`), "host drained"),
		submit("#confirm", "#flash"),
	)
	if got := text(t, tab, "#flash"); !strings.Contains(got, "lease revoked, dead-lettered with cause cancelled") {
		t.Fatalf("flash after cancel: %q", got)
	}

	// Redrive the corrupt-image dead letters, fresh, into another queue.
	do(t, tab, "preview a redrive",
		chromedp.Navigate(base+"/redrive"),
		chromedp.WaitVisible(chromedp.CSS("#redrive-form")),
		chromedp.SendKeys(chromedp.CSS("#r-queue"), "images.resize"),
		chromedp.SendKeys(chromedp.CSS("#r-reason"), "corrupt"),
		chromedp.SetValue(chromedp.CSS("#r-mode"), "fresh"),
		chromedp.SendKeys(chromedp.CSS("#r-to"), "reports"),
		submit("#redrive-preview", "#preview"),
	)
	if got := text(t, tab, "#preview-count"); got != "3" {
		t.Fatalf("preview count %q, want 3 (one corrupt image every fifth step of 12)", got)
	}
	do(t, tab, "start it", submit("#start-redrive", "#flash"))
	if got := text(t, tab, "#flash"); !strings.Contains(got, "Started redrive task 1 (fresh replay): 3 records to move.") {
		t.Fatalf("flash after start: %q", got)
	}
	do(t, tab, "pause it", submit(`tr[data-task="1"] button[data-action="pause"]`, "#flash"))
	if got := text(t, tab, `tr[data-task="1"] .badge`); got != "paused" {
		t.Fatalf("task state %q after pause", got)
	}

	do(t, tab, "open the node page", submit(`nav.main a[href="/node"]`, "#node-raft"))
	if got := text(t, tab, "#node-version"); got != "test" {
		t.Fatalf("node version %q", got)
	}
}

// A viewer sees the new pages with no action buttons at all.
func TestBrowserViewerSeesNoJobActions(t *testing.T) {
	tab := newTab(t)
	e := newEnv(t, adminui.Options{Auth: true, Users: testUsers(t)}, week)
	base := e.srv.URL
	browserSignIn(t, tab, base, viewerName, viewerPass)
	for _, path := range []string{"/queues/emails?tab=ready&type=send_welcome", "/queues/emails?tab=dead&cause=rejected",
		fmt.Sprintf("/queues/emails/jobs/%d", e.jobs.ready1), "/redrive?preview=1&queue=emails", "/node"} {
		do(t, tab, "open "+path, chromedp.Navigate(base+path), chromedp.WaitVisible(chromedp.CSS("main")))
		if n := eval[int](t, tab, `document.querySelectorAll("main button[name=action], main form[method=post] button, #act-all, #redrive-start").length`); n != 0 {
			t.Errorf("%s shows a viewer %d action buttons", path, n)
		}
	}
}

// TestScreenshotsOps writes docs/ui-overview.png, docs/ui-queue.png,
// docs/ui-reserved.png, docs/ui-act-all.png, docs/ui-redrive.png and
// docs/ui-node.png. Run it with SEPP_SCREENSHOTS=1.
func TestScreenshotsOps(t *testing.T) {
	if os.Getenv("SEPP_SCREENSHOTS") != "1" {
		t.Skip("set SEPP_SCREENSHOTS=1 to write the docs/ screenshots")
	}
	tab := newTab(t)
	ring := adminui.NewRateRing(10*time.Second, time.Hour)
	e := newEnv(t, adminui.Options{}, week)
	traffic(t, e, ring, 90)
	h, err := adminui.New(threeNodes{e.backend}, adminui.Options{Auth: true, Users: testUsers(t), Clock: e.clock.Now, Rates: ring,
		Version: "v0.9.0", StartedAt: e.clock.Now().Add(-26 * time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	base := newServer(t, h)
	browserSignIn(t, tab, base, operatorName, operatorPass)
	if _, err := rpc.Propose(t.Context(), e.backend, engine.StartRedriveOp{Params: engine.RedriveParams{Selection: engine.RedriveSelection{Queue: "images.resize", ReasonContains: "corrupt"}, By: operatorName}}); err != nil {
		t.Fatal(err)
	}
	// Payloads counted on disk, under a disk budget, for the node page.
	e.backend.Engine(func(eng *engine.Engine) {
		eng.EnablePayloadsOffHeap(e.clock.Now())
		cfg := eng.Config()
		cfg.Limits.MaxDiskBytes = 1 << 30
		if err := eng.SetConfig(e.clock.Now(), cfg); err != nil {
			t.Fatal(err)
		}
	})
	dir := filepath.Join("..", "..", "docs")
	shot := func(file string) {
		t.Helper()
		var png []byte
		var err error
		if file == "ui-redrive.png" || file == "ui-node.png" {
			png, err = chromedp.Run(tab, chromedp.FullScreenshot(100))
		} else {
			png, err = chromedp.Run(tab, chromedp.CaptureScreenshot())
		}
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, file), png, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("wrote docs/%s (%d bytes)", file, len(png))
	}
	for _, s := range []struct{ file, path, ready string }{
		{"ui-overview.png", "/queues", "#charts"},
		{"ui-queue.png", "/queues/emails?tab=ready", "#charts"},
		{"ui-reserved.png", "/queues/images.resize?tab=reserved", "#jobs"},
		{"ui-redrive.png", "/redrive?preview=1&queue=images.resize&reason=corrupt", "#preview"},
		{"ui-node.png", "/node", "#node-raft"},
	} {
		do(t, tab, "open "+s.path, chromedp.Navigate(base+s.path), chromedp.WaitVisible(chromedp.CSS(s.ready)))
		shot(s.file)
	}
	do(t, tab, "ask to act on all matching",
		chromedp.Navigate(base+"/queues/emails?tab=ready&field=tenant%3Dglobex"),
		chromedp.WaitVisible(chromedp.CSS("#act-all")),
		chromedp.Click(chromedp.CSS("#all-reschedule")),
		chromedp.WaitVisible(chromedp.CSS("#act-confirm")))
	shot("ui-act-all.png")
}

// FollowerLag makes the screenshots' leader report its followers' lag.
func (n threeNodes) FollowerLag() map[string]uint64 {
	return map[string]uint64{"sepp-2": 0, "sepp-3": 4}
}
