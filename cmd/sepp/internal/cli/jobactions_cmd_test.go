package cli

import (
	"strconv"
	"strings"
	"testing"
)

// sepp jobs priority|reschedule|run-now|delete against a real server.
func TestJobActionCommands(t *testing.T) {
	addr := startServer(t)
	first := decode[map[string]any](t, mustRun(t, addr, "enqueue", "q", "t", "--json"))["job_id"].(float64)
	second := decode[map[string]any](t, mustRun(t, addr, "enqueue", "q", "t", "--json"))["job_id"].(float64)
	a, b := strconv.Itoa(int(first)), strconv.Itoa(int(second))

	if out := mustRun(t, addr, "jobs", "priority", b, "--priority", "9"); !strings.Contains(out, "reprioritised job "+b) {
		t.Fatalf("priority: %q", out)
	}
	if _, code := sepp(t, addr, "jobs", "priority", b, "--priority", "10"); code != ExitRejected {
		t.Fatalf("priority 10: exit %d, want %d", code, ExitRejected)
	}
	if out := mustRun(t, addr, "jobs", "reschedule", a, "--in", "1h"); !strings.Contains(out, "rescheduled job "+a) {
		t.Fatalf("reschedule: %q", out)
	}
	if got := decode[map[string]any](t, mustRun(t, addr, "jobs", "get", a, "--json")); got["state"] != "scheduled" {
		t.Fatalf("after reschedule: %v", got)
	}
	if _, code := sepp(t, addr, "jobs", "reschedule", a); code != ExitUsage {
		t.Fatalf("reschedule without a time: exit %d, want %d", code, ExitUsage)
	}
	mustRun(t, addr, "jobs", "run-now", a)
	if got := decode[map[string]any](t, mustRun(t, addr, "jobs", "get", a, "--json")); got["state"] != "ready" {
		t.Fatalf("after run-now: %v", got)
	}
	mustRun(t, addr, "jobs", "delete", a)
	if _, code := sepp(t, addr, "jobs", "get", a); code != ExitNotFound {
		t.Fatalf("get of a deleted job: exit %d, want %d", code, ExitNotFound)
	}
	if _, code := sepp(t, addr, "jobs", "delete", "999"); code != ExitNotFound {
		t.Fatalf("delete of an unknown job: exit %d, want %d", code, ExitNotFound)
	}
}

// sepp jobs cancel against a real server: a reserved job's lease is revoked
// (the worker's ack is refused), it becomes a dead letter with cause
// cancelled, or is gone with --delete; a waiting job is refused.
func TestJobCancelCommand(t *testing.T) {
	addr := startServer(t)
	var ids []string
	for range 3 {
		ids = append(ids, strconv.Itoa(int(decode[map[string]any](t, mustRun(t, addr, "enqueue", "q", "t", "--json"))["job_id"].(float64))))
	}
	ds := decode[[]map[string]any](t, mustRun(t, addr, "reserve", "q", "--max", "2", "--json"))
	if len(ds) != 2 {
		t.Fatalf("reserved %v", ds)
	}
	id := func(d map[string]any) string { return strconv.Itoa(int(d["job_id"].(float64))) }
	a, b := id(ds[0]), id(ds[1])
	if out := mustRun(t, addr, "jobs", "cancel", a, "--reason", "bad input"); !strings.Contains(out, "cancelled job "+a) {
		t.Fatalf("cancel: %q", out)
	}
	rec := decode[map[string]any](t, mustRun(t, addr, "dead-letters", "get", a, "--json"))
	if rec["cause"] != "cancelled" || rec["last_reason"] != "bad input" {
		t.Fatalf("dead letter after cancel: %v", rec)
	}
	mustRun(t, addr, "jobs", "cancel", b, "--delete")
	if _, code := sepp(t, addr, "jobs", "get", b); code != ExitNotFound {
		t.Fatalf("get of a cancelled and deleted job: exit %d, want %d", code, ExitNotFound)
	}
	if _, code := sepp(t, addr, "dead-letters", "get", b); code != ExitNotFound {
		t.Fatalf("dead letter of a cancelled and deleted job: exit %d, want %d", code, ExitNotFound)
	}
	if a != ids[0] || b != ids[1] {
		t.Fatalf("reserved %s, %s; want the first two of %v", a, b, ids)
	}
	if out, code, err := seppErr(t, addr, "jobs", "cancel", ids[2]); code != ExitLeaseLost || err == nil || !strings.Contains(err.Error(), "not reserved") || out != "" {
		t.Fatalf("cancel of a waiting job: exit %d, stdout %q, error %v; want exit %d, the reason in the error only", code, out, err, ExitLeaseLost)
	}
}
