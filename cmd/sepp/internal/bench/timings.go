package bench

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Server timings: the nodes' own histograms of their log writes and of the
// leader's commits (sepp_raft_log_write_seconds, sepp_raft_commit_seconds),
// read from /metrics before and after a scenario. Their means say how much
// of a figure is the disk and how much the rest, on whatever machine the
// bench runs.

// histogramTotals is the count and sum of a histogram over every node.
type histogramTotals struct {
	count uint64
	sum   float64
}

type serverTimings struct {
	logWrite, commit histogramTotals
}

// timingsScrapeTimeout bounds one node's /metrics read.
const timingsScrapeTimeout = 2 * time.Second

// scrapeTimings adds the timings of the node serving /metrics at httpAddr
// to t.
func scrapeTimings(ctx context.Context, httpAddr string, t *serverTimings) error {
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
	return addTimings(resp.Body, t)
}

// addTimings parses a Prometheus text exposition and adds its log-write and
// commit histograms to t.
func addTimings(r io.Reader, t *serverTimings) error {
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(r)
	if err != nil {
		return fmt.Errorf("parse metrics: %w", err)
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
	add("sepp_raft_log_write_seconds", &t.logWrite)
	add("sepp_raft_commit_seconds", &t.commit)
	return nil
}

// timingsSample is the nodes' timings at one moment; ok when every local
// node's /metrics was read.
type timingsSample struct {
	timings serverTimings
	ok      bool
}

// sampleTimings reads the local nodes' timings. A scrape costs the nodes
// some CPU, so a scenario takes it before its first CPU sample and after
// its last, to keep it out of the CPU per job.
func (r *runner) sampleTimings(ctx context.Context) timingsSample {
	if r.cluster == nil {
		return timingsSample{}
	}
	s := timingsSample{ok: true}
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
// name_entries_per_1000_jobs (how well the proposer batched).
func (r *runner) addTimingFigures(name string, before, after timingsSample, jobs int64) {
	if !before.ok || !after.ok || jobs <= 0 {
		return
	}
	mean := func(b, a histogramTotals) (float64, bool) {
		n := a.count - b.count
		if a.count < b.count || n == 0 {
			return 0, false // a node restarted, or nothing was observed
		}
		return (a.sum - b.sum) / float64(n) * 1000, true
	}
	if ms, ok := mean(before.timings.logWrite, after.timings.logWrite); ok {
		r.add(name+"_log_write_mean", ms, "ms")
	}
	if ms, ok := mean(before.timings.commit, after.timings.commit); ok {
		r.add(name+"_commit_mean", ms, "ms")
		r.add(name+"_entries_per_1000_jobs", float64(after.timings.commit.count-before.timings.commit.count)*1000/float64(jobs), "entries")
	}
}
