package bench

import (
	"context"
	"fmt"
	"io"
	"maps"
	"net/http"
	"strings"
	"sync"
	"time"
	"unicode"

	"google.golang.org/grpc"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Timings: the nodes' own histograms of their log writes, of the leader's
// commits (sepp_raft_log_write_seconds, sepp_raft_commit_seconds) and of
// their handling of each gRPC method (sepp_rpc_duration_seconds), read from
// /metrics before and after a scenario, and the bench client's own timing
// of the same calls. Their means lay out a call's time: the client's view
// of the call, the server's part of it, the commit within that, and the
// disk within the commit, on whatever machine the bench runs.

// histogramTotals is the count and sum of a histogram over every node.
type histogramTotals struct {
	count uint64
	sum   float64
}

type serverTimings struct {
	logWrite, commit histogramTotals
	// calls is sepp_rpc_duration_seconds of successful calls, by full
	// method name.
	calls map[string]histogramTotals
	// phases is sepp_raft_phase_seconds by phase: where a commit's time
	// went, as raft timed it (cluster.RaftPhases).
	phases map[string]histogramTotals
	// handedOver is sepp_jobs_handed_over_total: jobs delivered to
	// waiting reserves in the entry that enqueued them.
	handedOver float64
}

// rpcDurationMetric is the server's histogram of call handling times.
const rpcDurationMetric = "sepp_rpc_duration_seconds"

// timingsScrapeTimeout bounds one node's /metrics read.
const timingsScrapeTimeout = 2 * time.Second

// scrapeTimings adds the timings of the node serving /metrics at httpAddr
// to t.
func scrapeTimings(ctx context.Context, httpAddr string, t *serverTimings) error {
	return scrapeMetrics(ctx, httpAddr, func(body io.Reader) error { return addTimings(body, t) })
}

// scrapeMetrics reads the /metrics of the node at httpAddr into parse.
func scrapeMetrics(ctx context.Context, httpAddr string, parse func(io.Reader) error) error {
	ctx, cancel := context.WithTimeout(ctx, timingsScrapeTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+httpAddr+"/metrics", nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET /metrics on %s: %s", httpAddr, resp.Status)
	}
	return parse(resp.Body)
}

// addTimings parses a Prometheus text exposition and adds its log-write and
// commit histograms to t.
func addTimings(r io.Reader, t *serverTimings) error {
	families, err := parseExposition(r)
	if err != nil {
		return err
	}
	add := func(name string, into *histogramTotals) {
		f := families[name]
		if f == nil || f.GetType() != dto.MetricType_HISTOGRAM {
			return
		}
		for _, m := range f.GetMetric() {
			into.count += m.GetHistogram().GetSampleCount()
			into.sum += m.GetHistogram().GetSampleSum()
		}
	}
	if f := families["sepp_jobs_handed_over_total"]; f != nil && f.GetType() == dto.MetricType_COUNTER {
		for _, m := range f.GetMetric() {
			t.handedOver += m.GetCounter().GetValue()
		}
	}
	if f := families["sepp_raft_phase_seconds"]; f != nil && f.GetType() == dto.MetricType_HISTOGRAM {
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() != "phase" {
					continue
				}
				if t.phases == nil {
					t.phases = map[string]histogramTotals{}
				}
				p := t.phases[l.GetValue()]
				p.count += m.GetHistogram().GetSampleCount()
				p.sum += m.GetHistogram().GetSampleSum()
				t.phases[l.GetValue()] = p
			}
		}
	}
	add("sepp_raft_log_write_seconds", &t.logWrite)
	add("sepp_raft_commit_seconds", &t.commit)
	if f := families[rpcDurationMetric]; f != nil && f.GetType() == dto.MetricType_HISTOGRAM {
		for _, m := range f.GetMetric() {
			method, code := "", ""
			for _, l := range m.GetLabel() {
				switch l.GetName() {
				case "method":
					method = l.GetValue()
				case "code":
					code = l.GetValue()
				}
			}
			if code != "OK" || method == "" {
				continue
			}
			if t.calls == nil {
				t.calls = map[string]histogramTotals{}
			}
			c := t.calls[method]
			c.count += m.GetHistogram().GetSampleCount()
			c.sum += m.GetHistogram().GetSampleSum()
			t.calls[method] = c
		}
	}
	return nil
}

// callTimer times the bench client's unary calls by method, successful
// ones only, as the server's histogram counts them: an interceptor on the
// client's connections, so each attempt of a retried call counts alone.
type callTimer struct {
	mu    sync.Mutex
	calls map[string]histogramTotals
}

