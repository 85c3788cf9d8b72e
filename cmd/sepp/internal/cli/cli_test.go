package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/sepp-io/sepp/cluster"
	"github.com/sepp-io/sepp/engine"
	"github.com/sepp-io/sepp/rpc"
	"github.com/sepp-io/sepp/rpc/rpctest"
)

// startServer serves a real engine (wall clock) with dead-letter retention.
func startServer(t *testing.T) string {
	t.Helper()
	cfg := engine.DefaultConfig()
	cfg.Limits.DeadLetterRetention = time.Hour
	b, err := rpctest.NewLocalBackend(cfg, cluster.NodeInfo{ID: "n1", RaftAddr: "127.0.0.1:7000"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return rpctest.Serve(t, b, rpc.Options{Version: "test"})
}

// sepp runs the operator commands in-process like the binary does and
// returns stdout and the exit code main would use.
func sepp(t *testing.T, addr string, args ...string) (string, int) {
	t.Helper()
	out, code, _ := seppErr(t, addr, args...)
	return out, code
}

// seppErr is sepp that also returns the error main would print after its
// "sepp: " prefix.
func seppErr(t *testing.T, addr string, args ...string) (string, int, error) {
	t.Helper()
	root := &cobra.Command{Use: "sepp", SilenceErrors: true, SilenceUsage: true}
	root.AddCommand(Commands()...)
	var out, errOut bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&errOut)
	if addr != "" {
		args = append(args, "--addr", addr)
	}
	root.SetArgs(args)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err := root.ExecuteContext(ctx)
	code := ExitOK
	if err != nil {
		code = ExitError
		var coded interface{ ExitCode() int }
		if errors.As(err, &coded) {
			code = coded.ExitCode()
		}
		t.Logf("sepp %s: %v (exit %d)", strings.Join(args, " "), err, code)
	}
	return out.String(), code, err
}

func mustRun(t *testing.T, addr string, args ...string) string {
	t.Helper()
	out, code := sepp(t, addr, args...)
	if code != ExitOK {
		t.Fatalf("sepp %s: exit %d, output %q", strings.Join(args, " "), code, out)
	}
	return out
}

func decode[T any](t *testing.T, out string) T {
	t.Helper()
	var v T
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("output is not the JSON expected: %v\n%s", err, out)
	}
	return v
}

func TestCLI_ProduceReserveAckNack(t *testing.T) {
	addr := startServer(t)

	out := mustRun(t, addr, "enqueue", "emails", "welcome", "--payload", `{"user":42}`, "--priority", "9", "--custom", "tenant=acme")
	if !strings.HasPrefix(out, "enqueued job 1 (ready)") {
		t.Fatalf("enqueue output = %q", out)
	}
	enq := decode[map[string]any](t, mustRun(t, addr, "enqueue", "emails", "welcome", "--json", "--idempotency-key", "k1"))
	if enq["job_id"].(float64) != 2 || enq["state"] != "ready" || enq["duplicate"] != false {
		t.Fatalf("enqueue --json = %v", enq)
	}
	again := decode[map[string]any](t, mustRun(t, addr, "enqueue", "emails", "welcome", "--json", "--idempotency-key", "k1"))
	if again["duplicate"] != true || again["job_id"].(float64) != 2 {
		t.Fatalf("repeat with the same key = %v, want duplicate of job 2", again)
	}

	type delivery struct {
		JobID       uint64 `json:"job_id"`
		LeaseToken  uint64 `json:"lease_token"`
		Attempt     uint32 `json:"attempt"`
		MaxAttempts uint32 `json:"max_attempts"`
		Job         struct {
			Payload  string            `json:"payload"`
			Priority uint32            `json:"priority"`
			Custom   map[string]string `json:"custom"`
		} `json:"job"`
	}
	ds := decode[[]delivery](t, mustRun(t, addr, "reserve", "emails", "--max", "1", "--json"))
	if len(ds) != 1 || ds[0].JobID != 1 || ds[0].Attempt != 1 || ds[0].MaxAttempts != 3 || ds[0].Job.Payload != `{"user":42}` || ds[0].Job.Custom["tenant"] != "acme" {
		t.Fatalf("reserve --json = %+v", ds)
	}
	id, token := strconv.FormatUint(ds[0].JobID, 10), strconv.FormatUint(ds[0].LeaseToken, 10)
	if out := mustRun(t, addr, "ack", id, token); out != "acked job 1\n" {
		t.Fatalf("ack output = %q", out)
	}
	if _, code := sepp(t, addr, "ack", id, token); code != ExitLeaseLost {
		t.Fatalf("second ack: exit %d, want %d", code, ExitLeaseLost)
	}

	out = mustRun(t, addr, "reserve", "emails")
	if !strings.Contains(out, "LEASE_TOKEN") || !strings.Contains(out, "1/3") {
		t.Fatalf("reserve table = %q", out)
	}
	fields := strings.Fields(strings.Split(out, "\n")[1])
	if out := mustRun(t, addr, "nack", fields[0], fields[1], "--dead-letter", "--reason", "bad address"); !strings.Contains(out, "dead-lettered") {
		t.Fatalf("nack output = %q", out)
	}
	if out := mustRun(t, addr, "reserve", "emails"); out != "no jobs ready\n" {
		t.Fatalf("reserve on an empty queue = %q", out)
	}
}

