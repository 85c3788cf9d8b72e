package engine_test

import (
	"bytes"
	"sync"
	"testing"
	"time"

	"github.com/sepp-io/sepp/engine"
	et "github.com/sepp-io/sepp/engine/enginetest"
)

// TestReadMethodsRunConcurrently calls every read method from several
// goroutines at once, as the state machine's read lock allows. Under -race
// any hidden write (a lazy cleanup, a cache) fails the test.
func TestReadMethodsRunConcurrently(t *testing.T) {
	t.Parallel()
	e := richEngine(t)
	want := e.Digest()
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 20 {
				for _, q := range []string{"a", "b", "a.dead"} {
					for _, s := range []engine.State{engine.StateScheduled, engine.StateReady, engine.StateReserved, engine.StateDead} {
						jobs, _ := e.ListJobs(q, s, engine.Page{Limit: 5})
						for _, j := range jobs {
							_, _ = e.GetJob(j.ID)
						}
					}
					_, _ = e.QueueStats(time.Time{}, q)
					_, _ = e.ListDeadLetters(q, engine.Page{})
				}
				recs, _ := e.ListDeadLetters("", engine.Page{})
				for _, r := range recs {
					_, _ = e.GetDeadLetter(r.Job.ID)
				}
				e.Stats(e.Now())
				e.NextDeadline()
				e.Config()
				_ = e.CheckInvariants()
				if e.Digest() != want {
					t.Error("digest changed under reads")
				}
				var buf bytes.Buffer
				_ = e.Snapshot(&buf)
			}
		}()
	}
	wg.Wait()
}

// spec: DLQ-5
func TestRetentionChange_AppliesToLaterDeaths(t *testing.T) {
	t.Parallel()
	// Retention is restart-only: the leader proposes the new config at start.
	// Records already kept keep their expiry; jobs dying afterwards follow
	// the new setting (dropped when it is 0).
	clock := et.NewClock()
	cfg := et.Config(et.WithRetention(time.Hour))
	e := engine.New(cfg)
	kept := killBy(t, e, clock, engine.CauseRejected)
	cfg.Limits.DeadLetterRetention = 0
	if err := e.SetConfig(clock.Now(), cfg); err != nil {
		t.Fatal(err)
	}
	killBy(t, e, clock, engine.CauseRejected)
	s, _ := e.QueueStats(clock.Now(), "q")
	if s.Dead != 1 || s.Dropped != 1 {
		t.Fatalf("stats %+v, want the old record kept and the new death dropped", s)
	}
	e.Tick(clock.Advance(time.Hour))
	if _, err := e.GetDeadLetter(kept); err == nil {
		t.Fatal("the old record outlived its retention")
	}
	et.RequireInvariants(t, e)
}
