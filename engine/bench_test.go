package engine_test

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"runtime"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/sepp-io/sepp/engine"
	et "github.com/sepp-io/sepp/engine/enginetest"
)

// Benchmarks run against a queue that already holds a million waiting jobs
// with 100-byte payloads, so every figure includes the cost of a big state.
// Run them with:
//
//	go test ./engine -run '^$' -bench . -benchmem -benchtime 1000000x

const waiting = 1_000_000

// skipMillionUnderShort skips the sizes of a million waiting jobs and up
// under -short (the O(log n) figures need them; CI's one-iteration check
// that the benchmark runs does not).
func skipMillionUnderShort(b *testing.B, n int) {
	b.Helper()
	if testing.Short() && n >= waiting {
		b.Skipf("%d waiting jobs: skipped under -short", n)
	}
}

// benchBacklog is the waiting jobs a benchmark fills before it measures: a
// million, or a hundredth of it under -short, which CI uses to check at one
// iteration that every benchmark still runs (make bench BENCHFLAGS=-short),
// where filling a million jobs per benchmark would cost a minute; or
// SEPP_BENCH_BACKLOG jobs when it is set, for the figures at ten million:
//
//	SEPP_BENCH_BACKLOG=10000000 GOMAXPROCS=1 go test ./engine -run '^$' -bench PayloadLengths -benchtime 3x -timeout 30m
func benchBacklog() int {
	if n, err := strconv.Atoi(os.Getenv("SEPP_BENCH_BACKLOG")); err == nil && n > 0 {
		return n
	}
	if testing.Short() {
		return waiting / 100
	}
	return waiting
}

// cpuTimer reports the process CPU time (all threads, the GC's included) per
// op next to ns/op: on a shared, loaded machine wall time per op says more
// about the neighbours than about the engine.
type cpuTimer struct{ start time.Duration }

func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func startCPU(b *testing.B) *cpuTimer {
	b.Helper()
	b.ReportAllocs()
	b.ResetTimer()
	return &cpuTimer{start: processCPU()}
}

func (c *cpuTimer) stop(b *testing.B) {
	b.Helper()
	b.StopTimer()
	b.ReportMetric(float64(processCPU()-c.start)/float64(b.N), "cpu-ns/op")
}

var payload100 = make([]byte, 100)

func prefilled(tb testing.TB, mutate ...func(*engine.Config)) (*engine.Engine, time.Time) {
	tb.Helper()
	e := et.New(tb, mutate...)
	now := et.Epoch
	e.EnableCompactCharge(now) // as a cluster of this release runs
	for range benchBacklog() {
		if _, err := e.Enqueue(now, engine.EnqueueParams{Queue: "q", JobType: "work", Payload: payload100}); err != nil {
			tb.Fatal(err)
		}
	}
	return e, now
}

