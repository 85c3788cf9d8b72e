package engine

import (
	"runtime"
	"strings"
	"testing"
	"time"
)

// The invariant check notes no compact job (invariants.go): a compact job
// held twice, or held compact and in the job index, or compact and dead,
// must still be found.
func TestCheckInvariants_FindsCompactJobsHeldTwice(t *testing.T) {
	t.Parallel()
	now := time.Unix(1_700_000_000, 0)
	five := uint32(5)
	build := func(t *testing.T) (*Engine, *queue) {
		t.Helper()
		cfg := DefaultConfig()
		cfg.Limits.DeadLetterRetention = time.Hour // dead letters kept as records
		e := New(cfg)
		for i := range 8 {
			p := EnqueueParams{Queue: "q", JobType: "t", Payload: []byte{byte(i)}}
			if i >= 4 {
				p.Priority = &five
			}
			if _, err := e.Enqueue(now, p); err != nil {
				t.Fatal(err)
			}
		}
		if e.nCompact != 8 {
			t.Fatalf("%d of 8 jobs compact", e.nCompact)
		}
		if err := e.CheckInvariants(); err != nil {
			t.Fatalf("before planting: %v", err)
		}
		return e, e.queues["q"]
	}
	// plantCompact files ent at the back of q's level prio as one more
	// compact job, its counts kept in step.
	plantCompact := func(e *Engine, q *queue, prio int, ent readyEntry) {
		r := &q.ready[prio]
		r.compact.PushBack(ent)
		r.nCompact++
		e.nCompact++
		q.enqueued++
		q.nReady++
	}
	tests := []struct {
		name  string
		plant func(t *testing.T, e *Engine, q *queue)
		want  string
	}{
		{"job 5 compact at priorities 5 and 0", func(t *testing.T, e *Engine, q *queue) {
			t.Helper()
			plantCompact(e, q, 0, *q.ready[5].compact.ptr(0))
		}, "job 5 is held twice"},
		{"job 8 compact twice in one ring", func(t *testing.T, e *Engine, q *queue) {
			t.Helper()
			plantCompact(e, q, 5, *q.ready[5].compact.ptr(3))
		}, "compact ring out of id order at 8"},
		{"job 2 compact and in the job index", func(t *testing.T, e *Engine, q *queue) {
			t.Helper()
			j := viewOf(q, 0, q.ready[0].compact.ptr(1))
			j.priority = 3
			q.ready[3].push(j)
			e.jobs.set(j)
			q.enqueued++
			q.nReady++
		}, "job 2 is held twice"},
		{"job 9 dead and compact", func(t *testing.T, e *Engine, q *queue) {
			t.Helper()
			ds, err := e.Reserve(now, ReserveParams{Queue: "q", N: 100, Lease: time.Minute})
			if err != nil || len(ds) != 8 {
				t.Fatalf("reserve: %d, %v", len(ds), err)
			}
			id, err := e.Enqueue(now, EnqueueParams{Queue: "q", JobType: "t", Payload: []byte{9}})
			if err != nil || id.JobID != 9 {
				t.Fatalf("enqueue: %+v, %v", id, err)
			}
			d, err := e.Reserve(now, ReserveParams{Queue: "q", N: 1, Lease: time.Minute})
			if err != nil || len(d) != 1 {
				t.Fatalf("reserve 9: %d, %v", len(d), err)
			}
			if _, err := e.Nack(now, NackParams{LeaseRef: LeaseRef{JobID: 9, LeaseToken: d[0].LeaseToken}, Directive: DirectiveDeadLetter}); err != nil {
				t.Fatal(err)
			}
			if err := e.CheckInvariants(); err != nil {
				t.Fatalf("with job 9 dead: %v", err)
			}
			ent := readyEntry{id: 9, enqueuedAt: now.UnixNano(), maxAttempts: 3}
			plantCompact(e, q, 0, ent)
			e.charge(q, e.jobHeld(viewOf(q, 0, &ent)))
		}, "job 9 is live and in the dead letters"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e, q := build(t)
			tc.plant(t, e, q)
			err := e.CheckInvariants()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("CheckInvariants = %v, want an error with %q", err, tc.want)
			}
		})
	}
}

// The check's memory does not grow with the compact jobs: a restore runs
// it beside the node's whole state (at 5M waiting jobs, noting each cost
// 80 MB).
func TestCheckInvariants_NotesNoCompactJob(t *testing.T) {
	e := New(DefaultConfig())
	now := time.Unix(1_700_000_000, 0)
	const n = 200_000
	for range n {
		if _, err := e.Enqueue(now, EnqueueParams{Queue: "q", JobType: "t"}); err != nil {
			t.Fatal(err)
		}
	}
	if e.nCompact != n {
		t.Fatalf("%d of %d jobs compact", e.nCompact, n)
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	if err := e.checkInvariants(restoreChecks); err != nil {
		t.Fatal(err)
	}
	runtime.ReadMemStats(&after)
	// 16 bytes a job would be 3.2 MB.
	if got := after.TotalAlloc - before.TotalAlloc; got > 256<<10 {
		t.Fatalf("the check of %d compact jobs allocated %d bytes, want under 256 KiB", n, got)
	}
}
