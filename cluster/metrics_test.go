package cluster_test

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/sepp-io/sepp/cluster"
	"github.com/sepp-io/sepp/cluster/clustertest"
	"github.com/sepp-io/sepp/engine"
)

// metricNamed gathers cs and returns the first sample of the metric called
// name.
func metricNamed(t *testing.T, cs []prometheus.Collector, name string) *dto.Metric {
	t.Helper()
	reg := prometheus.NewRegistry()
	reg.MustRegister(cs...)
	families, err := reg.Gather()
	if err != nil {
		t.Fatalf("gather: %v", err)
	}
	for _, f := range families {
		if f.GetName() == name {
			return f.GetMetric()[0]
		}
	}
	t.Fatalf("no metric %s", name)
	return nil
}

// histogramCount returns the sample count and sum of the histogram called
// name.
func histogramCount(t *testing.T, cs []prometheus.Collector, name string) (uint64, float64) {
	t.Helper()
	h := metricNamed(t, cs, name).GetHistogram()
	return h.GetSampleCount(), h.GetSampleSum()
}

// A node times every log write and, as leader, every entry from proposal
// to result: after n acknowledged enqueues, one at a time, each has been
// through at least n of both.
func TestNode_MetricsTimeLogWritesAndCommits(t *testing.T) {
	n := startSingle(t, t.TempDir())
	defer shutdown(t, n)
	enqueueUntilReady(t, n, []byte("first"))

	writes0, _ := histogramCount(t, n.Metrics(), "sepp_raft_log_write_seconds")
	commits0, _ := histogramCount(t, n.Metrics(), "sepp_raft_commit_seconds")
	const enqueues = 20
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for i := range enqueues {
		if _, err := cluster.Do(ctx, n, engine.EnqueueOp{Params: engine.EnqueueParams{Queue: "q", JobType: "t", Payload: []byte{byte(i)}}}); err != nil {
			t.Fatalf("enqueue %d: %v", i, err)
		}
	}
	writes, writeSum := histogramCount(t, n.Metrics(), "sepp_raft_log_write_seconds")
	commits, commitSum := histogramCount(t, n.Metrics(), "sepp_raft_commit_seconds")
	if writes-writes0 < enqueues {
		t.Errorf("log writes observed: %d, want at least %d", writes-writes0, enqueues)
	}
	if commits-commits0 < enqueues {
		t.Errorf("commits observed: %d, want at least %d", commits-commits0, enqueues)
	}
	if writeSum <= 0 || commitSum <= 0 {
		t.Errorf("sums: log writes %gs, commits %gs; want both above zero", writeSum, commitSum)
	}
}

// counterValue returns the value of the counter called name.
func counterValue(t *testing.T, cs []prometheus.Collector, name string) float64 {
	t.Helper()
	return metricNamed(t, cs, name).GetCounter().GetValue()
}

// Every member counts the first leadership and then a transfer as one
// leader change each, and the transfer's target counts the election it ran.
func TestNode_MetricsCountLeaderChangesAndElections(t *testing.T) {
	c := clustertest.New(t, 3)
	li := c.WaitLeader()
	changes := func(i int) float64 { return counterValue(t, c.Node(i).Metrics(), "sepp_raft_leader_changes_total") }
	elections := func(i int) float64 { return counterValue(t, c.Node(i).Metrics(), "sepp_raft_elections_total") }
	// A follower counts the first leadership when the leader's first
	// heartbeat names it.
	clustertest.WaitFor(t, 10*time.Second, "every member to count the first leadership", func() bool {
		for i := range 3 {
			if changes(i) < 1 {
				return false
			}
		}
		return true
	})
	if e := elections(li); e < 1 {
		t.Fatalf("leader n%d counted %g elections, want at least the one it won", li, e)
	}
	var before [3]float64
	for i := range 3 {
		before[i] = changes(i)
	}
	ti := others(c, li)[0]
	targetElections := elections(ti)
	if err := c.Node(li).TransferLeadership(ctxT(t, 5*time.Second), c.Node(ti).Self().ID); err != nil {
		t.Fatalf("transfer: %v", err)
	}
	clustertest.WaitFor(t, 10*time.Second, "every member to count the transfer", func() bool {
		for i := range 3 {
			if changes(i) < before[i]+1 {
				return false
			}
		}
		return true
	})
	if e := elections(ti); e < targetElections+1 {
		t.Fatalf("transfer target n%d: %g elections, want at least %g", ti, e, targetElections+1)
	}
}

