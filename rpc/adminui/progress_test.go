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

// reportOn enqueues and reserves jobs of queue "exports", and has the
// worker of each report the progress given (nil: none).
func reportOn(t *testing.T, e *env, reports ...*engine.Progress) []engine.JobID {
	t.Helper()
	ctx, b := context.Background(), e.backend
	ids := make([]engine.JobID, len(reports))
	for i, p := range reports {
		res, err := rpc.Propose(ctx, b, engine.EnqueueOp{Params: engine.EnqueueParams{Queue: "exports", JobType: "csv", Payload: []byte(fmt.Sprintf(`{"account":%d}`, 1000+i))}})
		if err != nil {
			t.Fatal(err)
		}
		ds, err := rpc.Propose(ctx, b, engine.ReserveOp{Params: engine.ReserveParams{Queue: "exports", WorkerID: fmt.Sprint("worker-", i+1), N: 1, Lease: 5 * time.Minute}})
		if err != nil || len(ds) != 1 || ds[0].Job.ID != res.JobID {
			t.Fatalf("reserve: %v", err)
		}
		ids[i] = res.JobID
		if p == nil {
			continue
		}
		e.clock.Advance(time.Duration(700*(i+1)) * time.Millisecond)
		ref := engine.LeaseRef{JobID: ds[0].Job.ID, LeaseToken: ds[0].LeaseToken}
		if _, err := rpc.Propose(ctx, b, engine.ExtendLeaseOp{Params: engine.ExtendParams{LeaseRef: ref, Lease: 5 * time.Minute, Progress: p}}); err != nil {
			t.Fatal(err)
		}
	}
	return ids
}

// TestProgressOnJobPage: a reserved job's page shows its progress and
// message; the Reserved tab has a progress column.
func TestProgressOnJobPage(t *testing.T) {
	e := newEnv(t, adminui.Options{}, time.Hour)
	ids := reportOn(t, e, &engine.Progress{Percent: 42, Message: "exported 4,200 of 10,000 rows"}, nil)
	b := newBrowser(t, e.srv.URL)

	r := b.get("/queues/exports/jobs/" + fmt.Sprint(uint64(ids[0])))
	if r.status != http.StatusOK {
		t.Fatalf("job page: status %d:\n%s", r.status, r.body)
	}
	mustContain(t, "job page", html.UnescapeString(r.body), `id="progress"`, `value="42"`, "42%", "exported 4,200 of 10,000 rows")

	r = b.get("/queues/exports/jobs/" + fmt.Sprint(uint64(ids[1])))
	if r.status != http.StatusOK || strings.Contains(r.body, `id="progress"`) {
		t.Fatalf("a job without progress: status %d, shows a progress row", r.status)
	}

	r = b.get("/queues/exports?tab=reserved")
	mustContain(t, "reserved tab", html.UnescapeString(r.body), "<th>Progress</th>", "42%")
}

// TestScreenshotProgress writes docs/progress-job.png (a reserved job's
// page with its progress) and docs/progress.png (a queue's Reserved tab).
// Run it with SEPP_SCREENSHOTS=1.
func TestScreenshotProgress(t *testing.T) {
	if os.Getenv("SEPP_SCREENSHOTS") != "1" {
		t.Skip("set SEPP_SCREENSHOTS=1 to write the docs/ screenshots")
	}
	tab := newTab(t)
	e := newEnv(t, adminui.Options{Auth: true, Users: testUsers(t)}, week)
	ids := reportOn(t, e,
		&engine.Progress{Percent: 42, Message: "exported 4,200 of 10,000 rows"},
		&engine.Progress{Percent: 90, Message: "uploading to s3://exports/2026-12/"},
		nil,
		&engine.Progress{Percent: 5, Message: "querying"})
	e.clock.Advance(3 * time.Second)
	h, err := adminui.New(e.backend, adminui.Options{Auth: true, Users: testUsers(t), Clock: e.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	base := newServer(t, h)
	browserSignIn(t, tab, base, operatorName, operatorPass)
	dir := filepath.Join("..", "..", "docs")
	for _, s := range []struct{ file, path, ready string }{
		{"progress.png", "/queues/exports?tab=reserved", "#jobs"},
		{"progress-job.png", fmt.Sprintf("/queues/exports/jobs/%d", ids[0]), "#progress"},
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
