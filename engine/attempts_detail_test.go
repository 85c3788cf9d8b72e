package engine_test

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"github.com/sepp-io/sepp/engine"
	et "github.com/sepp-io/sepp/engine/enginetest"
)

// attemptsEngine is a rich engine that runs recordFields from the start:
// histories with detail, a reserved job with a delivery start, forwarded
// origins (one beside a producer's own sepp.cause key). It snapshots in
// layout 11.
func attemptsEngine(t testing.TB) *engine.Engine {
	t.Helper()
	clock := et.NewClock()
	e := et.New(t, et.WithRetention(time.Hour),
		et.WithQueue(engine.QueueConfig{Name: "a", DeadLetterQueue: "a.dead", DefaultMaxAttempts: et.Ptr[uint32](2)}),
		et.WithQueue(engine.QueueConfig{Name: "a.dead"}))
	e.EnableRecordFields(clock.Now())
	for i := range 6 {
		p := et.Job("a")
		if i == 0 {
			p.Custom = map[string]string{engine.FieldCause: "the producer's own"}
		}
		et.MustEnqueue(t, e, clock.Advance(time.Second), p)
	}
	ds, err := e.Reserve(clock.Advance(time.Second), engine.ReserveParams{Queue: "a", N: 6, WorkerID: "w-1", Lease: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	clock.Advance(3 * time.Second)
	_, _ = e.Nack(clock.Now(), engine.NackParams{LeaseRef: et.Ref(ds[0]), Directive: engine.DirectiveDeadLetter, Reason: "poison"})
	_, _ = e.Nack(clock.Now(), engine.NackParams{LeaseRef: et.Ref(ds[1]), Reason: "flaky"})
	_, _ = e.Nack(clock.Now(), engine.NackParams{LeaseRef: et.Ref(ds[2]), Directive: engine.DirectiveAfter, After: time.Hour, Reason: "later"})
	_ = e.Release(clock.Now(), et.Ref(ds[3]))
	_ = e.Ack(clock.Now(), et.Ref(ds[4]))
	// ds[5] stays reserved: its delivery start is in the snapshot.
	return e
}

// TestAttemptHistory_RecordsEveryEndedAttempt: each way an attempt ends is
// recorded with its start (the reserve's time), end, duration, worker,
// lease token, outcome, nack directive and reason.
func TestAttemptHistory_RecordsEveryEndedAttempt(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		end       func(t *testing.T, e *engine.Engine, now time.Time, d engine.Delivery)
		outcome   string
		directive string
		reason    string
		ran       time.Duration
	}{
		{"NackDefault", func(t *testing.T, e *engine.Engine, now time.Time, d engine.Delivery) {
			t.Helper()
			if _, err := e.Nack(now, engine.NackParams{LeaseRef: et.Ref(d), Reason: "boom"}); err != nil {
				t.Fatal(err)
			}
		}, "nack", "default", "boom", 7 * time.Second},
		{"NackAfter", func(t *testing.T, e *engine.Engine, now time.Time, d engine.Delivery) {
			t.Helper()
			if _, err := e.Nack(now, engine.NackParams{LeaseRef: et.Ref(d), Directive: engine.DirectiveAfter, After: time.Minute, Reason: "later"}); err != nil {
				t.Fatal(err)
			}
		}, "nack", "after", "later", 7 * time.Second},
		{"NackDeadLetter", func(t *testing.T, e *engine.Engine, now time.Time, d engine.Delivery) {
			t.Helper()
			if _, err := e.Nack(now, engine.NackParams{LeaseRef: et.Ref(d), Directive: engine.DirectiveDeadLetter, Reason: "poison"}); err != nil {
				t.Fatal(err)
			}
		}, "nack", "dead_letter", "poison", 7 * time.Second},
		{"Released", func(t *testing.T, e *engine.Engine, now time.Time, d engine.Delivery) {
			t.Helper()
			if err := e.Release(now, et.Ref(d)); err != nil {
				t.Fatal(err)
			}
		}, "released", "", "", 7 * time.Second},
		{"LeaseExpired", func(t *testing.T, e *engine.Engine, now time.Time, _ engine.Delivery) {
			t.Helper()
			e.Tick(now.Add(time.Minute))
		}, "lease_expired", "", "", time.Minute + 7*time.Second},
		{"Cancelled", func(t *testing.T, e *engine.Engine, now time.Time, d engine.Delivery) {
			t.Helper()
			if _, err := e.ActOnJobs(now, engine.JobActionParams{Action: engine.JobActionCancel, IDs: []engine.JobID{d.Job.ID}, Reason: "stop"}); err != nil {
				t.Fatal(err)
			}
		}, "cancelled", "", "stop", 7 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			clock := et.NewClock()
			e := et.New(t, et.WithRetention(time.Hour))
			e.EnableRecordFields(clock.Now())
			id := et.MustEnqueue(t, e, clock.Now(), et.Job("q"))
			reservedAt := clock.Advance(time.Second)
			ds, err := e.Reserve(reservedAt, engine.ReserveParams{Queue: "q", WorkerID: "worker-9", Lease: time.Minute})
			if err != nil || len(ds) != 1 {
				t.Fatal(ds, err)
			}
			if j, _ := e.GetJob(id); !j.StartedAt.Equal(reservedAt) {
				t.Fatalf("reserved job's StartedAt = %v, want %v", j.StartedAt, reservedAt)
			}
			tt.end(t, e, clock.Advance(7*time.Second), ds[0])
			j, err := e.GetJob(id)
			if err != nil {
				t.Fatal(err)
			}
			if len(j.History) != 1 {
				t.Fatalf("history = %+v, want one entry", j.History)
			}
			want := engine.Attempt{
				Attempt: 1, WorkerID: "worker-9", StartedAt: reservedAt, At: reservedAt.Add(tt.ran), Duration: tt.ran,
				Outcome: tt.outcome, Directive: tt.directive, Reason: tt.reason, LeaseToken: ds[0].LeaseToken,
			}
			if got := j.History[0]; got != want {
				t.Fatalf("attempt\n got %+v\nwant %+v", got, want)
			}
			if !j.StartedAt.IsZero() {
				t.Errorf("StartedAt of a job no longer reserved = %v, want zero", j.StartedAt)
			}
			et.RequireInvariants(t, e)
		})
	}
}

