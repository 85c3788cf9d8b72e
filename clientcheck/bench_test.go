package clientcheck_test

import (
	"context"
	"testing"

	"github.com/sepp-io/sepp/client"
	"github.com/sepp-io/sepp/cluster"
	"github.com/sepp-io/sepp/engine"
	"github.com/sepp-io/sepp/rpc"
	"github.com/sepp-io/sepp/rpc/rpctest"
)

// The client's hot paths against one in-memory node over loopback gRPC
// (no Raft, no disk), so the figures are the client's and the wire's:
//
//	go test -run '^$' -bench . -benchmem ./clientcheck/
//
// The three-node figures (Raft, fsync) are rpc's BenchmarkProduce and
// friends.

func benchNode(b *testing.B) *client.Client {
	b.Helper()
	backend, err := rpctest.NewLocalBackend(engine.DefaultConfig(), cluster.NodeInfo{ID: "n1"}, nil)
	if err != nil {
		b.Fatal(err)
	}
	addr := rpctest.Serve(b, backend, rpc.Options{})
	c, err := client.New(context.Background(), []string{addr})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { c.Close() })
	return c
}

// BenchmarkProducer: one job of 256 bytes per op through EnqueueAsync, 256
// outstanding; allocations per job include the server's.
func BenchmarkProducer(b *testing.B) {
	c := benchNode(b)
	ctx := context.Background()
	p := c.NewProducer(client.ProducerOptions{})
	payload := make([]byte, 256)
	window := make([]*client.PendingEnqueue, 0, 256)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		window = append(window, p.EnqueueAsync(ctx, client.NewEnqueueRequest("q", "bench").WithPayload(payload)))
		if len(window) == cap(window) || i == b.N-1 {
			for _, pe := range window {
				if _, err := pe.Result(); err != nil {
					b.Fatal(err)
				}
			}
			window = window[:0]
		}
	}
	b.StopTimer()
	if err := p.Close(ctx); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkEnqueueBatch: 128 jobs of 256 bytes per op, one call.
func BenchmarkEnqueueBatch(b *testing.B) {
	c := benchNode(b)
	ctx := context.Background()
	payload := make([]byte, 256)
	reqs := make([]*client.EnqueueRequest, 128)
	for i := range reqs {
		reqs[i] = client.NewEnqueueRequest("q", "bench").WithPayload(payload)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := c.EnqueueBatch(ctx, reqs); err != nil {
			b.Fatal(err)
		}
	}
}
