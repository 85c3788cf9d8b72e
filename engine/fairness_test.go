package engine_test

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"github.com/sepp-io/sepp/engine"
	et "github.com/sepp-io/sepp/engine/enginetest"
)

// fairJob is one job of a fairness scenario: its tenant ("" for none: the
// job lacks the field; "<empty>" for the empty value) and priority.
type fairJob struct {
	tenant string
	prio   uint32
}

func enqueueFair(t testing.TB, e *engine.Engine, now time.Time, jobs ...fairJob) {
	t.Helper()
	for _, j := range jobs {
		p := et.Job("q")
		switch j.tenant {
		case "":
		case "<empty>":
			p.Custom = map[string]string{"tenant": ""}
		default:
			p.Custom = map[string]string{"tenant": j.tenant}
		}
		p.Priority = et.Ptr(j.prio)
		et.MustEnqueue(t, e, now, p)
	}
}

func TestFairness_ReserveOrder(t *testing.T) {
	a, b, c, none := fairJob{tenant: "a"}, fairJob{tenant: "b"}, fairJob{tenant: "c"}, fairJob{}
	tests := []struct {
		name  string
		jobs  []fairJob
		batch int // jobs per reserve (1 if 0)
		want  []engine.JobID
	}{
		{
			name: "RoundRobinOverKeys", // a burst of a cannot starve b and c
			jobs: []fairJob{a, a, a, b, c, b},
			want: []engine.JobID{1, 4, 5, 2, 6, 3},
		},
		{
			name:  "BatchReserveTakesTurnsToo",
			jobs:  []fairJob{a, a, a, b, c, b},
			batch: 4,
			want:  []engine.JobID{1, 4, 5, 2, 6, 3},
		},
		{
			name: "JobsWithoutTheFieldShareOneTurn",
			jobs: []fairJob{a, none, none, a},
			want: []engine.JobID{1, 2, 4, 3},
		},
		{
			name: "EmptyValueIsAKeyOfItsOwn", // "" is a value, not a missing field
			jobs: []fairJob{a, {tenant: "<empty>"}, none, a},
			want: []engine.JobID{1, 2, 3, 4},
		},
		{
			// spec: PRI-4
			name: "StrictPriorityAcrossLevels",
			jobs: []fairJob{a, {tenant: "b", prio: 5}, a, {tenant: "a", prio: 5}, {tenant: "b", prio: 5}, b},
			want: []engine.JobID{2, 4, 5, 1, 6, 3},
		},
		{
			// spec: PRI-5
			name: "FIFOWithinAKey",
			jobs: []fairJob{b, a, b, a, b},
			want: []engine.JobID{1, 2, 3, 4, 5},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := et.New(t, et.WithQueue(engine.QueueConfig{Name: "q", FairnessKey: "tenant"}))
			clock := et.NewClock()
			enqueueFair(t, e, clock.Now(), tt.jobs...)
			et.RequireInvariants(t, e)
			batch := max(tt.batch, 1)
			var got []engine.JobID
			for len(got) < len(tt.jobs) {
				ds := et.MustReserve(t, e, clock.Now(), "q", batch)
				if len(ds) == 0 {
					t.Fatalf("reserve returned nothing after %v", got)
				}
				got = append(got, et.IDs(ds)...)
				et.RequireInvariants(t, e)
			}
			if !equalIDs(got, tt.want) {
				t.Fatalf("reserved %v, want %v", got, tt.want)
			}
		})
	}
}

// TestFairness_KeyRejoinsAtTheBack: a key whose line emptied takes its turn
// after the keys waiting already, and a released job goes back to its own
// key's line in id order.
func TestFairness_KeyRejoinsAtTheBack(t *testing.T) {
	e := et.New(t, et.WithQueue(engine.QueueConfig{Name: "q", FairnessKey: "tenant"}))
	clock := et.NewClock()
	now := clock.Now()
	enqueueFair(t, e, now, fairJob{tenant: "a"}, fairJob{tenant: "b"}, fairJob{tenant: "b"}) // 1, 2, 3
	d1 := et.MustReserveOne(t, e, now, "q")                                                  // a:1; a empties
	enqueueFair(t, e, now, fairJob{tenant: "c"}, fairJob{tenant: "a"})                       // 4 (c), 5 (a)
	var got []engine.JobID
	got = append(got, et.MustReserveOne(t, e, now, "q").Job.ID) // b:2
	if err := e.Release(now, et.Ref(d1)); err != nil {          // job 1 back in a's line, before 5
		t.Fatal(err)
	}
	for range 4 {
		got = append(got, et.MustReserveOne(t, e, now, "q").Job.ID)
		et.RequireInvariants(t, e)
	}
	// after a:1 the rotation is [b]; c and a join: [b c a]; b:2 sends b to
	// the back: [c a b]; then c:4, a:1 (released, id order), b:3, a:5
	if want := []engine.JobID{2, 4, 1, 3, 5}; !equalIDs(got, want) {
		t.Fatalf("reserved %v, want %v", got, want)
	}
}

