package rpc

import (
	"context"
	"net/http"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/status"

	"github.com/sepp-io/sepp/engine"
)

// MetricsHandler serves the metrics of g in the Prometheus text format; mount
// it at /metrics. Pass the registry given to NewGRPCServer as Registerer.
func MetricsHandler(g prometheus.Gatherer) http.Handler {
	return promhttp.HandlerFor(g, promhttp.HandlerOpts{})
}

// rpcMetrics counts and times every unary call by method and status code.
type rpcMetrics struct {
	requests *prometheus.CounterVec
	latency  *prometheus.HistogramVec
}

func newRPCMetrics() *rpcMetrics {
	return &rpcMetrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sepp_rpc_requests_total",
			Help: "gRPC calls handled, by method and status code.",
		}, []string{"method", "code"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "sepp_rpc_duration_seconds",
			Help: "Time to handle a gRPC call, by method and status code (long-poll waits included).",
			// 100µs to ~50s: a proposal commits in about a millisecond; a
			// long-poll Reserve may wait up to its cap.
			Buckets: prometheus.ExponentialBuckets(0.0001, 2.5, 15),
		}, []string{"method", "code"}),
	}
}

func (m *rpcMetrics) intercept(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	start := time.Now()
	resp, err := handler(ctx, req)
	code := status.Code(err).String()
	m.requests.WithLabelValues(info.FullMethod, code).Inc()
	m.latency.WithLabelValues(info.FullMethod, code).Observe(time.Since(start).Seconds())
	return resp, err
}

func (m *rpcMetrics) Describe(ch chan<- *prometheus.Desc) {
	m.requests.Describe(ch)
	m.latency.Describe(ch)
}

func (m *rpcMetrics) Collect(ch chan<- prometheus.Metric) {
	m.requests.Collect(ch)
	m.latency.Collect(ch)
}

// stateCollector reads the node's queue and Raft state at scrape time: no
// background loop, and a scrape costs one local (stale) read of the engine.
type stateCollector struct {
	b   Backend
	now func() time.Time
	log hclog.Logger

	jobs, oldestReady, enqueued, acked, deadLettered, dropped, paused *prometheus.Desc
	raftState, raftTerm, raftCommit, raftApplied, raftLastLog         *prometheus.Desc
	raftApplyLag                                                      *prometheus.Desc
	remembered, rememberedLimit, forgottenEarly                       *prometheus.Desc
	memHeld, memBudget, queueMemHeld, queueMemBudget                  *prometheus.Desc
	payloadHeld, payloadStore, checkpointPinned                       *prometheus.Desc
}

// metricsReadTimeout bounds the reads one scrape makes.
const metricsReadTimeout = 2 * time.Second

