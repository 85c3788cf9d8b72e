package cluster_test

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sepp-io/sepp/engine"
)

// histogramCount gathers cs and returns the sample count and sum of the
// histogram called name.
func histogramCount(t *testing.T, cs []prometheus.Collector, name string) (uint64, float64) {
	t.Helper()
	reg := prometheus.NewRegistry()
	reg.MustRegister(cs...)
	families, err := reg.Gather()
	if err != nil {
		t.Fatalf("gather: %v", err)
	}
	for _, f := range families {
		if f.GetName() == name {
			h := f.GetMetric()[0].GetHistogram()
			return h.GetSampleCount(), h.GetSampleSum()
		}
	}
	t.Fatalf("no metric %s", name)
	return 0, 0
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
		if _, err := n.Enqueue(ctx, engine.EnqueueParams{Queue: "q", JobType: "t", Payload: []byte{byte(i)}}); err != nil {
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
