package engine_test

import (
	"bytes"
	"errors"
	"testing"
	"time"

	"github.com/sepp-io/sepp/engine"
	et "github.com/sepp-io/sepp/engine/enginetest"
)

// payloadsOffEngine holds waiting, reserved and dead jobs with payloads and
// runs payloadsOffHeap, so the fuzzer starts from a layout 12 snapshot.
func payloadsOffEngine(t testing.TB) *engine.Engine {
	t.Helper()
	e := attemptsEngine(t)
	e.EnablePayloadsOffHeap(e.Now().Add(time.Second))
	et.MustEnqueue(t, e, e.Now().Add(time.Second), engine.EnqueueParams{Queue: "a", JobType: "t", Payload: bytes.Repeat([]byte("p"), 300)})
	return e
}

// countingPayloads is a PayloadStore that counts what it holds, as a
// node's on-disk store would.
type countingPayloads struct {
	m     map[engine.JobID][]byte
	bytes int
}

func (c *countingPayloads) PutPayload(id engine.JobID, p []byte) {
	if _, ok := c.m[id]; ok {
		panic("payload written twice")
	}
	c.m[id] = bytes.Clone(p)
	c.bytes += len(p)
}
func (c *countingPayloads) Payload(id engine.JobID) []byte { return c.m[id] }
func (c *countingPayloads) DeletePayload(id engine.JobID) {
	c.bytes -= len(c.m[id])
	delete(c.m, id)
}

