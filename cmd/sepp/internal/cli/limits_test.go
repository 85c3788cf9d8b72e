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
