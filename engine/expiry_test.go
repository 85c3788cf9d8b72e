package engine_test

import (
	"bytes"
	"errors"
	"testing"
	"time"

	"github.com/sepp-io/sepp/engine"
	et "github.com/sepp-io/sepp/engine/enginetest"
)

// expiryStep is one step of an expiry scenario: enqueue a job (ttl,
// expires_at after the clock, scheduled_at after the clock), advance the
// clock, reserve expecting ids, nack (retry after a delay) or ack the
// delivery of a job, requeue a dead letter, then optionally check a job's
// state, its dead-letter cause and the engine's next deadline.
type expiryStep struct {
	enqueue   bool
	ttl       time.Duration
	expiresIn time.Duration
	schedIn   time.Duration
	prio      uint32

	advance    time.Duration
	tick       bool
	reserve    int
	want       []engine.JobID
	nack       engine.JobID
	nackAfter  time.Duration
	ack        engine.JobID
	requeue    engine.JobID
	check      engine.JobID
	wantState  engine.State
	wantCause  engine.Cause
	wantExpIn  time.Duration // with check: the job's deadline after the clock (0: none)
	wantNextIn time.Duration // NextDeadline after the clock, when set
	wantTick   int           // with tick: jobs expired by it
	anyExp     bool          // with check: do not check the deadline
}

