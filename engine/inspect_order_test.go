package engine_test

import (
	"slices"
	"testing"
	"time"

	"github.com/sepp-io/sepp/engine"
	et "github.com/sepp-io/sepp/engine/enginetest"
)

// The Ready list in hand-out order is exactly the order successive
// reserves take the jobs: priority first, then enqueue order, a returned
// (released) job back in its original place.
func TestListReadyInOrderMatchesReserve(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	e := engine.New(engine.DefaultConfig())
	for i, prio := range []uint32{1, 5, 1, 9, 5, 1, 0, 9} {
		p := prio
		if _, err := e.Enqueue(now.Add(time.Duration(i)*time.Millisecond), engine.EnqueueParams{Queue: "q", JobType: "t", Payload: []byte("{}"), Priority: &p}); err != nil {
			t.Fatal(err)
		}
	}
	// Take the first priority-9 job and release it: it returns to its place.
	ds, err := e.Reserve(now, engine.ReserveParams{Queue: "q", N: 1})
	if err != nil || len(ds) != 1 {
		t.Fatal(err, len(ds))
	}
	if err := e.Release(now, engine.LeaseRef{JobID: ds[0].Job.ID, LeaseToken: ds[0].LeaseToken}); err != nil {
		t.Fatal(err)
	}
	all, err := e.ListReadyInOrder("q", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	page2, err := e.ListReadyInOrder("q", 3, 2)
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 8 || len(page2) != 2 || page2[0].ID != all[3].ID || page2[1].ID != all[4].ID {
		t.Fatalf("offset paging: all %d, page %v", len(all), page2)
	}
	for i, want := range all {
		ds, err := e.Reserve(now, engine.ReserveParams{Queue: "q", N: 1})
		if err != nil || len(ds) != 1 {
			t.Fatal(err, len(ds))
		}
		if ds[0].Job.ID != want.ID {
			t.Fatalf("reserve %d handed out job %d (prio %d), the list said %d (prio %d)", i, ds[0].Job.ID, ds[0].Job.Priority, want.ID, want.Priority)
		}
	}
	if _, err := e.ListReadyInOrder("q", -1, 0); err == nil {
		t.Error("a negative offset was accepted")
	}
}

// TestListReadyInOrder_FairnessKey: in a queue with a fairness key the
// listing is the reserve order (keys taking turns within a level, strict
// priority across levels); it used to list no job at all.
func TestListReadyInOrder_FairnessKey(t *testing.T) {
	t.Parallel()
	e := et.New(t, et.WithQueue(engine.QueueConfig{Name: "f", FairnessKey: "tenant"}))
	for _, c := range []struct {
		tenant string
		prio   uint32
	}{{"x", 0}, {"x", 0}, {"y", 0}, {"", 0}, {"x", 5}, {"z", 0}, {"y", 5}, {"x", 0}} {
		p := engine.EnqueueParams{Queue: "f", JobType: "t", Priority: et.Ptr(c.prio)}
		if c.tenant != "" {
			p.Custom = map[string]string{"tenant": c.tenant}
		}
		if _, err := e.Enqueue(et.Epoch, p); err != nil {
			t.Fatal(err)
		}
	}
	listed, err := e.ListReadyInOrder("f", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	var got []engine.JobID
	for _, j := range listed {
		got = append(got, j.ID)
	}
	var want []engine.JobID
	for {
		ds, err := e.Reserve(et.Epoch, engine.ReserveParams{Queue: "f", N: 1, WorkerID: "w"})
		if err != nil {
			t.Fatal(err)
		}
		if len(ds) == 0 {
			break
		}
		want = append(want, ds[0].Job.ID)
	}
	if len(want) != 8 || !slices.Equal(got, want) {
		t.Fatalf("listed %v, reserve hands out %v", got, want)
	}
}
