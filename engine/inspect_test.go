package engine_test

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/sepp-io/sepp/engine"
	et "github.com/sepp-io/sepp/engine/enginetest"
)

func TestClock_NeverRunsBackwards(t *testing.T) {
	t.Parallel()
	clock := et.NewClock()
	e := et.New(t)
	if !e.Now().IsZero() {
		t.Fatal("a fresh engine has a clock")
	}
	late := clock.Advance(time.Hour)
	et.MustEnqueue(t, e, late, et.Job("q"))
	// A new leader whose clock is behind stamps an earlier time.
	d := et.MustReserveOne(t, e, late.Add(-10*time.Minute), "q")
	if !e.Now().Equal(late) || !d.LeaseDeadline.Equal(late.Add(30*time.Second)) {
		t.Fatalf("clock %v, lease deadline %v: an earlier now must run at the last one", e.Now(), d.LeaseDeadline)
	}
	e.Tick(time.Time{})
	if !e.Now().Equal(late) {
		t.Fatal("a zero now moved the clock")
	}
}

func TestStatsAndListings(t *testing.T) {
	t.Parallel()
	clock := et.NewClock()
	e := et.New(t)
	start := clock.Now()
	var ready []engine.JobID
	for i := range 5 {
		p := et.Job("q")
		p.Priority = et.Ptr(uint32(i % 2))
		ready = append(ready, et.MustEnqueue(t, e, clock.Advance(time.Second), p))
	}
	sp := et.Job("q")
	sp.ScheduledAt = clock.Now().Add(time.Hour)
	scheduled := et.MustEnqueue(t, e, clock.Now(), sp)
	ds, err := e.Reserve(clock.Advance(time.Second), engine.ReserveParams{Queue: "q", N: 2, WorkerID: "w-9", Lease: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	s, err := e.QueueStats(clock.Advance(10*time.Second), "q")
	if err != nil {
		t.Fatal(err)
	}
	// Reserved: the two priority-1 jobs (ready[1], ready[3]); oldest Ready is ready[0], enqueued at start+1s.
	if s.Ready != 3 || s.Scheduled != 1 || s.Reserved != 2 || s.Enqueued != 6 || s.OldestReadyAge != clock.Now().Sub(start.Add(time.Second)) {
		t.Fatalf("stats %+v", s)
	}
	reserved, _ := e.ListJobs("q", engine.StateReserved, engine.Page{})
	if len(reserved) != 2 || reserved[0].WorkerID != "w-9" || !reserved[0].LeaseDeadline.Equal(ds[0].LeaseDeadline) {
		t.Fatalf("reserved listing %+v", reserved)
	}
	page, _ := e.ListJobs("q", engine.StateReady, engine.Page{Limit: 2})
	rest, _ := e.ListJobs("q", engine.StateReady, engine.Page{AfterID: page[len(page)-1].ID})
	var got []engine.JobID
	for _, j := range append(page, rest...) {
		got = append(got, j.ID)
	}
	if want := []engine.JobID{ready[0], ready[2], ready[4]}; !slices.Equal(got, want) {
		t.Fatalf("ready listing %v, want %v", got, want)
	}
	if sched, _ := e.ListJobs("q", engine.StateScheduled, engine.Page{}); len(sched) != 1 || sched[0].ID != scheduled {
		t.Fatalf("scheduled listing %+v", sched)
	}
	if _, err := e.ListJobs("q", engine.StateUnknown, engine.Page{}); !errors.Is(err, engine.ErrInvalidArgument) {
		t.Fatalf("bad state: %v", err)
	}
	if _, err := e.ListJobs("q", engine.StateReady, engine.Page{Limit: -1}); !errors.Is(err, engine.ErrInvalidArgument) {
		t.Fatalf("bad limit: %v", err)
	}
	if _, err := e.ListJobs("nope", engine.StateReady, engine.Page{}); !errors.Is(err, engine.ErrNotFound) {
		t.Fatalf("unknown queue: %v", err)
	}
	if _, err := e.GetJob(9999); !errors.Is(err, engine.ErrNotFound) {
		t.Fatalf("unknown job: %v", err)
	}
	all := e.Stats(clock.Now())
	if len(all) != 1 || all[0].Name != "q" {
		t.Fatalf("Stats = %+v", all)
	}
}

func TestNextDeadline_EarliestOfAllTimers(t *testing.T) {
	t.Parallel()
	clock := et.NewClock()
	e := et.New(t, et.WithRetention(10*time.Minute), func(c *engine.Config) { c.Limits.IdempotencyWindow = 20 * time.Minute })
	if _, ok := e.NextDeadline(); ok {
		t.Fatal("an empty engine has a deadline")
	}
	sp := et.Job("q")
	sp.ScheduledAt = clock.Now().Add(time.Hour)
	sp.IdempotencyKey = "k"
	et.MustEnqueue(t, e, clock.Now(), sp) // key expires at +20m, runs at +60m
	want := clock.Now().Add(20 * time.Minute)
	if next, _ := e.NextDeadline(); !next.Equal(want) {
		t.Fatalf("next = %v, want the key expiry %v", next, want)
	}
	killBy(t, e, clock, engine.CauseAdmin) // record expires at +10m
	if next, _ := e.NextDeadline(); !next.Equal(clock.Now().Add(10 * time.Minute)) {
		t.Fatalf("next = %v, want the retention expiry", next)
	}
	et.MustEnqueue(t, e, clock.Now(), et.Job("r"))
	d, _ := e.Reserve(clock.Now(), engine.ReserveParams{Queue: "r", Lease: time.Minute})
	if next, _ := e.NextDeadline(); !next.Equal(d[0].LeaseDeadline) {
		t.Fatalf("next = %v, want the lease deadline", next)
	}
	// Ticking at each deadline in turn drains every timer.
	for i := 0; i < 10; i++ {
		next, ok := e.NextDeadline()
		if !ok {
			break
		}
		e.Tick(next)
	}
	if next, ok := e.NextDeadline(); ok {
		t.Fatalf("still pending: %v", next)
	}
	et.RequireInvariants(t, e)
}

// NextTickAt counts the expiry of idempotency keys and reserve request ids
// sweepDelay late, every other deadline on time; a reserve that replays its
// request id past the expiry finds it gone whether a tick ran or not.
func TestNextTickAt_SweepsKeysAndRequestIDsLate(t *testing.T) {
	t.Parallel()
	clock := et.NewClock()
	e := et.New(t, func(c *engine.Config) { c.Limits.IdempotencyWindow = time.Minute })
	const delay = time.Second
	p := et.Job("q")
	p.IdempotencyKey = "k"
	et.MustEnqueue(t, e, clock.Now(), p) // the key expires at +1m
	if next, _ := e.NextTickAt(delay); !next.Equal(clock.Now().Add(time.Minute + delay)) {
		t.Fatalf("NextTickAt = %v, want the key's expiry and the delay %v", next, clock.Now().Add(time.Minute+delay))
	}
	d, err := e.Reserve(clock.Now(), engine.ReserveParams{Queue: "q", N: 1, Lease: 10 * time.Second, RequestID: "r"})
	if err != nil || len(d) != 1 {
		t.Fatalf("reserve: %v, %d deliveries", err, len(d))
	}
	if next, _ := e.NextTickAt(delay); !next.Equal(d[0].LeaseDeadline) {
		t.Fatalf("NextTickAt = %v, want the lease deadline %v on time", next, d[0].LeaseDeadline)
	}
	if next, _ := e.NextDeadline(); !next.Equal(d[0].LeaseDeadline) {
		t.Fatalf("NextDeadline = %v, want the lease deadline %v", next, d[0].LeaseDeadline)
	}
	// Past every expiry, with no tick: the key and the request id are
	// still held, and the next operation drops them first.
	later := clock.Advance(time.Hour)
	if got := e.RememberedKeys(); got.IdempotencyKeys != 1 || got.ReserveRequestIDs != 1 {
		t.Fatalf("remembered %+v before any operation, want the key and the request id", got)
	}
	again, err := e.Reserve(later, engine.ReserveParams{Queue: "q", N: 1, Lease: 10 * time.Second, RequestID: "r"})
	if err != nil {
		t.Fatal(err)
	}
	if len(again) != 1 || again[0].Job.ID != d[0].Job.ID || again[0].LeaseToken == d[0].LeaseToken {
		t.Fatalf("a reserve replaying request id r past its window got %+v, want a fresh lease of job %d", again, d[0].Job.ID)
	}
	if got := e.RememberedKeys(); got.IdempotencyKeys != 0 {
		t.Fatalf("remembered %+v after the reserve, want the key dropped", got)
	}
	et.RequireInvariants(t, e)
}
