package engine_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/sepp-io/sepp/engine"
	et "github.com/sepp-io/sepp/engine/enginetest"
)

// uniqueStep is one step of a unique-jobs scenario.
type uniqueStep struct {
	enqueue *engine.EnqueueParams
	// With enqueue: wantNew adds a job; else the enqueue meets wantHolder,
	// returned as a duplicate, or refused when wantRefused.
	wantNew     bool
	wantHolder  engine.JobID
	wantRefused bool
	// wantState, when set, is the state the conflict reports of the holder.
	wantState   engine.State
	reserveAck  bool // reserve one job of q and ack it
	reserveDead bool // reserve one job of q and nack it to the dead letters
	drainDead   bool // drain the dead letters of q
	requeueDead engine.JobID
	advance     time.Duration
}

func uniqueJob(u engine.UniqueOpts) *engine.EnqueueParams {
	p := et.Job("q")
	p.Unique = &u
	return &p
}

func TestUnique_Scenarios(t *testing.T) {
	withCustom := func(p *engine.EnqueueParams, kv ...string) *engine.EnqueueParams {
		p.Custom = map[string]string{}
		for i := 0; i < len(kv); i += 2 {
			p.Custom[kv[i]] = kv[i+1]
		}
		return p
	}
	withPayload := func(p *engine.EnqueueParams, s string) *engine.EnqueueParams {
		p.Payload = []byte(s)
		return p
	}
	inQueue := func(p *engine.EnqueueParams, q string) *engine.EnqueueParams {
		p.Queue = q
		return p
	}
	key := engine.UniqueOpts{Key: "k"}
	tests := []struct {
		name      string
		retention time.Duration
		steps     []uniqueStep
	}{
		{name: "ExplicitKeyReturnsWaitingHolder", steps: []uniqueStep{
			{enqueue: uniqueJob(key), wantNew: true},
			{enqueue: uniqueJob(key), wantHolder: 1, wantState: engine.StateReady},
		}},
		{name: "RefuseNamesHolder", steps: []uniqueStep{
			{enqueue: uniqueJob(key), wantNew: true},
			{enqueue: uniqueJob(engine.UniqueOpts{Key: "k", Refuse: true}), wantHolder: 1, wantRefused: true},
		}},
		{name: "ScopedToQueue", steps: []uniqueStep{
			{enqueue: uniqueJob(key), wantNew: true},
			{enqueue: inQueue(uniqueJob(key), "other"), wantNew: true},
		}},
		{name: "ReservedHolds", steps: []uniqueStep{
			{enqueue: uniqueJob(key), wantNew: true},
			{enqueue: et.Ptr(et.Job("q")), wantNew: true},
			{reserveAck: false, advance: 0},
			{enqueue: uniqueJob(key), wantHolder: 1},
		}},
		{name: "AckReleases", steps: []uniqueStep{
			{enqueue: uniqueJob(key), wantNew: true},
			{reserveAck: true},
			{enqueue: uniqueJob(key), wantNew: true},
		}},
		{name: "CompletedForHoldsThenReleases", steps: []uniqueStep{
			{enqueue: uniqueJob(engine.UniqueOpts{Key: "k", CompletedFor: time.Minute}), wantNew: true},
			{reserveAck: true},
			{advance: 59 * time.Second},
			{enqueue: uniqueJob(key), wantHolder: 1, wantState: engine.StateCompleted},
			{enqueue: uniqueJob(engine.UniqueOpts{Key: "k", Refuse: true}), wantHolder: 1, wantRefused: true, wantState: engine.StateCompleted},
			{advance: time.Second},
			{enqueue: uniqueJob(key), wantNew: true},
		}},
		{name: "DeadReleasesByDefault", retention: time.Hour, steps: []uniqueStep{
			{enqueue: uniqueJob(key), wantNew: true},
			{reserveDead: true},
			{enqueue: uniqueJob(key), wantNew: true},
		}},
		{name: "CoverDeadHoldsUntilDrained", retention: time.Hour, steps: []uniqueStep{
			{enqueue: uniqueJob(engine.UniqueOpts{Key: "k", CoverDead: true}), wantNew: true},
			{reserveDead: true},
			{enqueue: uniqueJob(key), wantHolder: 1},
			{drainDead: true},
			{enqueue: uniqueJob(key), wantNew: true},
		}},
		{name: "CoverDeadRequeuedStillHolds", retention: time.Hour, steps: []uniqueStep{
			{enqueue: uniqueJob(engine.UniqueOpts{Key: "k", CoverDead: true}), wantNew: true},
			{reserveDead: true},
			{requeueDead: 1},
			{enqueue: uniqueJob(key), wantHolder: 1},
		}},
		{name: "CoverDeadWithoutRetentionReleases", steps: []uniqueStep{
			{enqueue: uniqueJob(engine.UniqueOpts{Key: "k", CoverDead: true}), wantNew: true},
			{reserveDead: true},
			{enqueue: uniqueJob(key), wantNew: true},
		}},
		{name: "DerivedFromTypeAndPayload", steps: []uniqueStep{
			{enqueue: uniqueJob(engine.UniqueOpts{}), wantNew: true},
			{enqueue: uniqueJob(engine.UniqueOpts{}), wantHolder: 1},
			{enqueue: withPayload(uniqueJob(engine.UniqueOpts{}), "other"), wantNew: true},
		}},
		{name: "DerivedIgnoresUnchosenFields", steps: []uniqueStep{
			{enqueue: withCustom(uniqueJob(engine.UniqueOpts{}), "a", "1"), wantNew: true},
			{enqueue: withCustom(uniqueJob(engine.UniqueOpts{}), "a", "2"), wantHolder: 1},
		}},
		{name: "DerivedWithChosenFields", steps: []uniqueStep{
			{enqueue: withCustom(uniqueJob(engine.UniqueOpts{Fields: []string{"a"}}), "a", "1"), wantNew: true},
			{enqueue: withCustom(uniqueJob(engine.UniqueOpts{Fields: []string{"a", "a"}}), "a", "1", "b", "x"), wantHolder: 1},
			{enqueue: withCustom(uniqueJob(engine.UniqueOpts{Fields: []string{"a"}}), "a", "2"), wantNew: true},
			// Absent differs from empty.
			{enqueue: withCustom(uniqueJob(engine.UniqueOpts{Fields: []string{"a"}}), "a", ""), wantNew: true},
			{enqueue: uniqueJob(engine.UniqueOpts{Fields: []string{"a"}}), wantNew: true},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var opts []func(*engine.Config)
			if tt.retention > 0 {
				opts = append(opts, et.WithRetention(tt.retention))
			}
			e := et.New(t, opts...)
			clock := et.NewClock()
			for i, s := range tt.steps {
				now := clock.Advance(s.advance)
				switch {
				case s.enqueue != nil:
					before := e.Stats(now)
					res, err := e.Enqueue(now, *s.enqueue)
					switch {
					case s.wantNew:
						if err != nil || res.Duplicate {
							t.Fatalf("step %d: enqueue = %+v, %v; want a new job", i, res, err)
						}
					case s.wantRefused:
						var ce *engine.UniqueConflictError
						if !errors.As(err, &ce) || !errors.Is(err, engine.ErrAlreadyExists) || ce.Existing != s.wantHolder {
							t.Fatalf("step %d: err = %v; want a conflict with job %d", i, err, s.wantHolder)
						}
						if s.wantState != engine.StateUnknown && ce.State != s.wantState {
							t.Fatalf("step %d: conflict reports the holder %v, want %v", i, ce.State, s.wantState)
						}
					default:
						if err != nil || !res.Duplicate || res.JobID != s.wantHolder {
							t.Fatalf("step %d: enqueue = %+v, %v; want duplicate of job %d", i, res, err, s.wantHolder)
						}
						if s.wantState != engine.StateUnknown && res.State != s.wantState {
							t.Fatalf("step %d: duplicate reports the holder %v, want %v", i, res.State, s.wantState)
						}
					}
					if !s.wantNew && totalEnqueued(e.Stats(now)) != totalEnqueued(before) {
						t.Fatalf("step %d: a conflicting enqueue added a job", i)
					}
				case s.reserveAck:
					d := et.MustReserveOne(t, e, now, "q")
					if err := e.Ack(now, et.Ref(d)); err != nil {
						t.Fatal(err)
					}
				case s.reserveDead:
					d := et.MustReserveOne(t, e, now, "q")
					if _, err := e.Nack(now, engine.NackParams{LeaseRef: et.Ref(d), Directive: engine.DirectiveDeadLetter}); err != nil {
						t.Fatal(err)
					}
				case s.drainDead:
					if _, err := e.DrainDeadLetters(now, engine.DrainParams{Queue: "q", Max: 100}); err != nil {
						t.Fatal(err)
					}
				case s.requeueDead != 0:
					if res := e.RequeueDeadLetters(now, []engine.JobID{s.requeueDead}); res[0].Err != nil {
						t.Fatal(res[0].Err)
					}
				default:
					if s.advance == 0 {
						et.MustReserveOne(t, e, now, "q")
					} else {
						e.Tick(now)
					}
				}
				et.RequireInvariants(t, e)
			}
		})
	}
}

