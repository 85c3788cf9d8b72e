package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCLI_ContextsPickTheCluster(t *testing.T) {
	clearContextEnv(t)
	addr := startServer(t)
	dead := deadAddr(t)

	// Nothing set: the default address, where nothing listens in the test.
	if out := mustRun(t, "", "context", "ls"); !strings.Contains(out, "no contexts saved") {
		t.Fatalf("context ls with none = %q", out)
	}
	// SEPP_ADDR alone reaches the server.
	t.Setenv(EnvAddr, addr)
	mustRun(t, "", "enqueue", "q", "t")
	t.Setenv(EnvAddr, "")

	out := mustRun(t, "", "context", "save", "live", "--addr", addr, "--description", "the test server", "--select")
	if !strings.Contains(out, "saved context live") || !strings.Contains(out, "using context live") {
		t.Fatalf("context save = %q", out)
	}
	mustRun(t, "", "context", "save", "gone", "--addr", dead)
	info, err := os.Stat(filepath.Join(os.Getenv("XDG_CONFIG_HOME"), "sepp", "context", "live.json"))
	if err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("context file: %v, mode %v; want 0600", err, info)
	}

	// The selected context reaches the server.
	if qs := decode[[]map[string]any](t, mustRun(t, "", "queues", "--json")); len(qs) != 1 || qs[0]["name"] != "q" {
		t.Fatalf("queues through the selected context = %v", qs)
	}
	ls := mustRun(t, "", "context", "ls")
	if !strings.Contains(ls, "live*") || !strings.Contains(ls, "gone") || !strings.Contains(ls, "the test server") {
		t.Fatalf("context ls = %q", ls)
	}
	if show := decode[map[string]any](t, mustRun(t, "", "context", "show", "--json")); show["name"] != "live" {
		t.Fatalf("context show = %v", show)
	}

	tests := []struct {
		name string
		env  map[string]string
		args []string
		want int
	}{
		{"ExplicitContextBeatsSelected", nil, []string{"queues", "--context", "gone", "--timeout", "300ms"}, ExitUnavailable},
		{"FlagBeatsExplicitContext", nil, []string{"queues", "--context", "gone", "--addr", addr}, ExitOK},
		{"EnvAddrBeatsSelected", map[string]string{EnvAddr: dead}, []string{"queues", "--timeout", "300ms"}, ExitUnavailable},
		{"ExplicitContextBeatsEnvAddr", map[string]string{EnvAddr: dead}, []string{"queues", "--context", "live"}, ExitOK},
		{"EnvContextBeatsSelected", map[string]string{EnvContext: "gone"}, []string{"queues", "--timeout", "300ms"}, ExitUnavailable},
		{"UnknownContext", nil, []string{"queues", "--context", "nope"}, ExitNotFound},
		{"BadContextName", nil, []string{"context", "save", "../x", "--addr", addr}, ExitUsage},
		{"SaveRefusesAToken", nil, []string{"context", "save", "x", "--addr", addr, "--token", "secret"}, ExitUsage},
		{"SaveNeedsAddr", nil, []string{"context", "save", "x"}, ExitUsage},
		{"SaveBadAddr", nil, []string{"context", "save", "x", "--addr", "nohost"}, ExitUsage},
		{"SaveMissingCA", nil, []string{"context", "save", "x", "--addr", addr, "--ca", "/no/such/ca.pem"}, ExitUsage},
		{"UseUnknown", nil, []string{"context", "use", "nope"}, ExitNotFound},
		{"RmUnknown", nil, []string{"context", "rm", "nope"}, ExitNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			if _, code := sepp(t, "", tt.args...); code != tt.want {
				t.Fatalf("sepp %s: exit %d, want %d", strings.Join(tt.args, " "), code, tt.want)
			}
		})
	}

	// A context's token comes from the variable it names, never the file.
	mustRun(t, "", "context", "save", "tok", "--addr", addr, "--token-env", "TEST_SEPP_TOKEN")
	data, err := os.ReadFile(filepath.Join(os.Getenv("XDG_CONFIG_HOME"), "sepp", "context", "tok.json"))
	if err != nil || !strings.Contains(string(data), `"token_env": "TEST_SEPP_TOKEN"`) {
		t.Fatalf("tok.json = %s (%v)", data, err)
	}
	t.Setenv("TEST_SEPP_TOKEN", "")
	if _, code := sepp(t, "", "queues", "--context", "tok"); code != ExitUsage {
		t.Fatalf("a context whose token variable is unset: exit %d, want %d", code, ExitUsage)
	}
	t.Setenv("TEST_SEPP_TOKEN", "s3cret")
	mustRun(t, "", "queues", "--context", "tok") // loopback: a token may go in plaintext

	mustRun(t, "", "context", "use", "gone")
	mustRun(t, "", "context", "rm", "gone")
	if _, code := sepp(t, "", "context", "show"); code != ExitNotFound {
		t.Fatalf("show after removing the current context: exit %d, want %d", code, ExitNotFound)
	}
}
