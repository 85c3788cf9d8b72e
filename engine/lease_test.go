package engine_test

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/sepp-io/sepp/engine"
	et "github.com/sepp-io/sepp/engine/enginetest"
)

// spec: LEA-1
func TestLeaseExpiry_RequeuesReadyAtOnceNotPaced(t *testing.T) {
	t.Parallel()
	clock := et.NewClock()
	// A long retry policy must not pace lease expiries.
	e := et.New(t, func(c *engine.Config) { c.Limits.RetryDelay = time.Hour })
	id := et.MustEnqueue(t, e, clock.Now(), et.Job("q"))
	ds, err := e.Reserve(clock.Now(), engine.ReserveParams{Queue: "q", Lease: 10 * time.Second, WorkerID: "w"})
	if err != nil || len(ds) != 1 {
		t.Fatal(ds, err)
	}
	if next, ok := e.NextDeadline(); !ok || !next.Equal(ds[0].LeaseDeadline) {
		t.Fatalf("NextDeadline = %v, want the lease deadline %v", next, ds[0].LeaseDeadline)
	}
	if res := e.Tick(clock.Advance(10 * time.Second)); res.LeasesExpired != 1 || res.DeadLettered != 0 {
		t.Fatalf("tick = %+v", res)
	}
	d := et.MustReserveOne(t, e, clock.Now(), "q")
	if d.Job.ID != id || d.Attempt != 2 {
		t.Fatalf("redelivery: job %d attempt %d", d.Job.ID, d.Attempt)
	}
	if h := d.Job.History; len(h) != 1 || h[0].Outcome != "lease_expired" || h[0].WorkerID != "w" {
		t.Fatalf("history = %+v", h)
	}
}

// spec: LEA-2
// spec: DLQ-1
func TestLeaseExpiry_OnFinalAttemptDeadLetters(t *testing.T) {
	t.Parallel()
	clock := et.NewClock()
	e := et.New(t, et.WithRetention(time.Hour))
	p := et.Job("q")
	p.MaxAttempts = 1
	id := et.MustEnqueue(t, e, clock.Now(), p)
	et.MustReserveOne(t, e, clock.Now(), "q")
	res := e.Tick(clock.Advance(time.Minute))
	if res.LeasesExpired != 1 || res.DeadLettered != 1 {
		t.Fatalf("tick = %+v", res)
	}
	rec, err := e.GetDeadLetter(id)
	if err != nil || rec.Cause != engine.CauseLeaseExpired || rec.FinalAttempt != 1 || rec.Job.State != engine.StateDead {
		t.Fatalf("record %+v %v", rec, err)
	}
}