func TestCLI_DeadLetters(t *testing.T) {
	addr := startServer(t)
	for range 2 {
		mustRun(t, addr, "enqueue", "q", "t", "--payload", "p")
		ds := decode[[]map[string]any](t, mustRun(t, addr, "reserve", "q", "--json"))
		id := strconv.FormatFloat(ds[0]["job_id"].(float64), 'f', 0, 64)
		token := strconv.FormatFloat(ds[0]["lease_token"].(float64), 'f', 0, 64)
		mustRun(t, addr, "nack", id, token, "--dead-letter", "--reason", "broken")
	}

	list := mustRun(t, addr, "dead-letters", "list", "--queue", "q")
	if !strings.Contains(list, "rejected") || !strings.Contains(list, "broken") || strings.Count(list, "\n") != 3 {
		t.Fatalf("dead-letters list = %q", list)
	}
	rec := decode[map[string]any](t, mustRun(t, addr, "dead-letters", "get", "1", "--json"))
	if rec["cause"] != "rejected" || rec["last_reason"] != "broken" || rec["final_attempt"].(float64) != 1 {
		t.Fatalf("dead-letters get = %v", rec)
	}
	if out := mustRun(t, addr, "dead-letters", "requeue", "1"); out != "requeued job 1\n" {
		t.Fatalf("requeue output = %q", out)
	}
	job := decode[map[string]any](t, mustRun(t, addr, "jobs", "get", "1", "--json"))
	if job["state"] != "ready" {
		t.Fatalf("requeued job = %v", job)
	}
	drained := decode[[]map[string]any](t, mustRun(t, addr, "dead-letters", "drain", "--max", "10", "--json"))
	if len(drained) != 1 || drained[0]["job_id"].(float64) != 2 {
		t.Fatalf("drain = %v", drained)
	}
	if _, code := sepp(t, addr, "dead-letters", "delete", "2"); code != ExitNotFound {
		t.Fatalf("delete of a drained record: exit %d, want %d", code, ExitNotFound)
	}
	if _, code := sepp(t, addr, "dead-letters", "get", "2"); code != ExitNotFound {
		t.Fatalf("get of a drained record: exit %d, want %d", code, ExitNotFound)
	}
}

func TestCLI_QueuesJobsPauseInfoCluster(t *testing.T) {
	addr := startServer(t)
	mustRun(t, addr, "enqueue", "reports", "rollup")
	mustRun(t, addr, "enqueue", "reports", "rollup", "--scheduled-at", time.Now().Add(time.Hour).UTC().Format(time.RFC3339))

	out := mustRun(t, addr, "queues")
	if !strings.HasPrefix(out, "QUEUE") || !strings.Contains(out, "reports") {
		t.Fatalf("queues = %q", out)
	}
	qs := decode[[]map[string]any](t, mustRun(t, addr, "queues", "--json"))
	if len(qs) != 1 || qs[0]["ready"].(float64) != 1 || qs[0]["scheduled"].(float64) != 1 {
		t.Fatalf("queues --json = %v", qs)
	}
	page := decode[map[string]any](t, mustRun(t, addr, "jobs", "list", "reports", "--state", "scheduled", "--json"))
	if jobs := page["jobs"].([]any); len(jobs) != 1 || jobs[0].(map[string]any)["id"].(float64) != 2 {
		t.Fatalf("jobs list --state scheduled = %v", page)
	}
	if out := mustRun(t, addr, "jobs", "get", "1"); !strings.Contains(out, "rollup") {
		t.Fatalf("jobs get = %q", out)
	}

	mustRun(t, addr, "pause", "reports")
	if qs := decode[[]map[string]any](t, mustRun(t, addr, "queues", "--json")); qs[0]["paused"] != true {
		t.Fatalf("after pause: %v", qs)
	}
	if out := mustRun(t, addr, "reserve", "reports"); out != "no jobs ready\n" {
		t.Fatalf("reserve from a paused queue = %q", out)
	}
	mustRun(t, addr, "resume", "reports")
	if out := mustRun(t, addr, "reserve", "reports"); !strings.Contains(out, "rollup") {
		t.Fatalf("reserve after resume = %q", out)
	}

	info := decode[map[string]any](t, mustRun(t, addr, "info", "--json"))
	if info["version"] != "test" || info["dead_letter_retention_enabled"] != true || info["max_reserve_batch"].(float64) != 100 {
		t.Fatalf("info = %v", info)
	}
	if out := mustRun(t, addr, "cluster", "status"); !strings.Contains(out, "node n1 is Leader") {
		t.Fatalf("cluster status = %q", out)
	}
}

