package clientcheck_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"google.golang.org/grpc"

	"github.com/sepp-io/sepp/client"
	"github.com/sepp-io/sepp/cluster"
	"github.com/sepp-io/sepp/engine"
	"github.com/sepp-io/sepp/rpc"
	"github.com/sepp-io/sepp/rpc/rpctest"
)

// methodCounter counts the gRPC calls a server receives, by method.
type methodCounter struct {
	mu    sync.Mutex
	calls map[string]int
}

func (m *methodCounter) intercept(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	m.mu.Lock()
	m.calls[info.FullMethod]++
	m.mu.Unlock()
	return handler(ctx, req)
}

func (m *methodCounter) count(method string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.calls[method]
}

// Acks that arrive while every send slot is busy leave together in one
// AckBatch call, and each caller still gets its own confirmed outcome: the
// good deliveries are acked, a stale one fails alone with ErrLeaseLost.
func TestClient_CoalescesConcurrentAcks(t *testing.T) {
	b, err := rpctest.NewLocalBackend(engine.DefaultConfig(), cluster.NodeInfo{ID: "n1"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	h := &hookedBackend{LocalBackend: b, calls: make(map[string]int)}
	counter := &methodCounter{calls: map[string]int{}}
	addr := rpctest.Serve(t, h, rpc.Options{UnaryInterceptors: []grpc.UnaryServerInterceptor{counter.intercept}})
	c := newClient(t, []string{addr})
	ctx := testContext(t)

	const first, queued = 4, 20 // first fills every send slot
	for i := 0; i < first+queued; i++ {
		if _, err := c.Enqueue(ctx, client.NewEnqueueRequest("q", "t")); err != nil {
			t.Fatal(err)
		}
	}
	ds, err := c.Reserve(ctx, "q", client.ReserveOptions{WorkerID: "w", Max: first + queued})
	if err != nil || len(ds) != first+queued {
		t.Fatalf("reserve: %d deliveries, %v", len(ds), err)
	}
	stale := ds[first+3].Ctx
	stale.LeaseToken++

	release := make(chan struct{})
	h.setBefore(func(ctx context.Context, op string) error {
		if op != "Ack" {
			return nil
		}
		select {
		case <-release:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	})
	errs := make([]error, first+queued)
	var wg sync.WaitGroup
	ack := func(i int, jc client.JobContext) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = c.Ack(ctx, jc)
		}()
	}
	// One at a time, so each is a lone ack holding its own send slot.
	for i := 0; i < first; i++ {
		ack(i, ds[i].Ctx)
		waitFor(t, "the ack to reach the server", func() bool { return h.count("Ack") == i+1 })
	}
	for i := first; i < first+queued; i++ {
		jc := ds[i].Ctx
		if i == first+3 {
			jc = stale
		}
		ack(i, jc)
	}
	waitFor(t, "the later acks queued", func() bool { return c.AckBacklog().Queued == queued })
	close(release)
	wg.Wait()

	for i, err := range errs {
		if i == first+3 {
			if !errors.Is(err, client.ErrLeaseLost) {
				t.Errorf("stale ack: err = %v, want ErrLeaseLost", err)
			}
			continue
		}
		if err != nil {
			t.Errorf("ack %d: %v", i, err)
		}
	}
	if got := counter.count("/sepp.v1.QueueService/Ack"); got != first {
		t.Errorf("%d plain Ack calls, want %d (the lone acks)", got, first)
	}
	if got := counter.count("/sepp.v1.QueueService/AckBatch"); got != 1 {
		t.Errorf("%d AckBatch calls, want 1 for the %d queued acks", got, queued)
	}
	if st := queueStats(t, c, "q"); st.Reserved != 1 {
		t.Errorf("reserved = %d, want 1 (the delivery acked with a stale token)", st.Reserved)
	}
}
