package engine

import (
	"bytes"
	"testing"
	"time"
)

func TestQueueActivity_CountsDeliveriesNacksReleasesExpiriesAndWaits(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Limits.DefaultMaxAttempts = 2
	e := New(cfg)
	t0 := time.Unix(1_700_000_000, 0)
	for range 5 {
		if _, err := e.Enqueue(t0, EnqueueParams{Queue: "q", JobType: "t"}); err != nil {
			t.Fatal(err)
		}
	}
	// Five first deliveries, 2 s after the enqueue.
	ds, err := e.Reserve(t0.Add(2*time.Second), ReserveParams{Queue: "q", N: 5, Lease: time.Minute})
	if err != nil || len(ds) != 5 {
		t.Fatalf("reserve: %d, %v", len(ds), err)
	}
	now := t0.Add(3 * time.Second)
	ref := func(d Delivery) LeaseRef { return LeaseRef{JobID: d.Job.ID, LeaseToken: d.LeaseToken} }
	mustNack := func(d Delivery, dir Directive) {
		if _, err := e.Nack(now, NackParams{LeaseRef: ref(d), Directive: dir, After: time.Second}); err != nil {
			t.Fatal(err)
		}
	}
	mustNack(ds[0], DirectiveDefault)    // retried
	mustNack(ds[1], DirectiveAfter)      // retried later
	mustNack(ds[2], DirectiveDeadLetter) // dead now
	if err := e.Release(now, ref(ds[3])); err != nil {
		t.Fatal(err)
	}
	// ds[4]'s lease runs out: attempt 1 of 2, so it is retried.
	e.Tick(t0.Add(2 * time.Minute))

	st, err := e.QueueStats(time.Time{}, "q")
	if err != nil {
		t.Fatal(err)
	}
	a := st.Activity
	want := QueueActivity{Reserved: 5, NackedDefault: 1, NackedAfter: 1, NackedDeadLetter: 1, Retried: 3, Released: 1, LeaseExpired: 1}
	want.WaitBuckets, want.WaitSum = a.WaitBuckets, a.WaitSum
	if a != want {
		t.Fatalf("activity = %+v, want %+v", a, want)
	}
	if a.WaitCount() != 5 || a.WaitSum != 10*time.Second || a.WaitBuckets[4] != 5 { // 2 s falls in (1 s, 5 s]
		t.Fatalf("waits: count %d, sum %s, buckets %v; want 5 in the (1s,5s] bucket, 10s in all", a.WaitCount(), a.WaitSum, a.WaitBuckets)
	}
	// Redeliveries (attempt 2) are deliveries, not first-delivery waits.
	if _, err := e.Reserve(t0.Add(3*time.Minute), ReserveParams{Queue: "q", N: 10, Lease: time.Minute}); err != nil {
		t.Fatal(err)
	}
	st, _ = e.QueueStats(time.Time{}, "q")
	// ds[0], ds[1], ds[4] come back at attempt 2; ds[3] (released) at 1.
	if got := st.Activity; got.Reserved != 9 || got.WaitCount() != 6 {
		t.Fatalf("after redelivery: reserved %d, waits %d; want 9 and 6", got.Reserved, got.WaitCount())
	}
}

func TestQueueActivity_ObserveWaitBuckets(t *testing.T) {
	tests := []struct {
		d      time.Duration
		bucket int
	}{
		{-time.Second, 0}, {0, 0}, {10 * time.Millisecond, 0}, {11 * time.Millisecond, 1},
		{time.Second, 3}, {6 * time.Hour, len(WaitBounds) - 1}, {7 * time.Hour, len(WaitBounds)},
	}
	for _, tt := range tests {
		var a QueueActivity
		a.observeWait(tt.d)
		if a.WaitBuckets[tt.bucket] != 1 {
			t.Errorf("observeWait(%s): buckets %v, want bucket %d", tt.d, a.WaitBuckets, tt.bucket)
		}
	}
}

// An ack files the delivery's run time, from its reserve. The delivery's
// start is replicated state (attempt detail), so a delivery handed out
// before a snapshot is timed by the restored engine too; before the cluster
// keeps attempt detail nothing is timed.
func TestQueueActivity_RunTimes(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	off := New(DefaultConfig())
	if _, err := off.Enqueue(t0, EnqueueParams{Queue: "q", JobType: "t"}); err != nil {
		t.Fatal(err)
	}
	if ds, err := off.Reserve(t0, ReserveParams{Queue: "q", N: 1, Lease: time.Hour}); err != nil || len(ds) != 1 {
		t.Fatalf("reserve: %v, %v", ds, err)
	} else if err := off.Ack(t0.Add(time.Second), LeaseRef{JobID: ds[0].Job.ID, LeaseToken: ds[0].LeaseToken}); err != nil {
		t.Fatal(err)
	}
	if st, _ := off.QueueStats(time.Time{}, "q"); st.Activity.RunCount() != 0 {
		t.Fatalf("timed %d runs without attempt detail", st.Activity.RunCount())
	}

	e := New(DefaultConfig())
	e.EnableRecordFields(t0)
	for range 3 {
		if _, err := e.Enqueue(t0, EnqueueParams{Queue: "q", JobType: "t"}); err != nil {
			t.Fatal(err)
		}
	}
	ds, err := e.Reserve(t0, ReserveParams{Queue: "q", N: 3, Lease: time.Hour})
	if err != nil || len(ds) != 3 {
		t.Fatalf("reserve: %d, %v", len(ds), err)
	}
	ack := func(e *Engine, d Delivery, at time.Time) {
		t.Helper()
		if err := e.Ack(at, LeaseRef{JobID: d.Job.ID, LeaseToken: d.LeaseToken}); err != nil {
			t.Fatal(err)
		}
	}
	ack(e, ds[0], t0.Add(40*time.Millisecond)) // (10ms, 50ms]
	ack(e, ds[1], t0.Add(2*time.Minute))       // (1m, 5m]
	st, _ := e.QueueStats(time.Time{}, "q")
	a := st.Activity
	if a.RunCount() != 2 || a.RunBuckets[1] != 1 || a.RunBuckets[7] != 1 || a.RunSum != 2*time.Minute+40*time.Millisecond {
		t.Fatalf("runs: count %d, buckets %v, sum %s", a.RunCount(), a.RunBuckets, a.RunSum)
	}
	var buf bytes.Buffer
	if err := e.Snapshot(&buf); err != nil {
		t.Fatal(err)
	}
	r := New(DefaultConfig())
	if err := r.Restore(&buf); err != nil {
		t.Fatal(err)
	}
	ack(r, ds[2], t0.Add(3*time.Minute))
	st, _ = r.QueueStats(time.Time{}, "q")
	// The restored engine's counters start at zero; the delivery it saw
	// begin only in the snapshot is timed from its replicated start.
	if a := st.Activity; a.RunCount() != 1 || a.RunBuckets[7] != 1 || a.RunSum != 3*time.Minute {
		t.Fatalf("after restore: count %d, buckets %v, sum %s", a.RunCount(), a.RunBuckets, a.RunSum)
	}
}
