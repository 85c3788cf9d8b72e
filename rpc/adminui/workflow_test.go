package adminui_test

import (
	"context"
	"fmt"
	"html"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/sepp-io/sepp/engine"
	"github.com/sepp-io/sepp/rpc"
	"github.com/sepp-io/sepp/rpc/adminui"
)

// workflow names the jobs of workflowOn's batch.
type workflow struct {
	plan      engine.JobID    // on "video"
	renders   [3]engine.JobID // on "render", each after plan
	stitch    engine.JobID    // on "video", after the renders, runs anyway
	thumbnail engine.JobID    // on "video", after renders[1], cancelled if it fails
}

// workflowOn creates queue "render", which keeps completed jobs a day,
// and enqueues one batch: plan, then three renders after it, then stitch
// (a callback: run policy) after the three and a thumbnail (cancel
// policy) after the second render.
func workflowOn(t *testing.T, e *env) workflow {
	t.Helper()
	ctx, b := context.Background(), e.backend
	if _, err := rpc.Propose(ctx, b, engine.CreateQueueOp{Config: engine.QueueConfig{Name: "render", CompletedRetention: 24 * time.Hour}}); err != nil {
		t.Fatal(err)
	}
	items := []engine.EnqueueParams{{Queue: "video", JobType: "plan", Payload: []byte(`{"film":"intro","scenes":3}`)}}
	for i := 1; i <= 3; i++ {
		items = append(items, engine.EnqueueParams{Queue: "render", JobType: "render", Payload: []byte(fmt.Sprintf(`{"film":"intro","scene":%d}`, i)), After: []int{0}})
	}
	items = append(items,
		engine.EnqueueParams{Queue: "video", JobType: "stitch", Payload: []byte(`{"film":"intro","out":"s3://films/intro.mp4"}`), After: []int{1, 2, 3}, OnParentFailure: engine.ParentFailureRun},
		engine.EnqueueParams{Queue: "video", JobType: "thumbnail", Payload: []byte(`{"film":"intro","scene":2}`), After: []int{2}})
	res, err := rpc.Propose(ctx, b, engine.EnqueueBatchOp{Items: items})
	if err != nil {
		t.Fatal(err)
	}
	var ids []engine.JobID
	for i, r := range res {
		if r.Err != nil {
			t.Fatalf("item %d: %v", i, r.Err)
		}
		ids = append(ids, r.Result.JobID)
	}
	return workflow{plan: ids[0], renders: [3]engine.JobID{ids[1], ids[2], ids[3]}, stitch: ids[4], thumbnail: ids[5]}
}

// runNext reserves queue's next job, which must be id, and returns its
// lease.
func runNext(t *testing.T, e *env, queue string, id engine.JobID) engine.LeaseRef {
	t.Helper()
	ds, err := rpc.Propose(context.Background(), e.backend, engine.ReserveOp{Params: engine.ReserveParams{Queue: queue, WorkerID: "worker-3", N: 1, Lease: 5 * time.Minute}})
	if err != nil || len(ds) != 1 || ds[0].Job.ID != id {
		t.Fatalf("reserve %s: %v (%d deliveries), want job %d", queue, err, len(ds), id)
	}
	return engine.LeaseRef{JobID: id, LeaseToken: ds[0].LeaseToken}
}

func ack(t *testing.T, e *env, ref engine.LeaseRef) {
	t.Helper()
	if _, err := rpc.Propose(context.Background(), e.backend, engine.AckOp{Ref: ref}); err != nil {
		t.Fatal(err)
	}
}

// progressWorkflow runs w part way: plan and the first render complete,
// the second render dies (its thumbnail is cancelled), the third is
// reserved, so stitch still waits.
func progressWorkflow(t *testing.T, e *env, w workflow) engine.LeaseRef {
	t.Helper()
	ack(t, e, runNext(t, e, "video", w.plan))
	e.clock.Advance(4 * time.Second)
	ack(t, e, runNext(t, e, "render", w.renders[0]))
	e.clock.Advance(3 * time.Second)
	ref := runNext(t, e, "render", w.renders[1])
	if _, err := rpc.Propose(context.Background(), e.backend, engine.NackOp{Params: engine.NackParams{LeaseRef: ref,
		Directive: engine.DirectiveDeadLetter, Reason: "ffmpeg: corrupt frame 1184"}}); err != nil {
		t.Fatal(err)
	}
	third := runNext(t, e, "render", w.renders[2])
	e.clock.Advance(2 * time.Second)
	return third
}

