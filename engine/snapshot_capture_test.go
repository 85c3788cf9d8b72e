package engine_test

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"github.com/sepp-io/sepp/engine"
	et "github.com/sepp-io/sepp/engine/enginetest"
)

var captureOpts = engine.SnapshotOptions{Protobuf: true, PayloadLengths: true}

// captureFixture is an engine holding what a capture freezes and what it
// encodes at once: compact jobs over several chunks in two queues and
// levels, keys packed and plain, full jobs (reserved, scheduled), and a
// compact job with a dependency record (a child whose parent completed,
// held compact once restored), which is written as a full job.
func captureFixture(t *testing.T, now time.Time) (*engine.Engine, []engine.JobID) {
	t.Helper()
	store := mapStore{}
	e := et.New(t)
	e.UsePayloadStore(store)
	e.EnablePayloadsOffHeap(now)
	ids := mustBatch(t, e, now, et.Job("a"), after("a", engine.ParentFailureCancel, 0))
	// The parent reserved and acked: the child is Ready with its
	// dependency record.
	ds, err := e.Reserve(now, engine.ReserveParams{Queue: "a", N: 1, WorkerID: "w"})
	if err != nil || len(ds) != 1 || ds[0].Job.ID != ids[0] {
		t.Fatalf("reserve: %v %v", ds, err)
	}
	if err := e.Ack(now, engine.LeaseRef{JobID: ids[0], LeaseToken: ds[0].LeaseToken}); err != nil {
		t.Fatal(err)
	}
	for i := range 2500 {
		p := engine.EnqueueParams{Queue: []string{"a", "b"}[i%2], JobType: fmt.Sprint("t", i%3), Payload: []byte("body"), MaxAttempts: uint32(1 + i%4)}
		switch i % 5 {
		case 0:
			p.IdempotencyKey = fmt.Sprintf("%032x", i) // packed
		case 1:
			p.IdempotencyKey = fmt.Sprint("key-", i) // plain
		}
		if i%7 == 0 {
			p.Priority = et.Ptr(uint32(7))
		}
		if i%97 == 0 {
			p.ScheduledAt = now.Add(time.Hour) // full: scheduled
		}
		ids = append(ids, et.MustEnqueue(t, e, now, p))
	}
	// Some jobs reserved: full.
	if ds, err := e.Reserve(now, engine.ReserveParams{Queue: "a", N: 5, WorkerID: "w"}); err != nil || len(ds) != 5 {
		t.Fatalf("reserve: %v %v", ds, err)
	}
	var snap bytes.Buffer
	if err := e.SnapshotWith(&snap, captureOpts); err != nil {
		t.Fatal(err)
	}
	restored := et.New(t)
	restored.UsePayloadStore(store)
	if err := restored.RestoreWith(&snap, captureOpts); err != nil {
		t.Fatal(err)
	}
	restored.PayloadsLoaded()
	if n := engine.CompactJobs(restored); n < 2000 {
		t.Fatalf("%d jobs held compact", n)
	}
	return restored, ids
}

