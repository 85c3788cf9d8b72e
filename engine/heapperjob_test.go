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
// plain jobs (no key, no schedule, no custom field) into one queue of an
// engine whose payloads live off the heap, and reports the live heap they
// add per job (heap-B/job), for a 256 B and a 64 KiB payload. Run once:
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
	for _, size := range []int{256, 64 << 10} {
		b.Run(fmt.Sprintf("payload=%d/jobs=%d", size, n), func(b *testing.B) {
			payload := make([]byte, size)
			for range b.N {
				e := et.New(b)
				e.UsePayloadStore(discardPayloads{})
				e.EnablePayloadsOffHeap(et.Epoch)
				before := heapInUse()
				p := engine.EnqueueParams{Queue: "q", JobType: "work", Payload: payload}
				for range n {
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
