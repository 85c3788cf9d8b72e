package cli

import (
	"strconv"
	"strings"
	"testing"
)

// With dead-letter retention off (the server default), every place that
// would show a dead letter says the jobs are dropped, with the count.
func TestCLI_RetentionOffSaysDeadJobsAreDropped(t *testing.T) {
	clearContextEnv(t)
	addr, _ := startBackend(t) // engine.DefaultConfig: retention 0
	for range 2 {
		mustRun(t, addr, "enqueue", "q", "t")
		ds := decode[[]map[string]any](t, mustRun(t, addr, "reserve", "q", "--json"))
		id := strconv.FormatFloat(ds[0]["job_id"].(float64), 'f', 0, 64)
		token := strconv.FormatFloat(ds[0]["lease_token"].(float64), 'f', 0, 64)
		out := mustRun(t, addr, "nack", id, token, "--dead-letter")
		if !strings.Contains(out, "dead-lettered and dropped") || !strings.Contains(out, "retention is off") {
			t.Fatalf("nack with retention off = %q", out)
		}
	}
	mustRun(t, addr, "enqueue", "other", "t")

	for _, args := range [][]string{
		{"dead-letters", "list"},
		{"dead-letters", "drain", "--max", "10"},
	} {
		out := mustRun(t, addr, args...)
		if !strings.Contains(out, "dead jobs are dropped") || !strings.Contains(out, "the cluster has dropped 2") {
			t.Errorf("sepp %s = %q, want the drop and its count", strings.Join(args, " "), out)
		}
	}
	if out := mustRun(t, addr, "dead-letters", "drain", "--queue", "other"); !strings.Contains(out, "queue other has dropped 0") {
		t.Errorf("drain of a queue without drops = %q", out)
	}
	// --json stays a parseable (empty) array; the note goes to stderr.
	if got := decode[[]any](t, mustRun(t, addr, "dead-letters", "drain", "--json")); len(got) != 0 {
		t.Errorf("drain --json = %v", got)
	}
}

// With retention on, a dead-lettered nack points at the record and an empty
// listing says only that there is none.
func TestCLI_RetentionOnKeepsRecords(t *testing.T) {
	clearContextEnv(t)
	addr := startServer(t) // retention one hour
	mustRun(t, addr, "enqueue", "q", "t")
	ds := decode[[]map[string]any](t, mustRun(t, addr, "reserve", "q", "--json"))
	id := strconv.FormatFloat(ds[0]["job_id"].(float64), 'f', 0, 64)
	token := strconv.FormatFloat(ds[0]["lease_token"].(float64), 'f', 0, 64)
	res := decode[map[string]any](t, mustRun(t, addr, "nack", id, token, "--dead-letter", "--json"))
	if res["dead_lettered"] != true || res["record_kept"] != true {
		t.Fatalf("nack --json = %v", res)
	}
	mustRun(t, addr, "dead-letters", "drain", "--max", "10")
	if out := mustRun(t, addr, "dead-letters", "drain"); out != "no dead letters\n" {
		t.Fatalf("empty drain with retention on = %q", out)
	}
}
