package adminui_test

import (
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/sepp-io/sepp/engine"
	"github.com/sepp-io/sepp/rpc/adminui"
)

// An operator creates a tagged queue from the New queue form, tags another
// on its page, and narrows the Queues list by tag: by the filter's input
// and by clicking a chip, every term having to match; a term it cannot
// read shows every queue with a notice. With SEPP_TAGS_SCREENSHOT set to a
// file name, the filtered list is captured there.
func TestBrowserQueueTags(t *testing.T) {
	tab := newTab(t)
	e := newEnv(t, adminui.Options{Auth: true, Users: testUsers(t)}, week)
	base := e.srv.URL
	browserSignIn(t, tab, base, operatorName, operatorPass)

	do(t, tab, "create a tagged queue",
		chromedp.SendKeys(chromedp.CSS("#new-name"), "billing.invoices"),
		chromedp.SetValue(chromedp.CSS("#new-tags"), "team=payments\nenv=prod\n"),
		submit("#create", `tr[data-queue="billing.invoices"]`),
	)
	if got := eval[[]string](t, tab, `Array.from(document.querySelectorAll('tr[data-queue="billing.invoices"] .chip')).map(c => c.textContent)`); !reflect.DeepEqual(got, []string{"env=prod", "team=payments"}) {
		t.Fatalf("chips of the new queue %q, want env=prod and team=payments, sorted", got)
	}

	do(t, tab, "tag emails on its page",
		chromedp.Navigate(base+"/queues/emails"),
		chromedp.WaitVisible(chromedp.CSS("#tags-form")),
		chromedp.SetValue(chromedp.CSS("#tags-text"), "team=growth\nenv=prod"),
		submit("#set-tags-button", "#queue-tags"),
	)
	if got := text(t, tab, ".flash"); !strings.Contains(got, "Set 2 tags on queue emails") {
		t.Fatalf("flash after setting tags: %q", got)
	}
	e.read(func(en engine.View) error {
		for _, q := range en.Config().Queues {
			if q.Name == "emails" && !reflect.DeepEqual(q.Tags, []engine.Tag{{Key: "env", Value: "prod"}, {Key: "team", Value: "growth"}}) {
				t.Errorf("emails' tags %v", q.Tags)
			}
		}
		return nil
	})

	rows := func() []string {
		t.Helper()
		return eval[[]string](t, tab, `Array.from(document.querySelectorAll('#queues tbody tr[data-queue]')).map(r => r.dataset.queue)`)
	}
	do(t, tab, "filter by env=prod",
		chromedp.Navigate(base+"/queues"),
		chromedp.WaitVisible(chromedp.CSS("#tag-filter-input")),
		chromedp.SendKeys(chromedp.CSS("#tag-filter-input"), "env=prod"),
		submit("#tag-filter-apply", "#tag-filter-clear"),
	)
	if got := rows(); !reflect.DeepEqual(got, []string{"billing.invoices", "emails"}) {
		t.Fatalf("queues tagged env=prod: %v", got)
	}
	do(t, tab, "narrow by the chip team=payments",
		submit(`tr[data-queue="billing.invoices"] .chip[href*="payments"]`, "#tag-filter-clear"),
	)
	if got := rows(); !reflect.DeepEqual(got, []string{"billing.invoices"}) {
		t.Fatalf("queues tagged env=prod and team=payments: %v", got)
	}
	if got := eval[[]string](t, tab, `Array.from(document.querySelectorAll('#tag-filter .chip.active')).map(c => c.dataset.term)`); !reflect.DeepEqual(got, []string{"env=prod", "team=payments"}) {
		t.Fatalf("filter terms shown %v", got)
	}
	if path := os.Getenv("SEPP_TAGS_SCREENSHOT"); path != "" {
		png, err := chromedp.Run(tab, chromedp.CaptureScreenshot())
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	do(t, tab, "filter by a term without a key",
		chromedp.Navigate(base+"/queues?tag=%3Dprod"),
		chromedp.WaitVisible(chromedp.CSS("#tag-filter-error")),
	)
	if got := len(rows()); got < 3 {
		t.Fatalf("a bad term left %d queues listed, want every queue", got)
	}
}
