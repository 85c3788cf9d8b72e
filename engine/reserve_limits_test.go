package engine_test

import (
	"bytes"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/sepp-io/sepp/engine"
	et "github.com/sepp-io/sepp/engine/enginetest"
)

func TestReserveLimits_Validate(t *testing.T) {
	tests := []struct {
		name    string
		q       engine.QueueConfig
		wantErr string
	}{
		{name: "AllZeroIsNone", q: engine.QueueConfig{Name: "q"}},
		{name: "EverySet", q: engine.QueueConfig{Name: "q", MaxReserved: 5, RateLimit: 10, RatePeriod: time.Minute, RateBurst: 3, ConcurrencyKey: "customer", MaxPerKey: 1}},
		{name: "NegativeMaxReserved", q: engine.QueueConfig{Name: "q", MaxReserved: -1}, wantErr: `queues["q"].max_reserved: must be 0..1000000 (0 is none), got -1`},
		{name: "HugeRate", q: engine.QueueConfig{Name: "q", RateLimit: 2_000_000}, wantErr: `queues["q"].rate_limit: must be 0..1000000 (0 is none), got 2000000`},
		{name: "PeriodTooShort", q: engine.QueueConfig{Name: "q", RateLimit: 1, RatePeriod: time.Microsecond}, wantErr: `queues["q"].rate_period_ms: must be 1ms..1h0m0s (0 is 1s), got 1µs`},
		{name: "PeriodTooLong", q: engine.QueueConfig{Name: "q", RateLimit: 1, RatePeriod: 2 * time.Hour}, wantErr: `queues["q"].rate_period_ms: must be 1ms..1h0m0s (0 is 1s), got 2h0m0s`},
		{name: "BurstWithoutRate", q: engine.QueueConfig{Name: "q", RateBurst: 4}, wantErr: `queues["q"].rate_limit: must be set when rate_period_ms or rate_burst is`},
		{name: "PerKeyWithoutKey", q: engine.QueueConfig{Name: "q", MaxPerKey: 1}, wantErr: `queues["q"].concurrency_key: must name a custom field when max_per_key is set`},
		{name: "KeyWithoutPerKey", q: engine.QueueConfig{Name: "q", ConcurrencyKey: "customer"}, wantErr: `queues["q"].max_per_key: must be at least 1 when concurrency_key is set`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := et.Config(et.WithQueue(tt.q)).Validate()
			if tt.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if !errors.Is(err, engine.ErrInvalidArgument) || err.Error() != tt.wantErr {
				t.Fatalf("err = %v, want %q wrapping ErrInvalidArgument", err, tt.wantErr)
			}
		})
	}
}

// limitStep is one step of a reserve-limits scenario: enqueue a job (with a
// priority and, unless empty, a value of the "customer" field), advance the
// clock, reserve expecting ids, ack a job, or check what Reservable says.
type limitStep struct {
	enqueue     bool
	prio        uint32
	customer    string
	advance     time.Duration
	reserve     int
	want        []engine.JobID
	ack         engine.JobID
	reservable  int
	checkNext   bool          // check NextDeadline
	wantNextIn  time.Duration // after the clock; with checkNext
	wantNoNext  bool          // with checkNext: nothing pending
	wantParked  int
	checkParked bool
}