// TestAttemptHistory_BoundKeepsTheNewest: the default bound is
// DefaultAttemptHistory (more than the 5 of before); past it the oldest
// entries go, and the dead-letter record carries the history.
func TestAttemptHistory_BoundKeepsTheNewest(t *testing.T) {
	t.Parallel()
	if got := engine.DefaultConfig().Limits.AttemptHistory; got != engine.DefaultAttemptHistory || got <= 5 {
		t.Fatalf("default attempt_history = %d, want %d", got, engine.DefaultAttemptHistory)
	}
	clock := et.NewClock()
	e := et.New(t, et.WithRetention(time.Hour))
	e.EnableRecordFields(clock.Now())
	p := et.Job("q")
	p.MaxAttempts = 40
	id := et.MustEnqueue(t, e, clock.Now(), p)
	for i := range 40 {
		e.Tick(clock.Advance(time.Hour)) // past the retry delay
		d := et.MustReserveOne(t, e, clock.Advance(time.Second), "q")
		if _, err := e.Nack(clock.Now(), engine.NackParams{LeaseRef: et.Ref(d), Reason: fmt.Sprint("fail ", i+1)}); err != nil {
			t.Fatal(err)
		}
	}
	recs, err := e.ListDeadLetters("q", engine.Page{})
	if err != nil || len(recs) != 1 || recs[0].Job.ID != id {
		t.Fatalf("dead letters = %+v, %v", recs, err)
	}
	h := recs[0].Job.History
	if len(h) != engine.DefaultAttemptHistory || h[0].Attempt != 16 || h[len(h)-1].Attempt != 40 || h[len(h)-1].Reason != "fail 40" {
		t.Fatalf("record history: %d entries, %+v .. %+v; want attempts 16..40", len(h), h[0], h[len(h)-1])
	}
	et.RequireInvariants(t, e)
}

// TestForward_OriginInOwnFields: a job forwarded to a dead_letter_queue
// carries its origin in Job.Origin; the producer's custom keys, even one
// named sepp.cause, arrive as they were sent and nothing is added to them.
func TestForward_OriginInOwnFields(t *testing.T) {
	t.Parallel()
	clock := et.NewClock()
	e := et.New(t, et.WithRetention(time.Hour),
		et.WithQueue(engine.QueueConfig{Name: "a", DeadLetterQueue: "a.dead"}),
		et.WithQueue(engine.QueueConfig{Name: "a.dead"}))
	e.EnableRecordFields(clock.Now())
	p := et.Job("a")
	p.Custom = map[string]string{engine.FieldCause: "mine", "tenant": "t1"}
	id := et.MustEnqueue(t, e, clock.Now(), p)
	d := et.MustReserveOne(t, e, clock.Now(), "a")
	failedAt := clock.Advance(time.Second)
	if _, err := e.Nack(failedAt, engine.NackParams{LeaseRef: et.Ref(d), Directive: engine.DirectiveDeadLetter, Reason: "poison"}); err != nil {
		t.Fatal(err)
	}
	fwd := et.MustReserveOne(t, e, clock.Now(), "a.dead").Job
	if want := map[string]string{engine.FieldCause: "mine", "tenant": "t1"}; fmt.Sprint(fwd.Custom) != fmt.Sprint(want) {
		t.Errorf("forwarded custom = %v, want %v as the producer sent them", fwd.Custom, want)
	}
	want := engine.Origin{Queue: "a", JobID: id, Cause: engine.CauseRejected, FailedAt: failedAt, LastReason: "poison", FinalAttempt: 1}
	if fwd.Origin != want {
		t.Fatalf("origin = %+v, want %+v", fwd.Origin, want)
	}
	if fwd.LastReason != "" {
		t.Errorf("the forwarded copy's own last reason = %q, want empty (it has not run)", fwd.LastReason)
	}
	et.RequireInvariants(t, e)
}

