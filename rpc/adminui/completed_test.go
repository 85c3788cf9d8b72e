package adminui_test

import (
	"context"
	"fmt"
	"html"
	"net/http"
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

// completeOn creates queue "thumbnails", which keeps completed jobs a day,
// and completes one job on it with result.
func completeOn(t *testing.T, e *env, result []byte) engine.JobID {
	t.Helper()
	ctx, b := context.Background(), e.backend
	if _, err := rpc.Propose(ctx, b, engine.CreateQueueOp{Config: engine.QueueConfig{Name: "thumbnails", CompletedRetention: 24 * time.Hour}}); err != nil {
		t.Fatal(err)
	}
	res, err := rpc.Propose(ctx, b, engine.EnqueueOp{Params: engine.EnqueueParams{Queue: "thumbnails", JobType: "resize", Payload: []byte(`{"src":"cat.png"}`)}})
	if err != nil {
		t.Fatal(err)
	}
	ds, err := rpc.Propose(ctx, b, engine.ReserveOp{Params: engine.ReserveParams{Queue: "thumbnails", WorkerID: "worker-7", N: 1}})
	if err != nil || len(ds) != 1 {
		t.Fatalf("reserve: %v", err)
	}
	e.clock.Advance(1200 * time.Millisecond)
	if _, err := rpc.Propose(ctx, b, engine.AckOp{Ref: engine.LeaseRef{JobID: ds[0].Job.ID, LeaseToken: ds[0].LeaseToken}, Result: result}); err != nil {
		t.Fatal(err)
	}
	return res.JobID
}

// TestCompletedTabAndJobPage: a queue that keeps completed jobs lists them
// on its Completed tab with their result, and the job page shows the
// result and when the job completed, without job actions; a queue that
// keeps none says how to keep them.
func TestCompletedTabAndJobPage(t *testing.T) {
	e := newEnv(t, adminui.Options{}, time.Hour)
	id := completeOn(t, e, []byte(`{"width":640,"height":480}`))
	b := newBrowser(t, e.srv.URL)

	r := b.get("/queues/thumbnails?tab=completed")
	if r.status != http.StatusOK {
		t.Fatalf("completed tab: status %d:\n%s", r.status, r.body)
	}
	body := html.UnescapeString(r.body)
	mustContain(t, "completed tab", body, `id="tab-completed"`, "Completed", `{"width":640,"height":480}`, `<td class="num">1s</td>`, "/queues/thumbnails/jobs/")
	if strings.Contains(body, `id="sel-delete"`) {
		t.Error("the completed tab offers job actions")
	}

	r = b.get("/queues/thumbnails/jobs/" + fmt.Sprint(uint64(id)))
	if r.status != http.StatusOK {
		t.Fatalf("job page: status %d:\n%s", r.status, r.body)
	}
	body = html.UnescapeString(r.body)
	mustContain(t, "job page", body, `id="completed"`, "Result", "Completed at", "Ran for", `"width": 640`)
	if strings.Contains(body, `id="job-actions"`) {
		t.Error("a completed job's page offers job actions")
	}

	r = b.get("/queues/emails?tab=completed")
	mustContain(t, "completed tab of a queue keeping none", html.UnescapeString(r.body), "keeps no completed jobs", "completed_retention_ms")
}

// TestScreenshotCompleted writes docs/completed.png (a queue's Completed
// tab) and docs/completed-job.png (a completed job's page). Run it with
// SEPP_SCREENSHOTS=1.
func TestScreenshotCompleted(t *testing.T) {
	if os.Getenv("SEPP_SCREENSHOTS") != "1" {
		t.Skip("set SEPP_SCREENSHOTS=1 to write the docs/ screenshots")
	}
	tab := newTab(t)
	e := newEnv(t, adminui.Options{Auth: true, Users: testUsers(t)}, week)
	first := completeOn(t, e, []byte(`{"width":640,"height":480,"url":"https://cdn.example.com/t/cat-640.png"}`))
	ctx := t.Context()
	for i, result := range []string{`{"width":320,"height":240}`, "", `{"width":1280,"height":960}`} {
		res, err := rpc.Propose(ctx, e.backend, engine.EnqueueOp{Params: engine.EnqueueParams{Queue: "thumbnails", JobType: "resize", Payload: []byte(`{}`)}})
		if err != nil {
			t.Fatal(err)
		}
		ds, err := rpc.Propose(ctx, e.backend, engine.ReserveOp{Params: engine.ReserveParams{Queue: "thumbnails", WorkerID: fmt.Sprint("worker-", i), N: 1}})
		if err != nil || len(ds) != 1 || ds[0].Job.ID != res.JobID {
			t.Fatalf("reserve: %v", err)
		}
		e.clock.Advance(time.Duration(300+400*i) * time.Millisecond)
		if _, err := rpc.Propose(ctx, e.backend, engine.AckOp{Ref: engine.LeaseRef{JobID: ds[0].Job.ID, LeaseToken: ds[0].LeaseToken}, Result: []byte(result)}); err != nil {
			t.Fatal(err)
		}
	}
	e.clock.Advance(40 * time.Second)
	h, err := adminui.New(e.backend, adminui.Options{Auth: true, Users: testUsers(t), Clock: e.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	base := newServer(t, h)
	browserSignIn(t, tab, base, operatorName, operatorPass)
	dir := filepath.Join("..", "..", "docs")
	for _, s := range []struct{ file, path, ready string }{
		{"completed.png", "/queues/thumbnails?tab=completed", "#jobs"},
		{"completed-job.png", fmt.Sprintf("/queues/thumbnails/jobs/%d", first), "#completed"},
	} {
		do(t, tab, "open "+s.path, chromedp.Navigate(base+s.path), chromedp.WaitVisible(chromedp.CSS(s.ready)))
		png, err := chromedp.Run(tab, chromedp.CaptureScreenshot())
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, s.file), png, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("wrote docs/%s (%d bytes)", s.file, len(png))
	}
}
