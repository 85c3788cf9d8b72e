package clientcheck_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/sepp-io/sepp/client"
	"github.com/sepp-io/sepp/cluster"
	"github.com/sepp-io/sepp/engine"
	"github.com/sepp-io/sepp/rpc"
	"github.com/sepp-io/sepp/rpc/rpctest"
)

// hookedBackend is a real engine (rpctest.LocalBackend, wall clock) whose
// writes the test can count and fail after they applied, to play a leader
// that lost its answer in transit.
type hookedBackend struct {
	*rpctest.LocalBackend

	mu    sync.Mutex
	calls map[string]int
	// after runs once the operation applied; a non-nil error is returned
	// in place of the result.
	after func(op string) error
	// before runs before the operation; it may block (ctx is the call's).
	before func(ctx context.Context, op string) error
	// reserveHook replaces Reserve when set.
	reserveHook func(ctx context.Context, p engine.ReserveParams) ([]engine.Delivery, error)
	// largestBatch is the most jobs one EnqueueBatch call carried.
	largestBatch int
}

func (h *hookedBackend) largestEnqueueBatch() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.largestBatch
}

func (h *hookedBackend) setReserveHook(fn func(ctx context.Context, p engine.ReserveParams) ([]engine.Delivery, error)) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.reserveHook = fn
}

func (h *hookedBackend) enter(ctx context.Context, op string) error {
	h.mu.Lock()
	h.calls[op]++
	before := h.before
	h.mu.Unlock()
	if before != nil {
		return before(ctx, op)
	}
	return nil
}

func (h *hookedBackend) leave(op string, err error) error {
	if err != nil {
		return err
	}
	h.mu.Lock()
	after := h.after
	h.mu.Unlock()
	if after != nil {
		return after(op)
	}
	return nil
}

func (h *hookedBackend) setAfter(fn func(op string) error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.after = fn
}

func (h *hookedBackend) setBefore(fn func(ctx context.Context, op string) error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.before = fn
}

func (h *hookedBackend) count(op string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.calls[op]
}

// Propose passes every write through the hooks, by its name (an
// extension carrying progress is "ExtendLease+progress").
func (h *hookedBackend) Propose(ctx context.Context, op engine.Op) (any, error) {
	name := op.OpName()
	if ext, ok := op.(engine.ExtendLeaseOp); ok && ext.Params.Progress != nil {
		name += "+progress"
	}
	if err := h.enter(ctx, name); err != nil {
		return nil, err
	}
	switch o := op.(type) {
	case engine.EnqueueBatchOp:
		h.mu.Lock()
		h.largestBatch = max(h.largestBatch, len(o.Items))
		h.mu.Unlock()
	case engine.ReserveOp:
		h.mu.Lock()
		hook := h.reserveHook
		h.mu.Unlock()
		if hook != nil {
			return hook(ctx, o.Params)
		}
	}
	res, err := h.LocalBackend.Propose(ctx, op)
	return res, h.leave(name, err)
}

type node struct {
	backend *hookedBackend
	addr    string
}

// startNode serves a leading node over a fresh engine on the wall clock.
// mutate, when set, adjusts the default config first.
func startNode(t *testing.T, id string, mutate func(*engine.Config)) *node {
	t.Helper()
	cfg := engine.DefaultConfig()
	if mutate != nil {
		mutate(&cfg)
	}
	b, err := rpctest.NewLocalBackend(cfg, cluster.NodeInfo{ID: id}, nil)
	if err != nil {
		t.Fatal(err)
	}
	h := &hookedBackend{LocalBackend: b, calls: make(map[string]int)}
	addr := rpctest.Serve(t, h, rpc.Options{MaxReserveWait: 200 * time.Millisecond})
	return &node{backend: h, addr: addr}
}

func withRetention(cfg *engine.Config) { cfg.Limits.DeadLetterRetention = time.Hour }

// newClient connects to addrs with a short backoff so tests move quickly.
func newClient(t *testing.T, addrs []string, opts ...client.Option) *client.Client {
	t.Helper()
	opts = append([]client.Option{client.WithBackoff(time.Millisecond, 20*time.Millisecond), client.WithRetryTimeout(10 * time.Second)}, opts...)
	c, err := client.New(context.Background(), addrs, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func testContext(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func queueStats(t *testing.T, c *client.Client, queue string) client.QueueStats {
	t.Helper()
	qs, err := c.ListQueues(testContext(t), false)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range qs {
		if q.Name == queue {
			return q
		}
	}
	return client.QueueStats{Name: queue}
}
