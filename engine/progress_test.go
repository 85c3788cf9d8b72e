package engine_test

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/sepp-io/sepp/engine"
	et "github.com/sepp-io/sepp/engine/enginetest"
)

// progressEngine holds reserved jobs with and without progress beside a
// completed queue's jobs, so the fuzzer starts from a snapshot of the
// layout that carries progress.
func progressEngine(t testing.TB) *engine.Engine {
	t.Helper()
	e, _ := progressEngineWith(t)
	return e
}

// progressEngineWith is progressEngine and its three deliveries of "p".
func progressEngineWith(t testing.TB) (*engine.Engine, []engine.Delivery) {
	t.Helper()
	e := completedSeedEngine(t)
	now := e.Now().Add(time.Second)
	for range 3 {
		et.MustEnqueue(t, e, now, et.Job("p"))
	}
	ds := et.MustReserve(t, e, now, "p", 3)
	for i, p := range []*engine.Progress{{Percent: 40, Message: "step 2 of 5: résumé"}, nil, {Percent: 100}} {
		if _, err := e.ExtendLease(now, engine.ExtendParams{LeaseRef: et.Ref(ds[i]), Lease: time.Minute, Progress: p}); err != nil {
			t.Fatal(err)
		}
	}
	return e, ds
}

func mustGetJob(t *testing.T, e *engine.Engine, id engine.JobID) engine.Job {
	t.Helper()
	j, err := e.GetJob(id)
	if err != nil {
		t.Fatal(err)
	}
	return j
}

func TestProgress_SetWithTheExtension(t *testing.T) {
	t.Parallel()
	clock := et.NewClock()
	e := et.New(t)
	id := et.MustEnqueue(t, e, clock.Now(), et.Job("q"))
	d := et.MustReserveOne(t, e, clock.Now(), "q")
	if j := mustGetJob(t, e, id); j.Progress != nil {
		t.Fatalf("a fresh delivery has progress %+v", j.Progress)
	}
	steps := []struct {
		name string
		p    *engine.Progress
		want *engine.Progress
	}{
		{"FirstReport", &engine.Progress{Percent: 10, Message: "downloading"}, &engine.Progress{Percent: 10, Message: "downloading"}},
		{"PlainExtensionKeepsIt", nil, &engine.Progress{Percent: 10, Message: "downloading"}},
		{"LaterReportReplacesIt", &engine.Progress{Percent: 70}, &engine.Progress{Percent: 70}},
		{"BoundsAccepted", &engine.Progress{Percent: 100, Message: strings.Repeat("x", engine.MaxProgressMessageBytes)},
			&engine.Progress{Percent: 100, Message: strings.Repeat("x", engine.MaxProgressMessageBytes)}},
		{"ZeroIsAReport", &engine.Progress{}, &engine.Progress{}},
	}
	for _, s := range steps {
		before := e.MemoryHeldTotal()
		deadline, err := e.ExtendLease(clock.Advance(time.Second), engine.ExtendParams{LeaseRef: et.Ref(d), Lease: time.Minute, Progress: s.p})
		if err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		if !deadline.Equal(clock.Now().Add(time.Minute)) {
			t.Fatalf("%s: deadline %v, want the lease extended", s.name, deadline)
		}
		j := mustGetJob(t, e, id)
		if (j.Progress == nil) != (s.want == nil) || (j.Progress != nil && *j.Progress != *s.want) {
			t.Fatalf("%s: progress %+v, want %+v", s.name, j.Progress, s.want)
		}
		if s.p == nil && e.MemoryHeldTotal() != before {
			t.Fatalf("%s: a plain extension changed the count %d -> %d", s.name, before, e.MemoryHeldTotal())
		}
		et.RequireInvariants(t, e)
	}
}

func TestProgress_Bounds(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		p     engine.Progress
		field string
		why   string
	}{
		{"PercentAbove100", engine.Progress{Percent: 101}, "progress.percent", "at most 100"},
		{"MessageTooLong", engine.Progress{Message: strings.Repeat("é", engine.MaxProgressMessageBytes/2+1)}, "progress.message", "limit of 256"},
		{"MessageNotUTF8", engine.Progress{Message: "\xff"}, "progress.message", "UTF-8"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			clock := et.NewClock()
			e := et.New(t)
			id := et.MustEnqueue(t, e, clock.Now(), et.Job("q"))
			d := et.MustReserveOne(t, e, clock.Now(), "q")
			before := e.Digest()
			_, err := e.ExtendLease(clock.Advance(time.Second), engine.ExtendParams{LeaseRef: et.Ref(d), Progress: &tt.p})
			var fe *engine.FieldError
			if !errors.Is(err, engine.ErrInvalidArgument) || !errors.As(err, &fe) || fe.Field != tt.field || !strings.Contains(err.Error(), tt.why) {
				t.Fatalf("got %v, want InvalidArgument on %s saying %q", err, tt.field, tt.why)
			}
			if e.Digest() != before {
				t.Fatal("a refused report changed the state (the lease was extended or the clock moved)")
			}
			if j := mustGetJob(t, e, id); j.Progress != nil {
				t.Fatalf("refused progress kept: %+v", j.Progress)
			}
		})
	}
}