// TestEnableRecordFields_ConvertsLegacyOrigins: a job forwarded before the
// cluster ran recordFields holds its origin in the five sepp.* keys; a
// snapshot of that state (an older layout) restores, and enabling
// recordFields moves the keys into Origin. A producer's job with only one
// such key is left alone.
func TestEnableRecordFields_ConvertsLegacyOrigins(t *testing.T) {
	t.Parallel()
	clock := et.NewClock()
	e := et.New(t, et.WithRetention(time.Hour),
		et.WithQueue(engine.QueueConfig{Name: "a", DeadLetterQueue: "a.dead"}),
		et.WithQueue(engine.QueueConfig{Name: "a.dead"}))
	p := et.Job("a")
	p.Custom = map[string]string{"tenant": "t1"}
	orig := et.MustEnqueue(t, e, clock.Now(), p)
	own := et.Job("b")
	own.Custom = map[string]string{engine.FieldCause: "mine"}
	ownID := et.MustEnqueue(t, e, clock.Now(), own)
	d := et.MustReserveOne(t, e, clock.Now(), "a")
	failedAt := clock.Advance(time.Second)
	if _, err := e.Nack(failedAt, engine.NackParams{LeaseRef: et.Ref(d), Directive: engine.DirectiveDeadLetter, Reason: "poison"}); err != nil {
		t.Fatal(err)
	}
	legacy := et.MustReserveOne(t, e, clock.Now(), "a.dead").Job
	if legacy.Custom[engine.FieldCause] != "rejected" || legacy.Origin.Queue != "" {
		t.Fatalf("before recordFields the copy carries the sepp.* keys: %+v", legacy)
	}
	if err := e.Release(clock.Now(), engine.LeaseRef{JobID: legacy.ID, LeaseToken: 2}); err != nil {
		t.Fatal(err)
	}
	snap := snapshotBytes(t, e)
	if snap[8] == 11 {
		t.Fatal("an engine without recordFields wrote layout 11")
	}
	r := engine.New(engine.DefaultConfig())
	if err := r.Restore(bytes.NewReader(snap)); err != nil {
		t.Fatal(err)
	}
	r.EnableRecordFields(clock.Now())
	et.RequireInvariants(t, r)
	got, err := r.GetJob(legacy.ID)
	if err != nil {
		t.Fatal(err)
	}
	want := engine.Origin{Queue: "a", JobID: orig, Cause: engine.CauseRejected, FailedAt: failedAt, LastReason: "poison", FinalAttempt: 1}
	if got.Origin != want {
		t.Fatalf("converted origin = %+v, want %+v", got.Origin, want)
	}
	if fmt.Sprint(got.Custom) != fmt.Sprint(map[string]string{"tenant": "t1"}) {
		t.Errorf("converted custom = %v, want only the producer's keys", got.Custom)
	}
	if j, _ := r.GetJob(ownID); j.Custom[engine.FieldCause] != "mine" || j.Origin.Queue != "" {
		t.Errorf("a producer's lone sepp.cause was converted: %+v", j)
	}
	if s := snapshotBytes(t, r); s[8] != 11 {
		t.Errorf("layout after recordFields = %d, want 11", s[8])
	}
}

// TestSnapshot_AttemptsLayoutRoundTrips: layout 11 restores to the same
// state, byte for byte, with histories, delivery starts and origins.
func TestSnapshot_AttemptsLayoutRoundTrips(t *testing.T) {
	t.Parallel()
	e := attemptsEngine(t)
	snap := snapshotBytes(t, e)
	if snap[8] != 11 {
		t.Fatalf("layout = %d, want 11", snap[8])
	}
	r := engine.New(engine.DefaultConfig())
	if err := r.Restore(bytes.NewReader(snap)); err != nil {
		t.Fatal(err)
	}
	et.RequireInvariants(t, r)
	if !bytes.Equal(snapshotBytes(t, r), snap) {
		t.Fatal("the restored engine snapshots to other bytes")
	}
	if !r.RecordFields() {
		t.Fatal("recordFields not restored")
	}
	if a, b := e.MemoryHeld(), r.MemoryHeld(); fmt.Sprint(a) != fmt.Sprint(b) {
		t.Errorf("held bytes differ after restore: %v vs %v", a, b)
	}
	var forwarded, reserved int
	jobs, _ := r.ListJobs("a.dead", engine.StateReady, engine.Page{})
	for _, j := range jobs {
		if j.Origin.Queue != "" {
			forwarded++
		}
	}
	res, _ := r.ListJobs("a", engine.StateReserved, engine.Page{})
	for _, j := range res {
		if !j.StartedAt.IsZero() {
			reserved++
		}
	}
	if forwarded != 1 || reserved != 1 {
		t.Errorf("restored %d forwarded origins and %d delivery starts, want 1 and 1", forwarded, reserved)
	}
	// Every truncation is refused, never a panic.
	for cut := len(snap) - 1; cut > len(snap)-200 && cut > 9; cut-- {
		if err := engine.New(engine.DefaultConfig()).Restore(bytes.NewReader(snap[:cut])); err == nil {
			t.Fatalf("a snapshot cut at %d restored", cut)
		}
	}
}
