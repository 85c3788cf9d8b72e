package cli

import (
	"strings"
	"testing"
	"time"
)

// sepp schedules create|list|get|update|pause|resume|delete against a real
// server (a LocalBackend on the wall clock, which has no scheduler loop:
// nothing fires here), with the exit codes of bad input, duplicates and
// unknown names.
func TestSchedulesCommands(t *testing.T) {
	addr := startServer(t)
	out := mustRun(t, addr, "schedules", "create", "nightly", "reports", "build", "--cron", "0 3 * * *", "--tz", "Europe/Berlin", "--payload", `{"k":1}`, "--custom", "tenant=acme")
	if !strings.Contains(out, "schedule nightly: cron 0 3 * * * (Europe/Berlin), active") || !strings.Contains(out, "job: queue reports, type build") ||
		strings.Count(out, "T02:00:00Z") != 5 {
		t.Fatalf("create: %q", out)
	}
	mustRun(t, addr, "schedules", "create", "heartbeat", "health", "ping", "--every", "30s", "--overlap", "allow", "--catch-up", "skip", "--paused")

	list := decode[map[string]any](t, mustRun(t, addr, "schedules", "list", "--json"))["schedules"].([]any)
	if len(list) != 2 {
		t.Fatalf("list: %v", list)
	}
	hb := list[0].(map[string]any)
	if hb["name"] != "heartbeat" || hb["interval_ms"].(float64) != 30000 || hb["overlap"] != "allow" || hb["catch_up"] != "skip" || hb["paused"] != true || len(hb["next_fire_times"].([]any)) != 0 {
		t.Fatalf("heartbeat: %v", hb)
	}
	if out := mustRun(t, addr, "schedules", "list"); !strings.Contains(out, "every 30s") || !strings.Contains(out, "cron 0 3 * * * (Europe/Berlin)") {
		t.Fatalf("list table: %q", out)
	}
	g := decode[map[string]any](t, mustRun(t, addr, "schedules", "get", "nightly", "--next", "3", "--json"))
	next := g["next_fire_times"].([]any)
	if len(next) != 3 || g["payload"] != `{"k":1}` || g["custom"].(map[string]any)["tenant"] != "acme" {
		t.Fatalf("get: %v", g)
	}
	first, err := time.Parse(time.RFC3339, next[0].(string))
	if err != nil || first.In(mustZone(t, "Europe/Berlin")).Hour() != 3 || !first.After(time.Now()) {
		t.Fatalf("first fire time %v (%v), want 03:00 Berlin, in the future", first, err)
	}

	// Schedule names complete (the address goes before the word completed).
	lines := strings.Split(mustRun(t, "", "__complete", "schedules", "--addr", addr, "pause", "ni"), "\n")
	if !contains(lines, "nightly") || contains(lines, "heartbeat") {
		t.Fatalf("completion of a schedule name: %q", lines)
	}

	if out := mustRun(t, addr, "schedules", "resume", "heartbeat"); !strings.Contains(out, "active") || !strings.Contains(out, "next: 20") {
		t.Fatalf("resume: %q", out)
	}
	if out := mustRun(t, addr, "schedules", "pause", "heartbeat"); !strings.Contains(out, "paused") || !strings.Contains(out, "next: -") {
		t.Fatalf("pause: %q", out)
	}
	if out := mustRun(t, addr, "schedules", "update", "nightly", "reports", "build", "--every", "1h"); !strings.Contains(out, "every 1h") {
		t.Fatalf("update: %q", out)
	}

	for _, tc := range []struct {
		args []string
		code int
	}{
		{[]string{"create", "x", "q", "t"}, ExitUsage},                                        // neither --cron nor --every
		{[]string{"create", "x", "q", "t", "--cron", "@daily", "--every", "1m"}, ExitUsage},   // both
		{[]string{"create", "x", "q", "t", "--every", "1m", "--overlap", "never"}, ExitUsage}, // unknown policy
		{[]string{"create", "x", "q", "t", "--cron", "61 * * * *"}, ExitRejected},             // bad cron
		{[]string{"create", "x", "q", "t", "--cron", "@daily", "--tz", "Mars/Olympus"}, ExitRejected},
		{[]string{"create", "x", "q", "t", "--every", "0s"}, ExitRejected},
		{[]string{"create", "nightly", "q", "t", "--every", "1m"}, ExitRejected}, // exists
		{[]string{"get", "nosuch"}, ExitNotFound},
		{[]string{"update", "nosuch", "q", "t", "--every", "1m"}, ExitNotFound},
		{[]string{"pause", "nosuch"}, ExitNotFound},
		{[]string{"delete", "nosuch"}, ExitNotFound},
	} {
		if out, code := sepp(t, addr, append([]string{"schedules"}, tc.args...)...); code != tc.code {
			t.Errorf("schedules %v: exit %d, want %d (%q)", tc.args, code, tc.code, out)
		}
	}
	if out := mustRun(t, addr, "schedules", "delete", "nightly"); !strings.Contains(out, "schedule nightly deleted") {
		t.Fatalf("delete: %q", out)
	}
	if list := decode[map[string]any](t, mustRun(t, addr, "schedules", "list", "--json"))["schedules"].([]any); len(list) != 1 {
		t.Fatalf("after the delete: %v", list)
	}
}

