package rpc_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/sepp-io/sepp/client"
	"github.com/sepp-io/sepp/cluster"
	"github.com/sepp-io/sepp/cluster/clustertest"
	seppv1 "github.com/sepp-io/sepp/proto/sepp/v1"
	"github.com/sepp-io/sepp/rpc"
	"github.com/sepp-io/sepp/rpc/rpctest"
)

// The benchmarks drive a real three-node cluster in this process (loopback
// TCP for raft and gRPC, fsync on, DefaultConfig's timeouts) through the Go
// client, the way `sepp bench` does, so that one profile covers client,
// gRPC, rpc conversion, proposer, raft and the state machine:
//
//	go test -run '^$' -bench 'Produce|Consume|EndToEnd' -benchmem ./rpc/
//	go test -run '^$' -bench Produce -benchtime 50000x -cpuprofile cpu.out ./rpc/

// benchCluster starts three nodes with gRPC servers and returns a client
// that knows all of them.
func benchCluster(b *testing.B) *client.Client {
	b.Helper()
	cli, _ := benchClusterNodes(b)
	return cli
}

// benchClusterNodes is benchCluster that also returns the nodes.
func benchClusterNodes(b *testing.B) (*client.Client, *rpctest.ServedCluster) {
	b.Helper()
	nodes := rpctest.ServeCluster(b, 3, nil, clustertest.WithConfig(func(i int, cfg *cluster.Config) {
		d := cluster.DefaultConfig()
		cfg.HeartbeatTimeout = d.HeartbeatTimeout
		cfg.ElectionTimeout = d.ElectionTimeout
		cfg.LeaderLeaseTimeout = d.LeaderLeaseTimeout
		cfg.LeaseGrace = d.LeaseGrace
		cfg.TickMaxWait = d.TickMaxWait
		cfg.SnapshotInterval = d.SnapshotInterval
	}))
	addrs := nodes.Addrs()
	nodes.WaitLeader()
	cli, err := client.New(context.Background(), addrs)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { cli.Close() })
	return cli, nodes
}

var benchQueueSeq atomic.Int64

func benchQueue(name string) string {
	return fmt.Sprintf("%s-%d", name, benchQueueSeq.Add(1))
}

// produceN enqueues n jobs of payload bytes through a Producer with at most
// window jobs outstanding (sepp bench's produce scenario).
func produceN(b *testing.B, cli *client.Client, queue string, n, window int, payload []byte) {
	b.Helper()
	ctx := context.Background()
	p := cli.NewProducer(client.ProducerOptions{})
	slots := make(chan struct{}, window)
	var failed atomic.Int64
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		slots <- struct{}{}
		pe := p.EnqueueAsync(ctx, client.NewEnqueueRequest(queue, "bench").WithPayload(payload))
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := pe.Result(); err != nil {
				failed.Add(1)
			}
			<-slots
		}()
	}
	wg.Wait()
	if err := p.Close(ctx); err != nil {
		b.Fatal(err)
	}
	if f := failed.Load(); f > 0 {
		b.Fatalf("%d of %d enqueues failed", f, n)
	}
}

// BenchmarkProduce: b.N enqueues of 256 bytes, window 256, through the
// client's Producer.
func BenchmarkProduce(b *testing.B) {
	cli := benchCluster(b)
	payload := make([]byte, 256)
	// Warm up: connections, the queue, the leader's caches.
	produceN(b, cli, benchQueue("warm"), 2000, 256, payload)
	queue := benchQueue("produce")
	b.ReportAllocs()
	b.ResetTimer()
	start, cpu0 := time.Now(), cpuTime()
	produceN(b, cli, queue, b.N, 256, payload)
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "jobs/s")
	b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/float64(b.N), "cpu-µs/job")
}

// BenchmarkConsume: reserve batches of 100 with 16 concurrent consumers,
// ack each job with a confirmed Ack (coalesced by the client), until b.N
// jobs are done.
func BenchmarkConsume(b *testing.B) {
	cli := benchCluster(b)
	queue := benchQueue("consume")
	produceN(b, cli, queue, b.N, 256, make([]byte, 256))
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	start, cpu0 := time.Now(), cpuTime()
	var acked atomic.Int64
	var wg sync.WaitGroup
	for w := 0; w < 16; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				ds, err := cli.Reserve(ctx, queue, client.ReserveOptions{WorkerID: "bench", Max: 100, Lease: time.Minute})
				if err != nil {
					b.Error(err)
					return
				}
				if len(ds) == 0 {
					return
				}
				var awg sync.WaitGroup
				for _, d := range ds {
					awg.Add(1)
					go func() {
						defer awg.Done()
						if err := cli.Ack(ctx, d.Ctx); err != nil {
							b.Error(err)
						}
					}()
				}
				awg.Wait()
				acked.Add(int64(len(ds)))
			}
		}()
	}
	wg.Wait()
	b.ReportMetric(float64(acked.Load())/time.Since(start).Seconds(), "jobs/s")
	b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/float64(b.N), "cpu-µs/job")
}

