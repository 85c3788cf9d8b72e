package engine_test

import (
	"bytes"
	"errors"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/sepp-io/sepp/engine"
	et "github.com/sepp-io/sepp/engine/enginetest"
)

// completedEngine has queue "kept" keeping completed jobs for an hour and
// queue "plain" keeping none.
func completedEngine(t testing.TB, retention time.Duration) *engine.Engine {
	t.Helper()
	return et.New(t,
		et.WithQueue(engine.QueueConfig{Name: "kept", CompletedRetention: retention}),
		et.WithQueue(engine.QueueConfig{Name: "plain"}))
}

// ackOne enqueues a job on queue, reserves and acks it with result.
func ackOne(t testing.TB, e *engine.Engine, now time.Time, queue string, result []byte) engine.JobID {
	t.Helper()
	id := et.MustEnqueue(t, e, now, et.Job(queue))
	d := et.MustReserveOne(t, e, now, queue)
	if err := e.AckWithResult(now, et.Ref(d), result); err != nil {
		t.Fatal(err)
	}
	return id
}

func TestCompleted_AckKeepsJobWithResultUntilRetentionEnds(t *testing.T) {
	t.Parallel()
	clock := et.NewClock()
	e := completedEngine(t, time.Hour)
	recs := &recordingStore{payloads: map[engine.JobID][]byte{}, completed: map[engine.JobID]engine.CompletedRecord{}}
	e.UsePayloadStore(recs)
	start := clock.Now()
	id := et.MustEnqueue(t, e, start, et.Job("kept"))
	d := et.MustReserveOne(t, e, clock.Advance(time.Second), "kept")
	done := clock.Advance(2 * time.Second)
	if err := e.AckWithResult(done, et.Ref(d), []byte(`{"ok":true}`)); err != nil {
		t.Fatal(err)
	}
	et.RequireInvariants(t, e)

	j, err := e.GetJob(id)
	if err != nil {
		t.Fatalf("GetJob of a completed job: %v", err)
	}
	switch {
	case j.State != engine.StateCompleted:
		t.Fatalf("state %v, want completed", j.State)
	case j.Completed == nil || string(j.Completed.Result) != `{"ok":true}`:
		t.Fatalf("completed info %+v, want the result", j.Completed)
	case !j.Completed.CompletedAt.Equal(done):
		t.Fatalf("completed at %v, want %v", j.Completed.CompletedAt, done)
	case j.Queue != "kept" || j.Attempt != 1 || !j.EnqueuedAt.Equal(start):
		t.Fatalf("view %+v", j)
	}
	list, err := e.ListJobs("kept", engine.StateCompleted, engine.Page{})
	if err != nil || len(list) != 1 || list[0].ID != id {
		t.Fatalf("ListJobs completed: %v, %v", list, err)
	}
	next, ok := e.NextDeadline()
	if !ok || !next.Equal(done.Add(time.Hour)) {
		t.Fatalf("next deadline %v %v, want the expiry %v", next, ok, done.Add(time.Hour))
	}

	// One nanosecond before the hour it is still kept; at the hour it goes.
	if res := e.Tick(done.Add(time.Hour - 1)); res.CompletedExpired != 0 {
		t.Fatalf("expired early: %+v", res)
	}
	if res := e.Tick(done.Add(time.Hour)); res.CompletedExpired != 1 {
		t.Fatalf("tick at the expiry: %+v, want 1 completed job expired", res)
	}
	if _, err := e.GetJob(id); !errors.Is(err, engine.ErrNotFound) {
		t.Fatalf("GetJob after retention: %v, want not found", err)
	}
	if n := e.CompletedCount(); n != 0 {
		t.Fatalf("%d completed jobs held after expiry", n)
	}
	if len(recs.completed) != 0 {
		t.Fatalf("the store keeps %d completed records after their retention", len(recs.completed))
	}
	if _, ok := e.NextDeadline(); ok {
		t.Fatal("a deadline is left after the last completed job expired")
	}
	et.RequireInvariants(t, e)
}