// TestBlockedTab: the jobs of a workflow waiting for their parents are
// counted on the Queues page and the queue's Blocked tab, which lists
// them with how many parents each waits for and its policy, and offers
// only the actions the engine allows on a blocked job.
func TestBlockedTab(t *testing.T) {
	e := newEnv(t, adminui.Options{}, time.Hour)
	w := workflowOn(t, e)
	b := newBrowser(t, e.srv.URL)

	r := b.get("/queues")
	for queue, n := range map[string]int{"render": 3, "video": 2, "emails": 0} {
		re := regexp.MustCompile(fmt.Sprintf(`(?s)<tr data-queue="%s">.*?<a href="/queues/%s\?tab=blocked">(\d+)</a>`, queue, queue))
		m := re.FindStringSubmatch(r.body)
		if m == nil || m[1] != fmt.Sprint(n) {
			t.Errorf("queues page: %s's blocked count %v, want %d:\n%s", queue, m, n, r.body)
		}
	}
	mustContain(t, "queues page", r.body, `<th class="num" title="Jobs waiting for the jobs they were enqueued after to end">Blocked</th>`)

	r = b.get("/queues/render?tab=blocked")
	if r.status != http.StatusOK {
		t.Fatalf("blocked tab: status %d:\n%s", r.status, r.body)
	}
	body := html.UnescapeString(r.body)
	mustContain(t, "render's blocked tab", body, `id="tab-blocked" class="active"`, `Blocked <span class="count">3</span>`,
		"<th>Waits for</th>", "<b>1</b> of 1 parent", `<span class="badge policy-cancel">cancel</span>`,
		`id="sel-priority"`, `id="sel-delete"`, `id="dead-letter-selected"`)
	for _, id := range w.renders {
		mustContain(t, "render's blocked tab", body, fmt.Sprintf(`<tr data-job="%d">`, id), fmt.Sprintf(`href="/queues/render/jobs/%d"`, id))
	}
	mustNotContain(t, "render's blocked tab", body, `id="sel-reschedule"`, `id="sel-run-now"`, fmt.Sprintf(`<tr data-job="%d">`, w.plan))

	r = b.get("/queues/video?tab=blocked")
	body = html.UnescapeString(r.body)
	mustContain(t, "video's blocked tab", body, `Blocked <span class="count">2</span>`,
		fmt.Sprintf(`<tr data-job="%d">`, w.stitch), fmt.Sprintf(`<tr data-job="%d">`, w.thumbnail),
		"<b>3</b> of 3 parents", `<span class="badge policy-run">run anyway</span>`)
	mustNotContain(t, "video's blocked tab", body, fmt.Sprintf(`<tr data-job="%d">`, w.plan))

	// Once plan completes, the renders are ready: the tab is empty.
	ack(t, e, runNext(t, e, "video", w.plan))
	r = b.get("/queues/render?tab=blocked")
	mustContain(t, "render's blocked tab after plan completed", r.body, `Blocked <span class="count">0</span>`, "No blocked jobs on this queue.")
	r = b.get("/queues/render?tab=ready")
	mustContain(t, "render's ready tab after plan completed", r.body, fmt.Sprintf(`<tr data-job="%d">`, w.renders[0]))

	// A queue holding blocked jobs is not empty: deleting it asks to
	// delete them too.
	r = b.post("/queues/video/delete", url.Values{"csrf": {b.csrf("/queues")}})
	mustContain(t, "delete video confirmation", r.body, `<b id="held-blocked">2</b> blocked`, `id="force"`)
}

