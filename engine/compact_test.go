package engine_test

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"github.com/sepp-io/sepp/engine"
	et "github.com/sepp-io/sepp/engine/enginetest"
)

// mapStore is a PayloadStore whose content a test can share between an
// engine and its replay.
type mapStore map[engine.JobID][]byte

func (s mapStore) PutPayload(id engine.JobID, p []byte) { s[id] = bytes.Clone(p) }
func (s mapStore) Payload(id engine.JobID) []byte       { return s[id] }
func (s mapStore) DeletePayload(id engine.JobID)        { delete(s, id) }

// deliveryText renders deliveries without their payloads (a replay with
// the store ahead hands out none).
func deliveryText(ds []engine.Delivery) string {
	var b bytes.Buffer
	for _, d := range ds {
		fmt.Fprintf(&b, "[%d %s %q p%d a%d/%d %v]", d.Job.ID, d.Job.Queue, d.Job.JobType, d.Job.Priority, d.Attempt, d.MaxAttempts, d.Job.EnqueuedAt.UnixNano())
	}
	return b.String()
}

// Rule 1 of store/DESIGN.md: a transition never depends on a store read.
// Compact jobs (compact.go) keep what later transitions need in memory;
// this replays a run of operations on every by-id and bulk path of compact
// jobs from a snapshot with the store already at the run's end (bodies of
// acked, deleted, purged jobs gone), as a restarted node does, and
// requires the replay to answer and to end exactly as the run did. A
// transition that reads a body (a length, a max attempts) reads nothing
// in the replay and diverges.
func TestCompact_ReplayWithTheStoreAheadEndsAlike(t *testing.T) {
	now := et.Epoch
	store := mapStore{}
	a := et.New(t)
	a.UsePayloadStore(store)
	a.EnablePayloadsOffHeap(now)
	var ids []engine.JobID
	for i := range 12 {
		p := engine.EnqueueParams{Queue: "q", JobType: fmt.Sprint("t", i%3), Payload: bytes.Repeat([]byte{byte(i)}, 10+i), MaxAttempts: uint32(1 + i%3)}
		if i%4 == 0 {
			p.Priority = et.Ptr(uint32(5))
		}
		ids = append(ids, et.MustEnqueue(t, a, now, p))
	}
	if engine.CompactJobs(a) != len(ids) {
		t.Fatalf("%d of %d plain jobs held compact", engine.CompactJobs(a), len(ids))
	}
	var snap bytes.Buffer
	if err := a.SnapshotWith(&snap, engine.SnapshotOptions{PayloadLengths: true}); err != nil {
		t.Fatal(err)
	}

	later := now.Add(time.Second)
	ops := []struct {
		name string
		do   func(e *engine.Engine) string
	}{
		{"ReserveThree", func(e *engine.Engine) string {
			ds, err := e.Reserve(later, engine.ReserveParams{Queue: "q", N: 3, WorkerID: "w"})
			return fmt.Sprint(deliveryText(ds), err)
		}},
		{"AckTheFirst", func(e *engine.Engine) string {
			return fmt.Sprint(e.Ack(later, engine.LeaseRef{JobID: ids[0], LeaseToken: 1}))
		}},
		{"NackTheSecondUntilDead", func(e *engine.Engine) string {
			// ids[4] (priority 5, max attempts 2) was the second delivery.
			res, err := e.Nack(later, engine.NackParams{LeaseRef: engine.LeaseRef{JobID: ids[4], LeaseToken: 2}})
			return fmt.Sprint(res, err)
		}},
		{"DeleteByID", func(e *engine.Engine) string {
			res, err := e.ActOnJobs(later, engine.JobActionParams{Action: engine.JobActionDelete, IDs: []engine.JobID{ids[2], ids[5]}})
			return fmt.Sprint(res, err)
		}},
		{"PriorityByID", func(e *engine.Engine) string {
			res, err := e.ActOnJobs(later, engine.JobActionParams{Action: engine.JobActionPriority, Priority: 9, IDs: []engine.JobID{ids[10]}})
			return fmt.Sprint(res, err)
		}},
		{"RescheduleByID", func(e *engine.Engine) string {
			res, err := e.ActOnJobs(later, engine.JobActionParams{Action: engine.JobActionReschedule, RunAt: later.Add(time.Hour), IDs: []engine.JobID{ids[6]}})
			return fmt.Sprint(res, err)
		}},
		{"DeadLetterByID", func(e *engine.Engine) string {
			return fmt.Sprint(e.DeadLetterJobs(later, []engine.JobID{ids[7]}, "operator"))
		}},
		{"ReserveFive", func(e *engine.Engine) string {
			ds, err := e.Reserve(later, engine.ReserveParams{Queue: "q", N: 5, WorkerID: "w"})
			return fmt.Sprint(deliveryText(ds), err)
		}},
		{"PurgeTheRest", func(e *engine.Engine) string {
			res, err := e.PurgeQueue(later, "q", engine.PurgeWaiting)
			return fmt.Sprint(res, err)
		}},
	}
	want := make([]string, len(ops))
	for i, op := range ops {
		want[i] = op.do(a)
		et.RequireInvariants(t, a)
	}

	// The replay: the store is at the run's end.
	b := et.New(t)
	b.UsePayloadStore(store)
	b.SetPayloadsAhead(true)
	if err := b.RestoreWith(bytes.NewReader(snap.Bytes()), engine.SnapshotOptions{PayloadLengths: true}); err != nil {
		t.Fatal(err)
	}
	b.PayloadsLoaded() // the store is ahead: fsm loads (checks) no payload
	if engine.CompactJobs(b) != len(ids) {
		t.Fatalf("the replay holds %d of %d plain jobs compact", engine.CompactJobs(b), len(ids))
	}
	for i, op := range ops {
		if got := op.do(b); got != want[i] {
			t.Fatalf("%s: the replay answers %s, the run %s", op.name, got, want[i])
		}
	}
	b.SetPayloadsAhead(false) // the replay has reached the store, as fsm then says
	if got, want := b.MemoryHeld(), a.MemoryHeld(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("held bytes: replay %+v, run %+v", got, want)
	}
	if got, want := b.DiskHeld(), a.DiskHeld(); got != want {
		t.Fatalf("payload bytes held: replay %d, run %d", got, want)
	}
	var sa, sb bytes.Buffer
	if err := a.SnapshotWith(&sa, engine.SnapshotOptions{PayloadLengths: true}); err != nil {
		t.Fatal(err)
	}
	if err := b.SnapshotWith(&sb, engine.SnapshotOptions{PayloadLengths: true}); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(sa.Bytes(), sb.Bytes()) {
		t.Fatal("the replay's state differs from the run's")
	}
}