func TestCompleted_ResultRefusedWhereNotKept(t *testing.T) {
	t.Parallel()
	clock := et.NewClock()
	e := completedEngine(t, time.Hour)
	now := clock.Now()
	id := et.MustEnqueue(t, e, now, et.Job("plain"))
	d := et.MustReserveOne(t, e, now, "plain")
	err := e.AckWithResult(now, et.Ref(d), []byte("r"))
	var fe *engine.FieldError
	if !errors.Is(err, engine.ErrNoCompletedRetention) || !errors.As(err, &fe) || fe.Field != "result" {
		t.Fatalf("ack with a result on a queue keeping none: %v, want ErrNoCompletedRetention on result", err)
	}
	// Nothing changed: the lease holds, a plain ack works and keeps nothing.
	if j, _ := e.GetJob(id); j.State != engine.StateReserved {
		t.Fatalf("state after the refusal: %v, want reserved", j.State)
	}
	if err := e.Ack(now, et.Ref(d)); err != nil {
		t.Fatal(err)
	}
	if _, err := e.GetJob(id); !errors.Is(err, engine.ErrNotFound) {
		t.Fatalf("GetJob of a job acked where none are kept: %v", err)
	}
}

func TestCompleted_RetentionBounds(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		ret  time.Duration
		ok   bool
	}{
		{"zero keeps none", 0, true},
		{"one millisecond", time.Millisecond, true},
		{"thirty days", engine.MaxCompletedRetention, true},
		{"above thirty days", engine.MaxCompletedRetention + time.Millisecond, false},
		{"negative", -time.Millisecond, false},
		{"not whole milliseconds", time.Millisecond + 1, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := engine.New(engine.DefaultConfig())
			err := e.CreateQueue(et.Epoch, engine.QueueConfig{Name: "q", CompletedRetention: tt.ret}, false)
			var fe *engine.FieldError
			switch {
			case tt.ok && err != nil:
				t.Fatalf("refused: %v", err)
			case !tt.ok && (!errors.As(err, &fe) || !bytes.Contains([]byte(fe.Field), []byte("completed_retention_ms")) || !errors.Is(err, engine.ErrInvalidArgument)):
				t.Fatalf("got %v, want InvalidArgument naming completed_retention_ms", err)
			}
		})
	}
}

func TestCompleted_UpdateAndInheritRetention(t *testing.T) {
	t.Parallel()
	clock := et.NewClock()
	e := completedEngine(t, time.Hour)
	id := ackOne(t, e, clock.Now(), "kept", []byte("x"))
	// Shorter retention: the kept job expires on the new schedule.
	if err := e.UpdateQueue(clock.Now(), engine.QueueUpdate{Name: "kept", Set: engine.QueueConfig{CompletedRetention: time.Minute}}); err != nil {
		t.Fatal(err)
	}
	if next, _ := e.NextDeadline(); !next.Equal(clock.Now().Add(time.Minute)) {
		t.Fatalf("next deadline %v after shortening the retention", next)
	}
	// Inherit drops it to 0: kept jobs go at the next tick.
	if err := e.UpdateQueue(clock.Now(), engine.QueueUpdate{Name: "kept", Inherit: []string{"completed_retention_ms"}}); err != nil {
		t.Fatal(err)
	}
	if res := e.Tick(clock.Advance(time.Millisecond)); res.CompletedExpired != 1 {
		t.Fatalf("tick after inherit: %+v", res)
	}
	if _, err := e.GetJob(id); !errors.Is(err, engine.ErrNotFound) {
		t.Fatalf("GetJob: %v", err)
	}
	et.RequireInvariants(t, e)
}

func TestCompleted_DeleteQueueDropsRecords(t *testing.T) {
	t.Parallel()
	clock := et.NewClock()
	e := completedEngine(t, time.Hour)
	id := ackOne(t, e, clock.Now(), "kept", []byte("x"))
	if _, err := e.DeleteQueue(clock.Now(), "kept", false); err != nil {
		t.Fatalf("deleting a queue holding only completed jobs: %v", err)
	}
	if _, err := e.GetJob(id); !errors.Is(err, engine.ErrNotFound) {
		t.Fatalf("GetJob after the queue's delete: %v", err)
	}
	if e.CompletedCount() != 0 {
		t.Fatal("completed jobs of a deleted queue are still counted")
	}
	et.RequireInvariants(t, e)
}

