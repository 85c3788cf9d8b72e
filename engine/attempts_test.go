package engine_test

import (
	"testing"
	"time"

	"github.com/sepp-io/sepp/engine"
	et "github.com/sepp-io/sepp/engine/enginetest"
)

func TestMaxAttempts_Resolution(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		global   uint32
		ceiling  uint32
		queueDef *uint32
		job      uint32
		want     uint32
	}{
		// spec: ATT-3
		{name: "GlobalDefaultIsThree", want: 3},
		// spec: ATT-3
		{name: "GlobalDefaultConfigured", global: 7, want: 7},
		// spec: ATT-3
		{name: "QueueDefaultOverGlobal", global: 7, queueDef: et.Ptr[uint32](5), want: 5},
		// spec: ATT-3
		{name: "JobValueOverQueueDefault", queueDef: et.Ptr[uint32](5), job: 9, want: 9},
		// spec: ATT-4
		{name: "JobValueAboveCeilingClamped", job: 1000, want: 100},
		// spec: ATT-4
		{name: "JobValueClampedToConfiguredCeiling", ceiling: 10, job: 11, want: 10},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := et.New(t, func(c *engine.Config) {
				if tt.global != 0 {
					c.Limits.DefaultMaxAttempts = tt.global
				}
				if tt.ceiling != 0 {
					c.Limits.MaxAttemptsCeiling = tt.ceiling
				}
			}, et.WithQueue(engine.QueueConfig{Name: "q", DefaultMaxAttempts: tt.queueDef}))
			clock := et.NewClock()
			p := et.Job("q")
			p.MaxAttempts = tt.job
			id := et.MustEnqueue(t, e, clock.Now(), p)
			d := et.MustReserveOne(t, e, clock.Now(), "q")
			if d.Job.ID != id || d.MaxAttempts != tt.want || d.Job.MaxAttempts != tt.want {
				t.Fatalf("max attempts = %d (view %d), want %d", d.MaxAttempts, d.Job.MaxAttempts, tt.want)
			}
		})
	}
}

// spec: ATT-1
// spec: ATT-2
// spec: SUB-1
func TestAttempts_CountEveryDeliveryUntilMax(t *testing.T) {
	t.Parallel()
	// Deliveries alternate failure modes: nack-retry, lease expiry, delayed
	// nack. Each counts; the failing attempt at max dead-letters.
	clock := et.NewClock()
	e := et.New(t, et.WithRetention(time.Hour))
	p := et.Job("q")
	p.MaxAttempts = 4
	id := et.MustEnqueue(t, e, clock.Now(), p)

	d1 := et.MustReserveOne(t, e, clock.Now(), "q")
	if _, err := e.Nack(clock.Now(), engine.NackParams{LeaseRef: et.Ref(d1), Reason: "one"}); err != nil {
		t.Fatal(err)
	}
	d2, err := e.Reserve(clock.Now(), engine.ReserveParams{Queue: "q", Lease: time.Second})
	if err != nil || len(d2) != 1 {
		t.Fatal(err)
	}
	e.Tick(clock.Advance(time.Second)) // lease expires
	d3 := et.MustReserveOne(t, e, clock.Now(), "q")
	if _, err := e.Nack(clock.Now(), engine.NackParams{LeaseRef: et.Ref(d3), Directive: engine.DirectiveAfter, After: time.Minute}); err != nil {
		t.Fatal(err)
	}
	e.Tick(clock.Advance(time.Minute))
	d4 := et.MustReserveOne(t, e, clock.Now(), "q")
	got := []uint32{d1.Attempt, d2[0].Attempt, d3.Attempt, d4.Attempt}
	if got[0] != 1 || got[1] != 2 || got[2] != 3 || got[3] != 4 {
		t.Fatalf("attempts = %v, want [1 2 3 4]", got)
	}
	// spec: ATT-6
	if d4.Attempt != d4.MaxAttempts {
		t.Fatalf("last delivery: attempt %d, max %d", d4.Attempt, d4.MaxAttempts)
	}
	res, err := e.Nack(clock.Now(), engine.NackParams{LeaseRef: et.Ref(d4), Reason: "four"})
	if err != nil || !res.DeadLettered {
		t.Fatalf("final nack: %+v %v, want dead-lettered", res, err)
	}
	rec, err := e.GetDeadLetter(id)
	if err != nil {
		t.Fatal(err)
	}
	if rec.Cause != engine.CauseAttemptsExhausted || rec.FinalAttempt != 4 || rec.LastReason != "four" {
		t.Fatalf("record = cause %v final %d reason %q", rec.Cause, rec.FinalAttempt, rec.LastReason)
	}
	if ds := et.MustReserve(t, e, clock.Advance(time.Hour/2), "q", 10); len(ds) != 0 {
		t.Fatalf("a dead job was delivered again")
	}
}

func TestRelease_DoesNotBurnAnAttempt(t *testing.T) {
	t.Parallel()
	clock := et.NewClock()
	e := et.New(t)
	p := et.Job("q")
	p.MaxAttempts = 1
	id := et.MustEnqueue(t, e, clock.Now(), p)
	for range 5 { // a rolling deploy hands it back five times
		d := et.MustReserveOne(t, e, clock.Now(), "q")
		if d.Attempt != 1 {
			t.Fatalf("attempt after release = %d, want 1", d.Attempt)
		}
		if err := e.Release(clock.Now(), et.Ref(d)); err != nil {
			t.Fatal(err)
		}
	}
	j, _ := e.GetJob(id)
	if j.State != engine.StateReady || len(j.History) != 5 || j.History[4].Outcome != "released" {
		t.Fatalf("after releases: %v, history %+v", j.State, j.History)
	}
	et.RequireInvariants(t, e)
}
