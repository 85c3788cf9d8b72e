package cli

import (
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestCLI_RawPayloadEnumNamesAndDelay(t *testing.T) {
	clearContextEnv(t)
	addr := startServer(t)
	payload := "line one\n\"quoted\"\ttab"
	mustRun(t, addr, "enqueue", "q", "t", "--payload", payload)
	if out := mustRun(t, addr, "jobs", "get", "1", "--raw"); out != payload {
		t.Fatalf("jobs get --raw = %q, want the payload bytes %q", out, payload)
	}
	if _, code := sepp(t, addr, "jobs", "get", "1", "--raw", "--json"); code != ExitUsage {
		t.Fatalf("--raw with --json: exit %d, want %d", code, ExitUsage)
	}
	ds := decode[[]map[string]any](t, mustRun(t, addr, "reserve", "q", "--json"))
	id := strconv.FormatFloat(ds[0]["job_id"].(float64), 'f', 0, 64)
	token := strconv.FormatFloat(ds[0]["lease_token"].(float64), 'f', 0, 64)
	mustRun(t, addr, "nack", id, token, "--dead-letter")
	if out := mustRun(t, addr, "dead-letters", "get", "1", "--raw"); out != payload {
		t.Fatalf("dead-letters get --raw = %q, want %q", out, payload)
	}

	info := decode[map[string]any](t, mustRun(t, addr, "info", "--json"))
	limits := info["limits"].(map[string]any)
	if limits["retry_backoff"] != "none" {
		t.Fatalf("info --json limits.retry_backoff = %v, want the name \"none\"", limits["retry_backoff"])
	}
	if limits["max_payload_bytes"].(float64) != 1048576 {
		t.Fatalf("info --json limits.max_payload_bytes = %v, want the number 1048576", limits["max_payload_bytes"])
	}

	before := time.Now()
	mustRun(t, addr, "enqueue", "q", "later", "--delay", "10m")
	job := decode[map[string]any](t, mustRun(t, addr, "jobs", "get", "2", "--json"))
	at, err := time.Parse(time.RFC3339Nano, job["scheduled_at"].(string))
	if err != nil || job["state"] != "scheduled" || at.Before(before.Add(10*time.Minute-time.Second)) || at.After(time.Now().Add(10*time.Minute+time.Second)) {
		t.Fatalf("enqueue --delay 10m: job %v (%v), want scheduled 10m from now", job, err)
	}
	for _, args := range [][]string{
		{"enqueue", "q", "t", "--delay", "1m", "--scheduled-at", "2030-01-02T03:04:05Z"},
		{"enqueue", "q", "t", "--delay", "-1m"},
		{"enqueue", "q", "t", "--delay", "soon"},
	} {
		if _, code := sepp(t, addr, args...); code != ExitUsage {
			t.Errorf("sepp %s: exit %d, want %d", strings.Join(args, " "), code, ExitUsage)
		}
	}
	if out := mustRun(t, addr, "queues"); !strings.Contains(out, "QUEUE") || strings.Contains(out, "ns") {
		t.Fatalf("queues table = %q", out)
	}
}

func TestCLI_CompletionOfQueuesAndStates(t *testing.T) {
	clearContextEnv(t)
	addr := startServer(t)
	mustRun(t, addr, "enqueue", "emails", "t")
	mustRun(t, addr, "enqueue", "reports", "t")
	tests := []struct {
		args []string
		want []string
		not  []string
	}{
		{[]string{"__complete", "pause", ""}, []string{"emails", "reports"}, nil},
		{[]string{"__complete", "enqueue", "em"}, []string{"emails"}, []string{"reports"}},
		{[]string{"__complete", "jobs", "list", "r"}, []string{"reports"}, []string{"emails"}},
		{[]string{"__complete", "jobs", "list", "emails", "--state", ""}, []string{"ready", "scheduled", "reserved"}, []string{"dead"}},
		{[]string{"__complete", "dead-letters", "drain", "--queue", ""}, []string{"emails", "reports"}, nil},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args[1:], "_"), func(t *testing.T) {
			// The address goes before the word being completed.
			args := append([]string{tt.args[0], tt.args[1], "--addr", addr}, tt.args[2:]...)
			out := mustRun(t, "", args...)
			lines := strings.Split(out, "\n")
			for _, w := range tt.want {
				if !contains(lines, w) {
					t.Errorf("completion %q lacks %q", out, w)
				}
			}
			for _, n := range tt.not {
				if contains(lines, n) {
					t.Errorf("completion %q offers %q", out, n)
				}
			}
		})
	}
}

func contains(lines []string, w string) bool {
	for _, l := range lines {
		if l == w {
			return true
		}
	}
	return false
}

func TestCLI_QueuesWatch(t *testing.T) {
	clearContextEnv(t)
	addr := startServer(t)
	mustRun(t, addr, "enqueue", "q", "t")
	out := mustRun(t, addr, "queues", "--watch", "--count", "3", "--interval", "1ms")
	if n := strings.Count(out, "\nQUEUE "); n != 3 {
		t.Fatalf("queues --watch --count 3 printed %d tables:\n%s", n, out)
	}
	lines := strings.Split(strings.TrimSpace(mustRun(t, addr, "queues", "--watch", "--count", "2", "--interval", "1ms", "--json")), "\n")
	if len(lines) != 2 {
		t.Fatalf("queues --watch --json printed %d lines, want one array a line:\n%s", len(lines), strings.Join(lines, "\n"))
	}
	for _, l := range lines {
		decode[[]map[string]any](t, l)
	}
	for _, args := range [][]string{
		{"queues", "--count", "2"},
		{"queues", "--watch", "--interval", "0s"},
		{"queues", "--watch", "--count", "-1"},
	} {
		if _, code := sepp(t, addr, args...); code != ExitUsage {
			t.Errorf("sepp %s: exit %d, want %d", strings.Join(args, " "), code, ExitUsage)
		}
	}
	if _, code := sepp(t, deadAddr(t), "queues", "--watch", "--count", "2", "--timeout", "300ms"); code != ExitUnavailable {
		t.Errorf("queues --watch against no server: exit %d, want %d", code, ExitUnavailable)
	}
}