// TestCompleted_SnapshotRoundTripAndDeterminism: two engines fed the same
// operations have equal digests; a restored one equals its source, keeps
// the records and expires them on the same schedule.
func TestCompleted_SnapshotRoundTripAndDeterminism(t *testing.T) {
	t.Parallel()
	run := func() *engine.Engine {
		clock := et.NewClock()
		e := completedEngine(t, time.Hour)
		for i := range 20 {
			q, result := "kept", fmt.Appendf(nil, "result %d", i)
			if i%3 == 0 {
				q, result = "plain", nil
			}
			ackOne(t, e, clock.Advance(time.Minute), q, result)
		}
		e.Tick(clock.Advance(50 * time.Minute)) // some have expired
		return e
	}
	a, b := run(), run()
	if a.Digest() != b.Digest() {
		t.Fatal("two engines that applied the same operations differ")
	}
	if a.CompletedCount() == 0 || a.CompletedCount() == 13 {
		t.Fatalf("%d completed jobs kept: the test wants some expired and some kept", a.CompletedCount())
	}
	var buf bytes.Buffer
	if err := a.Snapshot(&buf); err != nil {
		t.Fatal(err)
	}
	r := engine.New(engine.DefaultConfig())
	if err := r.Restore(bytes.NewReader(buf.Bytes())); err != nil {
		t.Fatal(err)
	}
	if r.Digest() != a.Digest() {
		t.Fatal("restored engine differs from its source")
	}
	la, _ := a.ListJobs("kept", engine.StateCompleted, engine.Page{})
	lr, _ := r.ListJobs("kept", engine.StateCompleted, engine.Page{})
	if len(la) != len(lr) || len(lr) == 0 || string(lr[0].Completed.Result) != string(la[0].Completed.Result) {
		t.Fatalf("restored list %v, source %v", lr, la)
	}
	later := a.Now().Add(2 * time.Hour)
	ra, rr := a.Tick(later), r.Tick(later)
	if ra.CompletedExpired != rr.CompletedExpired || ra.CompletedExpired == 0 || a.Digest() != r.Digest() {
		t.Fatalf("expiry after restore: %+v vs %+v", rr, ra)
	}
}

// TestCompleted_PlainAckUnchangedWithoutRetention: a state that never kept
// a completed job writes the snapshot layout it wrote before (an older
// binary reads it, and digests are comparable across the upgrade).
func TestCompleted_PlainAckUnchangedWithoutRetention(t *testing.T) {
	t.Parallel()
	clock := et.NewClock()
	e := et.New(t, et.WithQueue(engine.QueueConfig{Name: "plain"}))
	ackOne(t, e, clock.Now(), "plain", nil)
	var buf bytes.Buffer
	if err := e.Snapshot(&buf); err != nil {
		t.Fatal(err)
	}
	if v := buf.Bytes()[len("SEPPENG\x00")]; v >= 15 {
		t.Fatalf("layout %d written by a state without completed retention", v)
	}
}

