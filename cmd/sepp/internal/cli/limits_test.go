package cli

import (
	"strings"
	"testing"
	"time"

	"github.com/sepp-io/sepp/cluster"
	"github.com/sepp-io/sepp/engine"
	"github.com/sepp-io/sepp/rpc"
	"github.com/sepp-io/sepp/rpc/rpctest"
)

// `sepp info` shows a queue's reserve limits and `sepp queues --json` their
// use.
func TestCLI_ReserveLimits(t *testing.T) {
	cfg := engine.DefaultConfig()
	// A token per 6 minutes: none returns during the test.
	cfg.Queues = []engine.QueueConfig{{Name: "mail", MaxReserved: 4, RateLimit: 10, RatePeriod: time.Hour, ConcurrencyKey: "customer", MaxPerKey: 1}}
	b, err := rpctest.NewLocalBackend(cfg, cluster.NodeInfo{ID: "n1", RaftAddr: "127.0.0.1:7000"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	addr := rpctest.Serve(t, b, rpc.Options{Version: "test"})
	mustRun(t, addr, "enqueue", "mail", "send", "--custom", "customer=acme")
	mustRun(t, addr, "enqueue", "mail", "send", "--custom", "customer=acme")
	if out := mustRun(t, addr, "reserve", "mail", "--max", "5"); strings.Count(out, "send") != 1 {
		t.Fatalf("reserve past max_per_key 1 = %q", out)
	}
	info := mustRun(t, addr, "info")
	if !strings.Contains(info, `max_reserved=4 rate_limit=10/1h0m0s burst=10 max_per_key=1 (concurrency_key "customer")`) {
		t.Fatalf("info = %q", info)
	}
	qs := decode[[]map[string]any](t, mustRun(t, addr, "queues", "--json"))
	if len(qs) != 1 || qs[0]["held_by_key"].(float64) != 1 || qs[0]["keys_at_limit"].(float64) != 1 || qs[0]["rate_tokens"].(float64) != 9 {
		t.Fatalf("queues --json = %v", qs)
	}
}

// `sepp queues create|update` set a queue's reserve limits at runtime: the
// next reserve is held back at once, `queues get` shows them (and --json
// carries them), 0 and --inherit drop them, and a value out of bounds is
// refused naming the field and the bound.
func TestCLI_QueueReserveLimitsAtRuntime(t *testing.T) {
	addr := startServer(t)
	mustRun(t, addr, "queues", "create", "invoices", "--max-reserved", "1")
	for range 3 {
		mustRun(t, addr, "enqueue", "invoices", "charge", "--custom", "customer=acme")
	}
	if out := mustRun(t, addr, "reserve", "invoices", "--max", "5"); strings.Count(out, "charge") != 1 {
		t.Fatalf("reserve under --max-reserved 1 = %q", out)
	}

	out := mustRun(t, addr, "queues", "update", "invoices", "--max-reserved", "3", "--concurrency-key", "customer", "--max-per-key", "2",
		"--rate-limit", "5", "--rate-period", "1m")
	for _, want := range []string{"max_reserved", "3", "concurrency_key", "customer", "max_per_key", "rate_limit", "rate_period", "1m0s", "rate_burst"} {
		if !strings.Contains(out, want) {
			t.Fatalf("queues update output lacks %q: %q", want, out)
		}
	}
	// acme has one reserved and may have two: one more, not two.
	if out := mustRun(t, addr, "reserve", "invoices", "--max", "5"); strings.Count(out, "charge") != 1 {
		t.Fatalf("reserve under max_per_key 2 = %q", out)
	}
	got := decode[map[string]any](t, mustRun(t, addr, "queues", "get", "invoices", "--json"))
	own := got["settings"].(map[string]any)
	if own["max_reserved"].(float64) != 3 || own["concurrency_key"] != "customer" || own["max_per_key"].(float64) != 2 ||
		own["rate_limit"].(float64) != 5 || own["rate_period_ms"].(float64) != 60000 || own["rate_burst"] != nil {
		t.Fatalf("queues get --json settings = %v", own)
	}
	if eff := got["effective"].(map[string]any); eff["rate_burst"].(float64) != 5 {
		t.Fatalf("effective rate_burst = %v, want the rate limit", eff["rate_burst"])
	}

	out, code, err := seppErr(t, addr, "queues", "update", "invoices", "--max-reserved", "2000000")
	if code == ExitOK || err == nil || !strings.Contains(err.Error(), "settings.max_reserved") || !strings.Contains(err.Error(), "1000000") {
		t.Fatalf("an out-of-bounds max_reserved: exit %d, %v, %q", code, err, out)
	}

	mustRun(t, addr, "queues", "update", "invoices", "--max-reserved", "0", "--inherit", "concurrency_key,max_per_key,rate_limit,rate_period_ms")
	table := mustRun(t, addr, "queues", "get", "invoices")
	for _, gone := range []string{"max_reserved", "rate_limit", "concurrency_key", "max_per_key"} {
		if strings.Contains(table, gone) {
			t.Fatalf("queues get after dropping the limits still lists %s: %q", gone, table)
		}
	}
	if out := mustRun(t, addr, "reserve", "invoices", "--max", "5"); strings.Count(out, "charge") != 1 {
		t.Fatalf("reserve without limits = %q, want the last job", out)
	}
}
