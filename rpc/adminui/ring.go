package adminui

import (
	"context"
	"sync"
	"time"

	"github.com/sepp-io/sepp/engine"
	"github.com/sepp-io/sepp/rpc"
)

// The rate ring: every node samples its own applied state (the engine's
// monotonic per-queue counters and its depths) at a fixed interval into a
// bounded ring per queue, so rates and charts are there on the first visit
// of a page and on any node, leader or follower. It holds only what the
// engine counted; the sampler reads the clock, the engine never does.
const (
	// DefaultSampleEvery and DefaultSampleKeep make a ring of 360 samples:
	// one hour at ten seconds.
	DefaultSampleEvery = 10 * time.Second
	DefaultSampleKeep  = time.Hour
	// maxRingQueues bounds the queues a ring follows (the rest are not
	// charted); maxRingSamples bounds each queue's ring.
	maxRingQueues  = 1000
	maxRingSamples = 4096
	// rateSpan is the span the Queues table's rates are measured over.
	rateSpan = time.Minute
)

// ringCounters are the engine's monotonic counters of one queue.
type ringCounters struct {
	enqueued, reserved, acked, nacked, dead uint64
}

func (c ringCounters) le(o ringCounters) bool {
	return c.enqueued <= o.enqueued && c.reserved <= o.reserved && c.acked <= o.acked &&
		c.nacked <= o.nacked && c.dead <= o.dead
}

type ringSample struct {
	at              time.Time
	c               ringCounters
	ready, reserved int
}

type queueRing struct {
	buf  []ringSample // circular; len(buf) == capacity once full
	next int          // where the next sample goes once full
}

func (q *queueRing) add(s ringSample, capacity int) {
	if len(q.buf) < capacity {
		q.buf = append(q.buf, s)
		return
	}
	q.buf[q.next] = s
	q.next = (q.next + 1) % capacity
}

// ordered returns the samples oldest first.
func (q *queueRing) ordered() []ringSample {
	out := make([]ringSample, 0, len(q.buf))
	out = append(out, q.buf[q.next:]...)
	return append(out, q.buf[:q.next]...)
}

// RateRing is a node's bounded history of per-queue counters. Make one with
// NewRateRing, pass it in Options.Rates, and run it with Run; a UI without
// one keeps its own and samples it only when a page is loaded.
type RateRing struct {
	every    time.Duration
	capacity int

	mu     sync.Mutex
	queues map[string]*queueRing
	total  queueRing // every queue summed (a queue deleted leaves a gap)
	last   time.Time
}

// NewRateRing returns a ring sampled every `every` that keeps `keep` of
// history (at most 4096 samples per queue). Zero values take the defaults,
// 10 s and 1 h.
func NewRateRing(every, keep time.Duration) *RateRing {
	if every <= 0 {
		every = DefaultSampleEvery
	}
	if keep <= 0 {
		keep = DefaultSampleKeep
	}
	n := int(keep / every)
	n = min(max(n, 2), maxRingSamples)
	return &RateRing{every: every, capacity: n, queues: make(map[string]*queueRing)}
}

// Every is the sampling interval.
func (r *RateRing) Every() time.Duration { return r.every }

// Run samples b's applied state (a stale read: each node its own) every
// interval until ctx ends.
func (r *RateRing) Run(ctx context.Context, b rpc.Backend, clock func() time.Time) {
	if clock == nil {
		clock = time.Now
	}
	t := time.NewTicker(r.every)
	defer t.Stop()
	sample := func() {
		now := clock()
		var stats []engine.QueueStats
		if err := b.Read(ctx, true, func(e engine.View) error {
			stats = e.Stats(now)
			return nil
		}); err == nil {
			r.Sample(now, stats)
		}
	}
	sample()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			sample()
		}
	}
}

// Sample records stats at now. Queues no longer in stats are forgotten.
func (r *RateRing) Sample(now time.Time, stats []engine.QueueStats) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.sampleLocked(now, stats)
}

