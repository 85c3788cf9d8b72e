package engine_test

import (
	"bytes"
	"errors"
	"maps"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/sepp-io/sepp/engine"
	et "github.com/sepp-io/sepp/engine/enginetest"
)

// killBy dead-letters a fresh job on queue "q" by one cause and returns its id.
func killBy(t *testing.T, e *engine.Engine, clock *et.Clock, cause engine.Cause) engine.JobID {
	t.Helper()
	p := et.Job("q")
	p.MaxAttempts = 1
	p.Custom = map[string]string{"tenant": "acme"}
	id := et.MustEnqueue(t, e, clock.Now(), p)
	switch cause {
	case engine.CauseAdmin:
		if res := e.DeadLetterJobs(clock.Now(), []engine.JobID{id}, "bad job"); res[0].Err != nil {
			t.Fatal(res[0].Err)
		}
		return id
	case engine.CauseLeaseExpired:
		ds, err := e.Reserve(clock.Now(), engine.ReserveParams{Queue: "q", Lease: time.Second})
		if err != nil || len(ds) != 1 || ds[0].Job.ID != id {
			t.Fatalf("reserve %v %v", ds, err)
		}
		e.Tick(clock.Advance(time.Second))
		return id
	}
	d := et.MustReserveOne(t, e, clock.Now(), "q")
	p2 := engine.NackParams{LeaseRef: et.Ref(d), Reason: "broken"}
	if cause == engine.CauseRejected {
		p2.Directive = engine.DirectiveDeadLetter
	}
	res, err := e.Nack(clock.Now(), p2)
	if err != nil || !res.DeadLettered {
		t.Fatalf("nack: %+v %v", res, err)
	}
	return id
}

func TestDeadLetter_CausesAndRecords(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		cause      engine.Cause
		wantReason string
		wantFinal  uint32
	}{
		// spec: DLQ-1
		// spec: DLQ-6
		{name: "AttemptsExhausted", cause: engine.CauseAttemptsExhausted, wantReason: "broken", wantFinal: 1},
		// spec: DLQ-1
		// spec: NAK-10
		{name: "Rejected", cause: engine.CauseRejected, wantReason: "broken", wantFinal: 1},
		// spec: DLQ-1
		// spec: LEA-2
		{name: "LeaseExpired", cause: engine.CauseLeaseExpired, wantReason: "", wantFinal: 1},
		// spec: DLQ-1
		// spec: DLQ-14
		{name: "Admin", cause: engine.CauseAdmin, wantReason: "bad job", wantFinal: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clock := et.NewClock()
			e := et.New(t, et.WithRetention(time.Hour))
			id := killBy(t, e, clock, tt.cause)
			rec, err := e.GetDeadLetter(id)
			if err != nil {
				t.Fatal(err)
			}
			j := rec.Job
			if rec.Cause != tt.cause || rec.LastReason != tt.wantReason || rec.FinalAttempt != tt.wantFinal ||
				!rec.FailedAt.Equal(clock.Now()) || j.ID != id || j.Queue != "q" || j.JobType != "job" ||
				!bytes.Equal(j.Payload, []byte("payload")) || j.Custom["tenant"] != "acme" || j.State != engine.StateDead {
				t.Fatalf("record = %+v", rec)
			}
			if s, _ := e.QueueStats(clock.Now(), "q"); s.Dead != 1 || s.DeadLettered[tt.cause] != 1 {
				t.Fatalf("stats = %+v", s)
			}
			// spec: DLQ-2
			if ds := et.MustReserve(t, e, clock.Advance(time.Minute), "q", 10); len(ds) != 0 {
				t.Fatal("a dead job was redelivered")
			}
			et.RequireInvariants(t, e)
		})
	}
}