// TestJobPageParents: a blocked callback's page lists its parents with
// how each ended (completed, dead with its cause, or pending with its live
// state), links to those the engine holds, and its policy; once the last
// parent ends the job is released and the page says every parent ended.
// A cancel-policy dependent of the dead parent is dead-lettered with cause
// cancelled and a reason naming it.
func TestJobPageParents(t *testing.T) {
	e := newEnv(t, adminui.Options{}, time.Hour)
	w := workflowOn(t, e)
	third := progressWorkflow(t, e, w)
	b := newBrowser(t, e.srv.URL)

	r := b.get(fmt.Sprintf("/queues/video/jobs/%d", w.stitch))
	if r.status != http.StatusOK {
		t.Fatalf("stitch's page: status %d:\n%s", r.status, r.body)
	}
	body := html.UnescapeString(r.body)
	mustContain(t, "stitch's page", body, `<span class="badge state-blocked">blocked</span>`, `id="parents"`, "<h2>Waits for</h2>",
		"<b>1</b> of 3 still to end · <b>1</b> completed · <b>1</b> did not complete",
		`<span class="badge policy-run">run anyway</span>`)
	row := func(id engine.JobID) string {
		t.Helper()
		m := regexp.MustCompile(fmt.Sprintf(`(?s)<tr data-parent="%d">.*?</tr>`, id)).FindString(body)
		if m == "" {
			t.Fatalf("stitch's page: no row for parent %d:\n%s", id, body)
		}
		return m
	}
	mustContain(t, "completed parent's row", row(w.renders[0]), fmt.Sprintf(`href="/queues/render/jobs/%d"`, w.renders[0]), "render",
		`<span class="badge state-completed">completed</span>`)
	mustContain(t, "dead parent's row", row(w.renders[1]), fmt.Sprintf(`href="/queues/render/jobs/%d"`, w.renders[1]),
		`<span class="badge state-dead">dead</span>`, `<span class="cause cause-rejected">rejected</span>`, "ffmpeg: corrupt frame 1184")
	mustContain(t, "pending parent's row", row(w.renders[2]), fmt.Sprintf(`href="/queues/render/jobs/%d"`, w.renders[2]),
		"pending, now", `<span class="badge state-reserved">reserved</span>`)

	// A render's parent completed on a queue that keeps no results: shown,
	// not linked.
	r = b.get(fmt.Sprintf("/queues/render/jobs/%d", w.renders[2]))
	body = html.UnescapeString(r.body)
	mustContain(t, "third render's page", body, "<h2>Parents</h2>", "all 1 ended", fmt.Sprintf(`<b>#%d</b>`, w.plan),
		`<span class="badge state-completed">completed</span> <span class="muted small">its result is not kept</span>`,
		`<span class="badge policy-cancel">cancel</span>`)
	mustNotContain(t, "third render's page", body, fmt.Sprintf(`/jobs/%d"`, w.plan))

	// The thumbnail waited for the dead render with the cancel policy.
	r = b.get(fmt.Sprintf("/queues/video/jobs/%d", w.thumbnail))
	body = html.UnescapeString(r.body)
	mustContain(t, "thumbnail's page", body, "Dead letter #", `<span class="cause cause-cancelled">cancelled</span>`,
		"a job it waited for did not complete", fmt.Sprintf("parent job %d was dead-lettered (rejected)", w.renders[1]))

	// A job without parents shows no section.
	r = b.get(fmt.Sprintf("/queues/emails/jobs/%d", e.jobs.ready1))
	mustNotContain(t, "a job without parents", r.body, `id="parents"`)

	// The last render completes: stitch runs, whatever the outcomes.
	ack(t, e, third)
	r = b.get(fmt.Sprintf("/queues/video/jobs/%d", w.stitch))
	body = html.UnescapeString(r.body)
	mustContain(t, "stitch's page once released", body, `<span class="badge state-ready">ready</span>`, "<h2>Parents</h2>",
		"all 3 ended · <b>2</b> completed · <b>1</b> did not complete")
	mustNotContain(t, "stitch's page once released", body, "pending, now")
}