// A captured snapshot writes what SnapshotWith wrote at the capture,
// whatever the applies in between change: each change to what the
// capture shares (a compact entry removed by id, a ring's front popped, a
// push into a shared chunk, keys forgotten, a queue deleted, the engine
// restored) leaves its bytes alone.
func TestCaptureSnapshot_WritesTheStateAtTheCapture(t *testing.T) {
	now := et.Epoch
	later := now.Add(time.Second)
	for _, tc := range []struct {
		name   string
		change func(t *testing.T, e *engine.Engine, ids []engine.JobID)
	}{
		{"Nothing", func(*testing.T, *engine.Engine, []engine.JobID) {}},
		{"DeleteByID", func(t *testing.T, e *engine.Engine, ids []engine.JobID) {
			t.Helper()
			if _, err := e.ActOnJobs(later, engine.JobActionParams{Action: engine.JobActionDelete, IDs: []engine.JobID{ids[30], ids[1500], ids[2400]}}); err != nil {
				t.Fatal(err)
			}
		}},
		{"PriorityByID", func(t *testing.T, e *engine.Engine, ids []engine.JobID) {
			t.Helper()
			if _, err := e.ActOnJobs(later, engine.JobActionParams{Action: engine.JobActionPriority, Priority: 9, IDs: []engine.JobID{ids[40], ids[41]}}); err != nil {
				t.Fatal(err)
			}
		}},
		{"DeadLetterByID", func(t *testing.T, e *engine.Engine, ids []engine.JobID) {
			t.Helper()
			e.DeadLetterJobs(later, []engine.JobID{ids[1000], ids[1], ids[2]}, "operator")
		}},
		{"ReserveAndAckMany", func(t *testing.T, e *engine.Engine, _ []engine.JobID) {
			t.Helper()
			for i := range 16 { // 100 at a time: past a chunk of each level
				ds, err := e.Reserve(later, engine.ReserveParams{Queue: []string{"a", "b"}[i%2], N: 100, WorkerID: "w"})
				if err != nil {
					t.Fatal(err)
				}
				for _, d := range ds[:50] {
					if err := e.Ack(later, engine.LeaseRef{JobID: d.Job.ID, LeaseToken: d.LeaseToken}); err != nil {
						t.Fatal(err)
					}
				}
			}
		}},
		{"EnqueueMore", func(t *testing.T, e *engine.Engine, _ []engine.JobID) {
			t.Helper()
			for i := range 1000 {
				et.MustEnqueue(t, e, later, engine.EnqueueParams{Queue: "b", JobType: "new", Payload: []byte("x"), IdempotencyKey: fmt.Sprint("more-", i)})
			}
		}},
		{"KeysForgotten", func(t *testing.T, e *engine.Engine, _ []engine.JobID) {
			t.Helper()
			e.Tick(now.Add(time.Hour))
			et.MustEnqueue(t, e, now.Add(time.Hour), engine.EnqueueParams{Queue: "a", JobType: "t0", IdempotencyKey: "key-reused"})
		}},
		{"PurgeQueue", func(t *testing.T, e *engine.Engine, _ []engine.JobID) {
			t.Helper()
			if _, err := e.PurgeQueue(later, "b", engine.PurgeWaiting); err != nil {
				t.Fatal(err)
			}
		}},
		{"DeleteQueue", func(t *testing.T, e *engine.Engine, _ []engine.JobID) {
			t.Helper()
			if _, err := e.DeleteQueue(later, "b", true); err != nil {
				t.Fatal(err)
			}
		}},
		{"Restored", func(t *testing.T, e *engine.Engine, _ []engine.JobID) {
			t.Helper()
			other := et.New(t)
			other.UsePayloadStore(mapStore{})
			other.EnablePayloadsOffHeap(later)
			et.MustEnqueue(t, other, later, engine.EnqueueParams{Queue: "c", JobType: "z"})
			var b bytes.Buffer
			if err := other.SnapshotWith(&b, captureOpts); err != nil {
				t.Fatal(err)
			}
			if err := e.RestoreWith(&b, captureOpts); err != nil {
				t.Fatal(err)
			}
			e.PayloadsLoaded()
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, ids := captureFixture(t, now)
			var want bytes.Buffer
			if err := e.SnapshotWith(&want, captureOpts); err != nil {
				t.Fatal(err)
			}
			c, err := e.CaptureSnapshot(captureOpts)
			if err != nil || c == nil {
				t.Fatalf("capture: %v, %v", c, err)
			}
			tc.change(t, e, ids)
			et.RequireInvariants(t, e)
			var got bytes.Buffer
			n, err := c.WriteTo(&got)
			if err != nil {
				t.Fatal(err)
			}
			if n != int64(got.Len()) {
				t.Errorf("WriteTo counted %d bytes of %d", n, got.Len())
			}
			if !bytes.Equal(got.Bytes(), want.Bytes()) {
				t.Fatalf("the capture wrote %d bytes unlike SnapshotWith's %d at the capture", got.Len(), want.Len())
			}
			// Released: the next capture is the state now.
			var now2 bytes.Buffer
			if err := e.SnapshotWith(&now2, captureOpts); err != nil {
				t.Fatal(err)
			}
			c2, err := e.CaptureSnapshot(captureOpts)
			if err != nil || c2 == nil {
				t.Fatalf("capture: %v, %v", c2, err)
			}
			var got2 bytes.Buffer
			if _, err := c2.WriteTo(&got2); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got2.Bytes(), now2.Bytes()) {
				t.Fatal("a second capture differs from SnapshotWith")
			}
		})
	}
}

// A capture declines what it does not write (the payloads inline, the
// hand-written layout): the caller then writes the snapshot at once.
func TestCaptureSnapshot_DeclinesOtherForms(t *testing.T) {
	e, _ := captureFixture(t, et.Epoch)
	for _, o := range []engine.SnapshotOptions{{Protobuf: true}, {PayloadLengths: true}, {}} {
		if c, err := e.CaptureSnapshot(o); c != nil || err != nil {
			t.Errorf("options %+v: capture %v, %v; want neither", o, c, err)
		}
	}
}
