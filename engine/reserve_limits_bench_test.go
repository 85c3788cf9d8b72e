package engine_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/sepp-io/sepp/engine"
	et "github.com/sepp-io/sepp/engine/enginetest"
)

// BenchmarkEnqueueReserveAckLimited is BenchmarkEnqueueReserveAck on a queue
// running every reserve limit (max_reserved, a rate limit never reached, one
// reserved job per customer over 1000 customers), behind n waiting jobs: the
// cost per cycle must not grow with n beyond O(log n).
func BenchmarkEnqueueReserveAckLimited(b *testing.B) {
	limited := engine.QueueConfig{Name: "q", MaxReserved: 1000, RateLimit: 1_000_000, RateBurst: 1_000_000, ConcurrencyKey: "customer", MaxPerKey: 1}
	customers := make([]map[string]string, 1000)
	for i := range customers {
		customers[i] = map[string]string{"customer": fmt.Sprint("c", i)}
	}
	for _, n := range []int{10_000, 100_000, 1_000_000} {
		b.Run(fmt.Sprint("waiting=", n), func(b *testing.B) {
			skipMillionUnderShort(b, n)
			e := et.New(b, et.WithQueue(limited))
			now := et.Epoch
			for i := range n {
				if _, err := e.Enqueue(now, engine.EnqueueParams{Queue: "q", JobType: "work", Payload: payload100, Custom: customers[i%len(customers)]}); err != nil {
					b.Fatal(err)
				}
			}
			rp := engine.ReserveParams{Queue: "q", N: 1, WorkerID: "w"}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				// The clock moves a microsecond per cycle: the bucket
				// refills a token each, as a steady producer's would.
				now = now.Add(time.Microsecond)
				if _, err := e.Enqueue(now, engine.EnqueueParams{Queue: "q", JobType: "work", Payload: payload100, Custom: customers[i%len(customers)]}); err != nil {
					b.Fatal(err)
				}
				ds, err := e.Reserve(now, rp)
				if err != nil || len(ds) != 1 {
					b.Fatalf("reserve: %v, %d deliveries", err, len(ds))
				}
				if err := e.Ack(now, et.Ref(ds[0])); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkReserveAckHotKey holds n waiting jobs of one customer with
// max_per_key 1: every reserve finds the key full behind the one reserved
// job. After the first reserve has parked them, each ack puts one back in
// line and the next reserve takes it: O(log n) per cycle.
func BenchmarkReserveAckHotKey(b *testing.B) {
	hot := map[string]string{"customer": "hot"}
	for _, n := range []int{10_000, 100_000, 1_000_000} {
		b.Run(fmt.Sprint("waiting=", n), func(b *testing.B) {
			skipMillionUnderShort(b, n)
			e := et.New(b, et.WithQueue(engine.QueueConfig{Name: "q", ConcurrencyKey: "customer", MaxPerKey: 1}))
			now := et.Epoch
			for range n + b.N {
				if _, err := e.Enqueue(now, engine.EnqueueParams{Queue: "q", JobType: "work", Payload: payload100, Custom: hot}); err != nil {
					b.Fatal(err)
				}
			}
			rp := engine.ReserveParams{Queue: "q", N: 1, WorkerID: "w"}
			d := et.MustReserveOne(b, e, now, "q")
			if ds := et.MustReserve(b, e, now, "q", 1); len(ds) != 0 { // parks every other job
				b.Fatalf("a second job of the hot key was reserved")
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if err := e.Ack(now, et.Ref(d)); err != nil {
					b.Fatal(err)
				}
				ds, err := e.Reserve(now, rp)
				if err != nil || len(ds) != 1 {
					b.Fatalf("reserve: %v, %d deliveries", err, len(ds))
				}
				d = ds[0]
			}
		})
	}
}
