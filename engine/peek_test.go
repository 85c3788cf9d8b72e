package engine_test

import (
	"strings"
	"testing"
	"time"

	"github.com/sepp-io/sepp/engine"
	et "github.com/sepp-io/sepp/engine/enginetest"
)

// CanReserve may say true for a reserve that finds nothing, never false for
// one that hands out a job or fails: each case checks its answer, then runs
// the reserve it predicted.
func TestCanReserve(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		cfg   []func(*engine.Config)
		setup func(t *testing.T, e *engine.Engine, clock *et.Clock)
		p     engine.ReserveParams
		want  bool
	}{
		{name: "UnknownQueue", p: engine.ReserveParams{Queue: "q"}, want: false},
		{name: "EmptyQueue", setup: drained("q"), p: engine.ReserveParams{Queue: "q"}, want: false},
		{name: "ReadyJob", setup: enqueued("q"), p: engine.ReserveParams{Queue: "q"}, want: true},
		{name: "ReadyJobOfAnotherQueue", setup: enqueued("other"), p: engine.ReserveParams{Queue: "q"}, want: false},
		{name: "PausedQueueWithReadyJob", setup: func(t *testing.T, e *engine.Engine, clock *et.Clock) {
			t.Helper()
			enqueued("q")(t, e, clock)
			if err := e.PauseQueue(clock.Now(), "q"); err != nil {
				t.Fatal(err)
			}
		}, p: engine.ReserveParams{Queue: "q"}, want: false},
		{name: "ScheduledNotDue", setup: scheduled("q", time.Minute), p: engine.ReserveParams{Queue: "q"}, want: false},
		{name: "ScheduledDueAtNow", setup: func(t *testing.T, e *engine.Engine, clock *et.Clock) {
			t.Helper()
			scheduled("q", time.Minute)(t, e, clock)
			clock.Advance(time.Minute) // no tick: the reserve's advance promotes it
		}, p: engine.ReserveParams{Queue: "q"}, want: true},
		{name: "LeaseExpiredAtNow", setup: func(t *testing.T, e *engine.Engine, clock *et.Clock) {
			t.Helper()
			enqueued("q")(t, e, clock)
			et.MustReserveOne(t, e, clock.Now(), "q")
			clock.Advance(time.Hour) // past the default lease: the job is Ready again
		}, p: engine.ReserveParams{Queue: "q"}, want: true},
		{name: "LeaseRunning", setup: func(t *testing.T, e *engine.Engine, clock *et.Clock) {
			t.Helper()
			enqueued("q")(t, e, clock)
			et.MustReserveOne(t, e, clock.Now(), "q")
		}, p: engine.ReserveParams{Queue: "q"}, want: false},
		{name: "RetryReplaysItsReservation", setup: func(t *testing.T, e *engine.Engine, clock *et.Clock) {
			t.Helper()
			enqueued("q")(t, e, clock)
			if ds, err := e.Reserve(clock.Now(), engine.ReserveParams{Queue: "q", RequestID: "r-1"}); err != nil || len(ds) != 1 {
				t.Fatal(ds, err)
			}
		}, p: engine.ReserveParams{Queue: "q", RequestID: "r-1"}, want: true},
		{name: "NewRequestIDOnEmptyQueue", setup: drained("q"), p: engine.ReserveParams{Queue: "q", RequestID: "r-2"}, want: false},
		{name: "RequestIDsAtCapacity", cfg: []func(*engine.Config){func(c *engine.Config) { c.Limits.MaxIdempotencyKeys = 1 }},
			setup: func(t *testing.T, e *engine.Engine, clock *et.Clock) {
				t.Helper()
				enqueued("q")(t, e, clock)
				if ds, err := e.Reserve(clock.Now(), engine.ReserveParams{Queue: "q", RequestID: "r-1"}); err != nil || len(ds) != 1 {
					t.Fatal(ds, err)
				}
			}, p: engine.ReserveParams{Queue: "q", RequestID: "r-2"}, want: true},
		{name: "InvalidQueueName", p: engine.ReserveParams{Queue: "bad name"}, want: true},
		{name: "NegativeLease", p: engine.ReserveParams{Queue: "q", Lease: -time.Second}, want: true},
		{name: "WorkerIDTooLong", p: engine.ReserveParams{Queue: "q", WorkerID: strings.Repeat("w", 257)}, want: true},
		{name: "RequestIDNotUTF8", p: engine.ReserveParams{Queue: "q", RequestID: "\xff"}, want: true},
		{name: "StrictUnknownQueue", cfg: []func(*engine.Config){func(c *engine.Config) { c.Limits.Strict = true }},
			p: engine.ReserveParams{Queue: "q"}, want: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			clock := et.NewClock()
			e := et.New(t, tc.cfg...)
			if tc.setup != nil {
				tc.setup(t, e, clock)
			}
			if got := e.CanReserve(clock.Now(), tc.p); got != tc.want {
				t.Fatalf("CanReserve = %v, want %v", got, tc.want)
			}
			ds, err := e.Reserve(clock.Now(), tc.p)
			if !tc.want && (err != nil || len(ds) != 0) {
				t.Fatalf("CanReserve said nothing to reserve, but Reserve = %d deliveries, %v", len(ds), err)
			}
			// Not a rule of CanReserve, but each true case here is one
			// where the reserve does answer something.
			if tc.want && err == nil && len(ds) == 0 {
				t.Fatalf("CanReserve said true, but Reserve found nothing")
			}
		})
	}
}

func TestReservable(t *testing.T) {
	t.Parallel()
	clock := et.NewClock()
	e := et.New(t)
	if n := e.Reservable("q"); n != 0 {
		t.Fatalf("unknown queue: %d", n)
	}
	for range 3 {
		et.MustEnqueue(t, e, clock.Now(), et.Job("q"))
	}
	scheduled("q", time.Minute)(t, e, clock)
	if n := e.Reservable("q"); n != 3 {
		t.Fatalf("3 Ready and 1 Scheduled: %d, want 3", n)
	}
	if err := e.PauseQueue(clock.Now(), "q"); err != nil {
		t.Fatal(err)
	}
	if n := e.Reservable("q"); n != 0 {
		t.Fatalf("paused: %d, want 0", n)
	}
}

func enqueued(queue string) func(*testing.T, *engine.Engine, *et.Clock) {
	return func(t *testing.T, e *engine.Engine, clock *et.Clock) {
		t.Helper()
		et.MustEnqueue(t, e, clock.Now(), et.Job(queue))
	}
}

// drained leaves queue known and empty.
func drained(queue string) func(*testing.T, *engine.Engine, *et.Clock) {
	return func(t *testing.T, e *engine.Engine, clock *et.Clock) {
		t.Helper()
		et.MustEnqueue(t, e, clock.Now(), et.Job(queue))
		if err := e.Ack(clock.Now(), et.Ref(et.MustReserveOne(t, e, clock.Now(), queue))); err != nil {
			t.Fatal(err)
		}
	}
}

func scheduled(queue string, in time.Duration) func(*testing.T, *engine.Engine, *et.Clock) {
	return func(t *testing.T, e *engine.Engine, clock *et.Clock) {
		t.Helper()
		p := et.Job(queue)
		p.ScheduledAt = clock.Now().Add(in)
		et.MustEnqueue(t, e, clock.Now(), p)
	}
}