func TestExpiry_Scenarios(t *testing.T) {
	sec := time.Second
	enq := func(ttl time.Duration) expiryStep { return expiryStep{enqueue: true, ttl: ttl} }
	res := func(n int, want ...engine.JobID) expiryStep { return expiryStep{reserve: n, want: want} }
	adv := func(d time.Duration) expiryStep { return expiryStep{advance: d} }
	state := func(id engine.JobID, s engine.State) expiryStep {
		return expiryStep{tick: true, check: id, wantState: s, anyExp: true}
	}
	dead := func(id engine.JobID) expiryStep {
		return expiryStep{check: id, wantState: engine.StateDead, wantCause: engine.CauseExpired}
	}
	tests := []struct {
		name  string
		q     engine.QueueConfig
		steps []expiryStep
	}{
		{
			name: "TTLDeadlineIsExact",
			q:    engine.QueueConfig{Name: "q"},
			steps: []expiryStep{
				enq(10 * sec),
				{check: 1, wantState: engine.StateReady, wantExpIn: 10 * sec, wantNextIn: 10 * sec},
				adv(10*sec - time.Nanosecond),
				{tick: true, wantTick: 0},
				state(1, engine.StateReady),
				adv(time.Nanosecond),
				{tick: true, wantTick: 1},
				dead(1),
				res(1),
			},
		},
		{
			name: "NeverDeliveredPastItsDeadline", // the command's own now expires it first
			q:    engine.QueueConfig{Name: "q"},
			steps: []expiryStep{
				enq(sec), enq(0),
				adv(2 * sec),
				res(2, 2),
				dead(1),
			},
		},
		{
			name: "ReservedJobIsNotExpired",
			q:    engine.QueueConfig{Name: "q"},
			steps: []expiryStep{
				enq(10 * sec),
				adv(5 * sec),
				res(1, 1),
				{check: 1, wantState: engine.StateReserved, wantExpIn: 5 * sec, wantNextIn: 30 * sec}, // the lease, not the deadline
				adv(20 * sec),
				state(1, engine.StateReserved),
				{ack: 1},
			},
		},
		{
			// Like SQS retention, the deadline counts from the first enqueue:
			// a retry waiting for its delay dies at the original deadline.
			name: "RetryWaitKeepsTheOriginalDeadline",
			q:    engine.QueueConfig{Name: "q"},
			steps: []expiryStep{
				enq(10 * sec),
				adv(sec),
				res(1, 1),
				{nack: 1, nackAfter: 20 * sec},
				{check: 1, wantState: engine.StateScheduled, wantExpIn: 9 * sec, wantNextIn: 9 * sec},
				adv(9 * sec),
				{tick: true, wantTick: 1},
				dead(1),
			},
		},
		{
			name: "NackAfterTheDeadlineDiesAtTheNextCommand",
			q:    engine.QueueConfig{Name: "q"},
			steps: []expiryStep{
				enq(10 * sec),
				res(1, 1),
				adv(15 * sec),
				{nack: 1},
				{tick: true, wantTick: 1},
				dead(1),
			},
		},
		{
			name: "QueueMaxWaitCountsFromTheFirstDueTime",
			q:    engine.QueueConfig{Name: "q", MaxWait: 5 * sec},
			steps: []expiryStep{
				{enqueue: true, schedIn: 10 * sec},
				{check: 1, wantState: engine.StateScheduled, wantExpIn: 15 * sec},
				adv(14 * sec),
				state(1, engine.StateReady),
				adv(sec),
				res(1),
				dead(1),
			},
		},
		{
			name: "EarliestDeadlineApplies",
			q:    engine.QueueConfig{Name: "q", MaxWait: 3 * sec},
			steps: []expiryStep{
				enq(10 * sec),
				{check: 1, wantState: engine.StateReady, wantExpIn: 3 * sec},
				{enqueue: true, ttl: 10 * sec, expiresIn: 2 * sec},
				{check: 2, wantState: engine.StateReady, wantExpIn: 2 * sec},
				adv(2 * sec),
				res(2, 1),
				dead(2),
			},
		},
		{
			name: "ScheduledJobExpiresUnpromoted",
			q:    engine.QueueConfig{Name: "q"},
			steps: []expiryStep{
				{enqueue: true, schedIn: 5 * sec, expiresIn: 6 * sec},
				adv(7 * sec),
				{tick: true, wantTick: 1},
				dead(1),
			},
		},
		{
			name: "RequeuedDeadLetterWaitsWithoutDeadline",
			q:    engine.QueueConfig{Name: "q"},
			steps: []expiryStep{
				enq(sec),
				adv(sec),
				{tick: true, wantTick: 1},
				dead(1),
				{requeue: 1},
				{check: 1, wantState: engine.StateReady, wantExpIn: 0},
				adv(time.Hour),
				res(1, 1),
			},
		},
		{
			name: "PriorityDoesNotMatterToExpiry",
			q:    engine.QueueConfig{Name: "q"},
			steps: []expiryStep{
				{enqueue: true, ttl: 2 * sec, prio: 9},
				{enqueue: true, ttl: sec, prio: 0},
				adv(sec),
				res(2, 1),
				dead(2),
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := et.New(t, et.WithRetention(time.Hour), et.WithQueue(tt.q))
			clock := et.NewClock()
			leases := map[engine.JobID]engine.Delivery{}
			for i, s := range tt.steps {
				now := clock.Now()
				switch {
				case s.enqueue:
					p := et.Job("q")
					if s.ttl != 0 || s.expiresIn != 0 {
						p.Expiry = &engine.ExpiryOpts{TTL: s.ttl}
					}
					if s.expiresIn != 0 {
						p.Expiry.At = now.Add(s.expiresIn)
					}
					if s.schedIn != 0 {
						p.ScheduledAt = now.Add(s.schedIn)
					}
					p.Priority = et.Ptr(s.prio)
					et.MustEnqueue(t, e, now, p)
				case s.advance != 0:
					clock.Advance(s.advance)
				case s.tick:
					if got := e.Tick(now); got.Expired != s.wantTick {
						t.Fatalf("step %d: tick expired %d, want %d", i, got.Expired, s.wantTick)
					}
				case s.reserve > 0:
					ds, err := e.Reserve(now, engine.ReserveParams{Queue: "q", N: s.reserve})
					if err != nil {
						t.Fatalf("step %d: reserve: %v", i, err)
					}
					if got := et.IDs(ds); !equalIDs(got, s.want) {
						t.Fatalf("step %d: reserved %v, want %v", i, got, s.want)
					}
					for _, d := range ds {
						leases[d.Job.ID] = d
					}
				case s.nack != 0:
					p := engine.NackParams{LeaseRef: et.Ref(leases[s.nack])}
					if s.nackAfter != 0 {
						p.Directive, p.After = engine.DirectiveAfter, s.nackAfter
					}
					if _, err := e.Nack(now, p); err != nil {
						t.Fatalf("step %d: nack: %v", i, err)
					}
				case s.ack != 0:
					if err := e.Ack(now, et.Ref(leases[s.ack])); err != nil {
						t.Fatalf("step %d: ack: %v", i, err)
					}
				case s.requeue != 0:
					if r := e.RequeueDeadLetters(now, []engine.JobID{s.requeue}); r[0].Err != nil {
						t.Fatalf("step %d: requeue: %v", i, r[0].Err)
					}
				}
				if s.check != 0 {
					checkExpiryJob(t, e, i, s, clock.Now())
				}
				if s.wantNextIn != 0 {
					if next, ok := e.NextDeadline(); !ok || next.Sub(clock.Now()) != s.wantNextIn {
						t.Fatalf("step %d: next deadline %v (%v), want in %v", i, next, ok, s.wantNextIn)
					}
				}
				et.RequireInvariants(t, e)
			}
		})
	}
}