// maybeSample samples only when the last sample is at least an interval
// old: page loads feed a ring nobody runs.
func (r *RateRing) maybeSample(now time.Time, stats []engine.QueueStats) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.last.IsZero() && now.Sub(r.last) < r.every && !now.Before(r.last) {
		return
	}
	r.sampleLocked(now, stats)
}

func (r *RateRing) sampleLocked(now time.Time, stats []engine.QueueStats) {
	seen := make(map[string]bool, len(stats))
	sum := ringSample{at: now}
	for _, s := range stats {
		seen[s.Name] = true
		q := r.queues[s.Name]
		if q == nil {
			if len(r.queues) >= maxRingQueues {
				continue
			}
			q = &queueRing{}
			r.queues[s.Name] = q
		}
		a := s.Activity
		one := ringSample{
			at: now,
			c: ringCounters{
				enqueued: s.Enqueued, reserved: a.Reserved, acked: s.Acked,
				nacked: a.NackedDefault + a.NackedAfter + a.NackedDeadLetter,
				dead:   sumCauses(s.DeadLettered),
			},
			ready: s.Ready, reserved: s.Reserved,
		}
		q.add(one, r.capacity)
		sum.c.enqueued += one.c.enqueued
		sum.c.reserved += one.c.reserved
		sum.c.acked += one.c.acked
		sum.c.nacked += one.c.nacked
		sum.c.dead += one.c.dead
		sum.ready += one.ready
		sum.reserved += one.reserved
	}
	r.total.add(sum, r.capacity)
	for name := range r.queues {
		if !seen[name] {
			delete(r.queues, name)
		}
	}
	r.last = now
}

// point is one interval of a queue's history: the rates per second over
// the interval ending at At, and the depths at At. Known is false for the
// first sample and across a counter that went backwards (a snapshot
// restore): no rate spans those.
type point struct {
	At                                      time.Time
	Known                                   bool
	Enqueued, Reserved, Acked, Nacked, Dead float64
	Ready, InFlight                         int
}

// series returns queue's history, oldest first; "" is every queue summed.
func (r *RateRing) series(queue string) []point {
	r.mu.Lock()
	defer r.mu.Unlock()
	q := r.queues[queue]
	if queue == "" {
		q = &r.total
	}
	if q == nil {
		return nil
	}
	ss := q.ordered()
	out := make([]point, len(ss))
	for i, s := range ss {
		out[i] = point{At: s.at, Ready: s.ready, InFlight: s.reserved}
		if i == 0 {
			continue
		}
		prev := ss[i-1]
		sec := s.at.Sub(prev.at).Seconds()
		if sec <= 0 || !prev.c.le(s.c) {
			continue
		}
		out[i].Known = true
		out[i].Enqueued = float64(s.c.enqueued-prev.c.enqueued) / sec
		out[i].Reserved = float64(s.c.reserved-prev.c.reserved) / sec
		out[i].Acked = float64(s.c.acked-prev.c.acked) / sec
		out[i].Nacked = float64(s.c.nacked-prev.c.nacked) / sec
		out[i].Dead = float64(s.c.dead-prev.c.dead) / sec
	}
	return out
}

// rates returns queue's rates from its newest sample back over about
// rateSpan (at least one interval), against the current counters c at now
// when now is past the newest sample.
func (r *RateRing) rates(queue string, now time.Time, c ringCounters) rates {
	r.mu.Lock()
	defer r.mu.Unlock()
	q := r.queues[queue]
	if q == nil {
		return rates{}
	}
	ss := q.ordered()
	// The oldest sample within rateSpan of now whose counters do not
	// exceed the current ones.
	for _, s := range ss {
		span := now.Sub(s.at)
		if span > rateSpan || span < rateMinSpan || !s.c.le(c) {
			continue
		}
		sec := span.Seconds()
		return rates{
			Known:    true,
			Enqueued: float64(c.enqueued-s.c.enqueued) / sec,
			Acked:    float64(c.acked-s.c.acked) / sec,
			Dead:     float64(c.dead-s.c.dead) / sec,
			Span:     span,
		}
	}
	return rates{}
}