func TestReserveLimits_Scenarios(t *testing.T) {
	enq := func(prio uint32, customer string) limitStep {
		return limitStep{enqueue: true, prio: prio, customer: customer}
	}
	res := func(n int, want ...engine.JobID) limitStep { return limitStep{reserve: n, want: want} }
	tests := []struct {
		name  string
		q     engine.QueueConfig
		steps []limitStep
	}{
		{
			name: "MaxReservedCapsAcrossReserves",
			q:    engine.QueueConfig{Name: "q", MaxReserved: 2},
			steps: []limitStep{
				enq(0, ""), enq(0, ""), enq(0, ""), enq(0, ""),
				{reservable: 2},
				res(3, 1, 2),
				res(3),
				{reservable: 0},
				{ack: 1},
				res(3, 3),
				{ack: 2}, {ack: 3},
				res(3, 4),
			},
		},
		{
			// spec: PRI-4
			name: "MaxReservedKeepsStrictPriority",
			q:    engine.QueueConfig{Name: "q", MaxReserved: 1},
			steps: []limitStep{
				enq(1, ""), enq(5, ""), enq(9, ""),
				res(3, 3),
				{ack: 3},
				res(3, 2),
				{ack: 2},
				res(3, 1),
			},
		},
		{
			name: "RateLimitTokenBucket",
			q:    engine.QueueConfig{Name: "q", RateLimit: 2, RateBurst: 2},
			steps: []limitStep{
				enq(0, ""), enq(0, ""), enq(0, ""), enq(0, ""), enq(0, ""),
				res(5, 1, 2),
				{reservable: 0},
				{checkNext: true, wantNextIn: 500 * time.Millisecond},
				{advance: 499 * time.Millisecond},
				res(5),
				{advance: time.Millisecond},
				{reservable: 1},
				res(5, 3),
				{advance: 10 * time.Second}, // refills to the burst, not beyond
				res(5, 4, 5),
			},
		},
		{
			name: "RatePeriodOfAMinute",
			q:    engine.QueueConfig{Name: "q", RateLimit: 1, RatePeriod: time.Minute},
			steps: []limitStep{
				enq(0, ""), enq(0, ""),
				res(2, 1),
				{checkNext: true, wantNextIn: 30 * time.Second}, // the lease comes first
				{ack: 1},
				{checkNext: true, wantNextIn: time.Minute}, // then the token job 2 waits for
				{advance: 59 * time.Second},
				res(2),
				{advance: time.Second},
				res(2, 2),
			},
		},
		{
			name: "NoWakeForAnEmptyRateLimitedQueue",
			q:    engine.QueueConfig{Name: "q", RateLimit: 1},
			steps: []limitStep{
				enq(0, ""),
				res(1, 1),
				{ack: 1},
				{checkNext: true, wantNoNext: true},
			},
		},
		{
			// spec: PRI-5
			name: "PerKeyParksAndKeepsEachKeysFIFO",
			q:    engine.QueueConfig{Name: "q", ConcurrencyKey: "customer", MaxPerKey: 1},
			steps: []limitStep{
				enq(0, "a"), enq(0, "a"), enq(0, "b"), enq(0, "a"), enq(0, "b"), enq(0, ""),
				res(10, 1, 3, 6),
				{checkParked: true, wantParked: 3},
				{reservable: 0},
				res(10),
				{ack: 1},
				{reservable: 1},
				{checkParked: true, wantParked: 2},
				res(10, 2),
				{ack: 3}, {ack: 2},
				res(10, 4, 5),
				{checkParked: true, wantParked: 0},
			},
		},
		{
			// spec: PRI-4
			name: "PerKeyBlockedHighPriorityLetsLowerThrough",
			q:    engine.QueueConfig{Name: "q", ConcurrencyKey: "customer", MaxPerKey: 1},
			steps: []limitStep{
				enq(9, "a"), enq(9, "a"), enq(0, "b"),
				res(1, 1),
				res(1, 3),
				{ack: 1},
				res(5, 2),
			},
		},
		{
			name: "PerKeyOfTwo",
			q:    engine.QueueConfig{Name: "q", ConcurrencyKey: "customer", MaxPerKey: 2},
			steps: []limitStep{
				enq(0, "a"), enq(0, "a"), enq(0, "a"),
				res(5, 1, 2),
				{ack: 2},
				res(5, 3),
			},
		},
		{
			name: "AllLimitsTogether",
			q:    engine.QueueConfig{Name: "q", MaxReserved: 3, RateLimit: 10, RateBurst: 3, ConcurrencyKey: "customer", MaxPerKey: 1},
			steps: []limitStep{
				enq(0, "a"), enq(0, "a"), enq(0, "b"), enq(0, "c"), enq(0, "d"),
				res(10, 1, 3, 4),
				{ack: 1},
				res(10), // max_reserved has room, the bucket none
				{advance: 100 * time.Millisecond},
				res(10, 2),
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clock := et.NewClock()
			e := et.New(t, et.WithQueue(tt.q))
			leases := map[engine.JobID]engine.LeaseToken{}
			for i, s := range tt.steps {
				now := clock.Now()
				switch {
				case s.enqueue:
					p := et.Job("q")
					p.Priority = et.Ptr(s.prio)
					if s.customer != "" {
						p.Custom = map[string]string{"customer": s.customer}
					}
					et.MustEnqueue(t, e, now, p)
				case s.advance != 0:
					// Time reaches the engine through commands: the
					// leader's tick at the deadline, here at once.
					e.Tick(clock.Advance(s.advance))
				case s.reserve != 0:
					ds := et.MustReserve(t, e, now, "q", s.reserve)
					if got := et.IDs(ds); !slices.Equal(got, s.want) {
						t.Fatalf("step %d: reserve got %v, want %v", i, got, s.want)
					}
					for _, d := range ds {
						leases[d.Job.ID] = d.LeaseToken
					}
				case s.ack != 0:
					if err := e.Ack(now, engine.LeaseRef{JobID: s.ack, LeaseToken: leases[s.ack]}); err != nil {
						t.Fatalf("step %d: ack %d: %v", i, s.ack, err)
					}
				case s.checkNext:
					at, ok := e.NextDeadline()
					switch {
					case s.wantNoNext && ok:
						t.Fatalf("step %d: next deadline %v, want none", i, at)
					case !s.wantNoNext && (!ok || at.Sub(now) != s.wantNextIn):
						t.Fatalf("step %d: next deadline in %v (pending %v), want %v", i, at.Sub(now), ok, s.wantNextIn)
					}
				case s.checkParked:
					st, err := e.QueueStats(now, "q")
					if err != nil {
						t.Fatal(err)
					}
					if st.Limits.Parked != s.wantParked {
						t.Fatalf("step %d: %d parked, want %d", i, st.Limits.Parked, s.wantParked)
					}
					ready, err := e.ListJobs("q", engine.StateReady, engine.Page{})
					if err != nil {
						t.Fatal(err)
					}
					if len(ready) != st.Ready {
						t.Fatalf("step %d: ListJobs shows %d Ready jobs, stats %d", i, len(ready), st.Ready)
					}
				default:
					if got := e.Reservable("q"); got != s.reservable {
						t.Fatalf("step %d: Reservable %d, want %d", i, got, s.reservable)
					}
					if can := e.CanReserve(now, engine.ReserveParams{Queue: "q"}); can != (s.reservable > 0) {
						t.Fatalf("step %d: CanReserve %v with %d reservable", i, can, s.reservable)
					}
				}
				et.RequireInvariants(t, e)
			}
		})
	}
}

