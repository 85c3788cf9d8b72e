package engine_test

import (
	"errors"
	"testing"
	"time"

	"github.com/sepp-io/sepp/engine"
	et "github.com/sepp-io/sepp/engine/enginetest"
)

// nackOnce enqueues one job on q, burns attempts-1 deliveries with immediate
// retries, reserves attempt number `attempt` and nacks it with p.
func nackAt(t *testing.T, e *engine.Engine, clock *et.Clock, attempt int, p engine.NackParams) (engine.JobID, engine.NackResult, error) {
	t.Helper()
	id := et.MustEnqueue(t, e, clock.Now(), et.Job("q"))
	for i := 1; i < attempt; i++ {
		d := et.MustReserveOne(t, e, clock.Now(), "q")
		if err := e.Release(clock.Now(), et.Ref(d)); err != nil {
			t.Fatal(err)
		}
		// Burn the attempt through a lease expiry: immediate, not paced.
		ds, err := e.Reserve(clock.Now(), engine.ReserveParams{Queue: "q", Lease: time.Millisecond})
		if err != nil || len(ds) != 1 {
			t.Fatalf("reserve: %v %v", ds, err)
		}
		e.Tick(clock.Advance(time.Millisecond))
	}
	d := et.MustReserveOne(t, e, clock.Now(), "q")
	if int(d.Attempt) != attempt || d.Job.ID != id {
		t.Fatalf("setup: attempt %d of job %d, want %d of %d", d.Attempt, d.Job.ID, attempt, id)
	}
	p.LeaseRef = et.Ref(d)
	res, err := e.Nack(clock.Now(), p)
	return id, res, err
}

