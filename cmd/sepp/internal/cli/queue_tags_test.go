package cli

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/sepp-io/sepp/cluster"
	"github.com/sepp-io/sepp/engine"
	"github.com/sepp-io/sepp/rpc"
	"github.com/sepp-io/sepp/rpc/rpctest"
)

// `sepp queues create|update --tags` set a queue's tags (an update replaces
// the set), `sepp queues get` prints them, `sepp queues --tag` lists the
// queues with every tag given, and --inherit tags drops them.
func TestCLI_QueueTags(t *testing.T) {
	b, err := rpctest.NewLocalBackend(engine.DefaultConfig(), cluster.NodeInfo{ID: "n1", RaftAddr: "127.0.0.1:7000"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	addr := rpctest.Serve(t, b, rpc.Options{Version: "test"})
	mustRun(t, addr, "queues", "create", "billing", "--tags", "team=payments,env=prod")
	mustRun(t, addr, "queues", "create", "scratch", "--tags", "env=dev")
	if got := mustRun(t, addr, "queues", "get", "billing"); !strings.Contains(got, "tags: env=prod,team=payments") {
		t.Fatalf("queues get = %q", got)
	}
	names := func(args ...string) []string {
		t.Helper()
		var qs []struct {
			Name string            `json:"name"`
			Tags map[string]string `json:"tags"`
		}
		if err := json.Unmarshal([]byte(mustRun(t, addr, append([]string{"queues", "--json"}, args...)...)), &qs); err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, q := range qs {
			out = append(out, q.Name)
		}
		return out
	}
	if got := names("--tag", "env=prod"); len(got) != 1 || got[0] != "billing" {
		t.Fatalf("queues --tag env=prod: %v", got)
	}
	if got := names("--tag", "env", "--tag", "team"); len(got) != 1 || got[0] != "billing" {
		t.Fatalf("queues --tag env --tag team: %v", got)
	}
	mustRun(t, addr, "queues", "update", "scratch", "--tags", "env=prod")
	if got := names("--tag", "env=prod"); len(got) != 2 {
		t.Fatalf("after retagging scratch, env=prod: %v", got)
	}
	mustRun(t, addr, "queues", "update", "billing", "--inherit", "tags")
	if got := mustRun(t, addr, "queues", "get", "billing"); strings.Contains(got, "tags:") {
		t.Fatalf("queues get after inherit = %q", got)
	}
}