func checkExpiryJob(t *testing.T, e *engine.Engine, i int, s expiryStep, now time.Time) {
	t.Helper()
	if s.wantState == engine.StateDead {
		r, err := e.GetDeadLetter(s.check)
		if err != nil {
			t.Fatalf("step %d: dead letter %d: %v", i, s.check, err)
		}
		if r.Cause != s.wantCause || r.Cause.String() != "expired" {
			t.Fatalf("step %d: job %d cause %v, want %v", i, s.check, r.Cause, s.wantCause)
		}
		return
	}
	j, err := e.GetJob(s.check)
	if err != nil {
		t.Fatalf("step %d: job %d: %v", i, s.check, err)
	}
	if j.State != s.wantState {
		t.Fatalf("step %d: job %d is %v, want %v", i, s.check, j.State, s.wantState)
	}
	if s.anyExp {
		return
	}
	var in time.Duration
	if !j.ExpiresAt().IsZero() {
		in = j.ExpiresAt().Sub(now)
	}
	if in != s.wantExpIn {
		t.Fatalf("step %d: job %d expires in %v, want %v", i, s.check, in, s.wantExpIn)
	}
}

func equalIDs(a, b []engine.JobID) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestExpiry_RejectsBadDeadlines(t *testing.T) {
	clock := et.NewClock()
	now := clock.Now()
	tests := []struct {
		name    string
		p       func(*engine.EnqueueParams)
		wantErr string
	}{
		{name: "TTLBelowAMillisecond", p: func(p *engine.EnqueueParams) { p.Expiry = &engine.ExpiryOpts{TTL: time.Microsecond} }, wantErr: "ttl: must be at least 1ms (0 is none), got 1µs"},
		{name: "NegativeTTL", p: func(p *engine.EnqueueParams) { p.Expiry = &engine.ExpiryOpts{TTL: -time.Second} }, wantErr: "ttl: must be at least 1ms (0 is none), got -1s"},
		{name: "ExpiresAtNow", p: func(p *engine.EnqueueParams) { p.Expiry = &engine.ExpiryOpts{At: now} }, wantErr: "expires_at: is 2030-01-02T03:04:05Z, not after the server's now 2030-01-02T03:04:05Z"},
		{name: "ExpiresBeforeItIsDue", p: func(p *engine.EnqueueParams) {
			p.Expiry, p.ScheduledAt = &engine.ExpiryOpts{At: now.Add(time.Second)}, now.Add(2*time.Second)
		}, wantErr: "expires_at: ends at 2030-01-02T03:04:06Z, not after the job's scheduled_at 2030-01-02T03:04:07Z: the job could never run"},
		{name: "TTLEndsBeforeItIsDue", p: func(p *engine.EnqueueParams) {
			p.Expiry, p.ScheduledAt = &engine.ExpiryOpts{TTL: time.Second}, now.Add(time.Second)
		}, wantErr: "ttl: ends at 2030-01-02T03:04:06Z, not after the job's scheduled_at 2030-01-02T03:04:06Z: the job could never run"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := et.New(t)
			p := et.Job("q")
			tt.p(&p)
			_, err := e.Enqueue(now, p)
			if !errors.Is(err, engine.ErrInvalidArgument) || err.Error() != tt.wantErr {
				t.Fatalf("err = %v, want %q wrapping ErrInvalidArgument", err, tt.wantErr)
			}
			if len(e.Stats(now)) != 0 {
				t.Fatal("a refused enqueue left a queue behind")
			}
		})
	}
}