// TestJobPageChildren: a job's page lists the jobs still waiting for it,
// each linked to its page with its queue, type, state and how many of its
// parents it still waits for, so a workflow walks down from its first job;
// a job nothing waits for (a leaf, one that completed) has no section, and
// a child cancelled or released leaves its parents' lists.
func TestJobPageChildren(t *testing.T) {
	e := newEnv(t, adminui.Options{}, time.Hour)
	w := workflowOn(t, e)
	b := newBrowser(t, e.srv.URL)
	childRow := func(where, body string, id engine.JobID) string {
		t.Helper()
		m := regexp.MustCompile(fmt.Sprintf(`(?s)<tr data-child="%d">.*?</tr>`, id)).FindString(body)
		if m == "" {
			t.Fatalf("%s: no row for child %d:\n%s", where, id, body)
		}
		return m
	}

	r := b.get(fmt.Sprintf("/queues/video/jobs/%d", w.plan))
	if r.status != http.StatusOK {
		t.Fatalf("plan's page: status %d:\n%s", r.status, r.body)
	}
	body := html.UnescapeString(r.body)
	mustContain(t, "plan's page", body, `id="children"`, "<h2>Waiting for this job</h2>", "<b>3</b> jobs wait for this one to end")
	for _, id := range w.renders {
		mustContain(t, "plan's child row", childRow("plan's page", body, id), fmt.Sprintf(`href="/queues/render/jobs/%d"`, id),
			`<a href="/queues/render">render</a>`, `<span class="badge state-blocked">blocked</span>`, "<b>1</b> of 1 parent")
	}
	// Only its own children: stitch and the thumbnail wait for renders.
	mustNotContain(t, "plan's page", body, fmt.Sprintf(`<tr data-child="%d">`, w.stitch), fmt.Sprintf(`<tr data-child="%d">`, w.thumbnail), `id="children-more"`)

	r = b.get(fmt.Sprintf("/queues/render/jobs/%d", w.renders[1]))
	body = html.UnescapeString(r.body)
	mustContain(t, "second render's page", body, "<b>2</b> jobs wait for this one to end")
	mustContain(t, "stitch's row", childRow("second render's page", body, w.stitch), fmt.Sprintf(`href="/queues/video/jobs/%d"`, w.stitch), "stitch",
		`<span class="badge state-blocked">blocked</span>`, "<b>3</b> of 3 parents")
	mustContain(t, "thumbnail's row", childRow("second render's page", body, w.thumbnail), fmt.Sprintf(`href="/queues/video/jobs/%d"`, w.thumbnail), "thumbnail")

	// A leaf has no section.
	r = b.get(fmt.Sprintf("/queues/video/jobs/%d", w.stitch))
	mustNotContain(t, "stitch's page", r.body, `id="children"`)

	// Plan and the first render complete, the second dies (cancelling the
	// thumbnail), the third runs: the completed render (kept) lists none,
	// the third lists stitch alone.
	progressWorkflow(t, e, w)
	r = b.get(fmt.Sprintf("/queues/render/jobs/%d", w.renders[0]))
	body = html.UnescapeString(r.body)
	mustContain(t, "first render's page", body, `<span class="badge state-completed">completed</span>`)
	mustNotContain(t, "first render's page", body, `id="children"`)
	r = b.get(fmt.Sprintf("/queues/render/jobs/%d", w.renders[2]))
	body = html.UnescapeString(r.body)
	mustContain(t, "third render's page", body, "<b>1</b> job waits for this one to end")
	mustContain(t, "stitch's row", childRow("third render's page", body, w.stitch), "<b>1</b> of 3 parents")
	mustNotContain(t, "third render's page", body, fmt.Sprintf(`<tr data-child="%d">`, w.thumbnail))
}