func (c *callTimer) intercept(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	start := time.Now()
	err := invoker(ctx, method, req, reply, cc, opts...)
	if err == nil {
		d := time.Since(start).Seconds()
		c.mu.Lock()
		if c.calls == nil {
			c.calls = map[string]histogramTotals{}
		}
		t := c.calls[method]
		t.count++
		t.sum += d
		c.calls[method] = t
		c.mu.Unlock()
	}
	return err
}

// snapshot copies the totals so far.
func (c *callTimer) snapshot() map[string]histogramTotals {
	c.mu.Lock()
	defer c.mu.Unlock()
	return maps.Clone(c.calls)
}

// timingsSample is the nodes' timings at one moment; ok when every local
// node's /metrics was read.
type timingsSample struct {
	timings serverTimings
	ok      bool
	// client is the bench client's call totals, taken with or without a
	// local cluster.
	client map[string]histogramTotals
}

// sampleTimings reads the local nodes' timings. A scrape costs the nodes
// some CPU, so a scenario takes it before its first CPU sample and after
// its last, to keep it out of the CPU per job.
func (r *runner) sampleTimings(ctx context.Context) timingsSample {
	s := timingsSample{client: r.calls.snapshot()}
	if r.cluster == nil {
		return s
	}
	s.ok = true
	for _, n := range r.cluster.Nodes {
		if err := scrapeTimings(ctx, n.HTTPAddr, &s.timings); err != nil {
			s.ok = false
		}
	}
	return s
}

// addTimingFigures reports, between two samples: name_log_write_mean (the
// mean log write on any node, fsync included), name_commit_mean (the
// leader's mean time from proposing an entry to its result) and
// name_entries_per_1000_jobs (how well the proposer batched). For each of
// the scenario's main calls (a full gRPC method name) it adds
// name_<call>_call_mean, the call's mean as the bench client saw it, and
// name_<call>_server_mean, its mean handling time on the nodes: what lies
// between the two is the way there and back (encoding, the gRPC transport,
// loopback TCP, waking the goroutines at both ends).
func (r *runner) addTimingFigures(name string, before, after timingsSample, jobs int64, calls ...string) {
	if jobs <= 0 {
		return
	}
	mean := func(b, a histogramTotals) (float64, bool) {
		n := a.count - b.count
		if a.count < b.count || n == 0 {
			return 0, false // a node restarted, or nothing was observed
		}
		return (a.sum - b.sum) / float64(n) * 1000, true
	}
	for _, method := range calls {
		call := name + "_" + callFigureName(method)
		if ms, ok := mean(before.client[method], after.client[method]); ok {
			r.add(call+"_call_mean", ms, "ms")
		}
		if before.ok && after.ok {
			if ms, ok := mean(before.timings.calls[method], after.timings.calls[method]); ok {
				r.add(call+"_server_mean", ms, "ms")
			}
		}
	}
	if !before.ok || !after.ok {
		return
	}
	if ms, ok := mean(before.timings.logWrite, after.timings.logWrite); ok {
		r.add(name+"_log_write_mean", ms, "ms")
	}
	if ms, ok := mean(before.timings.commit, after.timings.commit); ok {
		r.add(name+"_commit_mean", ms, "ms")
		r.add(name+"_entries_per_1000_jobs", float64(after.timings.commit.count-before.timings.commit.count)*1000/float64(jobs), "entries")
	}
	// The commit's phases as raft timed them, in a fixed order.
	for _, phase := range raftPhaseFigures {
		if ms, ok := mean(before.timings.phases[phase], after.timings.phases[phase]); ok {
			r.add(name+"_raft_"+phase+"_mean", ms, "ms")
		}
	}
}

// raftPhaseFigures are the phases of sepp_raft_phase_seconds the bench
// reports, in the order an entry meets them.
var raftPhaseFigures = []string{"leader_dispatch", "follower_round_trip", "follower_log_write", "quorum", "apply_handoff", "apply"}

// callFigureName turns "/sepp.v1.QueueService/EnqueueBatch" into
// "enqueue_batch".
func callFigureName(fullMethod string) string {
	m := fullMethod[strings.LastIndexByte(fullMethod, '/')+1:]
	var b strings.Builder
	for i, c := range m {
		if unicode.IsUpper(c) {
			if i > 0 {
				b.WriteByte('_')
			}
			c = unicode.ToLower(c)
		}
		b.WriteRune(c)
	}
	return b.String()
}

// parseExposition reads a Prometheus text exposition, as the nodes serve
// /metrics, into its metric families by name.
func parseExposition(r io.Reader) (map[string]*dto.MetricFamily, error) {
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(r)
	if err != nil {
		return nil, fmt.Errorf("parse metrics: %w", err)
	}
	return families, nil
}

