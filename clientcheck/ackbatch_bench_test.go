package clientcheck_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/sepp-io/sepp/client"
)

// ackBenchDeliveries is the size of one reserve in the bench's consume
// scenario.
const ackBenchDeliveries = 100

// reserveForBench fills q and reserves n deliveries, off the timer.
func reserveForBench(b *testing.B, c *client.Client, n int) []client.JobContext {
	b.Helper()
	b.StopTimer()
	defer b.StartTimer()
	ctx := context.Background()
	reqs := make([]*client.EnqueueRequest, n)
	for i := range reqs {
		reqs[i] = client.NewEnqueueRequest("q", "bench")
	}
	if _, err := c.EnqueueBatch(ctx, reqs); err != nil {
		b.Fatal(err)
	}
	ds, err := c.Reserve(ctx, "q", client.ReserveOptions{WorkerID: "bench", Max: n})
	if err != nil || len(ds) != n {
		b.Fatalf("reserve: %d deliveries, %v", len(ds), err)
	}
	jcs := make([]client.JobContext, n)
	for i, d := range ds {
		jcs[i] = d.Ctx
	}
	return jcs
}

// cpuMeter sums the process CPU (client and in-memory server together)
// spent inside the timed part of each op, leaving out the set-up.
type cpuMeter struct {
	total time.Duration
	start time.Duration
	ok    bool
}

func (m *cpuMeter) begin() { m.start, m.ok = processCPU() }

func (m *cpuMeter) end() {
	if now, ok := processCPU(); ok && m.ok {
		m.total += now - m.start
	}
}

func (m *cpuMeter) report(b *testing.B) {
	b.Helper()
	if m.ok && b.N > 0 {
		b.ReportMetric(float64(m.total)/float64(b.N), "cpu-ns/op")
	}
}

// BenchmarkAck_PerGoroutine acks 100 deliveries per op, each from its own
// goroutine calling Ack (the acker coalesces them). Figures include the
// in-memory server's work:
//
//	go test -run '^$' -bench 'Ack_' -benchmem ./clientcheck/
func BenchmarkAck_PerGoroutine(b *testing.B) {
	c := benchNode(b)
	ctx := context.Background()
	b.ReportAllocs()
	var cpu cpuMeter
	for b.Loop() {
		jcs := reserveForBench(b, c, ackBenchDeliveries)
		cpu.begin()
		var wg sync.WaitGroup
		for _, jc := range jcs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := c.Ack(ctx, jc); err != nil {
					b.Error(err)
				}
			}()
		}
		wg.Wait()
		cpu.end()
	}
	cpu.report(b)
}

// BenchmarkAck_Batch acks the same 100 deliveries per op with one AckBatch.
func BenchmarkAck_Batch(b *testing.B) {
	c := benchNode(b)
	ctx := context.Background()
	b.ReportAllocs()
	var cpu cpuMeter
	for b.Loop() {
		jcs := reserveForBench(b, c, ackBenchDeliveries)
		cpu.begin()
		for _, err := range c.AckBatch(ctx, jcs) {
			if err != nil {
				b.Fatal(err)
			}
		}
		cpu.end()
	}
	cpu.report(b)
}