// TestPayloads_StoreHoldsExactlyTheLiveOnes runs jobs through every way out
// (ack, dead letter kept and dropped, forward, requeue, purge) with a store
// of the engine's payloads, and requires the store to hold the payload of
// every live job and retained record and nothing else.
func TestPayloads_StoreHoldsExactlyTheLiveOnes(t *testing.T) {
	clock := et.NewClock()
	e := et.New(t, et.WithRetention(time.Hour),
		et.WithQueue(engine.QueueConfig{Name: "a", DeadLetterQueue: "a.dead", DefaultMaxAttempts: et.Ptr[uint32](1)}),
		et.WithQueue(engine.QueueConfig{Name: "a.dead"}))
	store := &countingPayloads{m: map[engine.JobID][]byte{}}
	e.UsePayloadStore(store)
	for i := range 8 {
		et.MustEnqueue(t, e, clock.Advance(time.Millisecond), engine.EnqueueParams{Queue: "a", JobType: "t", Payload: bytes.Repeat([]byte{byte('a' + i)}, 100*(i+1))})
	}
	et.MustEnqueue(t, e, clock.Now(), engine.EnqueueParams{Queue: "a", JobType: "t"}) // empty: nothing stored
	ds, err := e.Reserve(clock.Advance(time.Second), engine.ReserveParams{Queue: "a", N: 4, WorkerID: "w", Lease: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	for i, d := range ds {
		if want := bytes.Repeat([]byte{byte('a' + i)}, 100*(i+1)); !bytes.Equal(d.Job.Payload, want) {
			t.Fatalf("delivery %d: payload %q, want %q", i, d.Job.Payload, want)
		}
	}
	if err := e.Ack(clock.Now(), et.Ref(ds[0])); err != nil {
		t.Fatal(err)
	}
	// Rejected: dead-lettered, kept, and forwarded to a.dead as a new job.
	if _, err := e.Nack(clock.Now(), engine.NackParams{LeaseRef: et.Ref(ds[1]), Directive: engine.DirectiveDeadLetter, Reason: "bad"}); err != nil {
		t.Fatal(err)
	}
	if res := e.RequeueDeadLetters(clock.Now(), []engine.JobID{ds[1].Job.ID}); res[0].Err != nil {
		t.Fatal(res[0].Err)
	}
	if _, err := e.PurgeQueue(clock.Now(), "a.dead", engine.PurgeWaiting); err != nil {
		t.Fatal(err)
	}
	if _, err := e.PurgeQueue(clock.Now(), "a", engine.PurgeWaiting); err != nil {
		t.Fatal(err)
	}
	want := map[engine.JobID]bool{}
	for _, st := range []engine.State{engine.StateReady, engine.StateScheduled, engine.StateReserved, engine.StateDead} {
		for _, q := range []string{"a", "a.dead"} {
			jobs, err := e.ListJobs(q, st, engine.Page{Limit: 1000})
			if err != nil {
				t.Fatal(err)
			}
			for _, j := range jobs {
				if len(j.Payload) > 0 {
					want[j.ID] = true
				}
			}
		}
	}
	if len(want) == 0 {
		t.Fatal("the scenario left no job with a payload")
	}
	for id := range store.m {
		if !want[id] {
			t.Errorf("the store holds the payload of job %d, which is gone", id)
		}
	}
	for id := range want {
		if store.m[id] == nil {
			t.Errorf("the store lacks the payload of live job %d", id)
		}
	}
	if got := e.DiskHeld(); got != int64(store.bytes) {
		t.Fatalf("DiskHeld %d, the store holds %d bytes", got, store.bytes)
	}
	if err := e.CheckInvariants(); err != nil {
		t.Fatal(err)
	}
}

// TestPayloads_OffHeapMovesTheChargeToDisk: once payloadsOffHeap is on, the
// memory budget counts no payload byte, so payloads its budget refused are
// accepted; the count survives a snapshot and restore, which keeps the
// setting (layout 12).
func TestPayloads_OffHeapMovesTheChargeToDisk(t *testing.T) {
	clock := et.NewClock()
	e := et.New(t, func(c *engine.Config) { c.Limits.MaxMemoryBytes = 64 << 10 })
	big := engine.EnqueueParams{Queue: "q", JobType: "t", Payload: make([]byte, 16<<10)}
	var accepted int
	for {
		_, err := e.Enqueue(clock.Advance(time.Millisecond), big)
		if errors.Is(err, engine.ErrMemoryFull) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		accepted++
	}
	if accepted > 4 {
		t.Fatalf("a 64 KiB budget took %d jobs of 16 KiB while payloads count as memory", accepted)
	}
	before := e.MemoryHeldTotal()
	e.EnablePayloadsOffHeap(clock.Advance(time.Millisecond))
	if got, want := e.MemoryHeldTotal(), before-int64(accepted*(16<<10)); got != want {
		t.Fatalf("memory held %d after the switch, want %d (payloads no longer counted)", got, want)
	}
	for range 20 {
		et.MustEnqueue(t, e, clock.Advance(time.Millisecond), big)
	}
	if got, want := e.DiskHeld(), int64((accepted+20)*(16<<10)); got != want {
		t.Fatalf("DiskHeld %d, want %d", got, want)
	}
	var buf bytes.Buffer
	if err := e.Snapshot(&buf); err != nil {
		t.Fatal(err)
	}
	if buf.Bytes()[8] != 12 {
		t.Fatalf("snapshot layout %d, want 12", buf.Bytes()[8])
	}
	r := engine.New(engine.DefaultConfig())
	if err := r.Restore(&buf); err != nil {
		t.Fatal(err)
	}
	if !r.PayloadsOffHeap() || r.MemoryHeldTotal() != e.MemoryHeldTotal() || r.DiskHeld() != e.DiskHeld() {
		t.Fatalf("restored: offHeap %v, memory %d, disk %d; want true, %d, %d", r.PayloadsOffHeap(), r.MemoryHeldTotal(), r.DiskHeld(), e.MemoryHeldTotal(), e.DiskHeld())
	}
	if r.Digest() != e.Digest() {
		t.Fatal("restored digest differs")
	}
}

// TestPayloads_DiskBudgetRefusesAndDrainsFree: limits.max_disk_bytes counts
// the payload bytes held once payloads are off the heap: an enqueue past it
// is refused with ErrDiskFull naming the limit, nothing is added, an ack
// makes room; before payloads are off the heap it refuses nothing.
func TestPayloads_DiskBudgetRefusesAndDrainsFree(t *testing.T) {
	clock := et.NewClock()
	e := et.New(t, func(c *engine.Config) { c.Limits.MaxDiskBytes = 10_000 })
	job := engine.EnqueueParams{Queue: "q", JobType: "t", Payload: make([]byte, 3_000)}
	for range 5 { // 15,000 bytes: the budget waits for payloadsOffHeap
		et.MustEnqueue(t, e, clock.Advance(time.Millisecond), job)
	}
	e.EnablePayloadsOffHeap(clock.Advance(time.Millisecond))
	_, err := e.Enqueue(clock.Advance(time.Millisecond), job)
	var full *engine.DiskFullError
	if !errors.As(err, &full) || !errors.Is(err, engine.ErrDiskFull) || full.LimitKey() != "limits.max_disk_bytes" {
		t.Fatalf("enqueue above the disk budget: %v, want a DiskFullError", err)
	}
	if got := e.DiskHeld(); got != 15_000 {
		t.Fatalf("DiskHeld %d after a refusal, want 15000", got)
	}
	ds, err := e.Reserve(clock.Advance(time.Millisecond), engine.ReserveParams{Queue: "q", N: 3, WorkerID: "w", Lease: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range ds {
		if err := e.Ack(clock.Now(), et.Ref(d)); err != nil {
			t.Fatal(err)
		}
	}
	et.MustEnqueue(t, e, clock.Advance(time.Millisecond), job) // 6,000 + 3,000
	if _, err := e.Enqueue(clock.Advance(time.Millisecond), job); !errors.Is(err, engine.ErrDiskFull) {
		t.Fatalf("enqueue to 12,000 bytes: %v, want ErrDiskFull", err)
	}
	var buf bytes.Buffer
	if err := e.Snapshot(&buf); err != nil {
		t.Fatal(err)
	}
	r := engine.New(engine.DefaultConfig())
	if err := r.Restore(&buf); err != nil {
		t.Fatal(err)
	}
	if r.Config().Limits.MaxDiskBytes != 10_000 || r.DiskHeld() != 9_000 || r.Digest() != e.Digest() {
		t.Fatalf("restored: budget %d, held %d; want 10000, 9000 and an equal digest", r.Config().Limits.MaxDiskBytes, r.DiskHeld())
	}
}