// nodeMetrics is what one node's /metrics says of its memory, its payloads
// and its snapshots.
type nodeMetrics struct {
	// memoryHeld is sepp_memory_held_bytes, the replicated count the
	// memory budget charges; payloadHeld sepp_payload_held_bytes, the
	// payload bytes the jobs hold (replicated); payloadStore
	// sepp_payload_store_disk_bytes, this node's payload store on disk.
	memoryHeld, payloadHeld, payloadStore float64
	// storeTombstones, storeDebt and storeCompactionSeconds are the
	// payload store's sepp_payload_store_tombstones,
	// _compaction_debt_bytes and _compaction_seconds_total.
	storeTombstones, storeDebt, storeCompactionSeconds float64
	// known records which of the gauges and counters above were present,
	// by name.
	known map[string]bool
	// snapshotCapture, snapshotPersist and snapshotReceive are
	// sepp_raft_snapshot_seconds by phase; restore is
	// sepp_raft_restore_seconds.
	snapshotCapture, snapshotPersist, snapshotReceive, restore histogramTotals
}

const (
	memoryHeldMetric   = "sepp_memory_held_bytes"
	payloadHeldMetric  = "sepp_payload_held_bytes"
	payloadStoreMetric = "sepp_payload_store_disk_bytes"

	storeTombstonesMetric   = "sepp_payload_store_tombstones"
	storeDebtMetric         = "sepp_payload_store_compaction_debt_bytes"
	storeCompactionsSeconds = "sepp_payload_store_compaction_seconds_total"
)

// parseNodeMetrics reads a node's Prometheus text exposition.
func parseNodeMetrics(r io.Reader) (nodeMetrics, error) {
	families, err := parseExposition(r)
	if err != nil {
		return nodeMetrics{}, err
	}
	m := nodeMetrics{known: map[string]bool{}}
	for name, into := range map[string]*float64{
		memoryHeldMetric:      &m.memoryHeld,
		payloadHeldMetric:     &m.payloadHeld,
		payloadStoreMetric:    &m.payloadStore,
		storeTombstonesMetric: &m.storeTombstones,
		storeDebtMetric:       &m.storeDebt,
	} {
		if f := families[name]; f != nil && f.GetType() == dto.MetricType_GAUGE && len(f.GetMetric()) > 0 {
			*into = f.GetMetric()[0].GetGauge().GetValue()
			m.known[name] = true
		}
	}
	if f := families[storeCompactionsSeconds]; f != nil && f.GetType() == dto.MetricType_COUNTER && len(f.GetMetric()) > 0 {
		m.storeCompactionSeconds = f.GetMetric()[0].GetCounter().GetValue()
		m.known[storeCompactionsSeconds] = true
	}
	histogram := func(name string, match func(*dto.Metric) bool, into *histogramTotals) {
		f := families[name]
		if f == nil || f.GetType() != dto.MetricType_HISTOGRAM {
			return
		}
		for _, x := range f.GetMetric() {
			if match(x) {
				into.count += x.GetHistogram().GetSampleCount()
				into.sum += x.GetHistogram().GetSampleSum()
			}
		}
	}
	phase := func(want string) func(*dto.Metric) bool {
		return func(x *dto.Metric) bool {
			for _, l := range x.GetLabel() {
				if l.GetName() == "phase" && l.GetValue() == want {
					return true
				}
			}
			return false
		}
	}
	histogram("sepp_raft_snapshot_seconds", phase("capture"), &m.snapshotCapture)
	histogram("sepp_raft_snapshot_seconds", phase("persist"), &m.snapshotPersist)
	histogram("sepp_raft_snapshot_seconds", phase("receive"), &m.snapshotReceive)
	histogram("sepp_raft_restore_seconds", func(*dto.Metric) bool { return true }, &m.restore)
	return m, nil
}

// readNodeMetrics reads local node i's /metrics.
func (r *runner) readNodeMetrics(ctx context.Context, i int) (nodeMetrics, error) {
	var m nodeMetrics
	err := scrapeMetrics(ctx, r.cluster.Nodes[i].HTTPAddr, func(body io.Reader) error {
		var err error
		m, err = parseNodeMetrics(body)
		return err
	})
	return m, err
}

// meanMS is the mean of the observations between two readings of a
// histogram, in milliseconds; false when none was made.
func meanMS(before, after histogramTotals) (float64, bool) {
	if after.count <= before.count {
		return 0, false
	}
	return (after.sum - before.sum) / float64(after.count-before.count) * 1000, true
}
