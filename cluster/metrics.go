package cluster

import (
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
}

// latencyBuckets run from 50µs to ~3.3s: an fsync on a fast disk takes
// tens of microseconds; a write the store-write timeout (2s) cuts short
// lands in the last bucket.
var latencyBuckets = prometheus.ExponentialBuckets(0.00005, 2, 17)

func newNodeMetrics() *nodeMetrics {
	return &nodeMetrics{
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
// sepp_raft_commit_seconds); register them once.
func (n *Node) Metrics() []prometheus.Collector {
	return []prometheus.Collector{n.metrics.logWrite, n.metrics.commit}
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
