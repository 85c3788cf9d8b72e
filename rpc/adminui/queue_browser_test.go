package adminui_test

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/sepp-io/sepp/engine"
	"github.com/sepp-io/sepp/rpc/adminui"
)

// An operator creates a queue from the New queue form, purges a queue's
// waiting jobs and deletes a queue through their confirmation pages, in a
// real browser.
func TestBrowserOperatorManagesQueues(t *testing.T) {
	tab := newTab(t)
	e := newEnv(t, adminui.Options{Auth: true, Users: testUsers(t)}, week)
	base := e.srv.URL
	browserSignIn(t, tab, base, operatorName, operatorPass)

	do(t, tab, "create a queue",
		chromedp.SendKeys(chromedp.CSS("#new-name"), "billing.invoices"),
		chromedp.SendKeys(chromedp.CSS("#new-priority"), "5"),
		chromedp.SendKeys(chromedp.CSS("#new-attempts"), "8"),
		chromedp.Click(chromedp.CSS("#new-paused")),
		chromedp.Click(chromedp.CSS("#create")),
		chromedp.WaitVisible(chromedp.CSS(`tr[data-queue="billing.invoices"]`)),
	)
	if got := text(t, tab, ".flash"); !strings.Contains(got, "Created queue billing.invoices, paused") {
		t.Fatalf("flash after create: %q", got)
	}
	if got := text(t, tab, `tr[data-queue="billing.invoices"] .badge`); got != "paused" {
		t.Fatalf("new queue's status %q, want paused", got)
	}
	e.read(func(en engine.View) error {
		for _, q := range en.Config().Queues {
			if q.Name == "billing.invoices" && (q.DefaultPriority == nil || *q.DefaultPriority != 5 || *q.DefaultMaxAttempts != 8) {
				t.Errorf("created queue's config %+v", q)
			}
		}
		return nil
	})

	// Purge the waiting jobs of emails: the confirmation shows the counts.
	do(t, tab, "ask to purge emails",
		chromedp.Click(chromedp.CSS(`tr[data-queue="emails"] button[data-action="purge-waiting"]`)),
		chromedp.WaitVisible(chromedp.CSS("#confirm-form")),
	)
	if got := text(t, tab, "h1"); got != "Purge waiting jobs emails?" {
		t.Fatalf("confirmation title %q", got)
	}
	do(t, tab, "confirm the purge", chromedp.Click(chromedp.CSS("#confirm")), chromedp.WaitVisible(chromedp.CSS("#queues")))
	if got := text(t, tab, ".flash"); !strings.Contains(got, "from queue emails; reserved jobs stay with their workers") {
		t.Fatalf("flash after purge: %q", got)
	}
	if got := text(t, tab, `tr[data-queue="emails"] td:nth-child(2)`); got != "0" {
		t.Fatalf("emails ready after purge: %q", got)
	}

	// Delete emails, which still holds a reserved job and dead letters:
	// refused unless forced.
	do(t, tab, "ask to delete emails",
		chromedp.Click(chromedp.CSS(`tr[data-queue="emails"] button[data-action="delete-queue"]`)),
		chromedp.WaitVisible(chromedp.CSS("#force")),
		chromedp.Click(chromedp.CSS("#force")),
		chromedp.Click(chromedp.CSS("#confirm")),
		chromedp.WaitVisible(chromedp.CSS("#queues")),
	)
	if got := text(t, tab, ".flash"); !strings.Contains(got, "Deleted queue emails") {
		t.Fatalf("flash after delete: %q", got)
	}
	if n := eval[int](t, tab, `document.querySelectorAll('tr[data-queue="emails"]').length`); n != 0 {
		t.Fatal("the deleted queue is still listed")
	}
}
