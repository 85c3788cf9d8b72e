package engine_test

import (
	"bytes"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/sepp-io/sepp/engine"
	et "github.com/sepp-io/sepp/engine/enginetest"
)

// compactChargeEngine is a new engine charging plain waiting jobs as
// compact entries, with attempt history kept or not (a released or
// requeued first delivery is plain again only without it).
func compactChargeEngine(t *testing.T, history int) *engine.Engine {
	t.Helper()
	e := et.New(t, et.WithRetention(time.Hour), func(c *engine.Config) { c.Limits.AttemptHistory = history })
	e.EnableCompactCharge(et.Epoch)
	if !e.CompactCharge() {
		t.Fatal("compact charge not on after EnableCompactCharge")
	}
	return e
}

func plainJob() engine.EnqueueParams {
	return engine.EnqueueParams{Queue: "q", JobType: "resize", Payload: []byte("0123456789")}
}

// TestCompactCharge_APlainWaitingJobCostsItsEntry: a plain waiting job is
// charged 32 bytes and its payload, a job with anything in its extension
// or delivered once a full job's charge; the count returns to nothing once
// they are gone.
func TestCompactCharge_APlainWaitingJobCostsItsEntry(t *testing.T) {
	now := et.Epoch
	e := compactChargeEngine(t, engine.DefaultAttemptHistory)
	base := e.MemoryHeldTotal()
	plain := et.MustEnqueue(t, e, now, plainJob())
	if got := e.MemoryHeldTotal() - base; got != 32+10 {
		t.Fatalf("a plain waiting job is charged %d bytes, want 42 (32 and its 10-byte payload)", got)
	}
	custom := plainJob()
	custom.Custom = map[string]string{"tenant": "a"}
	before := e.MemoryHeldTotal()
	et.MustEnqueue(t, e, now, custom)
	if got := e.MemoryHeldTotal() - before; got <= 144 {
		t.Fatalf("a job with a custom field is charged %d bytes, want a full job's (over 144)", got)
	}
	d := et.MustReserveOne(t, e, now, "q")
	if d.Job.ID != plain {
		t.Fatalf("reserved job %d, want %d", d.Job.ID, plain)
	}
	et.RequireInvariants(t, e)
	for _, ref := range []engine.LeaseRef{et.Ref(d), et.Ref(et.MustReserveOne(t, e, now, "q"))} {
		if err := e.Ack(now, ref); err != nil {
			t.Fatal(err)
		}
	}
	if got := e.MemoryHeldTotal(); got != base {
		t.Fatalf("held %d bytes once every job is acked, want %d", got, base)
	}
}

