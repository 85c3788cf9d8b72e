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

func gather(t *testing.T, cs []prometheus.Collector) map[string]*dto.MetricFamily {
	t.Helper()
	reg := prometheus.NewRegistry()
	reg.MustRegister(cs...)
	fams, err := reg.Gather()
	if err != nil {
		t.Fatalf("gather: %v", err)
	}
	out := make(map[string]*dto.MetricFamily, len(fams))
	for _, f := range fams {
		out[f.GetName()] = f
	}
	return out
}

// The leader exports each follower's lag in entries; a stopped
// follower's grows with the writes it misses and is back to zero once it
// catches up. Every node exports its apply lag; followers export no
// follower lag.
func TestNode_MetricsFollowerLag(t *testing.T) {
	c := clustertest.New(t, 3)
	li := c.WaitLeader()
	leader := c.Node(li)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	enqueue := func(n int) {
		for i := range n {
			if _, err := cluster.Do(ctx, leader, engine.EnqueueOp{Params: engine.EnqueueParams{Queue: "q", JobType: "t", Payload: []byte{byte(i)}}}); err != nil {
				t.Fatalf("enqueue: %v", err)
			}
		}
	}
	enqueue(3)
	lagOf := func() map[string]float64 {
		out := map[string]float64{}
		f := gather(t, leader.Metrics())["sepp_raft_follower_lag_entries"]
		for _, m := range f.GetMetric() {
			out[m.GetLabel()[0].GetValue()] = m.GetGauge().GetValue()
		}
		return out
	}
	clustertest.WaitFor(t, 10*time.Second, "two followers at lag 0", func() bool {
		l := lagOf()
		if len(l) != 2 {
			return false
		}
		for _, v := range l {
			if v != 0 {
				return false
			}
		}
		return true
	})
	for i := range 3 {
		fams := gather(t, c.Node(i).Metrics())
		if _, ok := fams["sepp_raft_apply_lag_entries"]; !ok {
			t.Errorf("node %d exports no apply lag", i)
		}
		if _, ok := fams["sepp_raft_follower_lag_entries"]; ok && i != li {
			t.Errorf("follower %d exports follower lag", i)
		}
	}
	cut := (li + 1) % 3
	cutID := c.Config(cut).NodeID
	c.Stop(cut)
	enqueue(10)
	if l := lagOf(); l[cutID] < 10 {
		t.Errorf("stopped follower %s lag = %v, want at least 10 (%v)", cutID, l[cutID], l)
	}
	c.Restart(cut)
	clustertest.WaitFor(t, 15*time.Second, "the restarted follower to catch up", func() bool { return lagOf()[cutID] == 0 })
}

// A snapshot is timed by phase and a restore (at restart) too.
func TestNode_MetricsSnapshotAndRestore(t *testing.T) {
	dir := t.TempDir()
	n := startSingle(t, dir)
	enqueueUntilReady(t, n, []byte("first"))
	if err := n.Snapshot(); err != nil {
		t.Fatal(err)
	}
	fams := gather(t, n.Metrics())
	phases := map[string]uint64{}
	for _, m := range fams["sepp_raft_snapshot_seconds"].GetMetric() {
		phases[m.GetLabel()[0].GetValue()] = m.GetHistogram().GetSampleCount()
	}
	if phases["capture"] < 1 || phases["persist"] < 1 {
		t.Errorf("snapshot phases observed: %v, want capture and persist", phases)
	}
	shutdown(t, n)
	n2 := startSingle(t, dir)
	defer shutdown(t, n2)
	if got, _ := histogramCount(t, n2.Metrics(), "sepp_raft_restore_seconds"); got < 1 {
		t.Errorf("restores observed after a restart from a snapshot: %d, want 1", got)
	}
}