// TestJobPageManyChildren: a job more jobs wait for than the page lists
// shows the first of them in id order and says how many more there are.
func TestJobPageManyChildren(t *testing.T) {
	e := newEnv(t, adminui.Options{}, time.Hour)
	const n = 53
	items := []engine.EnqueueParams{{Queue: "fan", JobType: "split"}}
	for i := range n {
		items = append(items, engine.EnqueueParams{Queue: "fan", JobType: "part", Payload: []byte(fmt.Sprintf(`{"part":%d}`, i)), After: []int{0}})
	}
	res, err := rpc.Propose(context.Background(), e.backend, engine.EnqueueBatchOp{Items: items})
	if err != nil {
		t.Fatal(err)
	}
	b := newBrowser(t, e.srv.URL)
	r := b.get(fmt.Sprintf("/queues/fan/jobs/%d", res[0].Result.JobID))
	body := html.UnescapeString(r.body)
	mustContain(t, "split's page", body, "<b>53</b> jobs wait for this one to end", `id="children-more">And 3 more children, not listed.`,
		fmt.Sprintf(`<tr data-child="%d">`, res[1].Result.JobID), fmt.Sprintf(`<tr data-child="%d">`, res[50].Result.JobID))
	mustNotContain(t, "split's page", body, fmt.Sprintf(`<tr data-child="%d">`, res[51].Result.JobID))
	if rows := strings.Count(body, "<tr data-child="); rows != 50 {
		t.Errorf("split's page lists %d children, want 50", rows)
	}
}