// A restored engine holds the same bucket and the same reserved keys: it
// answers the next reserves as the original does, and a state without
// limits writes the layout an older binary reads.
func TestReserveLimits_SnapshotRoundTrip(t *testing.T) {
	clock := et.NewClock()
	q := engine.QueueConfig{Name: "q", MaxReserved: 4, RateLimit: 3, RateBurst: 3, ConcurrencyKey: "customer", MaxPerKey: 1}
	e := et.New(t, et.WithQueue(q))
	for _, c := range []string{"a", "a", "b", "a", "c", "c"} {
		p := et.Job("q")
		p.Custom = map[string]string{"customer": c}
		et.MustEnqueue(t, e, clock.Now(), p)
	}
	first := et.MustReserve(t, e, clock.Now(), "q", 10) // 1, 3, 5: the bucket is empty
	if got := et.IDs(first); !slices.Equal(got, []engine.JobID{1, 3, 5}) {
		t.Fatalf("first reserve %v", got)
	}
	var buf bytes.Buffer
	if err := e.Snapshot(&buf); err != nil {
		t.Fatal(err)
	}
	if v := buf.Bytes()[8]; v != 5 {
		t.Fatalf("snapshot layout %d, want 5", v)
	}
	restored := engine.New(engine.DefaultConfig())
	if err := restored.Restore(bytes.NewReader(buf.Bytes())); err != nil {
		t.Fatal(err)
	}
	if e.Digest() != restored.Digest() {
		t.Fatal("restored digest differs")
	}
	for _, eng := range []*engine.Engine{e, restored} {
		now := clock.Now().Add(400 * time.Millisecond) // one token back
		if err := eng.Ack(now, et.Ref(first[0])); err != nil {
			t.Fatal(err)
		}
		if got := et.IDs(et.MustReserve(t, eng, now, "q", 10)); !slices.Equal(got, []engine.JobID{2}) {
			t.Fatalf("after the ack: %v, want [2]", got)
		}
		et.RequireInvariants(t, eng)
	}
	if e.Digest() != restored.Digest() {
		t.Fatal("digests split after the same operations")
	}

	// Without limits the layout is the one before them.
	plain := et.New(t, et.WithQueue(engine.QueueConfig{Name: "q"}))
	buf.Reset()
	if err := plain.Snapshot(&buf); err != nil {
		t.Fatal(err)
	}
	if v := buf.Bytes()[8]; v != 2 {
		t.Fatalf("snapshot layout without limits %d, want 2", v)
	}
}