func TestLease_FencedOperations(t *testing.T) {
	t.Parallel()
	type step func(e *engine.Engine, now time.Time, ref engine.LeaseRef) error
	ack := func(e *engine.Engine, now time.Time, ref engine.LeaseRef) error { return e.Ack(now, ref) }
	nack := func(e *engine.Engine, now time.Time, ref engine.LeaseRef) error {
		_, err := e.Nack(now, engine.NackParams{LeaseRef: ref})
		return err
	}
	release := func(e *engine.Engine, now time.Time, ref engine.LeaseRef) error { return e.Release(now, ref) }
	extend := func(e *engine.Engine, now time.Time, ref engine.LeaseRef) error {
		_, err := e.ExtendLease(now, engine.ExtendParams{LeaseRef: ref})
		return err
	}
	ops := map[string]step{"Ack": ack, "Nack": nack, "Release": release, "Extend": extend}
	scenarios := []struct {
		name string
		// stale reserves a job and makes its lease stale; it returns the stale ref.
		stale func(t *testing.T, e *engine.Engine, clock *et.Clock) engine.LeaseRef
	}{
		{name: "ExpiredLease", stale: func(t *testing.T, e *engine.Engine, clock *et.Clock) engine.LeaseRef {
			t.Helper()
			d := et.MustReserveOne(t, e, clock.Now(), "q")
			clock.Advance(time.Hour) // no tick: the lapse alone fences it
			return et.Ref(d)
		}},
		{name: "RedeliveredSince", stale: func(t *testing.T, e *engine.Engine, clock *et.Clock) engine.LeaseRef {
			t.Helper()
			d := et.MustReserveOne(t, e, clock.Now(), "q")
			e.Tick(clock.Advance(time.Hour))
			et.MustReserveOne(t, e, clock.Now(), "q")
			return et.Ref(d)
		}},
		{name: "AckedAlready", stale: func(t *testing.T, e *engine.Engine, clock *et.Clock) engine.LeaseRef {
			t.Helper()
			d := et.MustReserveOne(t, e, clock.Now(), "q")
			if err := e.Ack(clock.Now(), et.Ref(d)); err != nil {
				t.Fatal(err)
			}
			return et.Ref(d)
		}},
		{name: "ReleasedAlready", stale: func(t *testing.T, e *engine.Engine, clock *et.Clock) engine.LeaseRef {
			t.Helper()
			d := et.MustReserveOne(t, e, clock.Now(), "q")
			if err := e.Release(clock.Now(), et.Ref(d)); err != nil {
				t.Fatal(err)
			}
			return et.Ref(d)
		}},
		{name: "WrongToken", stale: func(t *testing.T, e *engine.Engine, clock *et.Clock) engine.LeaseRef {
			t.Helper()
			d := et.MustReserveOne(t, e, clock.Now(), "q")
			ref := et.Ref(d)
			ref.LeaseToken += 1000
			return ref
		}},
	}
	for _, sc := range scenarios {
		for _, name := range []string{"Ack", "Nack", "Release", "Extend"} {
			t.Run(sc.name+"/"+name, func(t *testing.T) {
				clock := et.NewClock()
				e := et.New(t)
				et.MustEnqueue(t, e, clock.Now(), et.Job("q"))
				ref := sc.stale(t, e, clock)
				e.Tick(clock.Now())
				before := e.Digest()
				if err := ops[name](e, clock.Now(), ref); !errors.Is(err, engine.ErrLeaseLost) {
					t.Fatalf("err = %v, want ErrLeaseLost", err)
				}
				if e.Digest() != before {
					t.Fatal("a fenced operation changed the state")
				}
			})
		}
	}
}

func TestLease_ExtendAndDurations(t *testing.T) {
	t.Parallel()
	clock := et.NewClock()
	e := et.New(t, func(c *engine.Config) { c.Limits.DefaultLease = 30 * time.Second; c.Limits.MaxLease = time.Minute })
	et.MustEnqueue(t, e, clock.Now(), et.Job("q"))
	et.MustEnqueue(t, e, clock.Now(), et.Job("q"))
	ds, err := e.Reserve(clock.Now(), engine.ReserveParams{Queue: "q", Lease: time.Hour})
	if err != nil || !ds[0].LeaseDeadline.Equal(clock.Now().Add(time.Minute)) {
		t.Fatalf("lease above max: deadline %v, want clamped to 1m", ds[0].LeaseDeadline)
	}
	ds2 := et.MustReserveOne(t, e, clock.Now(), "q")
	if !ds2.LeaseDeadline.Equal(clock.Now().Add(30 * time.Second)) {
		t.Fatalf("default lease deadline %v", ds2.LeaseDeadline)
	}
	if _, err := e.Reserve(clock.Now(), engine.ReserveParams{Queue: "q", Lease: -time.Second}); !errors.Is(err, engine.ErrInvalidArgument) {
		t.Fatalf("negative lease: %v", err)
	}
	// A heartbeat keeps the job past its first deadline.
	clock.Advance(50 * time.Second)
	dl, err := e.ExtendLease(clock.Now(), engine.ExtendParams{LeaseRef: et.Ref(ds[0]), Lease: 20 * time.Second})
	if err != nil || !dl.Equal(clock.Now().Add(20*time.Second)) {
		t.Fatalf("extend: %v %v", dl, err)
	}
	e.Tick(clock.Advance(15 * time.Second)) // ds2 lapsed at 30s, ds[0] lives to 70s
	if s, _ := e.QueueStats(clock.Now(), "q"); s.Reserved != 1 || s.Ready != 1 {
		t.Fatalf("reserved %d ready %d, want only the unextended lease lapsed", s.Reserved, s.Ready)
	}
	if err := e.Ack(clock.Now(), et.Ref(ds[0])); err != nil {
		t.Fatalf("ack of the extended lease: %v", err)
	}
}