func totalEnqueued(stats []engine.QueueStats) (n uint64) {
	for _, s := range stats {
		n += s.Enqueued
	}
	return n
}

func TestUnique_Validate(t *testing.T) {
	long := strings.Repeat("k", 257)
	tests := []struct {
		name    string
		u       engine.UniqueOpts
		wantErr string
	}{
		{name: "KeyTooLong", u: engine.UniqueOpts{Key: long}, wantErr: "unique.key: is 257 bytes, above the limit of 256"},
		{name: "KeyNotUTF8", u: engine.UniqueOpts{Key: "\xff"}, wantErr: "unique.key: must be valid UTF-8"},
		{name: "KeyWithFields", u: engine.UniqueOpts{Key: "k", Fields: []string{"a"}}, wantErr: "unique.fields: must be empty when unique.key is set (fields shape a derived key)"},
		{name: "EmptyField", u: engine.UniqueOpts{Fields: []string{"a", ""}}, wantErr: "unique.fields[1]: must not be empty"},
		{name: "NegativePeriod", u: engine.UniqueOpts{CompletedFor: -time.Second}, wantErr: "unique.completed_for: must not be negative, got -1s"},
		{name: "PeriodAboveHorizon", u: engine.UniqueOpts{CompletedFor: 31 * 24 * time.Hour}, wantErr: `unique.completed_for: is 744h0m0s, above the max_schedule_horizon of queue "q" (720h0m0s)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := et.New(t)
			_, err := e.Enqueue(et.Epoch, *uniqueJob(tt.u))
			if !errors.Is(err, engine.ErrInvalidArgument) || err.Error() != tt.wantErr {
				t.Fatalf("err = %v, want %q", err, tt.wantErr)
			}
			if n := totalEnqueued(e.Stats(et.Epoch)); n != 0 {
				t.Fatalf("%d jobs added", n)
			}
		})
	}
}

func TestUnique_DerivedKeyIsStable(t *testing.T) {
	p := et.Job("q")
	p.Custom = map[string]string{"b": "2", "a": "1"}
	p.Unique = &engine.UniqueOpts{Fields: []string{"b", "a"}}
	got := engine.UniqueKeyOf(&p)
	// A fixed value: replicas and versions must derive the same key.
	const want = "sha256:"
	if !strings.HasPrefix(got, want) || len(got) != len(want)+64 {
		t.Fatalf("key %q", got)
	}
	q := p
	q.Unique = &engine.UniqueOpts{Fields: []string{"a", "b"}}
	if engine.UniqueKeyOf(&q) != got {
		t.Fatal("field order changes the derived key")
	}
	q.JobType = "other"
	if engine.UniqueKeyOf(&q) == got {
		t.Fatal("job type does not change the derived key")
	}
}

func TestUnique_MemoryCountsKeys(t *testing.T) {
	e := et.New(t)
	now := et.Epoch
	plain := et.Job("q")
	et.MustEnqueue(t, e, now, plain)
	base := e.MemoryHeldTotal()
	et.MustEnqueue(t, e, now, *uniqueJob(engine.UniqueOpts{Key: strings.Repeat("k", 200)}))
	if grew := e.MemoryHeldTotal() - base; grew < base+200 {
		t.Fatalf("a unique job with a 200-byte key adds %d bytes, a plain job %d", grew, base)
	}
	et.RequireInvariants(t, e)
}

func TestUnique_SnapshotLayout(t *testing.T) {
	e := et.New(t)
	now := et.Epoch
	et.MustEnqueue(t, e, now, et.Job("q"))
	var plain strings.Builder
	if err := e.Snapshot(&plain); err != nil {
		t.Fatal(err)
	}
	if v := plain.String()[8]; v != 2 {
		t.Fatalf("layout %d without unique keys, want 2", v)
	}
	et.MustEnqueue(t, e, now, *uniqueJob(engine.UniqueOpts{Key: "k", CompletedFor: time.Hour}))
	d := et.MustReserve(t, e, now, "q", 2)
	if err := e.Ack(now, et.Ref(d[1])); err != nil {
		t.Fatal(err)
	}
	var withKey strings.Builder
	if err := e.Snapshot(&withKey); err != nil {
		t.Fatal(err)
	}
	if v := withKey.String()[8]; v != 7 {
		t.Fatalf("layout %d with a held key, want 7", v)
	}
	et.RequireInvariants(t, e) // restores it
	r := engine.New(et.Config())
	if err := r.Restore(strings.NewReader(withKey.String())); err != nil {
		t.Fatal(err)
	}
	if id, ok := r.UniqueHolder("q", "k"); !ok || id != 2 {
		t.Fatalf("restored holder = %d, %v; want job 2", id, ok)
	}
	if next, ok := r.NextDeadline(); !ok || next.After(now.Add(time.Hour)) {
		t.Fatalf("next deadline %v, %v; want the hold's end at the latest", next, ok)
	}
}

// uniqueEngine holds a key of every kind: a waiting job's, a retained dead
// record's (cover_dead) and an acked job's (completed_for), in layout 7.
func uniqueEngine(t testing.TB, opts ...func(*engine.Config)) *engine.Engine {
	t.Helper()
	e := et.New(t, append([]func(*engine.Config){et.WithRetention(time.Hour)}, opts...)...)
	now := et.Epoch
	for _, u := range []engine.UniqueOpts{
		{Key: "done", CompletedFor: time.Minute},
		{Key: "dead", CoverDead: true},
		{Fields: []string{"tenant"}},
	} {
		p := et.Job("q")
		p.Custom = map[string]string{"tenant": "acme"}
		p.Unique = &u
		et.MustEnqueue(t, e, now, p)
	}
	ds := et.MustReserve(t, e, now, "q", 2)
	if err := e.Ack(now, et.Ref(ds[0])); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Nack(now, engine.NackParams{LeaseRef: et.Ref(ds[1]), Directive: engine.DirectiveDeadLetter}); err != nil {
		t.Fatal(err)
	}
	return e
}

func TestUnique_EveryKindRoundTrips(t *testing.T) {
	e := uniqueEngine(t)
	et.RequireInvariants(t, e)
	for key, want := range map[string]engine.JobID{"done": 1, "dead": 2} {
		if id, ok := e.UniqueHolder("q", key); !ok || id != want {
			t.Fatalf("key %q held by %d, %v; want job %d", key, id, ok, want)
		}
	}
}