// spec: DLQ-3
func TestDeadLetter_RetentionOffDropsOnTheSpot(t *testing.T) {
	t.Parallel()
	clock := et.NewClock()
	e := et.New(t)
	for _, c := range []engine.Cause{engine.CauseAttemptsExhausted, engine.CauseRejected, engine.CauseLeaseExpired, engine.CauseAdmin} {
		id := killBy(t, e, clock, c)
		if _, err := e.GetJob(id); !errors.Is(err, engine.ErrNotFound) {
			t.Fatalf("dropped job %d still there: %v", id, err)
		}
	}
	recs, err := e.DrainDeadLetters(clock.Now(), engine.DrainParams{Max: 100})
	if err != nil || len(recs) != 0 {
		t.Fatalf("drain with retention off = %v %v, want empty", recs, err)
	}
	s, _ := e.QueueStats(clock.Now(), "q")
	if s.Dropped != 4 || s.Dead != 0 {
		t.Fatalf("dropped %d dead %d, want 4 and 0", s.Dropped, s.Dead)
	}
	et.RequireInvariants(t, e)
}

// spec: DLQ-4
func TestDeadLetter_RetentionSweep(t *testing.T) {
	t.Parallel()
	clock := et.NewClock()
	e := et.New(t, et.WithRetention(time.Hour))
	first := killBy(t, e, clock, engine.CauseRejected)
	diedAt := clock.Now()
	clock.Advance(30 * time.Minute)
	second := killBy(t, e, clock, engine.CauseRejected)
	if next, ok := e.NextDeadline(); !ok || !next.Equal(diedAt.Add(time.Hour)) {
		t.Fatalf("NextDeadline = %v, want the first record's expiry %v", next, diedAt.Add(time.Hour))
	}
	if res := e.Tick(diedAt.Add(time.Hour - 1)); res.Swept != 0 {
		t.Fatal("swept before the retention passed")
	}
	if res := e.Tick(diedAt.Add(time.Hour)); res.Swept != 1 {
		t.Fatalf("swept %d, want 1", res.Swept)
	}
	if _, err := e.GetDeadLetter(first); !errors.Is(err, engine.ErrNotFound) {
		t.Fatal("expired record still there")
	}
	if _, err := e.GetDeadLetter(second); err != nil {
		t.Fatal("unexpired record swept")
	}
	if s, _ := e.QueueStats(clock.Now(), "q"); s.DeadExpired != 1 || s.Dead != 1 {
		t.Fatalf("stats %+v", s)
	}
	et.RequireInvariants(t, e)
}