// TestProgress_ClearedWhenTheDeliveryEnds: progress belongs to one
// delivery; every way out of Reserved drops it and its charge.
func TestProgress_ClearedWhenTheDeliveryEnds(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		end  func(t *testing.T, e *engine.Engine, now time.Time, ref engine.LeaseRef)
	}{
		{"Nack", func(t *testing.T, e *engine.Engine, now time.Time, ref engine.LeaseRef) {
			t.Helper()
			if _, err := e.Nack(now, engine.NackParams{LeaseRef: ref, Reason: "failed"}); err != nil {
				t.Fatal(err)
			}
		}},
		{"NackToDeadLetter", func(t *testing.T, e *engine.Engine, now time.Time, ref engine.LeaseRef) {
			t.Helper()
			if _, err := e.Nack(now, engine.NackParams{LeaseRef: ref, Directive: engine.DirectiveDeadLetter}); err != nil {
				t.Fatal(err)
			}
		}},
		{"Release", func(t *testing.T, e *engine.Engine, now time.Time, ref engine.LeaseRef) {
			t.Helper()
			if err := e.Release(now, ref); err != nil {
				t.Fatal(err)
			}
		}},
		{"LeaseExpiry", func(t *testing.T, e *engine.Engine, now time.Time, _ engine.LeaseRef) {
			t.Helper()
			if r := e.Tick(now.Add(time.Hour)); r.LeasesExpired != 1 {
				t.Fatalf("tick %+v, want the lease expired", r)
			}
		}},
		{"Ack", func(t *testing.T, e *engine.Engine, now time.Time, ref engine.LeaseRef) {
			t.Helper()
			if err := e.Ack(now, ref); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			clock := et.NewClock()
			e := et.New(t)
			id := et.MustEnqueue(t, e, clock.Now(), engine.EnqueueParams{Queue: "q", JobType: "t", MaxAttempts: 3})
			d := et.MustReserveOne(t, e, clock.Now(), "q")
			plain := e.MemoryHeldTotal()
			if _, err := e.ExtendLease(clock.Now(), engine.ExtendParams{LeaseRef: et.Ref(d), Lease: time.Minute, Progress: &engine.Progress{Percent: 50, Message: "half"}}); err != nil {
				t.Fatal(err)
			}
			if got, want := e.MemoryHeldTotal()-plain, int64(48+len("half")); got != want {
				t.Fatalf("progress charged %d bytes, want %d", got, want)
			}
			tt.end(t, e, clock.Advance(time.Second), et.Ref(d))
			et.RequireInvariants(t, e)
			if j, err := e.GetJob(id); err == nil && j.Progress != nil {
				t.Fatalf("%v job keeps progress %+v", j.State, j.Progress)
			}
			// A next delivery starts without any.
			if ds := et.MustReserve(t, e, clock.Advance(time.Hour), "q", 1); len(ds) == 1 && ds[0].Job.Progress != nil {
				t.Fatalf("the next delivery shows %+v", ds[0].Job.Progress)
			}
		})
	}
}

func TestProgress_StaleLeaseRefused(t *testing.T) {
	t.Parallel()
	clock := et.NewClock()
	e := et.New(t)
	et.MustEnqueue(t, e, clock.Now(), et.Job("q"))
	d := et.MustReserveOne(t, e, clock.Now(), "q")
	e.Tick(clock.Advance(time.Hour)) // the lease lapses
	et.MustReserveOne(t, e, clock.Now(), "q")
	_, err := e.ExtendLease(clock.Now(), engine.ExtendParams{LeaseRef: et.Ref(d), Progress: &engine.Progress{Percent: 99}})
	if !errors.Is(err, engine.ErrLeaseLost) {
		t.Fatalf("got %v, want ErrLeaseLost", err)
	}
	if j := mustGetJob(t, e, d.Job.ID); j.Progress != nil {
		t.Fatalf("a stale worker set the new delivery's progress: %+v", j.Progress)
	}
}

func TestProgress_SurvivesSnapshot(t *testing.T) {
	t.Parallel()
	e, ds := progressEngineWith(t)
	snap := snapshotBytes(t, e)
	if snap[8] != engine.SnapshotVersionProgress {
		t.Fatalf("layout %d, want %d while a job has progress", snap[8], engine.SnapshotVersionProgress)
	}
	r := engine.New(engine.DefaultConfig())
	if err := r.Restore(bytes.NewReader(snap)); err != nil {
		t.Fatal(err)
	}
	et.RequireInvariants(t, r)
	if r.Digest() != e.Digest() || r.MemoryHeldTotal() != e.MemoryHeldTotal() {
		t.Fatal("the restored engine differs")
	}
	list, err := r.ListJobs("p", engine.StateReserved, engine.Page{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, j := range list {
		if j.Progress != nil {
			got = append(got, j.Progress.Message)
		}
	}
	if len(got) != 2 || got[0] != "step 2 of 5: résumé" || got[1] != "" {
		t.Fatalf("restored progress messages %q", got)
	}

	// Once no job has progress, the state is written in the older layout.
	now := e.Now()
	for _, d := range ds {
		if err := e.Ack(now, et.Ref(d)); err != nil {
			t.Fatal(err)
		}
	}
	if v := snapshotBytes(t, e)[8]; v != engine.SnapshotVersionCompleted {
		t.Fatalf("layout %d after every progress ended, want %d", v, engine.SnapshotVersionCompleted)
	}
}

// TestProgress_DigestTracksIt: two engines differing only in a job's
// progress differ in digest.
func TestProgress_DigestTracksIt(t *testing.T) {
	t.Parallel()
	build := func(p *engine.Progress) *engine.Engine {
		clock := et.NewClock()
		e := et.New(t)
		et.MustEnqueue(t, e, clock.Now(), et.Job("q"))
		d := et.MustReserveOne(t, e, clock.Now(), "q")
		if _, err := e.ExtendLease(clock.Now(), engine.ExtendParams{LeaseRef: et.Ref(d), Lease: time.Minute, Progress: p}); err != nil {
			t.Fatal(err)
		}
		return e
	}
	a, b, c := build(nil), build(&engine.Progress{Percent: 1}), build(&engine.Progress{Percent: 1, Message: "m"})
	if a.Digest() == b.Digest() || b.Digest() == c.Digest() {
		t.Fatal("progress is not in the digest")
	}
}
