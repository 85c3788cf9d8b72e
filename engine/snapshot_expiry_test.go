package engine_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/sepp-io/sepp/engine"
	et "github.com/sepp-io/sepp/engine/enginetest"
)

// expiryFairEngine runs a queue with max_wait and a fairness key, jobs
// with deadlines of their own (one reserved), one expired into a record,
// so the fuzzer starts from a layout 10 snapshot.
func expiryFairEngine(tb testing.TB) *engine.Engine {
	tb.Helper()
	clock := et.NewClock()
	e := et.New(tb, et.WithRetention(time.Hour),
		et.WithQueue(engine.QueueConfig{Name: "fair", MaxWait: time.Hour, FairnessKey: "tenant", DeadLetterQueue: "dead"}),
		et.WithQueue(engine.QueueConfig{Name: "dead"}))
	for i := range 12 {
		p := et.Job("fair")
		if i%4 != 3 {
			p.Custom = map[string]string{"tenant": fmt.Sprint("t", i%3)}
		}
		p.Priority = et.Ptr(uint32(i % 2))
		if i%3 == 0 {
			p.Expiry = &engine.ExpiryOpts{TTL: time.Duration(i+1) * time.Second}
		}
		et.MustEnqueue(tb, e, clock.Now(), p)
	}
	et.MustReserve(tb, e, clock.Now(), "fair", 3)
	e.Tick(clock.Advance(1500 * time.Millisecond))
	return e
}

func TestExpiryFairEngineSnapshot(t *testing.T) {
	e := expiryFairEngine(t)
	if data := snapshotBytes(t, e); data[8] != 10 {
		t.Fatalf("layout %d, want 10", data[8])
	}
	if s := queueStats(t, e, "fair"); s.DeadLettered[engine.CauseExpired] != 1 || s.Fairness.ActiveKeys == 0 {
		t.Fatalf("stats %+v", s)
	}
	et.RequireInvariants(t, e)
}
