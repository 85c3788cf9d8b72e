package cluster

import (
	"testing"
	"time"

	metrics "github.com/hashicorp/go-metrics"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// phaseCounts gathers sepp_raft_phase_seconds: observations and their sum
// by phase.
func phaseCounts(t *testing.T, r *RaftPhases) map[string]*dto.Histogram {
	t.Helper()
	reg := prometheus.NewRegistry()
	reg.MustRegister(r.Collector())
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]*dto.Histogram{}
	for _, f := range families {
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "phase" {
					got[l.GetValue()] = m.GetHistogram()
				}
			}
		}
	}
	return got
}

// TestRaftPhases_KeepsTheCommitsPhases: raft's timings of a commit's
// phases land in their phase's histogram, in seconds, through go-metrics
// configured as InstallRaftPhases configures it; every other sample is
// dropped.
func TestRaftPhases_KeepsTheCommitsPhases(t *testing.T) {
	r := NewRaftPhases()
	m, err := metrics.New(raftPhasesConfig(), r)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now().Add(-3 * time.Millisecond)
	m.MeasureSince([]string{"raft", "commitTime"}, start)
	m.MeasureSince([]string{"raft", "leader", "dispatchLog"}, start)
	m.MeasureSinceWithLabels([]string{"raft", "replication", "appendEntries", "rpc"}, start, []metrics.Label{{Name: "peer_id", Value: "n2"}})
	m.MeasureSince([]string{"raft", "replication", "appendEntries", "rpc", "n2"}, start) // raft's legacy duplicate
	m.MeasureSince([]string{"raft", "rpc", "appendEntries", "storeLogs"}, start)
	m.MeasureSince([]string{"raft", "fsm", "enqueue"}, start)
	m.MeasureSince([]string{"raft", "fsm", "applyBatch"}, start)
	m.MeasureSince([]string{"raft", "fsm", "apply"}, start)
	m.MeasureSince([]string{"raft", "rpc", "requestVote"}, start)
	m.IncrCounter([]string{"raft", "apply"}, 1)
	m.SetGauge([]string{"raft", "leader", "dispatchNumLogs"}, 4)

	got := phaseCounts(t, r)
	want := map[string]uint64{
		"quorum": 1, "leader_dispatch": 1, "follower_round_trip": 1, "follower_log_write": 1,
		"apply_handoff": 1, "apply": 2,
	}
	if len(got) != len(want) {
		t.Fatalf("phases %v, want %v", got, want)
	}
	for phase, n := range want {
		h := got[phase]
		if h.GetSampleCount() != n {
			t.Errorf("%s: %d samples, want %d", phase, h.GetSampleCount(), n)
		}
		// Each sample is at least the 3ms measured, in seconds.
		if mean := h.GetSampleSum() / float64(n); mean < 0.003 || mean > 10 {
			t.Errorf("%s: mean %gs, want about 0.003s", phase, mean)
		}
	}
}

// BenchmarkRaftPhases_AddSample: what raft's timings cost now that a sink
// keeps some (raft emits a few per entry and per RPC, whatever the sink).
func BenchmarkRaftPhases_AddSample(b *testing.B) {
	r := NewRaftPhases()
	for _, bc := range []struct {
		name string
		key  []string
	}{
		{"Kept", []string{"raft", "replication", "appendEntries", "rpc"}},
		{"Dropped", []string{"raft", "net", "rpcDecode"}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				r.AddSampleWithLabels(bc.key, 0.4, nil)
			}
		})
	}
}
