package adminui_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/sepp-io/sepp/cluster"
	"github.com/sepp-io/sepp/engine"
	"github.com/sepp-io/sepp/rpc"
	"github.com/sepp-io/sepp/rpc/adminui"
	"github.com/sepp-io/sepp/rpc/rpctest"
)

// These tests drive a real headless Chromium through the UI. They skip,
// saying why, where no Chromium is installed; CI installs Debian's chromium.

func findChromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	const why = "no chromium, chromium-browser or google-chrome on PATH (apt-get install chromium)"
	if os.Getenv("SEPP_REQUIRE_ALL") != "" {
		t.Fatal("SEPP_REQUIRE_ALL is set (CI) but " + why)
	}
	t.Skip("browser test skipped: " + why)
	return ""
}

// newTab starts a headless browser with a fresh profile (no cookies) and
// returns a tab bounded by a deadline.
func newTab(t *testing.T) context.Context {
	t.Helper()
	path := findChromium(t)
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path),
		chromedp.NoSandbox, // CI runs as root, where Chromium's sandbox refuses to start
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.WindowSize(1280, 800),
	)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	t.Cleanup(cancel)
	actx, acancel := chromedp.NewExecAllocator(ctx, opts...)
	t.Cleanup(acancel)
	tab, tcancel := chromedp.NewContext(actx)
	t.Cleanup(tcancel)
	if err := chromedp.Do(tab, chromedp.EmulateViewport(1280, 800)); err != nil {
		t.Fatalf("start chromium (%s): %v", path, err)
	}
	return tab
}

