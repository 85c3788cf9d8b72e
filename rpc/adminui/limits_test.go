package adminui_test

import (
	"testing"
	"time"

	"github.com/sepp-io/sepp/engine"
	"github.com/sepp-io/sepp/rpc/adminui"
)

// The queue page shows the queue's reserve limits and their use; a queue
// without limits shows none.
func TestQueuePageShowsReserveLimits(t *testing.T) {
	e := newEnv(t, adminui.Options{}, time.Hour)
	b := newBrowser(t, e.srv.URL)
	mustNotContain(t, "queue without limits", b.get("/queues/emails").body, `id="reserve-limits"`)
	e.backend.Engine(func(eng *engine.Engine) {
		cfg := eng.Config()
		cfg.Queues = append(cfg.Queues, engine.QueueConfig{Name: "emails", MaxReserved: 8, RateLimit: 20, RatePeriod: time.Minute, ConcurrencyKey: "customer", MaxPerKey: 2})
		if err := eng.SetConfig(e.clock.Now(), cfg); err != nil {
			t.Fatal(err)
		}
	})
	mustContain(t, "queue with limits", b.get("/queues/emails").body, `id="reserve-limits"`,
		"at most <b>8</b> reserved at once", "<b>20</b> reservations per 1m0s, burst 20, <b>20</b> available now",
		"at most <b>2</b> reserved per <code>customer</code>: 0 at the limit, <b>0</b> ready jobs waiting for their key")
}

// The queue page shows a queue's max_wait and fairness key, with the
// number of key values taking turns; a queue without them shows neither.
func TestQueuePageShowsExpiryAndFairness(t *testing.T) {
	e := newEnv(t, adminui.Options{}, time.Hour)
	b := newBrowser(t, e.srv.URL)
	mustNotContain(t, "queue without expiry or fairness", b.get("/queues/emails").body, `id="expiry-fairness"`)
	e.backend.Engine(func(eng *engine.Engine) {
		cfg := eng.Config()
		cfg.Queues = append(cfg.Queues, engine.QueueConfig{Name: "emails", MaxWait: 10 * time.Minute, FairnessKey: "tenant"})
		if err := eng.SetConfig(e.clock.Now(), cfg); err != nil {
			t.Fatal(err)
		}
	})
	mustContain(t, "queue with expiry and fairness", b.get("/queues/emails").body, `id="expiry-fairness"`,
		"within <b>10m</b> of being due dies as <code>expired</code>", "fairness by <code>tenant</code>: <b>")
}

// The node page shows the payload bytes held and, once payloads are
// counted on disk, the disk budget and its use; before, that they count in
// the memory budget. It shows the space the node's payload store takes
// and what its snapshots' checkpoints hold beyond it.
func TestNodePageShowsDiskBudget(t *testing.T) {
	e := newEnv(t, adminui.Options{}, time.Hour)
	b := newBrowser(t, e.srv.URL)
	mustContain(t, "payloads in the memory budget", b.get("/node").body, `id="node-disk"`, `id="disk-held">`,
		"counted in the memory budget above", `id="payload-store">`)
	var held int64
	e.backend.Engine(func(eng *engine.Engine) {
		eng.EnablePayloadsOffHeap(e.clock.Now())
		cfg := eng.Config()
		held = eng.DiskHeld()
		cfg.Limits.MaxDiskBytes = 4 * held
		if err := eng.SetConfig(e.clock.Now(), cfg); err != nil {
			t.Fatal(err)
		}
	})
	if held == 0 {
		t.Fatal("the test's jobs hold no payload bytes")
	}
	e.backend.SetDiskFigures(3<<20, 1<<20)
	body := b.get("/node").body
	mustContain(t, "payloads on disk", body, "(<b>25%</b>, <code>limits.max_disk_bytes</code>)",
		`id="payload-store">3.0 MiB</b>`, `id="checkpoint-pinned">1.0 MiB</b>`)
	mustNotContain(t, "payloads on disk", body, "counted in the memory budget above")
}