// gaugeValue returns the value of the unlabelled gauge called name.
func gaugeValue(t *testing.T, cs []prometheus.Collector, name string) float64 {
	t.Helper()
	return metricNamed(t, cs, name).GetGauge().GetValue()
}

// sepp_raft_commands_since_snapshot counts each job of a batch and starts
// again at a snapshot.
func TestNode_MetricsCountCommandsSinceSnapshot(t *testing.T) {
	n := startSingle(t, t.TempDir())
	defer shutdown(t, n)
	enqueueUntilReady(t, n, []byte("first"))
	before := gaugeValue(t, n.Metrics(), "sepp_raft_commands_since_snapshot")
	items := make([]engine.EnqueueParams, 250)
	for i := range items {
		items[i] = engine.EnqueueParams{Queue: "q", JobType: "t"}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := cluster.Do(ctx, n, engine.EnqueueBatchOp{Items: items}); err != nil {
		t.Fatal(err)
	}
	if got := gaugeValue(t, n.Metrics(), "sepp_raft_commands_since_snapshot"); got < before+250 {
		t.Fatalf("commands since snapshot %v after a batch of 250, want at least %v", got, before+250)
	}
	if err := n.Snapshot(); err != nil {
		t.Fatal(err)
	}
	// The leader's own commands (ticks) may apply after the snapshot.
	if got := gaugeValue(t, n.Metrics(), "sepp_raft_commands_since_snapshot"); got >= 250 {
		t.Fatalf("commands since snapshot %v right after one, want the count started again", got)
	}
}

// The payload store's figures are exported: after enqueues with payloads
// and a snapshot (which flushes the store), a flush is counted and the
// store's tables are on disk.
func TestNode_MetricsExportThePayloadStore(t *testing.T) {
	n := startSingle(t, t.TempDir())
	defer shutdown(t, n)
	enqueueUntilReady(t, n, []byte("first"))
	items := make([]engine.EnqueueParams, 100)
	for i := range items {
		items[i] = engine.EnqueueParams{Queue: "q", JobType: "t", Payload: []byte("a payload kept in the store")}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := cluster.Do(ctx, n, engine.EnqueueBatchOp{Items: items}); err != nil {
		t.Fatal(err)
	}
	if err := n.Snapshot(); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"sepp_payload_store_compactions_total", "sepp_payload_store_compaction_seconds_total",
		"sepp_payload_store_compactions_in_progress", "sepp_payload_store_compaction_debt_bytes", "sepp_payload_store_flushes_total",
		"sepp_payload_store_read_amplification", "sepp_payload_store_l0_files", "sepp_payload_store_l0_sublevels",
		"sepp_payload_store_memtable_bytes", "sepp_payload_store_tombstones", "sepp_payload_store_write_stalls_total"} {
		metricNamed(t, n.Metrics(), name)
	}
	if got := metricNamed(t, n.Metrics(), "sepp_payload_store_flushes_total").GetCounter().GetValue(); got < 1 {
		t.Fatalf("payload store flushes %v after a snapshot, want at least 1", got)
	}
	if got := gaugeValue(t, n.Metrics(), "sepp_payload_store_read_amplification"); got < 1 {
		t.Fatalf("payload store read amplification %v with a flushed table, want at least 1", got)
	}
}