// Lifting a queue's key limit puts its parked jobs back in line, and
// removing the rate limit drops the bucket (so the state equals one that
// never had it).
func TestReserveLimits_ConfigChange(t *testing.T) {
	clock := et.NewClock()
	limited := et.Config(et.WithQueue(engine.QueueConfig{Name: "q", RateLimit: 100, ConcurrencyKey: "customer", MaxPerKey: 1}))
	e := engine.New(limited)
	for range 3 {
		p := et.Job("q")
		p.Custom = map[string]string{"customer": "a"}
		et.MustEnqueue(t, e, clock.Now(), p)
	}
	if got := et.IDs(et.MustReserve(t, e, clock.Now(), "q", 3)); !slices.Equal(got, []engine.JobID{1}) {
		t.Fatalf("limited reserve %v", got)
	}
	if err := e.SetConfig(clock.Now(), et.Config(et.WithQueue(engine.QueueConfig{Name: "q"}))); err != nil {
		t.Fatal(err)
	}
	et.RequireInvariants(t, e)
	if got := et.IDs(et.MustReserve(t, e, clock.Now(), "q", 3)); !slices.Equal(got, []engine.JobID{2, 3}) {
		t.Fatalf("after lifting the limit: %v", got)
	}
	st, _ := e.QueueStats(clock.Now(), "q")
	if st.Limits != (engine.ReserveLimits{}) {
		t.Fatalf("limits still shown: %+v", st.Limits)
	}
	et.RequireInvariants(t, e)
}

func TestReserveLimits_StatsShowUse(t *testing.T) {
	clock := et.NewClock()
	e := et.New(t, et.WithQueue(engine.QueueConfig{Name: "q", MaxReserved: 9, RateLimit: 5, RatePeriod: 10 * time.Second, ConcurrencyKey: "customer", MaxPerKey: 1}))
	for _, c := range []string{"a", "a", "b"} {
		p := et.Job("q")
		p.Custom = map[string]string{"customer": c}
		et.MustEnqueue(t, e, clock.Now(), p)
	}
	et.MustReserve(t, e, clock.Now(), "q", 5)
	st, err := e.QueueStats(clock.Now(), "q")
	if err != nil {
		t.Fatal(err)
	}
	want := engine.ReserveLimits{MaxReserved: 9, RateLimit: 5, RatePeriod: 10 * time.Second, RateBurst: 5, RateTokens: 3, ConcurrencyKey: "customer", MaxPerKey: 1, KeysAtLimit: 2, Parked: 1}
	if st.Limits != want {
		t.Fatalf("limits %+v, want %+v", st.Limits, want)
	}
}

// limitedEngine holds a state under every reserve limit: a spent bucket,
// a full key with parked jobs (a FuzzRestore seed).
func limitedEngine(tb testing.TB, opts ...func(*engine.Config)) *engine.Engine {
	tb.Helper()
	clock := et.NewClock()
	e := et.New(tb, append([]func(*engine.Config){et.WithQueue(engine.QueueConfig{Name: "q", MaxReserved: 3, RateLimit: 2, RatePeriod: time.Minute, ConcurrencyKey: "customer", MaxPerKey: 1})}, opts...)...)
	for _, c := range []string{"a", "a", "b", "a"} {
		p := et.Job("q")
		p.Custom = map[string]string{"customer": c}
		et.MustEnqueue(tb, e, clock.Now(), p)
	}
	et.MustReserve(tb, e, clock.Now(), "q", 4)
	return e
}