// TestCompactCharge_TransitionsKeepTheCount drives a plain job out of and
// back into plainness by every path that can: CheckInvariants recomputes
// every charge from the content after each step and compares it with the
// count kept incrementally, and checks a restored copy counts the same.
func TestCompactCharge_TransitionsKeepTheCount(t *testing.T) {
	const lease = 10 * time.Second
	type step func(t *testing.T, e *engine.Engine, now time.Time, id engine.JobID) time.Time
	var last engine.Delivery // the latest delivery of the job
	var requests int         // reserve request ids used
	reserveAs := func(t *testing.T, e *engine.Engine, now time.Time, id engine.JobID, request string) {
		t.Helper()
		ds, err := e.Reserve(now, engine.ReserveParams{Queue: "q", N: 1, WorkerID: "w", Lease: lease, RequestID: request, RetryWindow: true})
		if err != nil || len(ds) != 1 || ds[0].Job.ID != id {
			t.Fatalf("reserve %s: %v, %v; want job %d", request, deliveryText(ds), err, id)
		}
		last = ds[0]
	}
	reserve := func(t *testing.T, e *engine.Engine, now time.Time, id engine.JobID) time.Time {
		t.Helper()
		requests++
		reserveAs(t, e, now, id, fmt.Sprint("r", requests))
		return now
	}
	retried := func(t *testing.T, e *engine.Engine, now time.Time, id engine.JobID) time.Time {
		t.Helper()
		reserveAs(t, e, now, id, fmt.Sprint("r", requests)) // its first answer was lost
		return now
	}
	leased := func(t *testing.T, _ *engine.Engine, id engine.JobID) engine.LeaseRef {
		t.Helper()
		if last.Job.ID != id {
			t.Fatalf("job %d was never reserved", id)
		}
		return et.Ref(last)
	}
	steps := map[string]step{
		"reserve": reserve,
		"release": func(t *testing.T, e *engine.Engine, now time.Time, id engine.JobID) time.Time {
			t.Helper()
			if err := e.Release(now, leased(t, e, id)); err != nil {
				t.Fatal(err)
			}
			return now
		},
		"lease lapses": func(t *testing.T, e *engine.Engine, now time.Time, _ engine.JobID) time.Time {
			t.Helper()
			now = now.Add(lease + time.Second)
			e.Tick(now)
			return now
		},
		"retried reserve": retried,
		"nack": func(t *testing.T, e *engine.Engine, now time.Time, id engine.JobID) time.Time {
			t.Helper()
			if _, err := e.Nack(now, engine.NackParams{LeaseRef: leased(t, e, id), Directive: engine.DirectiveDeadLetter}); err != nil {
				t.Fatal(err)
			}
			return now
		},
		"dead-letter": func(t *testing.T, e *engine.Engine, now time.Time, id engine.JobID) time.Time {
			t.Helper()
			if res := e.DeadLetterJobs(now, []engine.JobID{id}, ""); res[0].Err != nil {
				t.Fatal(res[0].Err)
			}
			return now
		},
		"requeue": func(t *testing.T, e *engine.Engine, now time.Time, id engine.JobID) time.Time {
			t.Helper()
			if res := e.RequeueDeadLetters(now, []engine.JobID{id}); res[0].Err != nil {
				t.Fatal(res[0].Err)
			}
			return now
		},
		"reschedule": func(t *testing.T, e *engine.Engine, now time.Time, id engine.JobID) time.Time {
			t.Helper()
			if _, err := e.ActOnJobs(now, engine.JobActionParams{Action: engine.JobActionReschedule, IDs: []engine.JobID{id}, RunAt: now.Add(time.Minute)}); err != nil {
				t.Fatal(err)
			}
			return now
		},
		"run now": func(t *testing.T, e *engine.Engine, now time.Time, id engine.JobID) time.Time {
			t.Helper()
			if _, err := e.ActOnJobs(now, engine.JobActionParams{Action: engine.JobActionRunNow, IDs: []engine.JobID{id}}); err != nil {
				t.Fatal(err)
			}
			return now
		},
		"priority": func(t *testing.T, e *engine.Engine, now time.Time, id engine.JobID) time.Time {
			t.Helper()
			if _, err := e.ActOnJobs(now, engine.JobActionParams{Action: engine.JobActionPriority, IDs: []engine.JobID{id}, Priority: 7}); err != nil {
				t.Fatal(err)
			}
			return now
		},
		"cancel": func(t *testing.T, e *engine.Engine, now time.Time, id engine.JobID) time.Time {
			t.Helper()
			if _, err := e.ActOnJobs(now, engine.JobActionParams{Action: engine.JobActionCancel, IDs: []engine.JobID{id}}); err != nil {
				t.Fatal(err)
			}
			return now
		},
		"ack": func(t *testing.T, e *engine.Engine, now time.Time, id engine.JobID) time.Time {
			t.Helper()
			if err := e.Ack(now, leased(t, e, id)); err != nil {
				t.Fatal(err)
			}
			return now
		},
		"delete": func(t *testing.T, e *engine.Engine, now time.Time, id engine.JobID) time.Time {
			t.Helper()
			if _, err := e.ActOnJobs(now, engine.JobActionParams{Action: engine.JobActionDelete, IDs: []engine.JobID{id}}); err != nil {
				t.Fatal(err)
			}
			return now
		},
		"purge": func(t *testing.T, e *engine.Engine, now time.Time, _ engine.JobID) time.Time {
			t.Helper()
			if _, err := e.PurgeQueue(now, "q", engine.PurgeWaiting); err != nil {
				t.Fatal(err)
			}
			return now
		},
	}
	paths := [][]string{
		{"reserve", "release", "reserve", "ack"},
		{"reserve", "lease lapses", "retried reserve", "release", "delete"},
		{"dead-letter", "requeue", "reserve", "nack", "requeue", "purge"},
		{"reschedule", "run now", "priority", "reserve", "cancel", "requeue", "reserve", "ack"},
		{"priority", "dead-letter", "requeue", "reschedule", "delete"},
	}
	for _, history := range []int{engine.DefaultAttemptHistory, 0} {
		for _, path := range paths {
			t.Run(fmt.Sprintf("history%d/%v", history, path), func(t *testing.T) {
				now := et.Epoch
				e := compactChargeEngine(t, history)
				requests, last = 0, engine.Delivery{}
				id := et.MustEnqueue(t, e, now, plainJob())
				other := et.MustEnqueue(t, e, now, plainJob()) // a neighbour that stays plain
				for _, name := range path {
					now = steps[name](t, e, now, id)
					et.RequireInvariants(t, e)
				}
				if _, err := e.ActOnJobs(now, engine.JobActionParams{Action: engine.JobActionDelete, IDs: []engine.JobID{other}}); err != nil {
					t.Fatal(err)
				}
				if _, err := e.PurgeQueue(now, "q", engine.PurgeDeadLetters); err != nil {
					t.Fatal(err)
				}
				et.RequireInvariants(t, e)
				// What is left is the remembered reserve request ids,
				// charged to no queue.
				for _, q := range e.MemoryHeld().Queues {
					if q.Held != 0 {
						t.Fatalf("queue %q holds %d bytes once both jobs are gone, want 0", q.Queue, q.Held)
					}
				}
			})
		}
	}
}