func TestCLI_ExitCodes(t *testing.T) {
	addr := startServer(t)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := lis.Addr().String()
	lis.Close()

	tests := []struct {
		name string
		addr string
		args []string
		want int
	}{
		{"MissingArgument", addr, []string{"enqueue", "q"}, ExitUsage},
		{"UnknownFlag", addr, []string{"queues", "--bogus"}, ExitUsage},
		{"UnknownSubcommand", addr, []string{"jobs", "bogus"}, ExitUsage},
		{"GroupWithoutSubcommand", addr, []string{"dead-letters"}, ExitUsage},
		{"BadJobID", addr, []string{"jobs", "get", "x"}, ExitUsage},
		{"BadScheduledAt", addr, []string{"enqueue", "q", "t", "--scheduled-at", "tomorrow"}, ExitUsage},
		{"PriorityOutOfRange", addr, []string{"enqueue", "q", "t", "--priority", "10"}, ExitRejected},
		{"ScheduledTooFar", addr, []string{"enqueue", "q", "t", "--scheduled-at", time.Now().Add(60 * 24 * time.Hour).UTC().Format(time.RFC3339)}, ExitRejected},
		{"JobNotFound", addr, []string{"jobs", "get", "999"}, ExitNotFound},
		{"AckUnknownJob", addr, []string{"ack", "1", "1"}, ExitNotFound},
		{"Unavailable", dead, []string{"queues", "--timeout", "300ms"}, ExitUnavailable},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, code := sepp(t, tt.addr, tt.args...); code != tt.want {
				t.Fatalf("sepp %s: exit %d, want %d", strings.Join(tt.args, " "), code, tt.want)
			}
		})
	}
}

func TestCLI_HelpDocumentsExitCodes(t *testing.T) {
	for _, c := range Commands() {
		if !strings.Contains(c.Long, "Exit codes:") {
			t.Errorf("help of %q does not document the exit codes", c.Name())
		}
	}
}

// `sepp jobs get` and `sepp dead-letters get` show the attempt history as
// a table (start, end, duration, worker, lease, outcome with a nack's
// directive, reason), and --json carries the same fields.
func TestCLI_AttemptHistoryTable(t *testing.T) {
	addr := startServer(t)
	mustRun(t, addr, "enqueue", "q", "t", "--payload", "p")
	ds := decode[[]map[string]any](t, mustRun(t, addr, "reserve", "q", "--json", "--worker-id", "w-7"))
	id := strconv.FormatFloat(ds[0]["job_id"].(float64), 'f', 0, 64)
	token := strconv.FormatFloat(ds[0]["lease_token"].(float64), 'f', 0, 64)
	mustRun(t, addr, "nack", id, token, "--dead-letter", "--reason", "broken input")

	for _, args := range [][]string{{"jobs", "get", id}, {"dead-letters", "get", id}} {
		out := mustRun(t, addr, args...)
		lines := strings.Split(out, "\n")
		hdr := slices.IndexFunc(lines, func(l string) bool { return strings.HasPrefix(l, "ATTEMPT") })
		if hdr < 0 || hdr+1 >= len(lines) {
			t.Fatalf("%v: no attempt table in %q", args, out)
		}
		for _, col := range []string{"STARTED", "ENDED", "DURATION", "WORKER", "LEASE", "OUTCOME", "REASON"} {
			if !strings.Contains(lines[hdr], col) {
				t.Errorf("%v: attempt table header %q lacks %s", args, lines[hdr], col)
			}
		}
		row := lines[hdr+1]
		for _, want := range []string{"w-7", token, "nack (dead_letter)", "broken input"} {
			if !strings.Contains(row, want) {
				t.Errorf("%v: attempt row %q lacks %q", args, row, want)
			}
		}
	}
	job := decode[map[string]any](t, mustRun(t, addr, "jobs", "get", id, "--json"))
	h, _ := job["history"].([]any)
	if len(h) != 1 {
		t.Fatalf("jobs get --json history = %v", job["history"])
	}
	a := h[0].(map[string]any)
	if a["directive"] != "dead_letter" || a["worker_id"] != "w-7" || a["started_at"] == nil || a["duration_ms"] == nil || a["lease_token"] == nil {
		t.Fatalf("jobs get --json attempt = %v", a)
	}
}
