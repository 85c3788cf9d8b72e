package adminui_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/sepp-io/sepp/rpc/adminui"
)

// An operator opens a schedule from the Schedules page, sees its next fire
// times, pauses and resumes it, and deletes another through its
// confirmation, in a real browser. With SEPP_SCREENSHOTS=1 the schedule's
// page is saved as docs/schedules.png.
func TestBrowserOperatorManagesSchedules(t *testing.T) {
	tab := newTab(t)
	e := newEnv(t, adminui.Options{Auth: true, Users: testUsers(t)}, week)
	createSchedules(t, e)
	base := e.srv.URL
	browserSignIn(t, tab, base, operatorName, operatorPass)

	do(t, tab, "open the Schedules page", chromedp.Navigate(base+"/schedules"), chromedp.WaitVisible(chromedp.CSS("#schedules")))
	if got := text(t, tab, `tr[data-schedule="nightly-report"] td:nth-child(2)`); got != "0 3 * * * (Europe/Berlin)" {
		t.Fatalf("spec cell %q", got)
	}
	do(t, tab, "open nightly-report",
		chromedp.Click(chromedp.CSS(`tr[data-schedule="nightly-report"] a`)),
		chromedp.WaitVisible(chromedp.CSS("#next-fires")),
	)
	if n := eval[int](t, tab, `document.querySelectorAll('#next-fires li').length`); n != 5 {
		t.Fatalf("%d next fire times shown, want 5", n)
	}
	if os.Getenv("SEPP_SCREENSHOTS") == "1" {
		png, err := chromedp.Run(tab, chromedp.CaptureScreenshot())
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join("..", "..", "docs", "schedules.png"), png, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("wrote docs/schedules.png (%d bytes)", len(png))
	}
	do(t, tab, "pause it",
		chromedp.Click(chromedp.CSS(`button[data-action="pause-schedule"]`)),
		chromedp.WaitVisible(chromedp.CSS(`button[data-action="resume-schedule"]`)),
	)
	if got := text(t, tab, ".flash"); !strings.Contains(got, "Paused schedule nightly-report") {
		t.Fatalf("flash after pause: %q", got)
	}
	if n := eval[int](t, tab, `document.querySelectorAll('#next-fires li').length`); n != 0 {
		t.Fatalf("a paused schedule shows %d next fire times", n)
	}
	do(t, tab, "resume it",
		chromedp.Click(chromedp.CSS(`button[data-action="resume-schedule"]`)),
		chromedp.WaitVisible(chromedp.CSS(`button[data-action="pause-schedule"]`)),
	)
	do(t, tab, "delete heartbeat",
		chromedp.Navigate(base+"/schedules"), chromedp.WaitVisible(chromedp.CSS("#schedules")),
		chromedp.Click(chromedp.CSS(`tr[data-schedule="heartbeat"] button[data-action="delete-schedule"]`)),
		chromedp.WaitVisible(chromedp.CSS("#confirm-delete")),
		chromedp.Click(chromedp.CSS("#confirm")),
		chromedp.WaitVisible(chromedp.CSS("#schedules")),
	)
	if got := text(t, tab, ".flash"); !strings.Contains(got, "Deleted schedule heartbeat") {
		t.Fatalf("flash after delete: %q", got)
	}
	if n := eval[int](t, tab, `document.querySelectorAll('tr[data-schedule="heartbeat"]').length`); n != 0 {
		t.Fatal("the deleted schedule is still listed")
	}
}
