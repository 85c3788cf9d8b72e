package rpc

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/sepp-io/sepp/engine"
)

// The periodic schedules' metrics, one series set per schedule, read from
// the node's replicated state at scrape time.
var (
	scheduleTicksDesc = prometheus.NewDesc("sepp_schedule_ticks_total",
		"Ticks of a schedule consumed, by outcome: fired (a job was enqueued) or skipped (overlap, missed during downtime, paused, or the enqueue refused).",
		[]string{"schedule", "outcome"}, nil)
	scheduleNextFireDesc = prometheus.NewDesc("sepp_schedule_next_fire_timestamp_seconds",
		"When a schedule fires next (unix seconds); absent while it is paused. A value well in the past means no leader fires it.",
		[]string{"schedule"}, nil)
	scheduleLastFireDesc = prometheus.NewDesc("sepp_schedule_last_fire_timestamp_seconds",
		"The latest tick a schedule fired or consumed (unix seconds); absent before the first.",
		[]string{"schedule"}, nil)
	schedulePausedDesc = prometheus.NewDesc("sepp_schedule_paused",
		"1 when a schedule is paused.", []string{"schedule"}, nil)
)

var scheduleDescs = []*prometheus.Desc{scheduleTicksDesc, scheduleNextFireDesc, scheduleLastFireDesc, schedulePausedDesc}

func collectSchedules(ch chan<- prometheus.Metric, schedules []engine.Schedule) {
	for _, s := range schedules {
		ch <- prometheus.MustNewConstMetric(scheduleTicksDesc, prometheus.CounterValue, float64(s.Fired), s.Name, "fired")
		ch <- prometheus.MustNewConstMetric(scheduleTicksDesc, prometheus.CounterValue, float64(s.Skipped), s.Name, "skipped")
		if next := NextFireTimes(s, 1); len(next) > 0 {
			ch <- prometheus.MustNewConstMetric(scheduleNextFireDesc, prometheus.GaugeValue, float64(next[0].UnixNano())/1e9, s.Name)
		}
		if !s.LastFiredTick.IsZero() {
			ch <- prometheus.MustNewConstMetric(scheduleLastFireDesc, prometheus.GaugeValue, float64(s.LastFiredTick.UnixNano())/1e9, s.Name)
		}
		paused := 0.0
		if s.Paused {
			paused = 1
		}
		ch <- prometheus.MustNewConstMetric(schedulePausedDesc, prometheus.GaugeValue, paused, s.Name)
	}
}