func newStateCollector(b Backend, now func() time.Time, log hclog.Logger) *stateCollector {
	return &stateCollector{
		b: b, now: now, log: log,
		jobs:             prometheus.NewDesc("sepp_jobs", "Jobs on this node's state, by queue and state (dead: retained dead-letter records).", []string{"queue", "state"}, nil),
		oldestReady:      prometheus.NewDesc("sepp_queue_oldest_ready_age_seconds", "How long the oldest Ready job of a queue has waited.", []string{"queue"}, nil),
		enqueued:         prometheus.NewDesc("sepp_jobs_enqueued_total", "Jobs ever enqueued, by queue.", []string{"queue"}, nil),
		acked:            prometheus.NewDesc("sepp_jobs_acked_total", "Jobs ever acked, by queue.", []string{"queue"}, nil),
		deadLettered:     prometheus.NewDesc("sepp_dead_lettered_total", "Jobs ever dead-lettered, by queue and cause.", []string{"queue", "cause"}, nil),
		dropped:          prometheus.NewDesc("sepp_dead_letters_dropped_total", "Dead jobs dropped because dead-letter retention is off, by queue.", []string{"queue"}, nil),
		paused:           prometheus.NewDesc("sepp_queue_paused", "1 when the queue is paused.", []string{"queue"}, nil),
		raftState:        prometheus.NewDesc("sepp_raft_state", "1 for this node's current Raft role.", []string{"state"}, nil),
		raftTerm:         prometheus.NewDesc("sepp_raft_term", "Current Raft term.", nil, nil),
		raftCommit:       prometheus.NewDesc("sepp_raft_commit_index", "Raft commit index.", nil, nil),
		raftApplied:      prometheus.NewDesc("sepp_raft_applied_index", "Last Raft index applied to the state machine.", nil, nil),
		raftLastLog:      prometheus.NewDesc("sepp_raft_last_log_index", "Last index in the Raft log.", nil, nil),
		raftApplyLag:     prometheus.NewDesc("sepp_raft_apply_lag", "Committed entries not yet applied (commit index minus applied index).", nil, nil),
		remembered:       prometheus.NewDesc("sepp_remembered_keys", "Keys remembered to answer retried calls, by kind: enqueue idempotency keys (for limits.idempotency_window) and reserve request ids (until the lease their reserve granted ends).", []string{"kind"}, nil),
		rememberedLimit:  prometheus.NewDesc("sepp_remembered_keys_limit", "limits.max_idempotency_keys: the most keys of each kind remembered at once.", nil, nil),
		memHeld:          prometheus.NewDesc("sepp_memory_held_bytes", "Bytes this node's jobs, payloads, custom fields, keys and dead-letter records are counted to hold, against limits.max_memory_bytes (the same count on every replica).", nil, nil),
		memBudget:        prometheus.NewDesc("sepp_memory_budget_bytes", "limits.max_memory_bytes in force (replicated; 0: unbounded): above it enqueues are refused with RESOURCE_EXHAUSTED.", nil, nil),
		queueMemHeld:     prometheus.NewDesc("sepp_queue_memory_held_bytes", "Bytes a queue's jobs, records and keys are counted to hold.", []string{"queue"}, nil),
		queueMemBudget:   prometheus.NewDesc("sepp_queue_memory_budget_bytes", "A queue's own max_memory_bytes, for the queues that have one.", []string{"queue"}, nil),
		payloadHeld:      prometheus.NewDesc("sepp_payload_held_bytes", "Bytes of payload the live jobs and dead-letter records hold (the same count on every replica); kept in each node's payload store on disk, not in memory, once every member runs a release that does (payloads_off_heap).", nil, nil),
		payloadStore:     prometheus.NewDesc("sepp_payload_store_disk_bytes", "Space this node's payload store takes on disk (its own figure: compaction makes it differ between replicas).", nil, nil),
		checkpointPinned: prometheus.NewDesc("sepp_snapshot_checkpoint_pinned_bytes", "Space this node's snapshot checkpoints hold on disk beyond its payload store's files: payload store files compacted away since a kept snapshot's checkpoint linked them, held until raft drops that snapshot.", nil, nil),
		forgottenEarly:   prometheus.NewDesc("sepp_idempotency_keys_forgotten_early_total", "Idempotency keys forgotten before limits.idempotency_window ended, to make room once limits.max_idempotency_keys were held (since this node started).", nil, nil),
	}
}

func (c *stateCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.jobs, c.oldestReady, c.enqueued, c.acked, c.deadLettered, c.dropped, c.paused,
		c.raftState, c.raftTerm, c.raftCommit, c.raftApplied, c.raftLastLog, c.raftApplyLag, c.remembered, c.rememberedLimit, c.forgottenEarly,
		c.memHeld, c.memBudget, c.queueMemHeld, c.queueMemBudget, c.payloadHeld, c.payloadStore, c.checkpointPinned} {
		ch <- d
	}
	for _, d := range reserveLimitDescs {
		ch <- d
	}
	for _, d := range scheduleDescs { // metrics_schedules.go
		ch <- d
	}
}

var raftStates = []string{"Leader", "Follower", "Candidate", "Shutdown"}