// TestScreenshotWorkflow writes two screenshots of one workflow:
// docs/workflow-children.png, the page of its first job (plan) with the
// three renders and the thumbnail waiting for it, and docs/workflow.png,
// the page of its fan-in callback (stitch, run policy) waiting for three
// renders, one completed, one dead-lettered and one still running. Run it
// with SEPP_SCREENSHOTS=1.
func TestScreenshotWorkflow(t *testing.T) {
	if os.Getenv("SEPP_SCREENSHOTS") != "1" {
		t.Skip("set SEPP_SCREENSHOTS=1 to write the docs/ screenshots")
	}
	tab := newTab(t)
	e := newEnv(t, adminui.Options{Auth: true, Users: testUsers(t)}, week)
	w := workflowOn(t, e)
	h, err := adminui.New(e.backend, adminui.Options{Auth: true, Users: testUsers(t), Clock: e.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	base := newServer(t, h)
	browserSignIn(t, tab, base, operatorName, operatorPass)
	screenshot := func(path, waitFor, file string) {
		t.Helper()
		do(t, tab, "open "+path, chromedp.Navigate(base+path), chromedp.WaitVisible(chromedp.CSS(waitFor)))
		png, err := chromedp.Run(tab, chromedp.CaptureScreenshot())
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join("..", "..", "docs", file), png, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("wrote docs/%s (%d bytes)", file, len(png))
	}
	e.clock.Advance(25 * time.Second)
	screenshot(fmt.Sprintf("/queues/video/jobs/%d", w.plan), "#children", "workflow-children.png")
	progressWorkflow(t, e, w)
	e.clock.Advance(40 * time.Second)
	screenshot(fmt.Sprintf("/queues/video/jobs/%d", w.stitch), "#parents", "workflow.png")
}

// TestJobPageManyParents: a callback waiting for more parents than the
// page lists shows the first of them, says how many more there are and
// counts every parent; a parent deleted before it ended shows as removed,
// and a cancel-policy dependent of it is cancelled naming it.
func TestJobPageManyParents(t *testing.T) {
	e := newEnv(t, adminui.Options{}, time.Hour)
	ctx := context.Background()
	const n = 52
	var items []engine.EnqueueParams
	after := make([]int, n)
	for i := range n {
		items = append(items, engine.EnqueueParams{Queue: "fan", JobType: "part", Payload: []byte(fmt.Sprintf(`{"part":%d}`, i))})
		after[i] = i
	}
	items = append(items,
		engine.EnqueueParams{Queue: "fan", JobType: "gather", After: after, OnParentFailure: engine.ParentFailureRun},
		engine.EnqueueParams{Queue: "fan", JobType: "check", After: []int{0}})
	res, err := rpc.Propose(ctx, e.backend, engine.EnqueueBatchOp{Items: items})
	if err != nil {
		t.Fatal(err)
	}
	first, gather, check := res[0].Result.JobID, res[n].Result.JobID, res[n+1].Result.JobID
	out, err := rpc.Propose(ctx, e.backend, engine.ActOnJobsOp{Params: engine.JobActionParams{Action: engine.JobActionDelete, IDs: []engine.JobID{first}}})
	if err != nil || out[0].Err != nil {
		t.Fatalf("delete job %d: %v %v", first, err, out)
	}
	b := newBrowser(t, e.srv.URL)

	r := b.get(fmt.Sprintf("/queues/fan/jobs/%d", gather))
	body := html.UnescapeString(r.body)
	mustContain(t, "gather's page", body, "<b>51</b> of 52 still to end · <b>0</b> completed · <b>1</b> did not complete",
		`id="parents-more">And 2 more parents, not listed.`,
		fmt.Sprintf(`<tr data-parent="%d">`, res[1].Result.JobID), `<span class="muted">pending, now</span> <span class="badge state-ready">ready</span>`)
	if rows := strings.Count(body, "<tr data-parent="); rows != 50 {
		t.Errorf("gather's page lists %d parents, want 50", rows)
	}
	m := regexp.MustCompile(fmt.Sprintf(`(?s)<tr data-parent="%d">.*?</tr>`, first)).FindString(body)
	mustContain(t, "the deleted parent's row", m, fmt.Sprintf(`<b>#%d</b>`, first), `<span class="badge state-removed">removed</span>`)
	mustNotContain(t, "the deleted parent's row", m, "href=")
	mustNotContain(t, "gather's page", body, fmt.Sprintf(`<tr data-parent="%d">`, res[n-1].Result.JobID))

	r = b.get(fmt.Sprintf("/queues/fan/dead-letters/%d", check))
	mustContain(t, "check's dead letter", html.UnescapeString(r.body), `<span class="cause cause-cancelled">cancelled</span>`,
		fmt.Sprintf("parent job %d was removed before it completed", first))
}

// TestBrowserWorkflow follows a workflow in a real browser: from the
// queue's Blocked tab to the callback's page, from its dead parent's row
// to that parent's dead-letter record, and from a running parent's page
// down to the callback waiting for it.
func TestBrowserWorkflow(t *testing.T) {
	tab := newTab(t)
	e := newEnv(t, adminui.Options{Auth: true, Users: testUsers(t)}, week)
	w := workflowOn(t, e)
	progressWorkflow(t, e, w)
	browserSignIn(t, tab, e.srv.URL, viewerName, viewerPass)
	do(t, tab, "open video", chromedp.Navigate(e.srv.URL+"/queues/video"), chromedp.WaitVisible(chromedp.CSS("#tab-blocked")))
	do(t, tab, "open the Blocked tab", submit("#tab-blocked", fmt.Sprintf(`tr[data-job="%d"]`, w.stitch)))
	do(t, tab, "open stitch", submit(fmt.Sprintf(`tr[data-job="%d"] a.job-link`, w.stitch), "#parents"))
	if got := text(t, tab, "#parents-summary"); got != "1 of 3 still to end · 1 completed · 1 did not complete" {
		t.Errorf("parents summary %q", got)
	}
	if got := text(t, tab, "#parent-policy"); !strings.HasPrefix(got, "run anyway") {
		t.Errorf("policy %q", got)
	}
	do(t, tab, "open the dead render", submit(fmt.Sprintf(`tr[data-parent="%d"] a.job-link`, w.renders[1]), "#death"))
	if got := text(t, tab, "#job-id"); got != fmt.Sprint(uint64(w.renders[1])) {
		t.Errorf("the dead parent's link opened job %q, want %d", got, w.renders[1])
	}

	// And down: from the running render to stitch, which waits for it.
	path := fmt.Sprintf("/queues/render/jobs/%d", w.renders[2])
	do(t, tab, "open the running render", chromedp.Navigate(e.srv.URL+path), chromedp.WaitVisible(chromedp.CSS("#children")))
	if got := text(t, tab, "#children-summary"); got != "1 job waits for this one to end" {
		t.Errorf("children summary %q", got)
	}
	do(t, tab, "open its child", submit(fmt.Sprintf(`tr[data-child="%d"] a.job-link`, w.stitch), "#parents"))
	if got := text(t, tab, "#job-id"); got != fmt.Sprint(uint64(w.stitch)) {
		t.Errorf("the child's link opened job %q, want %d", got, w.stitch)
	}
}
