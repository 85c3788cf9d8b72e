package rpc

import (
	"context"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/sepp-io/sepp/engine"
)

// activityCollector exports each queue's engine.QueueActivity: deliveries,
// nacks by directive, retries, releases, lease expiries and the wait of
// first deliveries. These are counted by this node's state machine from the
// commands it applied since it started or restored a snapshot, so each node
// has its own counts (their rates agree); the HELP texts say so. Labels are
// the queue and a fixed set of directives: cardinality is the queue count.
type activityCollector struct {
	b   Backend
	log hclog.Logger

	reserved, nacked, retried, released, leaseExpired, wait, run *prometheus.Desc
}

func newActivityCollector(b Backend, log hclog.Logger) *activityCollector {
	const local = " Counted by this node's state machine since it started or restored a snapshot (use rate())."
	return &activityCollector{
		b: b, log: log,
		reserved:     prometheus.NewDesc("sepp_jobs_reserved_total", "Deliveries handed out, by queue."+local, []string{"queue"}, nil),
		nacked:       prometheus.NewDesc("sepp_jobs_nacked_total", "Nacks, by queue and retry directive (default, after, dead_letter)."+local, []string{"queue", "directive"}, nil),
		retried:      prometheus.NewDesc("sepp_jobs_retried_total", "Nacks and lease expiries that gave the job another attempt, by queue."+local, []string{"queue"}, nil),
		released:     prometheus.NewDesc("sepp_jobs_released_total", "Deliveries handed back without burning an attempt, by queue."+local, []string{"queue"}, nil),
		leaseExpired: prometheus.NewDesc("sepp_leases_expired_total", "Leases that ran out before an answer, by queue."+local, []string{"queue"}, nil),
		wait:         prometheus.NewDesc("sepp_job_wait_seconds", "Time from enqueue to first delivery (scheduled jobs include their delay), by queue, on the leader's clock as replicated."+local, []string{"queue"}, nil),
		run:          prometheus.NewDesc("sepp_job_run_seconds", "Time from a delivery's reserve to its ack (successful runs), by queue, on the leader's clock as replicated; deliveries handed out before this node's last restore are not timed."+local, []string{"queue"}, nil),
	}
}

func (c *activityCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.reserved, c.nacked, c.retried, c.released, c.leaseExpired, c.wait, c.run} {
		ch <- d
	}
}

func (c *activityCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), metricsReadTimeout)
	defer cancel()
	var stats []engine.QueueStats
	if err := c.b.Read(ctx, true, func(e engine.View) error {
		stats = e.Stats(time.Time{})
		return nil
	}); err != nil {
		c.log.Warn("metrics: reading queue activity failed", "error", err)
		return
	}
	for _, q := range stats {
		a := q.Activity
		counter := func(d *prometheus.Desc, v uint64, labels ...string) {
			ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), append([]string{q.Name}, labels...)...)
		}
		counter(c.reserved, a.Reserved)
		counter(c.nacked, a.NackedDefault, "default")
		counter(c.nacked, a.NackedAfter, "after")
		counter(c.nacked, a.NackedDeadLetter, "dead_letter")
		counter(c.retried, a.Retried)
		counter(c.released, a.Released)
		counter(c.leaseExpired, a.LeaseExpired)
		buckets := make(map[float64]uint64, len(engine.WaitBounds))
		var cum uint64
		for i, bound := range engine.WaitBounds {
			cum += a.WaitBuckets[i]
			buckets[bound.Seconds()] = cum
		}
		ch <- prometheus.MustNewConstHistogram(c.wait, a.WaitCount(), a.WaitSum.Seconds(), buckets, q.Name)
		runs := make(map[float64]uint64, len(engine.WaitBounds))
		cum = 0
		for i, bound := range engine.WaitBounds {
			cum += a.RunBuckets[i]
			runs[bound.Seconds()] = cum
		}
		ch <- prometheus.MustNewConstHistogram(c.run, a.RunCount(), a.RunSum.Seconds(), runs, q.Name)
	}
}
