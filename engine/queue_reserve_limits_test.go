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

// reserveLimitsOf is the reserve-limit part of a queue's running config.
type reserveLimitsOf struct {
	maxReserved, rateLimit, rateBurst, maxPerKey int
	ratePeriod                                   time.Duration
	key                                          string
}

func limitsOf(t *testing.T, e *engine.Engine, name string) reserveLimitsOf {
	t.Helper()
	for _, q := range e.Config().Queues {
		if q.Name == name {
			return reserveLimitsOf{q.MaxReserved, q.RateLimit, q.RateBurst, q.MaxPerKey, q.RatePeriod, q.ConcurrencyKey}
		}
	}
	t.Fatalf("queue %q is not configured", name)
	return reserveLimitsOf{}
}

// A queue's reserve limits change at runtime through UpdateQueue like its
// other settings: a set (non-zero) value replaces the queue's, an inherited
// key drops it (a reserve limit has no global value: none), and the result
// is checked as the file's [[queues]] are, naming the key and the bound.
func TestUpdateQueue_ReserveLimits(t *testing.T) {
	start := engine.QueueConfig{Name: "q", MaxReserved: 4, RateLimit: 10, RatePeriod: time.Minute, RateBurst: 2}
	tests := []struct {
		name    string
		from    engine.QueueConfig // the queue before the update
		u       engine.QueueUpdate // Name is filled in
		want    reserveLimitsOf
		wantErr string // the whole message; "" for accepted
	}{
		{name: "SetOnAQueueWithout", from: engine.QueueConfig{Name: "q"},
			u:    engine.QueueUpdate{Set: engine.QueueConfig{MaxReserved: 3}},
			want: reserveLimitsOf{maxReserved: 3}},
		{name: "SetRateWithPeriodAndBurst", from: engine.QueueConfig{Name: "q"},
			u:    engine.QueueUpdate{Set: engine.QueueConfig{RateLimit: 5, RatePeriod: 2 * time.Second, RateBurst: 1}},
			want: reserveLimitsOf{rateLimit: 5, ratePeriod: 2 * time.Second, rateBurst: 1}},
		{name: "SetConcurrencyKey", from: engine.QueueConfig{Name: "q"},
			u:    engine.QueueUpdate{Set: engine.QueueConfig{ConcurrencyKey: "customer", MaxPerKey: 2}},
			want: reserveLimitsOf{maxPerKey: 2, key: "customer"}},
		{name: "ChangeOneKeepsTheOthers", from: start,
			u:    engine.QueueUpdate{Set: engine.QueueConfig{MaxReserved: 9}},
			want: reserveLimitsOf{maxReserved: 9, rateLimit: 10, ratePeriod: time.Minute, rateBurst: 2}},
		{name: "OtherSettingsLeaveThem", from: start,
			u:    engine.QueueUpdate{Set: engine.QueueConfig{DefaultPriority: et.Ptr[uint32](3)}},
			want: reserveLimitsOf{maxReserved: 4, rateLimit: 10, ratePeriod: time.Minute, rateBurst: 2}},
		{name: "InheritDropsOne", from: start,
			u:    engine.QueueUpdate{Inherit: []string{"max_reserved"}},
			want: reserveLimitsOf{rateLimit: 10, ratePeriod: time.Minute, rateBurst: 2}},
		{name: "InheritTheRateWhole", from: start,
			u:    engine.QueueUpdate{Inherit: []string{"rate_limit", "rate_period_ms", "rate_burst"}},
			want: reserveLimitsOf{maxReserved: 4}},
		{name: "InheritTheKeyWhole", from: engine.QueueConfig{Name: "q", ConcurrencyKey: "customer", MaxPerKey: 1},
			u: engine.QueueUpdate{Inherit: []string{"concurrency_key", "max_per_key"}}},
		{name: "InheritRateButNotBurst", from: start,
			u:       engine.QueueUpdate{Inherit: []string{"rate_limit"}},
			wantErr: `queues["q"].rate_limit: must be set when rate_period_ms or rate_burst is`},
		{name: "PerKeyWithoutKey", from: engine.QueueConfig{Name: "q"},
			u:       engine.QueueUpdate{Set: engine.QueueConfig{MaxPerKey: 1}},
			wantErr: `queues["q"].concurrency_key: must name a custom field when max_per_key is set`},
		{name: "MaxReservedAboveTheBound", from: start,
			u:       engine.QueueUpdate{Set: engine.QueueConfig{MaxReserved: 1_000_001}},
			wantErr: `queues["q"].max_reserved: must be 0..1000000 (0 is none), got 1000001`},
		{name: "RatePeriodAboveTheBound", from: start,
			u:       engine.QueueUpdate{Set: engine.QueueConfig{RatePeriod: 2 * time.Hour}},
			wantErr: `queues["q"].rate_period_ms: must be 1ms..1h0m0s (0 is 1s), got 2h0m0s`},
		{name: "PerKeyOnAFairQueue", from: engine.QueueConfig{Name: "q", FairnessKey: "tenant"},
			u:       engine.QueueUpdate{Set: engine.QueueConfig{ConcurrencyKey: "customer", MaxPerKey: 1}},
			wantErr: `queues["q"].fairness_key: cannot be combined with max_per_key (concurrency_key "customer") yet`},
		// An update of an older command version leaves the limits alone.
		{name: "KeepIgnoresSet", from: start,
			u:    engine.QueueUpdate{Set: engine.QueueConfig{MaxReserved: 1, DefaultPriority: et.Ptr[uint32](3)}, KeepReserveLimits: true},
			want: reserveLimitsOf{maxReserved: 4, rateLimit: 10, ratePeriod: time.Minute, rateBurst: 2}},
		{name: "KeepRefusesTheirKeys", from: start,
			u: engine.QueueUpdate{Inherit: []string{"max_reserved"}, KeepReserveLimits: true},
			wantErr: `inherit: unknown setting "max_reserved"; one of [default_priority default_max_attempts retry_delay_ms retry_backoff ` +
				`retry_delay_max_ms max_schedule_horizon_ms max_length max_memory_bytes dead_letter_queue max_wait_ms fairness_key]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clock := et.NewClock()
			e := et.New(t, et.WithQueue(tt.from))
			before := e.Digest()
			u := tt.u
			u.Name = "q"
			err := e.UpdateQueue(clock.Advance(time.Second), u)
			if tt.wantErr != "" {
				if !errors.Is(err, engine.ErrInvalidArgument) || err.Error() != tt.wantErr {
					t.Fatalf("err = %v, want %q wrapping ErrInvalidArgument", err, tt.wantErr)
				}
				if e.Digest() != before {
					t.Fatal("a refused update changed the state")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := limitsOf(t, e, "q"); got != tt.want {
				t.Fatalf("limits %+v, want %+v", got, tt.want)
			}
			et.RequireInvariants(t, e)
		})
	}
}

func TestQueueUpdate_TouchesReserveLimits(t *testing.T) {
	tests := []struct {
		name string
		u    engine.QueueUpdate
		want bool
	}{
		{"Nothing", engine.QueueUpdate{Name: "q"}, false},
		{"OtherSettings", engine.QueueUpdate{Name: "q", Set: engine.QueueConfig{DefaultPriority: et.Ptr[uint32](1), MaxWait: time.Minute}, Inherit: []string{"max_wait_ms"}}, false},
		{"MaxReserved", engine.QueueUpdate{Name: "q", Set: engine.QueueConfig{MaxReserved: 1}}, true},
		{"RatePeriod", engine.QueueUpdate{Name: "q", Set: engine.QueueConfig{RatePeriod: time.Second}}, true},
		{"ConcurrencyKey", engine.QueueUpdate{Name: "q", Set: engine.QueueConfig{ConcurrencyKey: "k"}}, true},
		{"InheritRateBurst", engine.QueueUpdate{Name: "q", Inherit: []string{"default_priority", "rate_burst"}}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.u.TouchesReserveLimits(); got != tt.want {
				t.Fatalf("TouchesReserveLimits = %v, want %v", got, tt.want)
			}
		})
	}
}

// Limits set at runtime hold the next reserve back, with the jobs already
// reserved counted against them, and lift as soon as they are dropped; a
// snapshot carries them, and the restored engine holds back alike.
func TestUpdateQueue_ReserveLimitsTakeEffect(t *testing.T) {
	clock := et.NewClock()
	e := et.New(t)
	cust := func(c string) engine.EnqueueParams {
		p := et.Job("q")
		p.Custom = map[string]string{"customer": c}
		return p
	}
	var ids []engine.JobID
	for _, c := range []string{"acme", "acme", "acme", "globex", "globex", "initech"} {
		ids = append(ids, et.MustEnqueue(t, e, clock.Now(), cust(c)))
	}
	update := func(u engine.QueueUpdate) {
		t.Helper()
		u.Name = "q"
		if err := e.UpdateQueue(clock.Advance(time.Millisecond), u); err != nil {
			t.Fatal(err)
		}
		et.RequireInvariants(t, e)
	}
	reserve := func(n int, want ...engine.JobID) []engine.Delivery {
		t.Helper()
		ds := et.MustReserve(t, e, clock.Now(), "q", n)
		if got := et.IDs(ds); !slices.Equal(got, want) {
			t.Fatalf("reserved %v, want %v", got, want)
		}
		return ds
	}

	first := reserve(1, ids[0])[0] // no limit yet
	update(engine.QueueUpdate{Set: engine.QueueConfig{MaxReserved: 2}})
	reserve(5, ids[1]) // one more: the job reserved before counts
	reserve(5)

	// Raised: one more; then a per-key limit of one on top, with two acme
	// jobs reserved already: the next acme job is passed over.
	update(engine.QueueUpdate{Set: engine.QueueConfig{MaxReserved: 3, ConcurrencyKey: "customer", MaxPerKey: 1}})
	reserve(5, ids[3])

	// Without max_reserved, only the key holds back: acme is full (two
	// reserved before the limit), globex has one, so initech's job comes.
	update(engine.QueueUpdate{Inherit: []string{"max_reserved"}})
	reserve(5, ids[5])
	if err := e.Ack(clock.Now(), et.Ref(first)); err != nil {
		t.Fatal(err)
	}
	reserve(5) // acme still has one reserved: at its limit

	// The limits survive a snapshot: the restored engine holds back alike.
	restored := engine.New(engine.DefaultConfig())
	if err := restored.Restore(bytes.NewReader(snapshotBytes(t, e))); err != nil {
		t.Fatal(err)
	}
	if restored.Digest() != e.Digest() {
		t.Fatal("the restored engine differs")
	}
	if got := limitsOf(t, restored, "q"); got != (reserveLimitsOf{maxPerKey: 1, key: "customer"}) {
		t.Fatalf("restored limits %+v", got)
	}
	if ds := et.MustReserve(t, restored, clock.Now(), "q", 5); len(ds) != 0 {
		t.Fatalf("the restored engine handed out %v past the key limit", et.IDs(ds))
	}

	// Dropped: everything waiting goes.
	update(engine.QueueUpdate{Inherit: []string{"concurrency_key", "max_per_key"}})
	reserve(5, ids[2], ids[4])
}

// A rate limit set at runtime starts with a full bucket of rate_burst and
// refills on the commands' clock.
func TestUpdateQueue_RateLimitTakesEffect(t *testing.T) {
	clock := et.NewClock()
	e := et.New(t)
	for range 5 {
		et.MustEnqueue(t, e, clock.Now(), et.Job("q"))
	}
	if err := e.UpdateQueue(clock.Now(), engine.QueueUpdate{Name: "q", Set: engine.QueueConfig{RateLimit: 1, RatePeriod: 10 * time.Second, RateBurst: 2}}); err != nil {
		t.Fatal(err)
	}
	if ds := et.MustReserve(t, e, clock.Now(), "q", 5); len(ds) != 2 {
		t.Fatalf("first reserve under a burst of 2: %d jobs", len(ds))
	}
	if ds := et.MustReserve(t, e, clock.Advance(9*time.Second), "q", 5); len(ds) != 0 {
		t.Fatalf("before the period: %d jobs", len(ds))
	}
	if ds := et.MustReserve(t, e, clock.Advance(time.Second), "q", 5); len(ds) != 1 {
		t.Fatalf("after the period: %d jobs, want 1", len(ds))
	}
	if err := e.UpdateQueue(clock.Now(), engine.QueueUpdate{Name: "q", Inherit: []string{"rate_limit", "rate_period_ms", "rate_burst"}}); err != nil {
		t.Fatal(err)
	}
	if ds := et.MustReserve(t, e, clock.Now(), "q", 5); len(ds) != 2 {
		t.Fatalf("without the rate limit: %d jobs, want the 2 left", len(ds))
	}
	et.RequireInvariants(t, e)
}

// The [[queues]] rule covers the reserve limits once the cluster runs
// declaredLimits: a runtime change of a declared queue's limits survives
// the same file applied again, and an entry whose only change is its
// limits is applied. Before (the older rule, which older log entries
// replay), the limits were no part of a definition.
func TestApplyDeclared_ReserveLimits(t *testing.T) {
	clock := et.NewClock()
	e := et.New(t)
	file := func(qs ...engine.QueueConfig) engine.Config {
		cfg := engine.DefaultConfig()
		cfg.Queues = qs
		return cfg
	}
	apply := func(cfg engine.Config, limits bool) {
		t.Helper()
		apply := e.ApplyDeclared
		if limits {
			apply = e.ApplyDeclaredReserveLimits
		}
		if err := apply(clock.Advance(time.Second), cfg); err != nil {
			t.Fatal(err)
		}
		et.RequireInvariants(t, e)
	}
	attempts := func() uint32 {
		t.Helper()
		for _, q := range e.Config().Queues {
			if q.Name == "emails" && q.DefaultMaxAttempts != nil {
				return *q.DefaultMaxAttempts
			}
		}
		t.Fatal("emails has no default_max_attempts")
		return 0
	}
	maxReserved := func() int { t.Helper(); return limitsOf(t, e, "emails").maxReserved }
	v1 := engine.QueueConfig{Name: "emails", DefaultMaxAttempts: et.Ptr[uint32](5), MaxReserved: 5}

	// The older rule: an entry whose only change is its limits is the same
	// definition, so it is not applied.
	apply(file(v1), false)
	edited := v1
	edited.MaxReserved = 7
	if e.DeclaredPending(file(edited)) {
		t.Fatal("under the older rule a limits-only edit is pending")
	}
	apply(file(edited), false)
	if maxReserved() != 5 || e.DeclaredReserveLimits() {
		t.Fatalf("the older rule applied a limits-only edit: max_reserved %d", maxReserved())
	}

	// A runtime change of another setting, then the conversion with the
	// file the cluster applied: the definition counts as applied, so the
	// runtime change stays.
	if err := e.UpdateQueue(clock.Now(), engine.QueueUpdate{Name: "emails", Set: engine.QueueConfig{DefaultMaxAttempts: et.Ptr[uint32](9)}}); err != nil {
		t.Fatal(err)
	}
	apply(file(v1), true)
	if !e.DeclaredReserveLimits() || attempts() != 9 || maxReserved() != 5 {
		t.Fatalf("conversion: on %v, attempts %d, max_reserved %d; want on, 9, 5", e.DeclaredReserveLimits(), attempts(), maxReserved())
	}
	if e.DeclaredPending(file(v1)) {
		t.Fatal("the converted definition is still pending")
	}

	// A runtime change of the limits survives the same file applied again
	// (a restart, a new leader), under either call.
	if err := e.UpdateQueue(clock.Now(), engine.QueueUpdate{Name: "emails", Set: engine.QueueConfig{MaxReserved: 1}}); err != nil {
		t.Fatal(err)
	}
	apply(file(v1), false)
	apply(file(v1), true)
	if maxReserved() != 1 || attempts() != 9 {
		t.Fatalf("the file overwrote runtime changes: max_reserved %d, attempts %d", maxReserved(), attempts())
	}

	// An entry whose only change is its limits is applied, whole.
	if !e.DeclaredPending(file(edited)) {
		t.Fatal("a limits-only edit is not pending")
	}
	apply(file(edited), false)
	if maxReserved() != 7 || attempts() != 5 {
		t.Fatalf("the edited entry: max_reserved %d, attempts %d; want 7, 5", maxReserved(), attempts())
	}
	// So is one that drops them.
	none := v1
	none.MaxReserved = 0
	apply(file(none), false)
	if maxReserved() != 0 {
		t.Fatalf("an entry without limits left max_reserved %d", maxReserved())
	}
	// Differing files flip the queue no more.
	for range 3 {
		apply(file(edited), false)
		apply(file(none), false)
	}
	if maxReserved() != 0 {
		t.Fatalf("differing files flipped the queue: max_reserved %d", maxReserved())
	}

	// The flag and the fingerprints survive a snapshot, and the restored
	// engine applies the rule alike.
	restored := engine.New(engine.DefaultConfig())
	if err := restored.Restore(bytes.NewReader(snapshotBytes(t, e))); err != nil {
		t.Fatal(err)
	}
	again := v1
	again.MaxReserved = 3
	if restored.Digest() != e.Digest() || !restored.DeclaredReserveLimits() || restored.DeclaredPending(file(none)) || !restored.DeclaredPending(file(again)) {
		t.Fatal("the restored engine differs")
	}
}

// The conversion applies what the cluster never applied, leaves a queue
// deleted at runtime deleted, and keeps a queue the file does not name.
func TestApplyDeclaredReserveLimits_Conversion(t *testing.T) {
	clock := et.NewClock()
	e := et.New(t)
	cfg := engine.DefaultConfig()
	cfg.Queues = []engine.QueueConfig{{Name: "kept", MaxReserved: 2}, {Name: "deleted", MaxReserved: 2}}
	if err := e.ApplyDeclared(clock.Now(), cfg); err != nil {
		t.Fatal(err)
	}
	if _, err := e.DeleteQueue(clock.Now(), "deleted", false); err != nil {
		t.Fatal(err)
	}
	if err := e.CreateQueue(clock.Now(), engine.QueueConfig{Name: "runtime", MaxReserved: 4}, false); err != nil {
		t.Fatal(err)
	}
	cfg.Queues = append(cfg.Queues, engine.QueueConfig{Name: "new", RateLimit: 3})
	if err := e.ApplyDeclaredReserveLimits(clock.Advance(time.Second), cfg); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, q := range e.Config().Queues {
		names = append(names, q.Name)
	}
	if want := []string{"kept", "runtime", "new"}; !slices.Equal(names, want) {
		t.Fatalf("queues %v, want %v", names, want)
	}
	if limitsOf(t, e, "new").rateLimit != 3 || limitsOf(t, e, "runtime").maxReserved != 4 {
		t.Fatal("the conversion did not apply the new queue or touched the runtime one")
	}
	for name, fps := range e.Declarations() {
		if len(fps) != 1 {
			t.Fatalf("queue %q keeps %d fingerprints after the conversion, want 1", name, len(fps))
		}
	}
	if e.DeclaredPending(cfg) {
		t.Fatal("pending after the conversion")
	}
	et.RequireInvariants(t, e)

	// A refused config turns nothing on.
	e2 := et.New(t)
	bad := engine.DefaultConfig()
	bad.Queues = []engine.QueueConfig{{Name: "q", MaxPerKey: 1}}
	if err := e2.ApplyDeclaredReserveLimits(clock.Now(), bad); !errors.Is(err, engine.ErrInvalidArgument) || e2.DeclaredReserveLimits() {
		t.Fatalf("a refused config: err %v, on %v", err, e2.DeclaredReserveLimits())
	}
}
