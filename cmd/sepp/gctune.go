package main

import (
	"context"
	"runtime/debug"
	"runtime/metrics"
	"time"

	"github.com/hashicorp/go-hclog"
)

// The collector's cost is proportional to the allocation rate divided by
// GOGC, whatever the size of the live heap. gc_percent 50 keeps a node
// holding a million jobs at 1.5 times its live heap, but a node with a small
// live heap (a queue that drains as fast as it fills) then collects every
// few megabytes and spends a tenth of its CPU doing it. The headroom tuner
// gives such a node at least server.gc_min_headroom of growth before a
// collection: GOGC is raised while the live heap is small and falls back to
// gc_percent as it grows, so memory at a million jobs is unchanged.

// gcTuneInterval is how often the tuner looks at the live heap. Live heaps
// change over seconds; setting GOGC stops the world briefly, so the tuner
// only sets it when the target moved by more than a tenth.
const gcTuneInterval = 250 * time.Millisecond

// gcMaxPercent caps the raised GOGC, so a nearly empty heap still collects.
const gcMaxPercent = 1000

// gcPercentFor is the GOGC that gives a live heap of live bytes at least
// headroom bytes of growth, never below base nor above gcMaxPercent.
func gcPercentFor(live, headroom uint64, base int) int {
	if headroom == 0 || live == 0 {
		return base
	}
	want := int(min(headroom*100/live, gcMaxPercent))
	return max(base, want)
}

// gcTuner raises GOGC over base while the live heap is small.
type gcTuner struct {
	base     int
	headroom uint64
	current  int
	readLive func() uint64
	setGC    func(percent int) int
	log      hclog.Logger
}

// step sets GOGC for the live heap now, when it moved by more than a tenth.
func (t *gcTuner) step() {
	want := gcPercentFor(t.readLive(), t.headroom, t.base)
	if d := want - t.current; d*10 > t.current || -d*10 > t.current {
		t.setGC(want)
		t.log.Debug("gc percent", "from", t.current, "to", want)
		t.current = want
	}
}

func (t *gcTuner) run(ctx context.Context) {
	tick := time.NewTicker(gcTuneInterval)
	defer tick.Stop()
	for {
		t.step()
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// liveHeapBytes is the heap the last collection found live.
func liveHeapBytes() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return s[0].Value.Uint64()
}

// startGCTuner runs the headroom tuner until ctx ends, when the collector
// runs on gc_percent (not GOGC from the environment, not off) and a headroom
// is set.
func startGCTuner(ctx context.Context, m memorySettings, headroom uint64, log hclog.Logger) {
	if headroom == 0 || m.gcPercent <= 0 {
		return
	}
	t := &gcTuner{base: m.gcPercent, headroom: headroom, current: m.gcPercent, readLive: liveHeapBytes, setGC: debug.SetGCPercent, log: log}
	log.Info("gc headroom tuner", "gc_percent", m.gcPercent, "min_headroom_mib", headroom>>20)
	go t.run(ctx)
}