func BenchmarkEnqueue(b *testing.B) {
	e, now := prefilled(b)
	p := engine.EnqueueParams{Queue: "q", JobType: "work", Payload: payload100}
	cpu := startCPU(b)
	defer cpu.stop(b)
	for i := 0; i < b.N; i++ {
		if _, err := e.Enqueue(now, p); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkEnqueueWithKey enqueues with a fresh 32-character idempotency key
// per job, as the Go client does, behind a million waiting jobs. The clock
// advances keyedEnqueueStep per enqueue, so the idempotency window holds a
// million keys at most: from the millionth enqueue on, each one also expires
// the oldest key, as in a long-running producer's steady state. (With a
// stopped clock a fast machine's b.N ran into max_idempotency_keys.)
func BenchmarkEnqueueWithKey(b *testing.B) {
	e, now := prefilled(b)
	keys := make([]string, b.N)
	for i := range keys {
		keys[i] = fmt.Sprintf("%032x", i)
	}
	cpu := startCPU(b)
	defer cpu.stop(b)
	for i := 0; i < b.N; i++ {
		p := engine.EnqueueParams{Queue: "q", JobType: "work", Payload: payload100, IdempotencyKey: keys[i]}
		if _, err := e.Enqueue(now.Add(time.Duration(i)*keyedEnqueueStep), p); err != nil {
			b.Fatal(err)
		}
	}
}

// keyedEnqueueStep is the clock's advance per keyed enqueue: the default
// two-minute idempotency window over it is a million keys.
const keyedEnqueueStep = 120 * time.Microsecond

// BenchmarkEnqueueReserveAck is the full cycle of one job: enqueue, reserve,
// ack, behind a million waiting jobs.
func BenchmarkEnqueueReserveAck(b *testing.B) {
	e, now := prefilled(b)
	p := engine.EnqueueParams{Queue: "q", JobType: "work", Payload: payload100}
	rp := engine.ReserveParams{Queue: "q", N: 1, WorkerID: "w"}
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
		if err := e.Ack(now, engine.LeaseRef{JobID: ds[0].Job.ID, LeaseToken: ds[0].LeaseToken}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkReserveNackRetry reserves the oldest job and nacks it for an
// immediate retry: it returns to its original place, ahead of the million.
func BenchmarkReserveNackRetry(b *testing.B) {
	e, now := prefilled(b, func(c *engine.Config) {
		c.Limits.MaxAttemptsCeiling = 1 << 31
		c.Limits.DefaultMaxAttempts = 1 << 31
	})
	rp := engine.ReserveParams{Queue: "q", N: 1, WorkerID: "w"}
	cpu := startCPU(b)
	defer cpu.stop(b)
	for i := 0; i < b.N; i++ {
		ds, err := e.Reserve(now, rp)
		if err != nil || len(ds) != 1 {
			b.Fatal(err)
		}
		if _, err := e.Nack(now, engine.NackParams{LeaseRef: engine.LeaseRef{JobID: ds[0].Job.ID, LeaseToken: ds[0].LeaseToken}, Reason: "again"}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPromote promotes one scheduled job per op. The scheduled jobs were
// enqueued before the million Ready ones, so each promotion goes back to its
// original place in line (the O(log n) path, not the FIFO append).
func BenchmarkPromote(b *testing.B) {
	e := et.New(b)
	start := et.Epoch
	for i := 0; i < b.N; i++ {
		p := engine.EnqueueParams{Queue: "q", JobType: "work", Payload: payload100, ScheduledAt: start.Add(time.Duration(i+1) * time.Microsecond)}
		if _, err := e.Enqueue(start, p); err != nil {
			b.Fatal(err)
		}
	}
	for range benchBacklog() {
		if _, err := e.Enqueue(start, engine.EnqueueParams{Queue: "q", JobType: "work", Payload: payload100}); err != nil {
			b.Fatal(err)
		}
	}
	cpu := startCPU(b)
	defer cpu.stop(b)
	for i := 0; i < b.N; i++ {
		if res := e.Tick(start.Add(time.Duration(i+1) * time.Microsecond)); res.Promoted != 1 {
			b.Fatalf("promoted %d", res.Promoted)
		}
	}
}

// TestMemoryPerJob measures the heap held by a million waiting jobs with
// 100-byte payloads; the budget is 300 MB.
func TestMemoryPerJob(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("a million jobs: skipped under -short and -race")
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	e, _ := prefilled(t)
	runtime.GC()
	runtime.ReadMemStats(&after)
	perJob := float64(after.HeapAlloc-before.HeapAlloc) / waiting
	t.Logf("heap: %.1f bytes per waiting job (%.1f MB for %d jobs with 100-byte payloads)", perJob, perJob*waiting/1e6, waiting)
	if perJob*waiting > 300e6 {
		t.Fatalf("%.0f MB for a million jobs, budget 300 MB", perJob*waiting/1e6)
	}
	runtime.KeepAlive(e)
}

// rememberedKeys is limits.max_idempotency_keys: the keys a server still
// remembers when its producers outran the window.
const rememberedKeys = 4_000_000

// snapshotOfWaiting is the snapshot of a million (benchBacklog) waiting 100-byte jobs, each
// enqueued with a 32-character idempotency key as the Go client sends, so
// the key table is part of the state as it is on a server; of a larger
// backlog, the last rememberedKeys of them keyed.
func snapshotOfWaiting(tb testing.TB) []byte {
	tb.Helper()
	e := engine.New(engine.DefaultConfig())
	now := et.Epoch
	for i := range benchBacklog() {
		p := engine.EnqueueParams{Queue: "bench.recovery.1796004621867132920", JobType: "bench", Payload: payload100}
		if i >= benchBacklog()-rememberedKeys {
			p.IdempotencyKey = fmt.Sprintf("%032x", i)
		}
		if _, err := e.Enqueue(now, p); err != nil {
			tb.Fatal(err)
		}
	}
	var buf bytes.Buffer
	if err := e.Snapshot(&buf); err != nil {
		tb.Fatal(err)
	}
	return buf.Bytes()
}

// BenchmarkRestore restores a million waiting jobs (with their idempotency
// keys), the bulk of a node's restart:
//
//	go test ./engine -run '^$' -bench Restore -benchmem -benchtime 5x
func BenchmarkRestore(b *testing.B) {
	data := snapshotOfWaiting(b)
	b.SetBytes(int64(len(data)))
	cpu := startCPU(b)
	defer cpu.stop(b)
	for i := 0; i < b.N; i++ {
		e := engine.New(engine.DefaultConfig())
		if err := e.Restore(bytes.NewReader(data)); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRestorePayloadLengths restores a million waiting jobs with
// their keys as a restarting node does: from a stream of payload lengths,
// the payloads staying in the node's store; from each form of the
// snapshot (hand-written layouts, protobuf).
func BenchmarkRestorePayloadLengths(b *testing.B) {
	e := engine.New(engine.DefaultConfig())
	e.UsePayloadStore(sharedPayload{payload100})
	if err := e.Restore(bytes.NewReader(snapshotOfWaiting(b))); err != nil {
		b.Fatal(err)
	}
	for _, form := range snapshotForms {
		b.Run("form="+form.name, func(b *testing.B) {
			var buf bytes.Buffer
			if err := e.SnapshotWith(&buf, engine.SnapshotOptions{PayloadLengths: true, Protobuf: form.protobuf}); err != nil {
				b.Fatal(err)
			}
			data := buf.Bytes()
			b.SetBytes(int64(len(data)))
			cpu := startCPU(b)
			defer cpu.stop(b)
			for i := 0; i < b.N; i++ {
				e := engine.New(engine.DefaultConfig())
				e.UsePayloadStore(sharedPayload{payload100})
				if err := e.RestoreWith(bytes.NewReader(data), engine.SnapshotOptions{PayloadLengths: true}); err != nil {
					b.Fatal(err)
				}
				e.PayloadsLoaded()
			}
		})
	}
}

// snapshotForms are the two forms of the engine's snapshot.
var snapshotForms = []struct {
	name     string
	protobuf bool
}{{"legacy", false}, {"protobuf", true}}

// BenchmarkSnapshot writes the snapshot of a million waiting jobs.
func BenchmarkSnapshot(b *testing.B) {
	data := snapshotOfWaiting(b)
	e := engine.New(engine.DefaultConfig())
	if err := e.Restore(bytes.NewReader(data)); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	cpu := startCPU(b)
	defer cpu.stop(b)
	for i := 0; i < b.N; i++ {
		if err := e.Snapshot(io.Discard); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSnapshotPayloadLengths writes the snapshot of a million waiting
// jobs as the state machine takes it under its lock: payload lengths in
// place of the payloads, which it streams from its store afterwards; in
// each form of the snapshot.
func BenchmarkSnapshotPayloadLengths(b *testing.B) {
	data := snapshotOfWaiting(b)
	e := engine.New(engine.DefaultConfig())
	e.UsePayloadStore(sharedPayload{payload100})
	if err := e.Restore(bytes.NewReader(data)); err != nil {
		b.Fatal(err)
	}
	for _, form := range snapshotForms {
		b.Run("form="+form.name, func(b *testing.B) {
			var out countingWriter
			cpu := startCPU(b)
			defer cpu.stop(b)
			for i := 0; i < b.N; i++ {
				out = 0
				if err := e.SnapshotWith(&out, engine.SnapshotOptions{PayloadLengths: true, Protobuf: form.protobuf}); err != nil {
					b.Fatal(err)
				}
			}
			b.SetBytes(int64(out))
		})
	}
}

// countingWriter counts what is written to it.
type countingWriter int64

func (w *countingWriter) Write(p []byte) (int, error) {
	*w += countingWriter(len(p))
	return len(p), nil
}

// TestMemoryRestored measures the heap held by a million waiting jobs with
// their idempotency keys (as the Go client sends: 32 characters each),
// built by Restore as a restarted node builds them, their payloads kept
// outside the heap as a node keeps them; the budget is 320 MB (301 MB
// measured with the keys packed and the 100-byte payloads in the heap,
// 317 MB before the keys were packed).
func TestMemoryRestored(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("a million jobs: skipped under -short and -race")
	}
	data := snapshotOfWaiting(t)
	var with, without runtime.MemStats
	e := engine.New(engine.DefaultConfig())
	// A node keeps payloads in its on-disk store, not in the heap: what
	// is measured is the engine's own memory per job.
	e.UsePayloadStore(sharedPayload{payload100})
	if err := e.Restore(bytes.NewReader(data)); err != nil {
		t.Fatal(err)
	}
	runtime.GC()
	runtime.ReadMemStats(&with)
	runtime.KeepAlive(e)
	runtime.GC()
	runtime.ReadMemStats(&without)
	perJob := float64(with.HeapAlloc-without.HeapAlloc) / waiting
	t.Logf("heap: %.1f bytes per restored job with its key (%.1f MB); snapshot %.1f MB", perJob, perJob*waiting/1e6, float64(len(data))/1e6)
	if perJob*waiting > 320e6 {
		t.Fatalf("%.0f MB for a million jobs with keys, budget 320 MB", perJob*waiting/1e6)
	}
}

// sharedPayload is a PayloadStore for measuring the engine's own memory:
// every job of the measurement has the same payload, which it keeps once,
// as a node's on-disk store keeps payloads outside the Go heap.
type sharedPayload struct{ p []byte }

func (s sharedPayload) PutPayload(id engine.JobID, p []byte) {
	if !bytes.Equal(p, s.p) {
		panic(fmt.Sprintf("sharedPayload: job %d has another payload", id))
	}
}
func (s sharedPayload) Payload(engine.JobID) []byte { return s.p }
func (sharedPayload) DeletePayload(engine.JobID)    {}