// spec: DLQ-7
// spec: DLQ-8
// spec: DLQ-9
func TestDrainDeadLetters(t *testing.T) {
	t.Parallel()
	setup := func(t *testing.T) (*engine.Engine, *et.Clock, map[string][]engine.JobID) {
		t.Helper()
		clock := et.NewClock()
		e := et.New(t, et.WithRetention(time.Hour), func(c *engine.Config) { c.Limits.MaxReserveBatch = 4 })
		ids := map[string][]engine.JobID{}
		for i := range 6 {
			q := []string{"a", "b"}[i%2]
			p := et.Job(q)
			id := et.MustEnqueue(t, e, clock.Advance(time.Second), p)
			if r := e.DeadLetterJobs(clock.Now(), []engine.JobID{id}, ""); r[0].Err != nil {
				t.Fatal(r[0].Err)
			}
			ids[q] = append(ids[q], id)
			ids[""] = append(ids[""], id)
		}
		return e, clock, ids
	}
	tests := []struct {
		name  string
		p     engine.DrainParams
		want  func(ids map[string][]engine.JobID) []engine.JobID
		error error
	}{
		{name: "MaxDefaultsToOne", p: engine.DrainParams{}, want: func(ids map[string][]engine.JobID) []engine.JobID { return ids[""][:1] }},
		{name: "AllQueuesOldestFirst", p: engine.DrainParams{Max: 3}, want: func(ids map[string][]engine.JobID) []engine.JobID { return ids[""][:3] }},
		{name: "OneQueue", p: engine.DrainParams{Queue: "b", Max: 2}, want: func(ids map[string][]engine.JobID) []engine.JobID { return ids["b"][:2] }},
		{name: "MaxClampedToMaxReserveBatch", p: engine.DrainParams{Max: 1000}, want: func(ids map[string][]engine.JobID) []engine.JobID { return ids[""][:4] }},
		{name: "UnknownQueueIsEmpty", p: engine.DrainParams{Queue: "zzz", Max: 3}, want: func(map[string][]engine.JobID) []engine.JobID { return nil }},
		{name: "NegativeMaxRejected", p: engine.DrainParams{Max: -1}, error: engine.ErrInvalidArgument},
		{name: "BadQueueNameRejected", p: engine.DrainParams{Queue: "a b"}, error: engine.ErrInvalidArgument},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, clock, ids := setup(t)
			peeked := e.PeekDeadLetters(tt.p)
			recs, err := e.DrainDeadLetters(clock.Now(), tt.p)
			if tt.error == nil {
				// The peek (which the gRPC layer sizes a drain's answer
				// by) names exactly the records the drain takes.
				if len(peeked) != len(recs) {
					t.Fatalf("peeked %d records, drained %d", len(peeked), len(recs))
				}
				for i := range recs {
					if peeked[i].Job.ID != recs[i].Job.ID {
						t.Fatalf("peeked record %d is job %d, drained job %d", i, peeked[i].Job.ID, recs[i].Job.ID)
					}
				}
			}
			if tt.error != nil {
				if !errors.Is(err, tt.error) {
					t.Fatalf("err = %v, want %v", err, tt.error)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []engine.JobID
			for _, r := range recs {
				got = append(got, r.Job.ID)
				// Drained records are gone in the same operation.
				if _, err := e.GetDeadLetter(r.Job.ID); !errors.Is(err, engine.ErrNotFound) {
					t.Fatalf("drained record %d still kept", r.Job.ID)
				}
			}
			if want := tt.want(ids); !slices.Equal(got, want) {
				t.Fatalf("drained %v, want %v", got, want)
			}
			et.RequireInvariants(t, e)
		})
	}
}

// spec: DLQ-10
func TestDeadLetterRecord_ReplayIsAFreshJob(t *testing.T) {
	t.Parallel()
	clock := et.NewClock()
	e := et.New(t, et.WithRetention(time.Hour))
	id := killBy(t, e, clock, engine.CauseAttemptsExhausted)
	recs, _ := e.DrainDeadLetters(clock.Now(), engine.DrainParams{})
	res, err := e.Enqueue(clock.Now(), recs[0].ToEnqueue())
	if err != nil || res.JobID == id {
		t.Fatalf("replay: %+v %v", res, err)
	}
	d := et.MustReserveOne(t, e, clock.Now(), "q")
	if d.Job.ID != res.JobID || d.Attempt != 1 || !bytes.Equal(d.Job.Payload, []byte("payload")) || d.Job.Custom["tenant"] != "acme" || d.MaxAttempts != 1 {
		t.Fatalf("replayed delivery %+v", d)
	}
}