func mustZone(t *testing.T, name string) *time.Location {
	t.Helper()
	l, err := time.LoadLocation(name)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// schedules update changes the fields whose flags it is given and keeps
// every other one.
func TestSchedulesUpdate_KeepsFieldsNotGiven(t *testing.T) {
	addr := startServer(t)
	mustRun(t, addr, "schedules", "create", "nightly", "reports", "build", "--cron", "0 3 * * *", "--tz", "Europe/Berlin",
		"--payload", `{"k":1}`, "--custom", "tenant=acme", "--priority", "3", "--max-attempts", "4", "--overlap", "allow", "--catch-up", "skip")
	want := map[string]any{
		"queue": "reports", "job_type": "build", "cron": "0 3 * * *", "time_zone": "Europe/Berlin", "payload": `{"k":1}`,
		"priority": float64(3), "max_attempts": float64(4), "overlap": "allow", "catch_up": "skip",
	}
	tests := []struct {
		name   string
		args   []string
		change map[string]any
	}{
		{"Priority", []string{"--priority", "7"}, map[string]any{"priority": float64(7)}},
		{"Cron", []string{"--cron", "0 4 * * *"}, map[string]any{"cron": "0 4 * * *"}},
		{"JobTypeByFlag", []string{"--job-type", "rebuild"}, map[string]any{"job_type": "rebuild"}},
		{"Overlap", []string{"--overlap", "skip"}, map[string]any{"overlap": "skip"}},
		{"QueueAndTypeAsArguments", []string{"reports2", "build2"}, map[string]any{"queue": "reports2", "job_type": "build2"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mustRun(t, addr, append([]string{"schedules", "update", "nightly"}, tt.args...)...)
			for k, v := range tt.change {
				want[k] = v
			}
			got := decode[map[string]any](t, mustRun(t, addr, "schedules", "get", "nightly", "--json"))
			for k, v := range want {
				if got[k] != v {
					t.Errorf("%s = %v, want %v", k, got[k], v)
				}
			}
			if got["custom"].(map[string]any)["tenant"] != "acme" {
				t.Errorf("custom = %v, want tenant=acme kept", got["custom"])
			}
		})
	}
	if _, code := sepp(t, addr, "schedules", "update", "nightly"); code != ExitUsage {
		t.Errorf("update without a flag: exit %d, want %d", code, ExitUsage)
	}
	if _, code := sepp(t, addr, "schedules", "update", "nightly", "--every", "1m", "--cron", "@daily"); code != ExitUsage {
		t.Errorf("update with --cron and --every: exit %d, want %d", code, ExitUsage)
	}
	// --every replaces the cron spec (a schedule has one).
	got := decode[map[string]any](t, mustRun(t, addr, "schedules", "update", "nightly", "--every", "1h", "--json"))
	if got["interval_ms"] != float64(3600000) || got["cron"] != nil && got["cron"] != "" || got["priority"] != float64(7) {
		t.Errorf("after --every: %v", got)
	}
}

// schedules list keeps its columns in line whatever the length of a spec
// or a name.
func TestSchedulesList_ColumnsAligned(t *testing.T) {
	addr := startServer(t)
	mustRun(t, addr, "schedules", "create", "a", "q", "t", "--every", "1m")
	mustRun(t, addr, "schedules", "create", "a-schedule-with-a-rather-long-name", "reports", "build",
		"--cron", "0,15,30,45 1-5,10-12 * * mon-fri", "--tz", "America/Argentina/Buenos_Aires")
	lines := strings.Split(strings.TrimRight(mustRun(t, addr, "schedules", "list"), "\n"), "\n")
	if len(lines) != 3 {
		t.Fatalf("list: %q", lines)
	}
	for _, col := range []string{"QUEUE", "PAUSED", "NEXT"} {
		at := strings.Index(lines[0], col)
		for _, l := range lines[1:] {
			if at <= 0 || at >= len(l) || l[at-1] != ' ' || l[at] == ' ' {
				t.Errorf("column %s starts at %d in the header but not in %q", col, at, l)
			}
		}
	}
}
