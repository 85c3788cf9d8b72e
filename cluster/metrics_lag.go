package cluster

import (
	"io"
	"slices"
	"time"

	"github.com/hashicorp/raft"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/sepp-io/sepp/fsm"
)

// Replication lag, and the time snapshots and restores take.
//
// sepp_raft_follower_lag_entries{follower} is exported by the leader only:
// its last log index minus the follower's match index (the last entry the
// leader knows it stores). sepp_raft_apply_lag_entries is every node's own
// commit index minus its applied index. sepp_raft_snapshot_seconds{phase}
// times a snapshot's capture (under the state machine's lock: writes wait
// for it), its persist (the write to the snapshot store, concurrent with
// applies) and, on a follower, the receipt of one the leader sends (from
// the transfer's start until it is in the snapshot store);
// sepp_raft_restore_seconds times installing one.

// FollowerLag returns, on the leader, how many log entries each other
// voter trails the leader's last index by; nil on a follower. It is the
// node page's per-follower lag (adminui.FollowerLagger).
func (n *Node) FollowerLag() map[string]uint64 {
	match := n.raft.MatchIndexes()
	if match == nil {
		return nil
	}
	last := n.raft.LastIndex()
	out := make(map[string]uint64, len(match))
	for id, m := range match {
		if string(id) == n.cfg.NodeID {
			continue
		}
		var lag uint64
		if last > m {
			lag = last - m
		}
		out[string(id)] = lag
	}
	return out
}

// applyLag is this node's committed entries not yet applied.
func (n *Node) applyLag() uint64 {
	c, a := n.raft.CommitIndex(), n.fsm.AppliedIndex()
	if c > a {
		return c - a
	}
	return 0
}

// lagCollector reads the lags when scraped.
type lagCollector struct {
	n        *Node
	follower *prometheus.Desc
	apply    *prometheus.Desc
}

func newLagCollector(n *Node) *lagCollector {
	return &lagCollector{
		n: n,
		follower: prometheus.NewDesc("sepp_raft_follower_lag_entries",
			"On the leader, how many log entries each follower trails the leader's last log index by (last index minus the follower's match index). Only the leader exports it.",
			[]string{"follower"}, nil),
		apply: prometheus.NewDesc("sepp_raft_apply_lag_entries",
			"Committed log entries this node has not applied to its state yet (commit index minus applied index).", nil, nil),
	}
}

func (c *lagCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.follower
	ch <- c.apply
}

func (c *lagCollector) Collect(ch chan<- prometheus.Metric) {
	if c.n.raft == nil {
		return
	}
	lag := c.n.FollowerLag()
	ids := make([]string, 0, len(lag))
	for id := range lag {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		ch <- prometheus.MustNewConstMetric(c.follower, prometheus.GaugeValue, float64(lag[id]), id)
	}
	ch <- prometheus.MustNewConstMetric(c.apply, prometheus.GaugeValue, float64(c.n.applyLag()))
}

// snapshotBuckets run from 1ms to ~65s.
var snapshotBuckets = prometheus.ExponentialBuckets(0.001, 2, 17)

type snapshotMetrics struct {
	snapshot *prometheus.HistogramVec
	restore  prometheus.Histogram
}

func newSnapshotMetrics() *snapshotMetrics {
	return &snapshotMetrics{
		snapshot: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "sepp_raft_snapshot_seconds",
			Help:    "Time of a Raft snapshot by phase: capture (the state machine's copy, during which applies wait), persist (the write to the snapshot store) and receive (on a follower, a snapshot the leader sends, from the transfer's start until it is in the snapshot store).",
			Buckets: snapshotBuckets,
		}, []string{"phase"}),
		restore: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "sepp_raft_restore_seconds",
			Help:    "Time to restore the state machine from a snapshot (at start, or one installed from the leader).",
			Buckets: snapshotBuckets,
		}),
	}
}

// timedFSM is the state machine as raft sees it, timing snapshots and
// restores; Apply and ApplyBatch pass through.
type timedFSM struct {
	*fsm.FSM
	m *snapshotMetrics
}

func (t timedFSM) Snapshot() (raft.FSMSnapshot, error) {
	start := time.Now()
	s, err := t.FSM.Snapshot()
	t.m.snapshot.WithLabelValues("capture").Observe(time.Since(start).Seconds())
	if err != nil {
		return nil, err
	}
	return timedSnapshot{FSMSnapshot: s, persist: t.m.snapshot.WithLabelValues("persist")}, nil
}

func (t timedFSM) Restore(rc io.ReadCloser) error {
	start := time.Now()
	err := t.FSM.Restore(rc)
	t.m.restore.Observe(time.Since(start).Seconds())
	return err
}

type timedSnapshot struct {
	raft.FSMSnapshot
	persist prometheus.Observer
}

func (s timedSnapshot) Persist(sink raft.SnapshotSink) error {
	start := time.Now()
	err := s.FSMSnapshot.Persist(sink)
	s.persist.Observe(time.Since(start).Seconds())
	return err
}

// timedSnapshots times the receipt of a snapshot the leader sends
// (receivedSnapshot). Only such a sink is wrapped: the state machine's Persist looks for methods of the
// snapshot store's own sinks on the ones it writes
// (fsm.CheckpointSnapshots).
type timedSnapshots struct {
	raft.SnapshotStore
	logs    raft.LogStore
	receive prometheus.Observer
}

func (t *timedSnapshots) Create(version raft.SnapshotVersion, index, term uint64, configuration raft.Configuration,
	configurationIndex uint64, trans raft.Transport) (raft.SnapshotSink, error) {
	sink, err := t.SnapshotStore.Create(version, index, term, configuration, configurationIndex, trans)
	if err != nil {
		return sink, err
	}
	if !receivedSnapshot(t.logs, index) {
		return sink, nil
	}
	return &timedSink{SnapshotSink: sink, start: time.Now(), receive: t.receive}, nil
}

// receivedSnapshot reports whether a snapshot created at index is one the
// leader sends: its index is past the node's last log entry (a leader
// sends one only to a follower missing the entries it compacted; a
// snapshot the node takes of its own state is at or below its last entry).
func receivedSnapshot(logs raft.LogStore, index uint64) bool {
	last, err := logs.LastIndex()
	return err == nil && index > last
}

type timedSink struct {
	raft.SnapshotSink
	start   time.Time
	receive prometheus.Observer
}

func (s *timedSink) Close() error {
	err := s.SnapshotSink.Close()
	if err == nil {
		s.receive.Observe(time.Since(s.start).Seconds())
	}
	return err
}
