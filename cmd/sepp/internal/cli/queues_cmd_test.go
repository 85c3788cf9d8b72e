package cli

import (
	"strings"
	"testing"
)

// sepp queues create|get|update|delete|purge against a real server.
func TestQueuesCommands(t *testing.T) {
	addr := startServer(t)

	out := mustRun(t, addr, "queues", "create", "emails", "--default-priority", "4", "--retry-delay", "1.5s",
		"--retry-backoff", "exponential", "--retry-delay-max", "1m", "--max-length", "50")
	if !strings.Contains(out, "created queue emails") || !strings.Contains(out, "retry_delay           1.5s") {
		t.Fatalf("create output:\n%s", out)
	}
	if _, code := sepp(t, addr, "queues", "create", "emails"); code != ExitRejected {
		t.Fatalf("second create: exit %d, want %d", code, ExitRejected)
	}
	if _, code := sepp(t, addr, "queues", "create", "bad", "--default-priority", "12"); code != ExitRejected {
		t.Fatalf("create with priority 12: exit %d, want %d", code, ExitRejected)
	}

	mustRun(t, addr, "enqueue", "emails", "t")
	got := decode[map[string]any](t, mustRun(t, addr, "queues", "get", "emails", "--json"))
	settings := got["settings"].(map[string]any)
	if got["ready"] != float64(1) || got["configured"] != true || settings["default_priority"] != float64(4) || settings["retry_delay_ms"] != float64(1500) {
		t.Fatalf("get: %v", got)
	}

	upd := decode[map[string]any](t, mustRun(t, addr, "queues", "update", "emails", "--inherit", "default_priority", "--max-length", "0", "--paused", "--json"))
	if eff := upd["effective"].(map[string]any); eff["default_priority"] != float64(0) || eff["max_length"] != float64(0) {
		t.Fatalf("update: %v", upd)
	}
	if qs := decode[[]map[string]any](t, mustRun(t, addr, "queues", "--json")); qs[0]["paused"] != true {
		t.Fatalf("after update --paused: %v", qs)
	}

	// No ghost queues.
	for _, args := range [][]string{
		{"pause", "nosuchqueue"}, {"resume", "nosuchqueue"}, {"queues", "get", "nosuchqueue"},
		{"queues", "update", "nosuchqueue", "--paused"}, {"queues", "delete", "nosuchqueue"},
		{"queues", "purge", "nosuchqueue", "--waiting"},
	} {
		if _, code := sepp(t, addr, args...); code != ExitNotFound {
			t.Errorf("sepp %s: exit %d, want %d", strings.Join(args, " "), code, ExitNotFound)
		}
	}
	if qs := decode[[]map[string]any](t, mustRun(t, addr, "queues", "--json")); len(qs) != 1 {
		t.Fatalf("queues after operations on unknown ones: %v", qs)
	}

	if _, code := sepp(t, addr, "queues", "delete", "emails"); code != ExitLeaseLost {
		t.Fatalf("delete of a queue holding a job: exit %d, want %d", code, ExitLeaseLost)
	}
	if _, code := sepp(t, addr, "queues", "purge", "emails"); code != ExitUsage {
		t.Fatalf("purge without a target: exit %d, want %d", code, ExitUsage)
	}
	if out := mustRun(t, addr, "queues", "purge", "emails", "--waiting"); !strings.Contains(out, "purged 1 waiting jobs from queue emails") {
		t.Fatalf("purge: %q", out)
	}
	mustRun(t, addr, "enqueue", "emails", "t")
	del := decode[map[string]any](t, mustRun(t, addr, "queues", "delete", "emails", "--force", "--json"))
	if del["jobs_removed"] != float64(1) {
		t.Fatalf("forced delete: %v", del)
	}
	if qs := decode[[]map[string]any](t, mustRun(t, addr, "queues", "--json")); len(qs) != 0 {
		t.Fatalf("queues after delete: %v", qs)
	}
}

// queues get shows, per setting, the queue's own value beside the
// effective one: a setting the queue leaves to the global value reads "-"
// in its own column and the global value in the effective one.
func TestQueuesGet_OwnBesideEffective(t *testing.T) {
	addr := startServer(t)
	mustRun(t, addr, "queues", "create", "mail", "--max-length", "50", "--default-priority", "7")
	out := mustRun(t, addr, "queues", "get", "mail")
	rows := map[string][]string{}
	for _, l := range strings.Split(out, "\n") {
		if f := strings.Fields(l); len(f) == 3 {
			rows[f[0]] = f[1:]
		}
	}
	for setting, want := range map[string][2]string{
		"SETTING":              {"QUEUE", "EFFECTIVE"},
		"max_length":           {"50", "50"},
		"default_priority":     {"7", "7"},
		"default_max_attempts": {"-", "3"},
	} {
		if got := rows[setting]; len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
			t.Errorf("%s: %v, want own %q, effective %q\n%s", setting, got, want[0], want[1], out)
		}
	}
}
