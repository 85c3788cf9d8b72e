package engine_test

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"testing"

	"github.com/sepp-io/sepp/engine"
	et "github.com/sepp-io/sepp/engine/enginetest"
)

// discardPayloads is a PayloadStore that keeps nothing, standing in for
// the node's on-disk store: what the heap then holds per job is the
// engine's own index, which is what issue 35 item 1 budgets (tens of
// bytes per waiting job whatever its payload). Nothing reads a payload
// back in these benchmarks.
type discardPayloads struct{}

func (discardPayloads) PutPayload(engine.JobID, []byte) {}
func (discardPayloads) Payload(engine.JobID) []byte     { return nil }
func (discardPayloads) DeletePayload(engine.JobID)      {}
func (discardPayloads) NewPayloadReader() (func(engine.JobID) []byte, func()) {
	return func(engine.JobID) []byte { return nil }, func() {}
}

// heapInUse is the live heap after a full collection.
func heapInUse() uint64 {
	runtime.GC()
	runtime.GC() // the second one frees what the first one's finalizers released
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// BenchmarkHeapPerWaitingJob enqueues SEPP_HEAP_JOBS (default 1M) fresh,
// plain jobs (no schedule, no custom field) into one queue of an engine
// whose payloads live off the heap, and reports the live heap they add per
// job (heap-B/job), for a 256 B and a 64 KiB payload, and for 256 B jobs
// each with an idempotency key of the form the clients generate, still
// remembered (the difference is what a remembered key costs). Run once:
//
//	go test ./engine -run '^$' -bench HeapPerWaitingJob -benchtime 1x
func BenchmarkHeapPerWaitingJob(b *testing.B) {
	n := 1_000_000
	if s := os.Getenv("SEPP_HEAP_JOBS"); s != "" {
		v, err := strconv.Atoi(s)
		if err != nil {
			b.Fatalf("SEPP_HEAP_JOBS: %v", err)
		}
		n = v
	}
	for _, c := range []struct {
		size  int
		keyed bool
	}{{256, false}, {64 << 10, false}, {256, true}} {
		name := fmt.Sprintf("payload=%d/jobs=%d", c.size, n)
		if c.keyed {
			name += "/key=remembered"
		}
		b.Run(name, func(b *testing.B) {
			payload := make([]byte, c.size)
			for range b.N {
				e := et.New(b)
				e.UsePayloadStore(discardPayloads{})
				e.EnablePayloadsOffHeap(et.Epoch)
				cfg := e.Config()
				cfg.Limits.MaxIdempotencyKeys = max(cfg.Limits.MaxIdempotencyKeys, n+1)
				if err := e.SetConfig(et.Epoch, cfg); err != nil {
					b.Fatal(err)
				}
				before := heapInUse()
				p := engine.EnqueueParams{Queue: "q", JobType: "work", Payload: payload}
				for i := range n {
					if c.keyed {
						p.IdempotencyKey = fmt.Sprintf("%032x", i)
					}
					if _, err := e.Enqueue(et.Epoch, p); err != nil {
						b.Fatal(err)
					}
				}
				after := heapInUse()
				b.ReportMetric(float64(int64(after)-int64(before))/float64(n), "heap-B/job")
				runtime.KeepAlive(e)
			}
		})
	}
}
