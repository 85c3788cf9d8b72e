package cli

import (
	"strconv"
	"strings"
	"testing"
)

// sepp dead-letters redrive (dry run and start) and sepp redrives
// list|get|pause|resume|cancel against a real server (a LocalBackend, which
// has no leader loop: the task moves nothing by itself here).
func TestRedriveCommands(t *testing.T) {
	addr := startServer(t)
	var ids []string
	for range 3 {
		id := decode[map[string]any](t, mustRun(t, addr, "enqueue", "q", "email", "--json"))["job_id"].(float64)
		ids = append(ids, strconv.Itoa(int(id)))
	}
	mustRun(t, addr, append([]string{"jobs", "dead-letter", "--reason", "smtp down"}, ids...)...)

	dry := decode[map[string]any](t, mustRun(t, addr, "dead-letters", "redrive", "--queue", "q", "--cause", "admin", "--reason-contains", "smtp", "--dry-run", "--json"))
	if dry["matching"].(float64) != 3 || len(dry["sample"].([]any)) != 3 {
		t.Fatalf("dry run: %v", dry)
	}
	if out := mustRun(t, addr, "dead-letters", "redrive", "--type", "sms", "--dry-run"); !strings.Contains(out, "0 dead letters match") {
		t.Fatalf("dry run without matches: %q", out)
	}
	for _, bad := range [][]string{
		{"--cause", "nosuch"},
		{"--failed-after", "yesterday"},
		{"--to", "other"},
	} {
		if _, code := sepp(t, addr, append([]string{"dead-letters", "redrive"}, bad...)...); code != ExitUsage {
			t.Fatalf("redrive %v: exit %d, want %d", bad, code, ExitUsage)
		}
	}
	if _, code := sepp(t, addr, "dead-letters", "redrive", "--rate", "20000"); code != ExitRejected {
		t.Fatalf("rate 20000: exit %d, want %d", code, ExitRejected)
	}

	if out := mustRun(t, addr, "dead-letters", "redrive", "--queue", "q", "--rate", "5"); !strings.Contains(out, "redrive 1 started: 3 dead letters to move at 5/s") {
		t.Fatalf("start: %q", out)
	}
	if out := mustRun(t, addr, "redrives", "pause", "1"); !strings.Contains(out, "redrive 1: paused") {
		t.Fatalf("pause: %q", out)
	}
	if _, code := sepp(t, addr, "redrives", "pause", "1"); code == 0 {
		t.Fatal("pausing a paused redrive succeeded")
	}
	mustRun(t, addr, "redrives", "resume", "1")
	if out := mustRun(t, addr, "redrives", "cancel", "1"); !strings.Contains(out, "redrive 1: cancelled") || !strings.Contains(out, "ended") {
		t.Fatalf("cancel: %q", out)
	}
	list := decode[map[string]any](t, mustRun(t, addr, "redrives", "list", "--json"))["redrives"].([]any)
	if len(list) != 1 || list[0].(map[string]any)["state"] != "cancelled" || list[0].(map[string]any)["queue"] != "q" {
		t.Fatalf("list: %v", list)
	}
	if out := mustRun(t, addr, "redrives", "list"); !strings.Contains(out, "queue=q") {
		t.Fatalf("list table: %q", out)
	}
	if _, code := sepp(t, addr, "redrives", "get", "2"); code != ExitNotFound {
		t.Fatalf("get of an unknown redrive: exit %d, want %d", code, ExitNotFound)
	}
}

// TestRedriveCommands_CancelledAndExpiredCauses: --cause takes every cause
// a dead letter can have (cancelled and expired included), help and
// completion list them, and a cancelled task's record says what it left
// and who acted with auth off.
func TestRedriveCommands_CancelledAndExpiredCauses(t *testing.T) {
	addr := startServer(t)
	id := decode[map[string]any](t, mustRun(t, addr, "enqueue", "q", "email", "--json"))["job_id"].(float64)
	mustRun(t, addr, "reserve", "q")
	mustRun(t, addr, "jobs", "cancel", strconv.Itoa(int(id)))

	dry := decode[map[string]any](t, mustRun(t, addr, "dead-letters", "redrive", "--cause", "cancelled", "--dry-run", "--json"))
	if dry["matching"].(float64) != 1 {
		t.Fatalf("dry run of cause cancelled: %v", dry)
	}
	if out := mustRun(t, addr, "dead-letters", "redrive", "--cause", "expired", "--dry-run"); !strings.Contains(out, "0 dead letters match") {
		t.Fatalf("dry run of cause expired: %q", out)
	}
	_, code, err := seppErr(t, addr, "dead-letters", "redrive", "--cause", "nosuch")
	if code != ExitUsage || err == nil || err.Error() != `--cause: "nosuch" is not attempts_exhausted, rejected, lease_expired, admin, cancelled or expired` {
		t.Fatalf("bad cause: exit %d, %v", code, err)
	}
	if out := mustRun(t, "", "dead-letters", "redrive", "--help"); !strings.Contains(out, "only this cause: attempts_exhausted, rejected, lease_expired, admin, cancelled or expired") {
		t.Fatalf("help does not list every cause:\n%s", out)
	}
	if out := mustRun(t, "", "__complete", "dead-letters", "redrive", "--cause", ""); !strings.Contains(out, "cancelled\nexpired\n") {
		t.Fatalf("completion of --cause:\n%s", out)
	}

	mustRun(t, addr, "dead-letters", "redrive", "--cause", "cancelled")
	out := mustRun(t, addr, "redrives", "cancel", "1")
	if !strings.Contains(out, "redrive 1: cancelled, 0 moved, 1 not moved") || !strings.Contains(out, "by anonymous (127.0.0.1:") {
		t.Fatalf("cancelled task's record: %q", out)
	}
}