// spec: DLQ-11
// spec: DLQ-12
// spec: DLQ-13
func TestDeadLetter_OperatorActions(t *testing.T) {
	t.Parallel()
	clock := et.NewClock()
	e := et.New(t, et.WithRetention(time.Hour))
	var ids []engine.JobID
	for range 5 {
		ids = append(ids, killBy(t, e, clock, engine.CauseAttemptsExhausted))
	}
	// Listing pages by id and consumes nothing.
	page1, err := e.ListDeadLetters("q", engine.Page{Limit: 2})
	if err != nil || len(page1) != 2 || page1[0].Job.ID != ids[0] || page1[1].Job.ID != ids[1] {
		t.Fatalf("page 1: %v", err)
	}
	page2, _ := e.ListDeadLetters("q", engine.Page{AfterID: page1[1].Job.ID, Limit: 10})
	if len(page2) != 3 || page2[0].Job.ID != ids[2] {
		t.Fatalf("page 2 has %d", len(page2))
	}
	if all, _ := e.ListJobs("q", engine.StateDead, engine.Page{}); len(all) != 5 {
		t.Fatalf("ListJobs dead = %d", len(all))
	}
	// Requeue: same id, Ready, next delivery is attempt 1.
	res := e.RequeueDeadLetters(clock.Now(), []engine.JobID{ids[1], 999})
	if res[0].Err != nil || !errors.Is(res[1].Err, engine.ErrNotFound) {
		t.Fatalf("requeue results %+v", res)
	}
	d := et.MustReserveOne(t, e, clock.Now(), "q")
	if d.Job.ID != ids[1] || d.Attempt != 1 {
		t.Fatalf("requeued delivery: job %d attempt %d", d.Job.ID, d.Attempt)
	}
	// Delete: gone for good.
	del := e.DeleteDeadLetters(clock.Now(), []engine.JobID{ids[0], ids[0]})
	if del[0].Err != nil || !errors.Is(del[1].Err, engine.ErrNotFound) {
		t.Fatalf("delete results %+v", del)
	}
	if _, err := e.GetJob(ids[0]); !errors.Is(err, engine.ErrNotFound) {
		t.Fatal("deleted job still found")
	}
	s, _ := e.QueueStats(clock.Now(), "q")
	if s.Dead != 3 || s.DeadRequeued != 1 || s.DeadDeleted != 1 {
		t.Fatalf("stats %+v", s)
	}
	et.RequireInvariants(t, e)
}

// spec: DLQ-14
func TestDeadLetterJobs_States(t *testing.T) {
	t.Parallel()
	clock := et.NewClock()
	e := et.New(t, et.WithRetention(time.Hour))
	ready := et.MustEnqueue(t, e, clock.Now(), et.Job("q"))
	sp := et.Job("q")
	sp.ScheduledAt = clock.Now().Add(time.Hour)
	scheduled := et.MustEnqueue(t, e, clock.Now(), sp)
	reservedJob := et.MustEnqueue(t, e, clock.Now(), et.Job("r"))
	et.MustReserveOne(t, e, clock.Now(), "r")
	res := e.DeadLetterJobs(clock.Now(), []engine.JobID{ready, scheduled, reservedJob, 12345, ready}, "pulled")
	wants := []error{nil, nil, engine.ErrWrongState, engine.ErrNotFound, engine.ErrWrongState}
	for i, w := range wants {
		if (w == nil && res[i].Err != nil) || (w != nil && !errors.Is(res[i].Err, w)) || res[i].JobID != []engine.JobID{ready, scheduled, reservedJob, 12345, ready}[i] {
			t.Fatalf("item %d: %+v, want %v", i, res[i], w)
		}
	}
	for _, id := range []engine.JobID{ready, scheduled} {
		rec, err := e.GetDeadLetter(id)
		if err != nil || rec.Cause != engine.CauseAdmin || rec.LastReason != "pulled" {
			t.Fatalf("record %+v %v", rec, err)
		}
	}
	et.RequireInvariants(t, e)
}