// TestFairness_SnapshotKeepsTheTurnOrder: the turn order is state: a
// replica restored mid-rotation hands out what the original does.
func TestFairness_SnapshotKeepsTheTurnOrder(t *testing.T) {
	e := et.New(t, et.WithQueue(engine.QueueConfig{Name: "q", FairnessKey: "tenant"}))
	clock := et.NewClock()
	for i := range 30 {
		enqueueFair(t, e, clock.Now(), fairJob{tenant: fmt.Sprint("t", i%7), prio: uint32(i % 2)}, fairJob{tenant: "big"})
	}
	for range 5 {
		et.MustReserve(t, e, clock.Now(), "q", 3)
	}
	data := snapshotBytes(t, e)
	r := et.New(t)
	if err := r.Restore(bytes.NewReader(data)); err != nil {
		t.Fatal(err)
	}
	for i := 0; ; i++ {
		want := et.IDs(et.MustReserve(t, e, clock.Now(), "q", 2))
		got := et.IDs(et.MustReserve(t, r, clock.Now(), "q", 2))
		if !equalIDs(got, want) {
			t.Fatalf("reserve %d after restore: %v, the original %v", i, got, want)
		}
		if len(want) == 0 {
			break
		}
	}
	if e.Digest() != r.Digest() {
		t.Fatal("digests differ")
	}
}

// TestFairness_ConfigChange: setting a fairness key on a queue holding
// jobs lays its lines out in the order of their first job; dropping it
// returns to plain FIFO. Visible in the queue's stats.
func TestFairness_ConfigChange(t *testing.T) {
	e := et.New(t, et.WithQueue(engine.QueueConfig{Name: "q"}))
	clock := et.NewClock()
	now := clock.Now()
	enqueueFair(t, e, now, fairJob{tenant: "a"}, fairJob{tenant: "a"}, fairJob{tenant: "b"}, fairJob{}) // 1..4
	fair := et.Config(et.WithQueue(engine.QueueConfig{Name: "q", FairnessKey: "tenant"}))
	if err := e.SetConfig(now, fair); err != nil {
		t.Fatal(err)
	}
	et.RequireInvariants(t, e)
	if s := queueStats(t, e, "q"); s.Fairness != (engine.Fairness{Key: "tenant", ActiveKeys: 3}) {
		t.Fatalf("fairness %+v", s.Fairness)
	}
	got := et.IDs(et.MustReserve(t, e, now, "q", 3))
	if want := []engine.JobID{1, 3, 4}; !equalIDs(got, want) {
		t.Fatalf("reserved %v, want %v", got, want)
	}
	enqueueFair(t, e, now, fairJob{tenant: "b"}) // 5
	if err := e.SetConfig(now, et.Config(et.WithQueue(engine.QueueConfig{Name: "q"}))); err != nil {
		t.Fatal(err)
	}
	et.RequireInvariants(t, e)
	got = et.IDs(et.MustReserve(t, e, now, "q", 3))
	if want := []engine.JobID{2, 5}; !equalIDs(got, want) {
		t.Fatalf("reserved %v, want %v", got, want)
	}
}

// TestFairness_WithExpiryAndLimits: expiry takes a job out of its key's
// line; max_reserved and the rate limit still cap a fair reserve.
func TestFairness_WithExpiryAndLimits(t *testing.T) {
	e := et.New(t, et.WithQueue(engine.QueueConfig{Name: "q", FairnessKey: "tenant", MaxReserved: 2, RateLimit: 100}))
	clock := et.NewClock()
	now := clock.Now()
	p := et.Job("q")
	p.Custom, p.Expiry = map[string]string{"tenant": "b"}, &engine.ExpiryOpts{TTL: time.Second}
	enqueueFair(t, e, now, fairJob{tenant: "a"}, fairJob{tenant: "a"}) // 1, 2
	et.MustEnqueue(t, e, now, p)                                       // 3 (b, expires)
	enqueueFair(t, e, now, fairJob{tenant: "c"})                       // 4
	clock.Advance(time.Second)
	got := et.IDs(et.MustReserve(t, e, clock.Now(), "q", 10))
	if want := []engine.JobID{1, 4}; !equalIDs(got, want) {
		t.Fatalf("reserved %v, want %v (job 3 expired, max_reserved 2)", got, want)
	}
	et.RequireInvariants(t, e)
}

func queueStats(t testing.TB, e *engine.Engine, name string) engine.QueueStats {
	t.Helper()
	for _, s := range e.Stats(time.Time{}) {
		if s.Name == name {
			return s
		}
	}
	t.Fatalf("no queue %q", name)
	return engine.QueueStats{}
}
