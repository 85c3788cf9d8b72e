package cli

import (
	"strings"
	"testing"

	"github.com/sepp-io/sepp/cluster"
	"github.com/sepp-io/sepp/engine"
	"github.com/sepp-io/sepp/rpc"
	"github.com/sepp-io/sepp/rpc/rpctest"
)

// `sepp enqueue --unique...`: a repeat names the holder, --unique-conflict
// refuse exits 6 naming it, bad flags are usage errors.
func TestCLI_UniqueEnqueue(t *testing.T) {
	b, err := rpctest.NewLocalBackend(engine.DefaultConfig(), cluster.NodeInfo{ID: "n1", RaftAddr: "127.0.0.1:7000"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	addr := rpctest.Serve(t, b, rpc.Options{Version: "test"})
	first := decode[map[string]any](t, mustRun(t, addr, "enqueue", "reports", "build", "--payload", "r1", "--unique", "--json"))
	if first["duplicate"] != false {
		t.Fatalf("first = %v", first)
	}
	again := mustRun(t, addr, "enqueue", "reports", "build", "--payload", "r1", "--unique-completed-for", "10m")
	if !strings.Contains(again, "duplicate: job 1 (ready) holds this unique key") {
		t.Fatalf("again = %q", again)
	}
	if out := mustRun(t, addr, "enqueue", "reports", "build", "--payload", "r2", "--unique"); !strings.Contains(out, "enqueued job 2") {
		t.Fatalf("another payload = %q", out)
	}
	out, code := sepp(t, addr, "enqueue", "reports", "build", "--payload", "r1", "--unique-conflict", "refuse")
	if code != ExitRejected {
		t.Fatalf("refuse: exit %d, %q", code, out)
	}
	for _, args := range [][]string{
		{"--unique-conflict", "maybe"},
		{"--unique-key", "k", "--unique-field", "tenant"},
		{"--unique-completed-for", "-1s"},
	} {
		if out, code := sepp(t, addr, append([]string{"enqueue", "reports", "build"}, args...)...); code != ExitUsage {
			t.Fatalf("%v: exit %d, %q; want a usage error", args, code, out)
		}
	}
}