func TestLease_ExtendAllLeasesAfterElection(t *testing.T) {
	t.Parallel()
	clock := et.NewClock()
	e := et.New(t)
	for range 3 {
		et.MustEnqueue(t, e, clock.Now(), et.Job("q"))
	}
	ds := et.MustReserve(t, e, clock.Now(), "q", 3)
	if n := e.ExtendAllLeases(clock.Advance(29*time.Second), 10*time.Second); n != 3 {
		t.Fatalf("extended %d, want 3", n)
	}
	if res := e.Tick(clock.Advance(5 * time.Second)); res.LeasesExpired != 0 {
		t.Fatalf("leases expired despite the grace: %+v", res)
	}
	for _, d := range ds {
		if err := e.Ack(clock.Now(), et.Ref(d)); err != nil {
			t.Fatal(err)
		}
	}
	et.RequireInvariants(t, e)
}

func TestReserve_BatchPauseAndRequestID(t *testing.T) {
	t.Parallel()
	clock := et.NewClock()
	e := et.New(t, func(c *engine.Config) { c.Limits.MaxReserveBatch = 3 })
	for range 5 {
		et.MustEnqueue(t, e, clock.Now(), et.Job("q"))
	}
	if ds := et.MustReserve(t, e, clock.Now(), "q", 0); len(ds) != 1 {
		t.Fatalf("N=0 gave %d, want 1", len(ds))
	}
	if ds := et.MustReserve(t, e, clock.Now(), "q", 50); len(ds) != 3 {
		t.Fatalf("N=50 gave %d, want clamped to max_reserve_batch 3", len(ds))
	}
	if err := e.PauseQueue(clock.Now(), "q"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Enqueue(clock.Now(), et.Job("q")); err != nil {
		t.Fatalf("a paused queue refused an enqueue: %v", err)
	}
	if ds := et.MustReserve(t, e, clock.Now(), "q", 3); len(ds) != 0 {
		t.Fatalf("a paused queue handed out %d jobs", len(ds))
	}
	if s, _ := e.QueueStats(clock.Now(), "q"); !s.Paused || s.Ready != 2 {
		t.Fatalf("stats %+v", s)
	}
	if err := e.ResumeQueue(clock.Now(), "q"); err != nil {
		t.Fatal(err)
	}
	first, err := e.Reserve(clock.Now(), engine.ReserveParams{Queue: "q", N: 2, RequestID: "req-1"})
	if err != nil || len(first) != 2 {
		t.Fatal(first, err)
	}
	retry, err := e.Reserve(clock.Advance(time.Second), engine.ReserveParams{Queue: "q", N: 2, RequestID: "req-1"})
	if err != nil || !slices.Equal(et.IDs(retry), et.IDs(first)) || retry[0].LeaseToken != first[0].LeaseToken {
		t.Fatalf("retried reserve = %v, want the same reservation %v", et.IDs(retry), et.IDs(first))
	}
	if err := e.Ack(clock.Now(), et.Ref(first[0])); err != nil {
		t.Fatal(err)
	}
	if again, _ := e.Reserve(clock.Now(), engine.ReserveParams{Queue: "q", N: 2, RequestID: "req-1"}); len(again) != 1 || again[0].Job.ID != first[1].Job.ID {
		t.Fatalf("after an ack the retry returns the live rest: %v", et.IDs(again))
	}
	et.RequireInvariants(t, e)
	// Once its leases are past, the request id is forgotten.
	e.Tick(clock.Advance(time.Hour))
	if _, ok := e.NextDeadline(); ok {
		t.Fatal("a deadline is pending after everything lapsed")
	}
}

func TestReserve_UnknownQueue(t *testing.T) {
	t.Parallel()
	clock := et.NewClock()
	e := et.New(t)
	if ds, err := e.Reserve(clock.Now(), engine.ReserveParams{Queue: "nobody"}); err != nil || len(ds) != 0 {
		t.Fatalf("reserve from an unseen queue: %v %v", ds, err)
	}
	if _, err := e.QueueStats(clock.Now(), "nobody"); !errors.Is(err, engine.ErrNotFound) {
		t.Fatalf("a reserve created a queue: %v", err)
	}
	strict := et.New(t, func(c *engine.Config) { c.Limits.Strict = true })
	if _, err := strict.Reserve(clock.Now(), engine.ReserveParams{Queue: "nobody"}); !errors.Is(err, engine.ErrUnknownQueue) {
		t.Fatalf("strict reserve: %v", err)
	}
	if _, err := e.Reserve(clock.Now(), engine.ReserveParams{Queue: "bad name"}); !errors.Is(err, engine.ErrInvalidArgument) {
		t.Fatalf("bad queue name: %v", err)
	}
}
