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

// `sepp enqueue --ttl` gives a job a deadline, `sepp info` shows a queue's
// max_wait and fairness key, reserve takes turns over the key's values, and
// `sepp queues create|update` set and drop both settings.
func TestCLI_ExpiryAndFairness(t *testing.T) {
	cfg := engine.DefaultConfig()
	cfg.Queues = []engine.QueueConfig{{Name: "mail", MaxWait: time.Hour, FairnessKey: "tenant"}}
	b, err := rpctest.NewLocalBackend(cfg, cluster.NodeInfo{ID: "n1", RaftAddr: "127.0.0.1:7000"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	addr := rpctest.Serve(t, b, rpc.Options{Version: "test"})
	for _, tenant := range []string{"a", "a", "a", "b"} {
		mustRun(t, addr, "enqueue", "mail", "send-"+tenant, "--custom", "tenant="+tenant, "--ttl", "10m")
	}
	info := mustRun(t, addr, "info")
	if !strings.Contains(info, `max_wait=1h0m0s fairness_key="tenant"`) {
		t.Fatalf("info = %q", info)
	}
	out := mustRun(t, addr, "reserve", "mail", "--max", "2")
	if !strings.Contains(out, "send-a") || !strings.Contains(out, "send-b") {
		t.Fatalf("reserve of 2 did not take turns: %q", out)
	}
	mustRun(t, addr, "queues", "create", "fair", "--max-wait", "30s", "--fairness-key", "customer")
	got := mustRun(t, addr, "queues", "get", "fair")
	if !strings.Contains(got, "max_wait") || !strings.Contains(got, "30s") || !strings.Contains(got, "customer") {
		t.Fatalf("queues get = %q", got)
	}
	mustRun(t, addr, "queues", "update", "fair", "--inherit", "fairness_key,max_wait_ms")
	if got := mustRun(t, addr, "queues", "get", "fair"); strings.Contains(got, "fairness_key") || strings.Contains(got, "max_wait") {
		t.Fatalf("queues get after inherit = %q", got)
	}
}