func TestExpiryFairness_ValidateQueue(t *testing.T) {
	tests := []struct {
		name    string
		q       engine.QueueConfig
		wantErr string
	}{
		{name: "Both", q: engine.QueueConfig{Name: "q", MaxWait: time.Minute, FairnessKey: "tenant"}},
		{name: "MaxWaitTooShort", q: engine.QueueConfig{Name: "q", MaxWait: time.Microsecond}, wantErr: `queues["q"].max_wait_ms: must be 1ms..876000h0m0s (0 is none), got 1µs`},
		{name: "NegativeMaxWait", q: engine.QueueConfig{Name: "q", MaxWait: -time.Second}, wantErr: `queues["q"].max_wait_ms: must be 1ms..876000h0m0s (0 is none), got -1s`},
		{name: "LongKey", q: engine.QueueConfig{Name: "q", FairnessKey: string(bytes.Repeat([]byte("k"), 257))}, wantErr: `queues["q"].fairness_key: is 257 bytes, above the limit of 256`},
		{name: "NotWithMaxPerKey", q: engine.QueueConfig{Name: "q", FairnessKey: "tenant", ConcurrencyKey: "customer", MaxPerKey: 1}, wantErr: `queues["q"].fairness_key: cannot be combined with max_per_key (concurrency_key "customer") yet`},
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

// TestExpiry_DeadLetterRules: an expired job follows the dead-letter rules
// of every cause: forwarded to the dead_letter_queue (here before origins
// have fields of their own: with sepp.cause expired), kept for the
// retention, or dropped and counted without one.
func TestExpiry_DeadLetterRules(t *testing.T) {
	for _, retention := range []time.Duration{0, time.Hour} {
		t.Run(retention.String(), func(t *testing.T) {
			e := et.New(t, et.WithRetention(retention),
				et.WithQueue(engine.QueueConfig{Name: "q", DeadLetterQueue: "dlq", MaxWait: time.Second}),
				et.WithQueue(engine.QueueConfig{Name: "dlq"}))
			clock := et.NewClock()
			p := et.Job("q")
			p.Custom = map[string]string{"tenant": "a"}
			id := et.MustEnqueue(t, e, clock.Now(), p)
			if got := e.Tick(clock.Advance(time.Second)); got.Expired != 1 || got.DeadLettered != 1 {
				t.Fatalf("tick = %+v, want one expired", got)
			}
			d := et.MustReserveOne(t, e, clock.Now(), "dlq")
			if c := d.Job.Custom; c[engine.FieldCause] != "expired" || c["tenant"] != "a" || c[engine.FieldOriginJobID] != "1" {
				t.Fatalf("forwarded custom fields %v", c)
			}
			if !d.Job.ExpiresAt().IsZero() {
				t.Fatalf("the forwarded copy carries a deadline %v", d.Job.ExpiresAt())
			}
			var qs engine.QueueStats
			for _, s := range e.Stats(clock.Now()) {
				if s.Name == "q" {
					qs = s
				}
			}
			if qs.DeadLettered[engine.CauseExpired] != 1 || qs.MaxWait != time.Second {
				t.Fatalf("stats: %+v", qs)
			}
			_, err := e.GetDeadLetter(id)
			if kept := err == nil; kept != (retention > 0) {
				t.Fatalf("record kept %v with retention %v (%v)", kept, retention, err)
			}
			et.RequireInvariants(t, e)
		})
	}
}

// TestExpiry_SnapshotLayout: an engine that never used expiry or fairness
// writes the layout it wrote before; one that did writes layout 10, and a
// restored copy keeps expiring alike.
func TestExpiry_SnapshotLayout(t *testing.T) {
	clock := et.NewClock()
	plain := et.New(t)
	et.MustEnqueue(t, plain, clock.Now(), et.Job("q"))
	if v := snapshotBytes(t, plain)[8]; v >= 10 {
		t.Fatalf("an engine without expiry writes layout %d", v)
	}
	e := et.New(t, et.WithRetention(time.Hour))
	for _, ttl := range []time.Duration{3 * time.Second, time.Second, 0, 2 * time.Second} {
		p := et.Job("q")
		if ttl != 0 {
			p.Expiry = &engine.ExpiryOpts{TTL: ttl}
		}
		et.MustEnqueue(t, e, clock.Now(), p)
	}
	data := snapshotBytes(t, e)
	if data[8] != 10 {
		t.Fatalf("layout %d, want 10", data[8])
	}
	r := et.New(t)
	if err := r.Restore(bytes.NewReader(data)); err != nil {
		t.Fatal(err)
	}
	for _, eng := range []*engine.Engine{e, r} {
		if got := eng.Tick(clock.Now().Add(2 * time.Second)); got.Expired != 2 {
			t.Fatalf("tick expired %d, want 2 (jobs 2 and 4)", got.Expired)
		}
	}
	if e.Digest() != r.Digest() {
		t.Fatal("the restored engine diverged")
	}
	et.RequireInvariants(t, r)
}

// TestExpiry_ForwardedOriginSaysExpired: once the cluster records origins
// in their own fields (as docs/expiry-and-fairness.md says), an expired
// job's forwarded copy has origin cause expired and the producer's custom
// fields untouched, with no sepp.* key added.
func TestExpiry_ForwardedOriginSaysExpired(t *testing.T) {
	e := et.New(t, et.WithRetention(time.Hour),
		et.WithQueue(engine.QueueConfig{Name: "q", DeadLetterQueue: "dlq", MaxWait: time.Second}),
		et.WithQueue(engine.QueueConfig{Name: "dlq"}))
	clock := et.NewClock()
	e.EnableRecordFields(clock.Now())
	p := et.Job("q")
	p.Custom = map[string]string{"tenant": "a"}
	id := et.MustEnqueue(t, e, clock.Now(), p)
	if got := e.Tick(clock.Advance(time.Second)); got.Expired != 1 {
		t.Fatalf("tick = %+v, want one expired", got)
	}
	fwd := et.MustReserveOne(t, e, clock.Now(), "dlq").Job
	if len(fwd.Custom) != 1 || fwd.Custom["tenant"] != "a" {
		t.Fatalf("forwarded custom fields %v, want the producer's alone", fwd.Custom)
	}
	if fwd.Origin.Cause != engine.CauseExpired || fwd.Origin.JobID != id || fwd.Origin.Queue != "q" {
		t.Fatalf("origin %+v, want cause expired from job %d of q", fwd.Origin, id)
	}
	et.RequireInvariants(t, e)
}