func (c *stateCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), metricsReadTimeout)
	defer cancel()

	var stats []engine.QueueStats
	var keys engine.RememberedKeys
	var held, budget, payloadHeld int64
	var schedules []engine.Schedule
	if err := c.b.Read(ctx, true, func(e engine.View) error {
		stats = e.Stats(c.now())
		keys = e.RememberedKeys()
		held, budget = e.MemoryHeldTotal(), e.Config().Limits.MaxMemoryBytes
		payloadHeld = e.DiskHeld()
		schedules = e.Schedules()
		return nil
	}); err != nil {
		c.log.Warn("metrics: reading queue stats failed", "error", err)
	} else {
		ch <- prometheus.MustNewConstMetric(c.remembered, prometheus.GaugeValue, float64(keys.IdempotencyKeys), "idempotency_key")
		ch <- prometheus.MustNewConstMetric(c.remembered, prometheus.GaugeValue, float64(keys.ReserveRequestIDs), "reserve_request_id")
		ch <- prometheus.MustNewConstMetric(c.rememberedLimit, prometheus.GaugeValue, float64(keys.Limit))
		ch <- prometheus.MustNewConstMetric(c.forgottenEarly, prometheus.CounterValue, float64(keys.ForgottenEarly))
		ch <- prometheus.MustNewConstMetric(c.memHeld, prometheus.GaugeValue, float64(held))
		ch <- prometheus.MustNewConstMetric(c.memBudget, prometheus.GaugeValue, float64(budget))
		ch <- prometheus.MustNewConstMetric(c.payloadHeld, prometheus.GaugeValue, float64(payloadHeld))
		collectSchedules(ch, schedules)
	}
	for _, q := range stats {
		gauge := func(d *prometheus.Desc, v float64, labels ...string) {
			ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, append([]string{q.Name}, labels...)...)
		}
		counter := func(d *prometheus.Desc, v uint64, labels ...string) {
			ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), append([]string{q.Name}, labels...)...)
		}
		gauge(c.jobs, float64(q.Scheduled), "scheduled")
		gauge(c.jobs, float64(q.Ready), "ready")
		gauge(c.jobs, float64(q.Reserved), "reserved")
		gauge(c.jobs, float64(q.Dead), "dead")
		gauge(c.oldestReady, q.OldestReadyAge.Seconds())
		gauge(c.queueMemHeld, float64(q.HeldBytes))
		if q.MaxMemoryBytes > 0 {
			gauge(c.queueMemBudget, float64(q.MaxMemoryBytes))
		}
		paused := 0.0
		if q.Paused {
			paused = 1
		}
		gauge(c.paused, paused)
		collectReserveLimits(ch, q)
		counter(c.enqueued, q.Enqueued)
		counter(c.acked, q.Acked)
		counter(c.dropped, q.Dropped)
		for _, cause := range engine.Causes() {
			counter(c.deadLettered, q.DeadLettered[cause], causeLabel(cause))
		}
	}

	st, err := c.b.Status(ctx)
	if err != nil {
		c.log.Warn("metrics: reading raft status failed", "error", err)
		return
	}
	for _, s := range raftStates {
		v := 0.0
		if s == st.State {
			v = 1
		}
		ch <- prometheus.MustNewConstMetric(c.raftState, prometheus.GaugeValue, v, s)
	}
	ch <- prometheus.MustNewConstMetric(c.raftTerm, prometheus.GaugeValue, float64(st.Term))
	ch <- prometheus.MustNewConstMetric(c.raftCommit, prometheus.GaugeValue, float64(st.CommitIndex))
	ch <- prometheus.MustNewConstMetric(c.raftApplied, prometheus.GaugeValue, float64(st.AppliedIndex))
	ch <- prometheus.MustNewConstMetric(c.raftLastLog, prometheus.GaugeValue, float64(st.LastLogIndex))
	lag := 0.0
	if st.CommitIndex > st.AppliedIndex {
		lag = float64(st.CommitIndex - st.AppliedIndex)
	}
	ch <- prometheus.MustNewConstMetric(c.raftApplyLag, prometheus.GaugeValue, lag)
	ch <- prometheus.MustNewConstMetric(c.payloadStore, prometheus.GaugeValue, float64(st.PayloadStoreBytes))
	ch <- prometheus.MustNewConstMetric(c.checkpointPinned, prometheus.GaugeValue, float64(st.SnapshotCheckpointPinnedBytes))
}