func do(t *testing.T, tab context.Context, what string, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	if err := chromedp.Do(tab, steps...); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// submit clicks sel, which submits a form or follows a link, and waits
// until the page it loads shows want. Waiting for want alone races: the
// page being left may show it too (the flash of the previous action), and
// reading it while the browser swaps documents fails with "Cannot find
// context with specified id". So the old document is marked first and the
// wait is for an unmarked, loaded document holding want.
func submit(sel, want string) chromedp.Action[chromedp.Void] {
	return func(ctx context.Context, tgt *chromedp.Target) (chromedp.Void, error) {
		if _, err := chromedp.Evaluate[bool](`window.__seppLeaving = true`)(ctx, tgt); err != nil {
			return chromedp.Void{}, fmt.Errorf("mark the page before clicking %s: %w", sel, err)
		}
		if _, err := chromedp.Click(chromedp.CSS(sel))(ctx, tgt); err != nil {
			return chromedp.Void{}, err
		}
		loaded := fmt.Sprintf(`!window.__seppLeaving && document.readyState === "complete" && document.querySelector(%q) !== null`, want)
		for {
			// An error here is the document being swapped; ask again.
			if ok, err := chromedp.Evaluate[bool](loaded)(ctx, tgt); err == nil && ok {
				return chromedp.WaitVisible(chromedp.CSS(want))(ctx, tgt)
			}
			select {
			case <-ctx.Done():
				return chromedp.Void{}, fmt.Errorf("after clicking %s, no new page showing %s: %w", sel, want, ctx.Err())
			case <-time.After(20 * time.Millisecond):
			}
		}
	}
}

// text reads the text of sel. A click that follows a link returns once the
// new document shows the element, but the browser may still replace the
// node it found ("No node with given id found") while it finishes loading;
// such a read is asked again, for up to ten seconds.
func text(t *testing.T, tab context.Context, sel string) string {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		s, err := chromedp.Run(tab, chromedp.Text(chromedp.CSS(sel)))
		if err == nil {
			return s
		}
		if !documentSwapped(err) || time.Now().After(deadline) {
			t.Fatalf("text of %s: %v", sel, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// documentSwapped says whether err is the browser having replaced the
// document or node a read was aimed at.
func documentSwapped(err error) bool {
	msg := err.Error()
	return strings.Contains(msg, "No node with given id") || strings.Contains(msg, "Cannot find context with specified id")
}

func eval[T any](t *testing.T, tab context.Context, js string) T {
	t.Helper()
	v, err := chromedp.Run(tab, chromedp.Evaluate[T](js))
	if err != nil {
		t.Fatalf("evaluate %s: %v", js, err)
	}
	return v
}

func browserSignIn(t *testing.T, tab context.Context, base, name, pw string) {
	t.Helper()
	do(t, tab, "sign in as "+name,
		chromedp.Navigate(base+"/queues"),
		chromedp.WaitVisible(chromedp.CSS("#sign-in")),
		chromedp.SendKeys(chromedp.CSS("#name"), name),
		chromedp.SendKeys(chromedp.CSS("#password"), pw),
		chromedp.Click(chromedp.CSS("#sign-in")),
		chromedp.WaitVisible(chromedp.CSS("#queues")),
	)
}

func rowCount(t *testing.T, tab context.Context, form string) int {
	t.Helper()
	return eval[int](t, tab, fmt.Sprintf(`document.querySelectorAll(%q).length`, form+" tr[data-job]"))
}

// spec: DLQ-11
// spec: DLQ-12
// spec: DLQ-13
func TestBrowserOperatorRequeuesAndDeletes(t *testing.T) {
	tab := newTab(t)
	e := newEnv(t, adminui.Options{Auth: true, Users: testUsers(t)}, week)
	base := e.srv.URL
	rejected, exhausted := e.jobs.rejected, e.jobs.exhausted

	browserSignIn(t, tab, base, operatorName, operatorPass)

	// The Dead letters tab lists the four records; opening one shows the job.
	do(t, tab, "open the Dead letters tab",
		chromedp.Click(chromedp.CSS(`a[href="/queues/emails"]`)),
		chromedp.WaitVisible(chromedp.CSS("#tab-dead")),
		chromedp.Click(chromedp.CSS("#tab-dead")),
		chromedp.WaitVisible(chromedp.CSS("#dead-letters")),
	)
	if n := rowCount(t, tab, "#dead-letters"); n != 4 {
		t.Fatalf("dead letters listed: %d, want 4", n)
	}
	do(t, tab, "open a record",
		chromedp.Click(chromedp.CSS(fmt.Sprintf(`tr[data-job="%d"] a.job-link`, rejected))),
		chromedp.WaitVisible(chromedp.CSS("#death")),
	)
	if got := text(t, tab, "#job-id"); got != fmt.Sprint(uint64(rejected)) {
		t.Fatalf("record page shows job id %q, want %d", got, rejected)
	}
	for sel, want := range map[string]string{
		"#death":   "rejected",
		"#payload": `"to": "ada@example.com"`,
		"#custom":  "acme",
		"#history": "worker-7",
	} {
		if got := text(t, tab, sel); !strings.Contains(got, want) {
			t.Errorf("%s: %q, want it to contain %q", sel, got, want)
		}
	}

	// Requeue it from its page, through the confirmation.
	do(t, tab, "requeue the record",
		chromedp.Click(chromedp.CSS("#requeue-one")),
		chromedp.WaitVisible(chromedp.CSS("#confirm")),
		submit("#confirm", "#flash"),
	)
	if got := text(t, tab, "#flash"); !strings.Contains(got, fmt.Sprintf("Requeued 1 job #%d", rejected)) {
		t.Fatalf("flash after requeue: %q", got)
	}
	if n := rowCount(t, tab, "#dead-letters"); n != 3 {
		t.Fatalf("dead letters after requeue: %d, want 3", n)
	}

	// Select another in the list and delete it.
	do(t, tab, "delete a selected record",
		chromedp.Click(chromedp.CSS(fmt.Sprintf(`input[name="id"][value="%d"]`, exhausted))),
		chromedp.WaitEnabled(chromedp.CSS("#delete-selected")),
		chromedp.Click(chromedp.CSS("#delete-selected")),
		chromedp.WaitVisible(chromedp.CSS("#confirm")),
	)
	if got := text(t, tab, "#confirm-rows"); !strings.Contains(got, fmt.Sprintf("#%d", exhausted)) {
		t.Fatalf("confirmation lists %q, want job %d", got, exhausted)
	}
	do(t, tab, "confirm the delete",
		submit("#confirm", "#flash"),
	)
	if got := text(t, tab, "#flash"); !strings.Contains(got, fmt.Sprintf("Deleted 1 record #%d", exhausted)) {
		t.Fatalf("flash after delete: %q", got)
	}
	if n := rowCount(t, tab, "#dead-letters"); n != 2 {
		t.Fatalf("dead letters after delete: %d, want 2", n)
	}

	// The requeued job is back in Ready under its own id; the deleted one is gone.
	do(t, tab, "open the Ready tab",
		chromedp.Click(chromedp.CSS("#tab-ready")),
		chromedp.WaitVisible(chromedp.CSS("#jobs")),
	)
	if n := eval[int](t, tab, fmt.Sprintf(`document.querySelectorAll('#jobs tr[data-job="%d"]').length`, rejected)); n != 1 {
		t.Fatalf("requeued job %d not listed in Ready", rejected)
	}
	if j, err := e.job(rejected); err != nil || j.State != engine.StateReady {
		t.Fatalf("requeued job: %v %v", j.State, err)
	}
	if _, err := e.job(exhausted); !isNotFound(err) {
		t.Fatalf("deleted job still exists: %v", err)
	}
}

// spec: DLQ-15
func TestBrowserViewerHasNoActions(t *testing.T) {
	tab := newTab(t)
	e := newEnv(t, adminui.Options{Auth: true, Users: testUsers(t)}, week)
	base := e.srv.URL
	browserSignIn(t, tab, base, viewerName, viewerPass)

	do(t, tab, "open the Dead letters tab",
		chromedp.Navigate(base+"/queues/emails?tab=dead"),
		chromedp.WaitVisible(chromedp.CSS("#dead-letters")),
	)
	if n := rowCount(t, tab, "#dead-letters"); n != 4 {
		t.Fatalf("viewer sees %d dead letters, want 4", n)
	}
	absent := `["#requeue-selected","#delete-selected","#dead-letter-selected","#requeue-one","#delete-one","[data-action]",'input[name="id"]']` +
		`.filter(s => document.querySelector(s) !== null)`
	if found := eval[[]string](t, tab, absent); len(found) > 0 {
		t.Fatalf("viewer's Dead letters tab has action controls: %v", found)
	}
	do(t, tab, "open a record",
		chromedp.Navigate(fmt.Sprintf("%s/queues/emails/dead-letters/%d", base, e.jobs.rejected)),
		chromedp.WaitVisible(chromedp.CSS("#death")),
	)
	if found := eval[[]string](t, tab, absent); len(found) > 0 {
		t.Fatalf("viewer's record page has action controls: %v", found)
	}

	// Post the actions anyway, with the page's own CSRF token, as a hand-made
	// form would: the server refuses each one.
	before := e.digest()
	for _, tc := range actionCases(e) {
		js := fmt.Sprintf(`(() => {
			const f = document.createElement("form");
			f.method = "post"; f.action = %q;
			const add = (k, v) => { const i = document.createElement("input"); i.type = "hidden"; i.name = k; i.value = v; f.appendChild(i); };
			add("csrf", document.querySelector('input[name="csrf"]').value);
			%s
			document.body.appendChild(f); f.submit(); return true;
		})()`, tc.path, formJS(tc.form))
		do(t, tab, "submit "+tc.name,
			chromedp.Navigate(fmt.Sprintf("%s/queues/emails/dead-letters/%d", base, e.jobs.rejected)),
			chromedp.WaitVisible(chromedp.CSS("#death")),
		)
		eval[bool](t, tab, js)
		do(t, tab, "wait for the refusal of "+tc.name, chromedp.WaitVisible(chromedp.CSS("#error-message")))
		if title := eval[string](t, tab, "document.querySelector('h1').textContent"); !strings.Contains(title, "403") {
			t.Errorf("%s: page %q, want 403", tc.name, title)
		}
		if msg := text(t, tab, "#error-message"); !strings.Contains(msg, "Your role is viewer") {
			t.Errorf("%s: message %q", tc.name, msg)
		}
	}
	if e.digest() != before {
		t.Fatal("a viewer's action changed state")
	}
}

func formJS(form map[string][]string) string {
	var b strings.Builder
	for k, vs := range form {
		for _, v := range vs {
			fmt.Fprintf(&b, "add(%q, %q);\n", k, v)
		}
	}
	return b.String()
}

// threeNodes shows a healthy three-node cluster on the Cluster page of the
// screenshots; everything else is the LocalBackend's.
type threeNodes struct{ *rpctest.LocalBackend }

func (n threeNodes) Status(context.Context) (cluster.Status, error) {
	node := func(i int) cluster.NodeInfo {
		return cluster.NodeInfo{ID: fmt.Sprintf("sepp-%d", i), RaftAddr: fmt.Sprintf("10.0.0.%d:7050", i),
			GRPCAddr: fmt.Sprintf("10.0.0.%d:50051", i), HTTPAddr: fmt.Sprintf("10.0.0.%d:8080", i)}
	}
	return cluster.Status{
		Self: node(1), Leader: node(1), State: "Leader", Term: 4, CommitIndex: 18342, AppliedIndex: 18342, LastLogIndex: 18342,
		Members: []cluster.Member{
			{NodeInfo: node(1), Voter: true, Leader: true, Healthy: true},
			{NodeInfo: node(2), Voter: true, Healthy: true, LastContact: "12ms"},
			{NodeInfo: node(3), Voter: true, Healthy: true, LastContact: "9ms"},
		},
	}, nil
}

// TestScreenshots writes docs/cluster.png, docs/queues.png, docs/queue.png,
// docs/dead-letter.png and docs/queue-delete.png. Run it with SEPP_SCREENSHOTS=1.
func TestScreenshots(t *testing.T) {
	if os.Getenv("SEPP_SCREENSHOTS") != "1" {
		t.Skip("set SEPP_SCREENSHOTS=1 to write the docs/ screenshots")
	}
	tab := newTab(t)
	e := newEnv(t, adminui.Options{Auth: true, Users: testUsers(t)}, week)
	ctx := t.Context()
	// More queues and traffic, so the pages look like a working system.
	for i, q := range []string{"billing.invoices", "images.resize", "reports", "webhooks"} {
		for j := 0; j < 3+5*i; j++ {
			if _, err := rpc.Propose(ctx, e.backend, engine.EnqueueOp{Params: engine.EnqueueParams{Queue: q, JobType: "task", Payload: []byte(`{"n":1}`)}}); err != nil {
				t.Fatal(err)
			}
		}
	}
	if _, err := rpc.Propose(ctx, e.backend, engine.PauseQueueOp{Queue: "webhooks"}); err != nil {
		t.Fatal(err)
	}
	h, err := adminui.New(threeNodes{e.backend}, adminui.Options{
		Auth: true, Users: testUsers(t), Clock: e.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	base := newServer(t, h)
	browserSignIn(t, tab, base, operatorName, operatorPass)
	// A second visit ten seconds and some work later gives the Queues page rates.
	e.clock.Advance(10 * time.Second)
	for j := 0; j < 40; j++ {
		if _, err := rpc.Propose(ctx, e.backend, engine.EnqueueOp{Params: engine.EnqueueParams{Queue: "images.resize", JobType: "resize", Payload: []byte(`{}`)}}); err != nil {
			t.Fatal(err)
		}
	}
	ds, err := rpc.Propose(ctx, e.backend, engine.ReserveOp{Params: engine.ReserveParams{Queue: "images.resize", WorkerID: "w", N: 25}})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range ds {
		if _, err := rpc.Propose(ctx, e.backend, engine.AckOp{Ref: engine.LeaseRef{JobID: d.Job.ID, LeaseToken: d.LeaseToken}}); err != nil {
			t.Fatal(err)
		}
	}
	dir := filepath.Join("..", "..", "docs")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	shots := []struct{ file, path, ready string }{
		{"cluster.png", "/cluster", "#members"},
		{"queues.png", "/queues", "#queues"},
		{"queue.png", "/queues/emails?tab=dead", "#dead-letters"},
		{"dead-letter.png", fmt.Sprintf("/queues/emails/dead-letters/%d", e.jobs.rejected), "#death"},
	}
	for _, s := range shots {
		do(t, tab, "open "+s.path, chromedp.Navigate(base+s.path), chromedp.WaitVisible(chromedp.CSS(s.ready)))
		if s.file == "queue.png" {
			do(t, tab, "select a row", chromedp.Click(chromedp.CSS(fmt.Sprintf(`input[name="id"][value="%d"]`, e.jobs.exhausted))))
		}
		png, err := chromedp.Run(tab, chromedp.CaptureScreenshot())
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, s.file), png, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("wrote docs/%s (%d bytes)", s.file, len(png))
	}
	// The confirmation of a queue delete, reached by a POST from the list.
	do(t, tab, "ask to delete a queue", chromedp.Navigate(base+"/queues"), chromedp.WaitVisible(chromedp.CSS("#queues")),
		chromedp.Click(chromedp.CSS(`tr[data-queue="reports"] button[data-action="delete-queue"]`)),
		chromedp.WaitVisible(chromedp.CSS("#confirm-form")))
	png, err := chromedp.Run(tab, chromedp.CaptureScreenshot())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "queue-delete.png"), png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("wrote docs/queue-delete.png (%d bytes)", len(png))
}