// TestCompactCharge_EnablingRechargesAndSurvivesARestore: turning the
// charge on lowers the count of the plain waiting jobs already held and of
// no other, a snapshot carries it (layout 16) and a restore counts alike;
// turning it on twice changes nothing.
func TestCompactCharge_EnablingRechargesAndSurvivesARestore(t *testing.T) {
	now := et.Epoch
	e := et.New(t)
	const plain, full = 100, 10
	for range plain {
		et.MustEnqueue(t, e, now, plainJob())
	}
	for i := range full {
		p := plainJob()
		p.Custom = map[string]string{"n": fmt.Sprint(i)}
		et.MustEnqueue(t, e, now, p)
	}
	before := e.MemoryHeldTotal()
	e.EnableCompactCharge(now)
	want := int64(plain) * (144 + int64(len("resize")) - 32)
	if got := before - e.MemoryHeldTotal(); got != want {
		t.Fatalf("enabling released %d bytes, want %d (100 plain jobs from 150 to 32 bytes each)", got, want)
	}
	held := e.MemoryHeldTotal()
	e.EnableCompactCharge(now)
	if e.MemoryHeldTotal() != held {
		t.Fatal("enabling twice changed the count")
	}
	et.RequireInvariants(t, e)
	var buf bytes.Buffer
	if err := e.Snapshot(&buf); err != nil {
		t.Fatal(err)
	}
	if v := buf.Bytes()[8]; v != 16 {
		t.Fatalf("snapshot layout %d, want 16", v)
	}
	restored := engine.New(engine.DefaultConfig())
	if err := restored.Restore(&buf); err != nil {
		t.Fatal(err)
	}
	if !restored.CompactCharge() || restored.MemoryHeldTotal() != held {
		t.Fatalf("restored: compact charge %v, %d bytes held; want true, %d", restored.CompactCharge(), restored.MemoryHeldTotal(), held)
	}
}