func TestNack_RetryPolicy(t *testing.T) {
	t.Parallel()
	const sec = time.Second
	tests := []struct {
		name      string
		limits    func(*engine.Limits)
		queue     engine.QueueConfig
		attempt   int
		nack      engine.NackParams
		wantDelay time.Duration // before jitter; -1 when dead-lettered
		jitter    bool          // the policy delay is jittered
		wantDead  engine.Cause
	}{
		// spec: NAK-3
		{name: "DefaultOutOfTheBoxRetriesAtOnce", attempt: 1, wantDelay: 0},
		// spec: NAK-4
		// spec: NAK-5
		{name: "BaseDelayNoneWaitsBase", limits: func(l *engine.Limits) { l.RetryDelay = 5 * sec; l.MaxAttemptsCeiling = 100; l.DefaultMaxAttempts = 10 }, attempt: 3, wantDelay: 5 * sec, jitter: true},
		// spec: NAK-6
		{name: "ExponentialFirstRetryWaitsBase", limits: expo(5*sec, time.Hour), attempt: 1, wantDelay: 5 * sec, jitter: true},
		// spec: NAK-6
		{name: "ExponentialDoublesPerAttempt", limits: expo(5*sec, time.Hour), attempt: 2, wantDelay: 10 * sec, jitter: true},
		// spec: NAK-6
		{name: "ExponentialFourthRetryWaitsEightTimes", limits: expo(5*sec, time.Hour), attempt: 4, wantDelay: 40 * sec, jitter: true},
		// spec: NAK-6
		// spec: NAK-7
		{name: "ExponentialCappedAtMaxStillJittered", limits: expo(5*sec, 12*sec), attempt: 4, wantDelay: 12 * sec, jitter: true},
		// spec: NAK-8
		{name: "QueueSettingsWin", limits: expo(5*sec, time.Hour), queue: engine.QueueConfig{RetryDelay: et.Ptr(30 * sec), RetryBackoff: et.Ptr(engine.BackoffNone)}, attempt: 2, wantDelay: 30 * sec, jitter: true},
		// spec: NAK-9
		{name: "AfterOverridesPolicy", limits: expo(5*sec, time.Hour), attempt: 2, nack: engine.NackParams{Directive: engine.DirectiveAfter, After: 3 * sec}, wantDelay: 3 * sec},
		// spec: NAK-9
		{name: "AfterZeroRetriesAtOnce", limits: expo(5*sec, time.Hour), attempt: 1, nack: engine.NackParams{Directive: engine.DirectiveAfter}, wantDelay: 0},
		// spec: NAK-11
		{name: "AfterClampedToHorizon", queue: engine.QueueConfig{MaxScheduleHorizon: et.Ptr(time.Minute)}, attempt: 1, nack: engine.NackParams{Directive: engine.DirectiveAfter, After: 48 * time.Hour}, wantDelay: time.Minute},
		// spec: NAK-11
		{name: "PolicyDelayClampedToHorizon", limits: expo(time.Hour, 100*time.Hour), queue: engine.QueueConfig{MaxScheduleHorizon: et.Ptr(time.Minute)}, attempt: 1, wantDelay: time.Minute},
		// spec: NAK-10
		{name: "DeadLetterSkipsRemainingAttempts", attempt: 1, nack: engine.NackParams{Directive: engine.DirectiveDeadLetter}, wantDelay: -1, wantDead: engine.CauseRejected},
		// spec: NAK-2
		{name: "FinalAttemptDeadLetters", attempt: 3, wantDelay: -1, wantDead: engine.CauseAttemptsExhausted},
		// spec: NAK-2
		{name: "FinalAttemptWithAfterStillDeadLetters", attempt: 3, nack: engine.NackParams{Directive: engine.DirectiveAfter, After: sec}, wantDelay: -1, wantDead: engine.CauseAttemptsExhausted},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clock := et.NewClock()
			q := tt.queue
			q.Name = "q"
			e := et.New(t, func(c *engine.Config) {
				if tt.limits != nil {
					tt.limits(&c.Limits)
				}
			}, et.WithQueue(q), et.WithRetention(time.Hour))
			tt.nack.Reason = "failed"
			id, res, err := nackAt(t, e, clock, tt.attempt, tt.nack)
			if err != nil {
				t.Fatal(err)
			}
			if tt.wantDelay < 0 {
				if !res.DeadLettered || !res.NextAttemptAt.IsZero() {
					t.Fatalf("result %+v, want dead-lettered", res)
				}
				rec, err := e.GetDeadLetter(id)
				if err != nil || rec.Cause != tt.wantDead || rec.FinalAttempt != uint32(tt.attempt) {
					t.Fatalf("record %+v %v, want cause %v at attempt %d", rec, err, tt.wantDead, tt.attempt)
				}
				return
			}
			want := tt.wantDelay
			if tt.jitter {
				want -= engine.RetryJitter(id, tt.wantDelay)
			}
			if res.DeadLettered || !res.NextAttemptAt.Equal(clock.Now().Add(want)) {
				t.Fatalf("result %+v, want a retry at now+%s", res, want)
			}
			j, _ := e.GetJob(id)
			if want == 0 {
				if j.State != engine.StateReady {
					t.Fatalf("state %v, want ready at once", j.State)
				}
				return
			}
			// spec: NAK-4
			if j.State != engine.StateScheduled || !j.NextAttemptAt.Equal(res.NextAttemptAt) {
				t.Fatalf("job %v next attempt %v, want scheduled until %v", j.State, j.NextAttemptAt, res.NextAttemptAt)
			}
			if ds := et.MustReserve(t, e, clock.Now().Add(want-1), "q", 1); len(ds) != 0 {
				t.Fatalf("retry delivered before its delay")
			}
			if d := et.MustReserveOne(t, e, clock.Now().Add(want), "q"); d.Job.ID != id || int(d.Attempt) != tt.attempt+1 {
				t.Fatalf("retry: job %d attempt %d", d.Job.ID, d.Attempt)
			}
		})
	}
}

func expo(base, cap time.Duration) func(*engine.Limits) {
	return func(l *engine.Limits) {
		l.RetryDelay, l.RetryDelayMax, l.RetryBackoff = base, cap, engine.BackoffExponential
		l.DefaultMaxAttempts = 10
	}
}