// A restore holds each plain waiting job compact as it reads it, not as a
// full record first: filed full and compacted at the end, a restore held
// every waiting job at 82 B instead of 24.6 B at once, and nodes that held
// 5M jobs in 512 MiB were killed restarting. Jobs a later section gives a
// deadline, a trace context or an origin (a forwarded copy) are converted
// back, and the restored engine equals the original.
func TestCompact_RestoreHoldsPlainJobsCompactAsItReads(t *testing.T) {
	now := et.Epoch
	store := mapStore{}
	a := et.New(t)
	a.UsePayloadStore(store)
	a.EnablePayloadsOffHeap(now)
	plain := 0
	for i := range 40 {
		p := engine.EnqueueParams{Queue: "q", JobType: "t", Payload: []byte{byte(i + 1)}}
		switch i % 4 {
		case 1:
			p.Expiry = &engine.ExpiryOpts{TTL: time.Hour} // a deadline: the expiry section
		case 2:
			p.Trace = &engine.TraceContext{Traceparent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}
		default:
			plain++
		}
		et.MustEnqueue(t, a, now, p)
	}
	if engine.CompactJobs(a) != plain {
		t.Fatalf("%d of %d plain jobs held compact", engine.CompactJobs(a), plain)
	}
	var snap bytes.Buffer
	if err := a.SnapshotWith(&snap, engine.SnapshotOptions{PayloadLengths: true}); err != nil {
		t.Fatal(err)
	}
	b := et.New(t)
	b.UsePayloadStore(store)
	b.SetPayloadsAhead(true)
	if err := b.RestoreWith(bytes.NewReader(snap.Bytes()), engine.SnapshotOptions{PayloadLengths: true}); err != nil {
		t.Fatal(err)
	}
	// Before PayloadsLoaded, which compacted everything at the end before.
	if got := engine.CompactJobs(b); got != plain {
		t.Fatalf("after RestoreWith %d jobs held compact, want the %d plain ones", got, plain)
	}
	b.PayloadsLoaded()
	b.SetPayloadsAhead(false)
	if err := b.CheckInvariants(); err != nil {
		t.Fatal(err)
	}
	if a.Digest() != b.Digest() {
		t.Fatal("the restored engine differs from the original")
	}
}