// TestCompactCharge_ABudgetAdmitsWhatTheHeapHolds: the same memory budget
// admits over four times as many plain jobs once they are charged as what
// they take, and still refuses with ErrMemoryFull naming the budget.
func TestCompactCharge_ABudgetAdmitsWhatTheHeapHolds(t *testing.T) {
	now := et.Epoch
	admitted := func(compact bool) int {
		e := et.New(t, func(c *engine.Config) { c.Limits.MaxMemoryBytes = 64 << 10 })
		e.UsePayloadStore(mapStore{})
		e.EnablePayloadsOffHeap(now)
		if compact {
			e.EnableCompactCharge(now)
		}
		for n := 0; ; n++ {
			_, err := e.Enqueue(now, plainJob())
			if errors.Is(err, engine.ErrMemoryFull) {
				var mf *engine.MemoryFullError
				if !errors.As(err, &mf) || mf.LimitKey() != "limits.max_memory_bytes" {
					t.Fatalf("refusal %v does not name limits.max_memory_bytes", err)
				}
				et.RequireInvariants(t, e)
				return n
			}
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	full, compact := admitted(false), admitted(true)
	t.Logf("a 64 KiB budget admits %d plain jobs charged full, %d charged compact", full, compact)
	if compact != 64<<10/32 || full != 64<<10/150 {
		t.Fatalf("admitted %d full and %d compact, want %d and %d", full, compact, 64<<10/150, 64<<10/32)
	}
}

// compactChargeSeedEngine is the golden engine of layout 16: the payloads
// engine's state (attempt detail, payloads off the heap) with plain
// waiting jobs charged compact, one of them reserved since.
func compactChargeSeedEngine(t testing.TB) *engine.Engine {
	t.Helper()
	e := payloadsOffEngine(t)
	now := e.Now().Add(time.Second)
	e.EnableCompactCharge(now)
	for i := range 3 {
		et.MustEnqueue(t, e, now, engine.EnqueueParams{Queue: "c", JobType: "plain", Payload: []byte{byte(i)}})
	}
	et.MustReserveOne(t, e, now, "c")
	return e
}

// TestCompactCharge_RestoredReplicaWritesWhatTheOthersWrite: layout 16
// carries whether a job ever had a trace context (layouts 13..15 imply it
// from their version, which layout 16 cannot: it is written for the
// charge). A replica restored from it, and the one it was taken from, then
// write the same bytes in the progress layout, whose flags name it, with a
// trace context used or not. (Implying it from the version made a
// restored replica's progress snapshot differ.)
func TestCompactCharge_RestoredReplicaWritesWhatTheOthersWrite(t *testing.T) {
	for _, traced := range []bool{false, true} {
		t.Run(fmt.Sprint("traced=", traced), func(t *testing.T) {
			now := et.Epoch
			e := compactChargeEngine(t, engine.DefaultAttemptHistory)
			p := plainJob()
			if traced {
				p.Trace = &engine.TraceContext{Traceparent: "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}
			}
			et.MustEnqueue(t, e, now, p)
			var snap bytes.Buffer
			if err := e.Snapshot(&snap); err != nil {
				t.Fatal(err)
			}
			if v := snap.Bytes()[8]; v != 16 {
				t.Fatalf("layout %d, want 16", v)
			}
			restored := engine.New(engine.DefaultConfig())
			if err := restored.Restore(&snap); err != nil {
				t.Fatal(err)
			}
			for _, x := range []*engine.Engine{e, restored} {
				d := et.MustReserveOne(t, x, now, "q")
				if _, err := x.ExtendLease(now, engine.ExtendParams{LeaseRef: et.Ref(d), Progress: &engine.Progress{Percent: 40}}); err != nil {
					t.Fatal(err)
				}
			}
			a, b := snapshotBytes(t, e), snapshotBytes(t, restored)
			if a[8] != 17 || !bytes.Equal(a, b) {
				t.Fatalf("layouts %d and %d; the restored replica's snapshot differs: %v", a[8], b[8], !bytes.Equal(a, b))
			}
		})
	}
}