func TestDeadLetter_StoreBoundRefusesRatherThanLoses(t *testing.T) {
	t.Parallel()
	clock := et.NewClock()
	e := et.New(t, et.WithRetention(time.Hour), func(c *engine.Config) { c.Limits.MaxDeadLetters = 1 })
	killBy(t, e, clock, engine.CauseRejected)
	et.MustEnqueue(t, e, clock.Now(), et.Job("q"))
	d := et.MustReserveOne(t, e, clock.Now(), "q")
	before := e.Digest()
	if _, err := e.Nack(clock.Now(), engine.NackParams{LeaseRef: et.Ref(d), Directive: engine.DirectiveDeadLetter}); !errors.Is(err, engine.ErrCapacity) {
		t.Fatalf("nack into a full store: %v, want ErrCapacity", err)
	}
	if e.Digest() != before {
		t.Fatal("a refused nack changed the state")
	}
	if r := e.DeadLetterJobs(clock.Now(), []engine.JobID{d.Job.ID + 100}, ""); !errors.Is(r[0].Err, engine.ErrNotFound) {
		t.Fatal(r[0].Err)
	}
	// After a drain there is room again.
	if _, err := e.DrainDeadLetters(clock.Now(), engine.DrainParams{}); err != nil {
		t.Fatal(err)
	}
	if res, err := e.Nack(clock.Now(), engine.NackParams{LeaseRef: et.Ref(d), Directive: engine.DirectiveDeadLetter}); err != nil || !res.DeadLettered {
		t.Fatalf("nack after drain: %v", err)
	}
}

func TestDeadLetterForwarding(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		retention time.Duration
		cause     engine.Cause
	}{
		// spec: SUB-2
		{name: "ExhaustedRetentionOff", cause: engine.CauseAttemptsExhausted},
		// spec: SUB-2
		{name: "RejectedRetentionOn", retention: time.Hour, cause: engine.CauseRejected},
		// spec: SUB-2
		{name: "LeaseExpired", cause: engine.CauseLeaseExpired},
		// spec: SUB-2
		{name: "Admin", retention: time.Hour, cause: engine.CauseAdmin},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clock := et.NewClock()
			e := et.New(t, et.WithRetention(tt.retention),
				et.WithQueue(engine.QueueConfig{Name: "q", DeadLetterQueue: "q.dead"}),
				et.WithQueue(engine.QueueConfig{Name: "q.dead", DefaultPriority: et.Ptr[uint32](2), DefaultMaxAttempts: et.Ptr[uint32](7)}))
			id := killBy(t, e, clock, tt.cause)
			// spec: SUB-3
			d := et.MustReserveOne(t, e, clock.Now(), "q.dead")
			j := d.Job
			wantReason := map[engine.Cause]string{engine.CauseAttemptsExhausted: "broken", engine.CauseRejected: "broken", engine.CauseAdmin: "bad job"}[tt.cause]
			wantFinal := "1"
			if tt.cause == engine.CauseAdmin {
				wantFinal = "0"
			}
			wantCustom := map[string]string{
				"tenant":                 "acme",
				engine.FieldOriginQueue:  "q",
				engine.FieldOriginJobID:  strconv.FormatUint(uint64(id), 10),
				engine.FieldCause:        tt.cause.String(),
				engine.FieldLastReason:   wantReason,
				engine.FieldFinalAttempt: wantFinal,
			}
			if j.ID == id || j.JobType != "job" || !bytes.Equal(j.Payload, []byte("payload")) || !maps.Equal(j.Custom, wantCustom) ||
				d.Attempt != 1 || d.MaxAttempts != 7 || j.Priority != 2 {
				t.Fatalf("forwarded job %+v (attempt %d/%d), want custom %v", j, d.Attempt, d.MaxAttempts, wantCustom)
			}
			if err := e.Ack(clock.Now(), et.Ref(d)); err != nil {
				t.Fatal(err)
			}
			s, _ := e.QueueStats(clock.Now(), "q")
			if tt.retention == 0 && s.Dropped != 1 || tt.retention > 0 && s.Dead != 1 {
				t.Fatalf("origin queue stats %+v", s)
			}
			et.RequireInvariants(t, e)
		})
	}
}

// spec: SUB-2
func TestDeadLetter_NoForwardingWithoutDestination(t *testing.T) {
	t.Parallel()
	clock := et.NewClock()
	e := et.New(t)
	killBy(t, e, clock, engine.CauseRejected)
	for _, s := range e.Stats(clock.Now()) {
		if s.Name != "q" || s.Enqueued != 1 || s.Dropped != 1 {
			t.Fatalf("stats %+v: a dead job with no destination is terminated, nothing else", s)
		}
	}
}