// BenchmarkEndToEnd: one job at a time, enqueued through a Producer while
// a worker long-polls for it; the time from enqueue to its ack is done
// (wake-up, reserve and ack included; no queueing). entries/job counts the
// log entries written per job (an enqueue, a reserve and an ack at best).
func BenchmarkEndToEnd(b *testing.B) {
	cli, nodes := benchClusterNodes(b)
	lastIndex := func() uint64 {
		st, err := nodes.Node(nodes.WaitLeader()).Status(context.Background())
		if err != nil {
			b.Fatal(err)
		}
		return st.LastLogIndex
	}
	queue := benchQueue("e2e")
	ctx := context.Background()
	p := cli.NewProducer(client.ProducerOptions{})
	defer p.Close(ctx)
	sent := make(chan time.Time, 1)
	lat := make([]time.Duration, 0, b.N)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for len(lat) < b.N {
			ds, err := cli.Reserve(ctx, queue, client.ReserveOptions{WorkerID: "e2e", Max: 100, Lease: time.Minute, Wait: time.Second})
			if err != nil {
				b.Error(err)
				return
			}
			for _, d := range ds {
				if err := cli.Ack(ctx, d.Ctx); err != nil {
					b.Error(err)
					return
				}
				lat = append(lat, time.Since(<-sent))
			}
		}
	}()
	b.ResetTimer()
	first := lastIndex()
	for i := 0; i < b.N; i++ {
		// Let the worker settle into its long-poll first.
		time.Sleep(2 * time.Millisecond)
		sent <- time.Now()
		if _, err := p.Enqueue(ctx, client.NewEnqueueRequest(queue, "bench").WithPayload(make([]byte, 256))); err != nil {
			b.Fatal(err)
		}
	}
	<-done
	b.StopTimer()
	b.ReportMetric(float64(lastIndex()-first)/float64(b.N), "entries/job")
	slices.Sort(lat)
	if len(lat) > 0 {
		b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
		b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
	}
}

// cpuTime is the CPU time (user and system) this process has used: on a
// shared machine a steadier figure than wall-clock rates.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkEnqueueBatchRPC: one EnqueueBatch call of 128 jobs of 256 bytes
// per op against an in-memory engine: decoding, conversion, the engine and
// the results, without Raft.
func BenchmarkEnqueueBatchRPC(b *testing.B) {
	env := rpctest.Start(b, nil, rpc.Options{})
	req := &seppv1.EnqueueBatchRequest{}
	payload := make([]byte, 256)
	for range 128 {
		req.Jobs = append(req.Jobs, &seppv1.EnqueueRequest{Queue: "q", JobType: "bench", Payload: payload})
	}
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		resp, err := env.Queue.EnqueueBatch(ctx, req)
		if err != nil || len(resp.GetResults()) != 128 {
			b.Fatalf("EnqueueBatch: %d results, %v", len(resp.GetResults()), err)
		}
	}
}

// BenchmarkReserveAckRPC: per op, 100 jobs of 256 bytes go through
// EnqueueBatch, one Reserve of 100 and one AckBatch, against an in-memory
// engine (no Raft).
func BenchmarkReserveAckRPC(b *testing.B) {
	env := rpctest.Start(b, nil, rpc.Options{})
	enq := &seppv1.EnqueueBatchRequest{}
	payload := make([]byte, 256)
	for range 100 {
		enq.Jobs = append(enq.Jobs, &seppv1.EnqueueRequest{Queue: "q", JobType: "bench", Payload: payload})
	}
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := env.Queue.EnqueueBatch(ctx, enq); err != nil {
			b.Fatal(err)
		}
		resp, err := env.Queue.Reserve(ctx, &seppv1.ReserveRequest{Queue: "q", WorkerId: "w", Max: 100})
		if err != nil || len(resp.GetJobs()) != 100 {
			b.Fatalf("Reserve: %d jobs, %v", len(resp.GetJobs()), err)
		}
		ack := &seppv1.AckBatchRequest{}
		for _, j := range resp.GetJobs() {
			ack.Ctxs = append(ack.Ctxs, j.GetCtx())
		}
		if _, err := env.Queue.AckBatch(ctx, ack); err != nil {
			b.Fatal(err)
		}
	}
}