// TestCompleted_HeapBytesPerJob measures what a completed job costs in the
// Go heap: the FIFO entry only (the record is in the CompletedStore, here
// a map, which the node replaces with its on-disk store). The figure is
// printed with -v.
func TestCompleted_HeapBytesPerJob(t *testing.T) {
	if testing.Short() {
		t.Skip("measures memory")
	}
	const n = 100_000
	// engineHeap is the heap an engine holds after n jobs were enqueued,
	// reserved and acked on queue: what stays once it is dropped.
	engineHeap := func(queue string) (int64, int) {
		clock := et.NewClock()
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		e := completedEngine(t, time.Hour)
		disc := &discardCompleted{}
		e.UsePayloadStore(disc)
		job := et.Job(queue)
		job.Payload = nil // the discarding store keeps none
		for range n {
			et.MustEnqueue(t, e, clock.Now(), job)
		}
		for left := n; left > 0; {
			ds := et.MustReserve(t, e, clock.Now(), queue, 1000)
			for _, d := range ds {
				if err := e.Ack(clock.Now(), et.Ref(d)); err != nil {
					t.Fatal(err)
				}
			}
			left -= len(ds)
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		runtime.KeepAlive(e)
		return int64(after.HeapAlloc) - int64(before.HeapAlloc), disc.puts
	}
	plain, _ := engineHeap("plain")
	kept, puts := engineHeap("kept")
	if puts != n {
		t.Fatalf("%d records written for %d acks", puts, n)
	}
	per := float64(kept-plain) / n
	t.Logf("engine heap after %d acked jobs: %d B keeping none, %d B keeping them as completed: %.1f B per completed job", n, plain, kept, per)
	// 16 B of entry, up to twice that while the FIFO's slice has room to
	// grow.
	if per > 40 {
		t.Fatalf("a completed job holds %.1f B of heap, want about 16 (its FIFO entry)", per)
	}
}

// recordingStore keeps payloads and completed records in maps the test
// reads.
type recordingStore struct {
	payloads  map[engine.JobID][]byte
	completed map[engine.JobID]engine.CompletedRecord
}

func (s *recordingStore) PutPayload(id engine.JobID, p []byte) { s.payloads[id] = bytes.Clone(p) }
func (s *recordingStore) Payload(id engine.JobID) []byte       { return s.payloads[id] }
func (s *recordingStore) DeletePayload(id engine.JobID)        { delete(s.payloads, id) }
func (s *recordingStore) PutCompleted(r *engine.CompletedRecord) {
	if _, dup := s.completed[r.ID]; dup {
		panic(fmt.Sprintf("completed job %d written twice", r.ID))
	}
	s.completed[r.ID] = *r
}
func (s *recordingStore) DeleteCompleted(id engine.JobID) { delete(s.completed, id) }
func (s *recordingStore) Completed(id engine.JobID) (engine.CompletedRecord, bool) {
	r, ok := s.completed[id]
	return r, ok
}

// discardCompleted is a payload and completed store that keeps nothing:
// what the engine holds itself is what is measured.
type discardCompleted struct{ puts int }

func (*discardCompleted) PutPayload(engine.JobID, []byte)        {}
func (*discardCompleted) Payload(engine.JobID) []byte            { return nil }
func (*discardCompleted) DeletePayload(engine.JobID)             {}
func (d *discardCompleted) PutCompleted(*engine.CompletedRecord) { d.puts++ }
func (*discardCompleted) DeleteCompleted(engine.JobID)           {}
func (*discardCompleted) Completed(engine.JobID) (engine.CompletedRecord, bool) {
	return engine.CompletedRecord{}, false
}

// BenchmarkEnqueueReserveAckKept is BenchmarkEnqueueReserveAck on a queue
// that keeps completed jobs, each acked with a 32-byte result: what
// keeping them adds to an ack (here into the in-heap CompletedStore, a
// map; a node writes the record into its store's batch instead).
func BenchmarkEnqueueReserveAckKept(b *testing.B) {
	e, now := prefilled(b, func(c *engine.Config) {
		c.Queues = append(c.Queues, engine.QueueConfig{Name: "q", CompletedRetention: time.Hour})
	})
	p := engine.EnqueueParams{Queue: "q", JobType: "work", Payload: payload100}
	rp := engine.ReserveParams{Queue: "q", N: 1, WorkerID: "w"}
	result := bytes.Repeat([]byte{'r'}, 32)
	cpu := startCPU(b)
	defer cpu.stop(b)
	for i := 0; i < b.N; i++ {
		if _, err := e.Enqueue(now, p); err != nil {
			b.Fatal(err)
		}
		ds, err := e.Reserve(now, rp)
		if err != nil || len(ds) != 1 {
			b.Fatal(err)
		}
		if err := e.AckWithResult(now, engine.LeaseRef{JobID: ds[0].Job.ID, LeaseToken: ds[0].LeaseToken}, result); err != nil {
			b.Fatal(err)
		}
	}
}

// completedSeedEngine is taggedEngine with a queue keeping completed
// jobs: one acked with a result after a failed attempt, one without; the
// fuzzer starts from a layout 15 snapshot.
func completedSeedEngine(t testing.TB) *engine.Engine {
	t.Helper()
	e := taggedEngine(t)
	now := e.Now().Add(time.Second)
	if err := e.CreateQueue(now, engine.QueueConfig{Name: "kept", CompletedRetention: time.Hour}, false); err != nil {
		t.Fatal(err)
	}
	first := et.MustEnqueue(t, e, now, et.Job("kept"))
	d := et.MustReserveOne(t, e, now, "kept")
	if _, err := e.Nack(now, engine.NackParams{LeaseRef: et.Ref(d), Reason: "busy"}); err != nil {
		t.Fatal(err)
	}
	for _, result := range [][]byte{[]byte(`{"ok":true}`), nil} {
		d := et.MustReserveOne(t, e, now.Add(time.Second), "kept")
		if err := e.AckWithResult(now.Add(2*time.Second), et.Ref(d), result); err != nil {
			t.Fatal(err)
		}
		if result == nil {
			break
		}
		et.MustEnqueue(t, e, now, et.Job("kept"))
	}
	if j, err := e.GetJob(first); err != nil || j.State != engine.StateCompleted || len(j.History) != 1 {
		t.Fatalf("seed: %+v %v", j, err)
	}
	return e
}
