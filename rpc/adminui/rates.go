package adminui

import (
	"fmt"
	"sync"
	"time"
)

// Rates are derived from the engine's monotonic counters (jobs ever
// enqueued, acked, dead-lettered) sampled whenever someone loads the Queues
// page: the rate is the counters' difference over the time between an older
// sample and now. Nothing is sampled in the background, so a rate appears
// from the second visit on.
const (
	rateWindow      = 5 * time.Minute // samples older than this are dropped
	rateMinSpan     = 2 * time.Second // shorter spans are too noisy to show
	rateSampleEvery = 2 * time.Second // at most one kept sample per interval
)

type counters struct{ enqueued, acked, dead uint64 }

type sample struct {
	at time.Time
	c  counters
}

// rates are per second over Span; Known is false until two samples at least
// rateMinSpan apart exist.
type rates struct {
	Known                 bool
	Enqueued, Acked, Dead float64
	Span                  time.Duration
}

func (r rates) Format(v float64) string {
	switch {
	case !r.Known:
		return "—"
	case v == 0:
		return "0/s"
	case v < 10:
		return fmt.Sprintf("%.2f/s", v)
	}
	return fmt.Sprintf("%.0f/s", v)
}

type rateTracker struct {
	mu      sync.Mutex
	samples map[string][]sample
}

func newRateTracker() *rateTracker { return &rateTracker{samples: make(map[string][]sample)} }

// observe records the counters of queue at now and returns the rates since
// the oldest sample within the window.
func (t *rateTracker) observe(now time.Time, queue string, c counters) rates {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := t.samples[queue]
	// Drop what fell out of the window, and everything when a counter went
	// backwards (a restore to older state): rates across it are meaningless.
	keep := s[:0]
	for _, old := range s {
		if now.Sub(old.at) <= rateWindow && !now.Before(old.at) &&
			old.c.enqueued <= c.enqueued && old.c.acked <= c.acked && old.c.dead <= c.dead {
			keep = append(keep, old)
		}
	}
	s = keep
	var out rates
	if len(s) > 0 {
		first := s[0]
		if span := now.Sub(first.at); span >= rateMinSpan {
			sec := span.Seconds()
			out = rates{
				Known:    true,
				Enqueued: float64(c.enqueued-first.c.enqueued) / sec,
				Acked:    float64(c.acked-first.c.acked) / sec,
				Dead:     float64(c.dead-first.c.dead) / sec,
				Span:     span,
			}
		}
	}
	if len(s) == 0 || now.Sub(s[len(s)-1].at) >= rateSampleEvery {
		s = append(s, sample{at: now, c: c})
	}
	t.samples[queue] = s
	return out
}
