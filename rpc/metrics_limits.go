package rpc

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/sepp-io/sepp/engine"
)

// The reserve limits' metrics, for the queues that set one.
var (
	queueReserveLimitDesc = prometheus.NewDesc("sepp_queue_reserve_limit",
		"A queue's reserve limits in force, by limit: max_reserved (jobs reserved at once), rate_per_second (rate_limit over rate_period_ms), rate_burst, max_per_key (jobs reserved at once per concurrency_key value).",
		[]string{"queue", "limit"}, nil)
	queueRateTokensDesc = prometheus.NewDesc("sepp_queue_rate_tokens",
		"Reservations a queue's rate limit lets through now (its token bucket; rate_burst when idle).", []string{"queue"}, nil)
	queueKeysAtLimitDesc = prometheus.NewDesc("sepp_queue_keys_at_limit",
		"Values of a queue's concurrency_key with max_per_key jobs reserved.", []string{"queue"}, nil)
	queueHeldByKeyDesc = prometheus.NewDesc("sepp_queue_ready_held_by_key",
		"Ready jobs of a queue held back until a job of their concurrency_key value leaves Reserved.", []string{"queue"}, nil)
)

var reserveLimitDescs = []*prometheus.Desc{queueReserveLimitDesc, queueRateTokensDesc, queueKeysAtLimitDesc, queueHeldByKeyDesc}

// collectReserveLimits sends q's reserve-limit metrics, none when it sets no
// limit.
func collectReserveLimits(ch chan<- prometheus.Metric, q engine.QueueStats) {
	l := q.Limits
	if l == (engine.ReserveLimits{}) {
		return
	}
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, append([]string{q.Name}, labels...)...)
	}
	if l.MaxReserved > 0 {
		gauge(queueReserveLimitDesc, float64(l.MaxReserved), "max_reserved")
	}
	if l.RateLimit > 0 {
		gauge(queueReserveLimitDesc, float64(l.RateLimit)/l.RatePeriod.Seconds(), "rate_per_second")
		gauge(queueReserveLimitDesc, float64(l.RateBurst), "rate_burst")
		gauge(queueRateTokensDesc, float64(l.RateTokens))
	}
	if l.MaxPerKey > 0 {
		gauge(queueReserveLimitDesc, float64(l.MaxPerKey), "max_per_key")
		gauge(queueKeysAtLimitDesc, float64(l.KeysAtLimit))
		gauge(queueHeldByKeyDesc, float64(l.Parked))
	}
}