// spec: NAK-7
func TestRetryJitter_BoundedDeterministicAndSpread(t *testing.T) {
	t.Parallel()
	const d = time.Hour
	distinct := make(map[time.Duration]bool)
	var maxSeen time.Duration
	for id := engine.JobID(1); id <= 10000; id++ {
		j := engine.RetryJitter(id, d)
		if j < 0 || j >= d/4 {
			t.Fatalf("jitter of job %d = %s, want in [0, %s)", id, j, d/4)
		}
		if j != engine.RetryJitter(id, d) {
			t.Fatalf("jitter of job %d not deterministic", id)
		}
		distinct[j] = true
		maxSeen = max(maxSeen, j)
	}
	if len(distinct) < 5000 || maxSeen < d/4-d/100 {
		t.Fatalf("jitter poorly spread: %d distinct values, max %s", len(distinct), maxSeen)
	}
	if engine.RetryJitter(1, 0) != 0 {
		t.Fatal("jitter of a zero delay must be zero")
	}
}

// spec: NAK-7
func TestNack_BatchFailingTogetherRetriesApart(t *testing.T) {
	t.Parallel()
	clock := et.NewClock()
	e := et.New(t, func(c *engine.Config) { expo(time.Second, 10*time.Second)(&c.Limits) })
	for range 20 {
		et.MustEnqueue(t, e, clock.Now(), et.Job("q"))
	}
	for range 6 { // drive all to the cap
		e.Tick(clock.Advance(time.Minute))
		for _, d := range et.MustReserve(t, e, clock.Now(), "q", 20) {
			if _, err := e.Nack(clock.Now(), engine.NackParams{LeaseRef: et.Ref(d)}); err != nil {
				t.Fatal(err)
			}
		}
	}
	jobs, _ := e.ListJobs("q", engine.StateScheduled, engine.Page{})
	times := make(map[time.Time]bool)
	for _, j := range jobs {
		delay := j.NextAttemptAt.Sub(clock.Now())
		if delay > 10*time.Second || delay <= 7500*time.Millisecond {
			t.Fatalf("capped delay %s outside (7.5s, 10s]", delay)
		}
		times[j.NextAttemptAt] = true
	}
	if len(jobs) != 20 || len(times) < 15 {
		t.Fatalf("%d scheduled retries at %d distinct times; jitter should spread them", len(jobs), len(times))
	}
}

// spec: NAK-1
// spec: NAK-12
func TestNack_DirectiveAndReasonRecorded(t *testing.T) {
	t.Parallel()
	// A worker that never sets a directive is paced by the server's policy.
	clock := et.NewClock()
	e := et.New(t, func(c *engine.Config) { c.Limits.RetryDelay = 5 * time.Second })
	id := et.MustEnqueue(t, e, clock.Now(), et.Job("q"))
	d := et.MustReserveOne(t, e, clock.Now(), "q")
	res, err := e.Nack(clock.Now(), engine.NackParams{LeaseRef: et.Ref(d), Reason: "db down"})
	if err != nil || res.DeadLettered {
		t.Fatal(res, err)
	}
	j, _ := e.GetJob(id)
	if j.State != engine.StateScheduled || j.LastReason != "db down" || len(j.History) != 1 ||
		j.History[0] != (engine.Attempt{Attempt: 1, WorkerID: "worker-1", At: clock.Now(), Outcome: "nack", Reason: "db down"}) {
		t.Fatalf("job after nack: %+v", j)
	}
	if j.NextAttemptAt.Before(clock.Now().Add(3750*time.Millisecond)) || j.NextAttemptAt.After(clock.Now().Add(5*time.Second)) {
		t.Fatalf("next attempt %v not paced by the 5s policy", j.NextAttemptAt)
	}
}

func TestNack_RejectsBadInput(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		p    engine.NackParams
		want error
	}{
		{name: "UnknownDirective", p: engine.NackParams{Directive: 7}, want: engine.ErrInvalidArgument},
		{name: "NegativeAfter", p: engine.NackParams{Directive: engine.DirectiveAfter, After: -time.Second}, want: engine.ErrInvalidArgument},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clock := et.NewClock()
			e := et.New(t)
			et.MustEnqueue(t, e, clock.Now(), et.Job("q"))
			d := et.MustReserveOne(t, e, clock.Now(), "q")
			tt.p.LeaseRef = et.Ref(d)
			before := e.Digest()
			if _, err := e.Nack(clock.Now(), tt.p); !errors.Is(err, tt.want) {
				t.Fatalf("err = %v, want %v", err, tt.want)
			}
			if e.Digest() != before {
				t.Fatal("a refused nack changed the state")
			}
		})
	}
}
