package cluster

import (
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"
	"github.com/prometheus/client_golang/prometheus"
)

// nodeMetrics times the two waits every write goes through: the log
// store's write on each node (the fsync, which on a shared or slow disk is
// most of a commit), and on the leader an entry's way from raft.Apply to
// its applied result (replication to a quorum, the writes, the apply). They
// answer an operator's first question about a slow queue, whether the disk
// is the cause, without a profiler.
type nodeMetrics struct {
	logWrite prometheus.Histogram
	commit   prometheus.Histogram
	// leaderChanges counts the leaderships this node has seen begin (one per
	// term with a leader, the first after start included); elections counts
	// the elections it started itself (each time it became a candidate, a
	// pre-vote that lost included); crashElections those it called because
	// the leader's process was gone (crashwatch.go). On a healthy cluster
	// the first two stay flat: every step is an election nobody wanted, or a
	// fault.
	leaderChanges  prometheus.Counter
	elections      prometheus.Counter
	crashElections prometheus.CounterFunc
	// leaderTerm is the last term counted in leaderChanges.
	leaderTerm atomic.Uint64
	// The clock checks (clock.go): whether this node's clock is off the
	// members', each member's clock minus this node's, and the jumps of
	// the wall clock the stamp clock caught.
	clockSkewExceeded prometheus.Gauge
	clockOffset       *prometheus.GaugeVec
	clockJumps        prometheus.Counter
}

// latencyBuckets run from 50µs to ~3.3s: an fsync on a fast disk takes
// tens of microseconds; a write the store-write timeout (2s) cuts short
// lands in the last bucket.
var latencyBuckets = prometheus.ExponentialBuckets(0.00005, 2, 17)

func newNodeMetrics(crashElections func() uint64) *nodeMetrics {
	return &nodeMetrics{
		leaderChanges: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "sepp_raft_leader_changes_total",
			Help: "Leaderships this node has seen begin: one per term in which it learned of a leader, the first after its start included. Every member sees every change, so a cluster's count is any member's.",
		}),
		elections: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "sepp_raft_elections_total",
			Help: "Elections this node started: times it became a candidate (pre-votes that found the leader alive included), whether by raft's heartbeat timeout or by crash detection.",
		}),
		crashElections: prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "sepp_raft_crash_elections_total",
			Help: "Elections this node called at once because the leader's process was gone (its raft address refused connections).",
		}, func() float64 { return float64(crashElections()) }),
		clockSkewExceeded: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "sepp_clock_skew_exceeded",
			Help: "1 while this node's clock is off a majority of the members' by more than max_clock_skew (it does not lead then), else 0.",
		}),
		clockOffset: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "sepp_clock_offset_seconds",
			Help: "Each member's clock minus this node's, as last measured (within half the question's round trip); members not measured recently are left out.",
		}, []string{"member"}),
		clockJumps: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "sepp_clock_jumps_total",
			Help: "Jumps of this node's wall clock away from its monotonic clock by more than max_clock_skew; stamped time follows the monotonic clock across them.",
		}),
		logWrite: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "sepp_raft_log_write_seconds",
			Help:    "Time of one write to this node's Raft log store, fsync included.",
			Buckets: latencyBuckets,
		}),
		commit: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "sepp_raft_commit_seconds",
			Help:    "On the leader, time from proposing a log entry to its applied result: replication to a quorum, their log writes, and the apply.",
			Buckets: latencyBuckets,
		}),
	}
}

// Metrics returns the node's Prometheus collectors (sepp_raft_log_write_seconds,
// sepp_raft_commit_seconds, sepp_raft_leader_changes_total,
// sepp_raft_elections_total, sepp_raft_crash_elections_total,
// sepp_raft_follower_lag_entries, sepp_raft_apply_lag_entries,
// sepp_raft_snapshot_seconds, sepp_raft_restore_seconds,
// sepp_clock_skew_exceeded, sepp_clock_offset_seconds,
// sepp_clock_jumps_total, sepp_raft_commands_since_snapshot, and the
// payload store's sepp_payload_store_* figures, metrics_store.go); register
// them once.
func (n *Node) Metrics() []prometheus.Collector {
	m := n.metrics
	sinceSnapshot := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "sepp_raft_commands_since_snapshot",
		Help: "Commands applied since this node's last snapshot (each job of a batch counted): about what a restart would replay. The node snapshots about every cluster.snapshot_command_threshold of them, at a place of its own in the log, and at 1.5 times it at the latest.",
	}, func() float64 { return float64(n.fsm.CommandsSinceSnapshot()) })
	handedOver := prometheus.NewCounterFunc(prometheus.CounterOpts{
		Name: "sepp_jobs_handed_over_total",
		Help: "Jobs this node, as leader, delivered to waiting reserves (long polls) in the log entry that enqueued into their queue, instead of in an entry of their own after it.",
	}, func() float64 { return float64(n.HandedOverJobs()) })
	parked := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "sepp_reserves_parked",
		Help: "Waiting reserves this node holds, as leader, to go along with the next log entry that enqueues a job into their queue.",
	}, func() float64 { return float64(n.ParkedReserves()) })
	return []prometheus.Collector{m.logWrite, m.commit, m.leaderChanges, m.elections, m.crashElections,
		newLagCollector(n), newStoreCollector(n), n.snapTimes.snapshot, n.snapTimes.restore,
		m.clockSkewExceeded, m.clockOffset, m.clockJumps, sinceSnapshot, handedOver, parked}
}

// setClock exports a round of clock checks.
func (m *nodeMetrics) setClock(skewed bool, offsets map[string]clockSample) {
	if skewed {
		m.clockSkewExceeded.Set(1)
	} else {
		m.clockSkewExceeded.Set(0)
	}
	m.clockOffset.Reset()
	for id, s := range offsets {
		m.clockOffset.WithLabelValues(id).Set(s.offset.Seconds())
	}
}

// observe counts leader changes and elections. It is raft's observer
// filter, so it runs synchronously on raft's goroutines, sees every
// observation (none is dropped as a full channel would) and must not block.
func (m *nodeMetrics) observe(o *raft.Observation) {
	switch d := o.Data.(type) {
	case raft.RaftState:
		if d == raft.Candidate {
			m.elections.Inc()
		}
	case raft.LeaderObservation:
		if d.LeaderID != "" {
			m.countLeadership(o.Raft.CurrentTerm())
		}
	}
}

// countLeadership counts a leader learned of in term unless a leader of
// that term (or a later one) was counted already: raft reports the same
// leader again after a heartbeat timeout blanked it, which is no change.
func (m *nodeMetrics) countLeadership(term uint64) {
	for {
		last := m.leaderTerm.Load()
		if term <= last {
			return
		}
		if m.leaderTerm.CompareAndSwap(last, term) {
			m.leaderChanges.Inc()
			return
		}
	}
}

// timedLogStore observes the duration of every write to the log store it
// wraps, including writes the timeout wrapper above it has given up on.
type timedLogStore struct {
	raft.LogStore
	observe func(time.Duration)
}

// IsMonotonic passes the wrapped store's answer on; see isMonotonic.
func (s *timedLogStore) IsMonotonic() bool { return isMonotonic(s.LogStore) }

func (s *timedLogStore) StoreLog(l *raft.Log) error {
	return s.StoreLogs([]*raft.Log{l})
}

func (s *timedLogStore) StoreLogs(logs []*raft.Log) error {
	start := time.Now()
	err := s.LogStore.StoreLogs(logs)
	s.observe(time.Since(start))
	return err
}
