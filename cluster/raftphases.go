package cluster

import (
	"slices"

	metrics "github.com/hashicorp/go-metrics"
	"github.com/prometheus/client_golang/prometheus"
)

// RaftPhases lays out where a commit's time goes, from hashicorp/raft's
// own timings. Raft measures each phase of an entry's way with go-metrics
// (its only metrics interface, which reports to one process-wide sink);
// RaftPhases is such a sink that keeps the few timings that make up a
// commit and exports them as one Prometheus histogram,
// sepp_raft_phase_seconds{phase}:
//
//   - leader_dispatch: the leader's handling of new entries, its own log
//     write and fsync included (the replicators are woken before it);
//   - follower_round_trip: on the leader, one AppendEntries to a follower
//     and its answer, the follower's log write included (one that only
//     carries the commit index, with no entries, counts too);
//   - follower_log_write: on a follower, its write of the entries received;
//   - quorum: on the leader, from dispatch to commit (a majority holds the
//     entry durably);
//   - apply_handoff: handing committed entries to the state machine's
//     goroutine;
//   - apply: the state machine's apply of a batch of entries.
//
// Beside sepp_raft_commit_seconds (proposal to applied result) and
// sepp_raft_log_write_seconds they answer which part of a slow write is
// the disk, the network, or the apply. Every other go-metrics sample is
// dropped. sepp serve installs one for its process (InstallRaftPhases);
// tests that run several nodes in one process leave raft's default sink,
// which discards everything.
type RaftPhases struct {
	phases *prometheus.HistogramVec
	// The observers, resolved once: a sample finds its phase by comparing
	// raft's key with these, without allocating.
	byKey []raftPhaseKey
}

type raftPhaseKey struct {
	key []string
	obs prometheus.Observer
}

// NewRaftPhases returns a sink with empty histograms.
func NewRaftPhases() *RaftPhases {
	r := &RaftPhases{phases: prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "sepp_raft_phase_seconds",
		Help:    "Phases of a Raft commit as raft times them: leader_dispatch (the leader's own log write included), follower_round_trip (one AppendEntries and its answer, seen from the leader), follower_log_write, quorum (dispatch to commit, on the leader), apply_handoff and apply (the state machine's apply of a batch).",
		Buckets: latencyBuckets,
	}, []string{"phase"})}
	for _, p := range []struct {
		phase string
		key   []string
	}{
		{"leader_dispatch", []string{"raft", "leader", "dispatchLog"}},
		{"follower_round_trip", []string{"raft", "replication", "appendEntries", "rpc"}},
		{"follower_log_write", []string{"raft", "rpc", "appendEntries", "storeLogs"}},
		{"quorum", []string{"raft", "commitTime"}},
		{"apply_handoff", []string{"raft", "fsm", "enqueue"}},
		{"apply", []string{"raft", "fsm", "applyBatch"}},
		{"apply", []string{"raft", "fsm", "apply"}},
	} {
		r.byKey = append(r.byKey, raftPhaseKey{key: p.key, obs: r.phases.WithLabelValues(p.phase)})
	}
	return r
}

// Collector exports the histograms.
func (r *RaftPhases) Collector() prometheus.Collector { return r.phases }

// InstallRaftPhases makes r the process's go-metrics sink, which raft
// reports to, with timings in milliseconds and no host or service prefix.
func InstallRaftPhases(r *RaftPhases) error {
	_, err := metrics.NewGlobal(raftPhasesConfig(), r)
	return err
}

// raftPhasesConfig is go-metrics' configuration for RaftPhases: timings
// in milliseconds (what AddSample converts from), keys as raft names them.
func raftPhasesConfig() *metrics.Config {
	cfg := metrics.DefaultConfig("")
	cfg.EnableHostname = false
	cfg.EnableRuntimeMetrics = false
	cfg.HostName = ""
	return cfg
}

// AddSample observes raft's timing of one phase (val in milliseconds).
func (r *RaftPhases) AddSample(key []string, val float32) {
	for i := range r.byKey {
		if slices.Equal(r.byKey[i].key, key) {
			r.byKey[i].obs.Observe(float64(val) / 1000)
			return
		}
	}
}

// AddSampleWithLabels is AddSample; the labels (a follower's id) are
// dropped.
func (r *RaftPhases) AddSampleWithLabels(key []string, val float32, _ []metrics.Label) {
	r.AddSample(key, val)
}

// SetGauge and the rest of go-metrics' sink interface drop what they get.
func (r *RaftPhases) SetGauge([]string, float32)                                     {}
func (r *RaftPhases) SetGaugeWithLabels([]string, float32, []metrics.Label)          {}
func (r *RaftPhases) EmitKey([]string, float32)                                      {}
func (r *RaftPhases) IncrCounter([]string, float32)                                  {}
func (r *RaftPhases) IncrCounterWithLabels([]string, float32, []metrics.Label)       {}
func (r *RaftPhases) SetPrecisionGauge([]string, float64)                            {}
func (r *RaftPhases) SetPrecisionGaugeWithLabels([]string, float64, []metrics.Label) {}
