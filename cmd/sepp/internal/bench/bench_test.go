package bench

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sepp-io/sepp/client"
)

// TestSmoke is the CI regression guard of `sepp bench`: every scenario runs
// against a real local three-node cluster with small counts and must finish
// with 0 lost and 0 duplicated jobs. It asserts no speed: the machines are
// shared and noisy.
func TestSmoke(t *testing.T) {
	if testing.Short() {
		t.Skip("builds sepp and starts three processes: skipped under -short")
	}
	bin := filepath.Join(t.TempDir(), "sepp")
	build := exec.Command("go", "build", "-o", bin, "github.com/sepp-io/sepp/cmd/sepp")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build sepp: %v\n%s", err, out)
	}
	o := Defaults()
	o.Binary = bin
	o.Produce = 2000
	o.Latency = 100
	o.MixedDuration = 2 * time.Second
	o.MixedRate = 200
	o.MixedRateFor = time.Second
	o.FailoverBefore = 300 * time.Millisecond
	o.FailoverAfter = time.Second
	o.RecoveryJobs = 5000
	o.RecoveryClean = false // waiting out the earlier scenarios' keys takes two minutes
	o.Scenarios = append(o.Scenarios, "backlog")
	o.BacklogJobs = 2000
	var out bytes.Buffer
	o.Out = &out
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	rep, err := Run(ctx, o)
	t.Logf("bench output:\n%s", out.String())
	if err != nil {
		t.Fatalf("bench: %v", err)
	}
	got := map[string]float64{}
	for _, f := range rep.Figures {
		got[f.Name] = f.Value
	}
	for _, name := range []string{
		"produce_rate", "sync_enqueue_p50", "sync_enqueue_after_idle_p50", "disk_fsync_after_idle_p50", "consume_rate", "mixed_completed_rate", "e2e_latency_p50",
		"failover_kill_longest_gap", "failover_transfer_longest_gap", "failover_stop_new_leader", "recovery_restart_to_caught_up",
		"backlog_rss_per_job_sepp-1", "backlog_disk_per_job_sepp-1", "backlog_payload_held", "backlog_produce_rate_ratio", "backlog_consume_rate_ratio", "backlog_mixed_rate_ratio",
		"backlog_restart_to_caught_up", "backlog_snapshot_capture", "backlog_snapshot_persist", "backlog_snapshot_restore", "backlog_from_snapshot_restart_to_caught_up",
		"disk_write_rate", "backlog_install_to_caught_up", "backlog_install_restore", "backlog_install_size", "backlog_install_rate", "backlog_install_leader_rate_ratio", "backlog_install_receive", "backlog_install_receive_rate", "backlog_install_cpu_leader", "backlog_install_leader_cpu_per_job",
	} {
		if _, ok := got[name]; !ok {
			t.Errorf("figure %s missing", name)
		}
	}
	for name, v := range got {
		if (strings.HasSuffix(name, "_lost") || strings.HasSuffix(name, "_duplicates")) && v != 0 {
			t.Errorf("%s = %v, want 0", name, v)
		}
	}
	if got["consume_jobs"] != float64(o.Produce) {
		t.Errorf("consume acked %v jobs, want the %d produced", got["consume_jobs"], o.Produce)
	}
	// Every line is "name: value unit".
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		if strings.HasPrefix(line, "#") {
			continue
		}
		if f := strings.Fields(line); len(f) != 3 || !strings.HasSuffix(f[0], ":") {
			t.Errorf("line %q is not `name: value unit`", line)
		}
	}
}

func TestCountLossAndDup(t *testing.T) {
	acked := map[uint64]bool{1: true, 2: true, 3: true}
	lost, dup := countLossAndDup(acked, []uint64{1, 3, 3, 4})
	if lost != 1 || dup != 1 {
		t.Fatalf("lost %d dup %d, want 1 and 1", lost, dup)
	}
	if lost, dup := countLossAndDup(acked, []uint64{1, 2, 3}); lost != 0 || dup != 0 {
		t.Fatalf("clean history: lost %d dup %d", lost, dup)
	}
}

func TestParseScenarios(t *testing.T) {
	if got := strings.Join(ParseScenarios("failover, produce"), ","); got != "produce,failover" {
		t.Fatalf("got %s", got)
	}
	if len(ParseScenarios("all")) != 6 {
		t.Fatal("all should list six scenarios")
	}
	if slices.Contains(ParseScenarios("all"), "backlog") {
		t.Fatal("all should leave backlog out: it runs when named")
	}
	if got := strings.Join(ParseScenarios("backlog,produce,recovery"), ","); got != "produce,recovery,backlog" {
		t.Fatalf("got %s, want backlog last", got)
	}
}

func TestAckTookEffect(t *testing.T) {
	if ackTookEffect(client.ErrLeaseLost) {
		t.Error("a plain lease lost is not an effect")
	}
	if ackTookEffect(client.ErrUnknownOutcome) {
		t.Error("an unknown outcome alone is not an effect")
	}
	if !ackTookEffect(errors.Join(client.ErrUnknownOutcome, client.ErrLeaseLost)) {
		t.Error("unknown outcome then lease lost: the first attempt completed the job")
	}
}
