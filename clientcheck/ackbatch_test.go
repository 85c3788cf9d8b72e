package clientcheck_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/sepp-io/sepp/client"
	"github.com/sepp-io/sepp/cluster"
	"github.com/sepp-io/sepp/engine"
	seppv1 "github.com/sepp-io/sepp/proto/sepp/v1"
	"github.com/sepp-io/sepp/rpc"
	"github.com/sepp-io/sepp/rpc/rpctest"
)

const (
	ackMethod      = "/sepp.v1.QueueService/Ack"
	ackBatchMethod = "/sepp.v1.QueueService/AckBatch"
)

// ackRecorder sees every Ack and AckBatch call a server receives: how many
// deliveries each AckBatch carried and how many were on the wire at once.
// With unimplemented set it answers AckBatch as an older server would.
type ackRecorder struct {
	unimplemented bool

	mu          sync.Mutex
	plain       int
	batchSizes  []int
	inFlight    int
	maxInFlight int
}

func (r *ackRecorder) intercept(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	switch info.FullMethod {
	case ackMethod:
		r.mu.Lock()
		r.plain++
		r.mu.Unlock()
	case ackBatchMethod:
		r.mu.Lock()
		r.batchSizes = append(r.batchSizes, len(req.(*seppv1.AckBatchRequest).GetCtxs()))
		r.mu.Unlock()
		if r.unimplemented {
			return nil, status.Error(codes.Unimplemented, "unknown method AckBatch")
		}
		r.mu.Lock()
		r.inFlight++
		r.maxInFlight = max(r.maxInFlight, r.inFlight)
		r.mu.Unlock()
		defer func() {
			r.mu.Lock()
			r.inFlight--
			r.mu.Unlock()
		}()
	}
	return handler(ctx, req)
}

func (r *ackRecorder) calls() (plain int, batchSizes []int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.plain, append([]int(nil), r.batchSizes...)
}

type ackBatchBundle struct {
	backend  *hookedBackend
	recorder *ackRecorder
	client   *client.Client
	ctx      context.Context
}

func setupAckBatch(t *testing.T, unimplemented bool) *ackBatchBundle {
	t.Helper()
	b, err := rpctest.NewLocalBackend(engine.DefaultConfig(), cluster.NodeInfo{ID: "n1"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	h := &hookedBackend{LocalBackend: b, calls: make(map[string]int)}
	rec := &ackRecorder{unimplemented: unimplemented}
	addr := rpctest.Serve(t, h, rpc.Options{UnaryInterceptors: []grpc.UnaryServerInterceptor{rec.intercept}})
	return &ackBatchBundle{backend: h, recorder: rec, client: newClient(t, []string{addr}), ctx: testContext(t)}
}

// reserve enqueues n jobs on queue "q" and reserves them all.
func (b *ackBatchBundle) reserve(t *testing.T, n int) []client.JobContext {
	t.Helper()
	jcs := make([]client.JobContext, 0, n)
	for len(jcs) < n {
		k := min(n-len(jcs), 100) // the default max_reserve_batch
		reqs := make([]*client.EnqueueRequest, k)
		for i := range reqs {
			reqs[i] = client.NewEnqueueRequest("q", "t")
		}
		if _, err := b.client.EnqueueBatch(b.ctx, reqs); err != nil {
			t.Fatal(err)
		}
		ds, err := b.client.Reserve(b.ctx, "q", client.ReserveOptions{WorkerID: "w", Max: k})
		if err != nil || len(ds) != k {
			t.Fatalf("reserve: %d deliveries, %v", len(ds), err)
		}
		for _, d := range ds {
			jcs = append(jcs, d.Ctx)
		}
	}
	return jcs
}

// holdAcks makes the server block every Ack until the returned func is
// called, and fills every client send slot with a lone Ack of one of jcs
// (which must hold four), so later acks queue in the client. The returned
// func releases the server and waits for those lone Acks, which must
// succeed.
func (b *ackBatchBundle) holdAcks(t *testing.T, jcs []client.JobContext) (release func()) {
	t.Helper()
	held := make(chan struct{})
	b.backend.setBefore(func(ctx context.Context, op string) error {
		if op != "Ack" {
			return nil
		}
		select {
		case <-held:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	})
	var wg sync.WaitGroup
	for i, jc := range jcs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := b.client.Ack(b.ctx, jc); err != nil {
				t.Errorf("lone ack: %v", err)
			}
		}()
		// One at a time, so each is a lone ack holding its own send slot.
		waitFor(t, "the lone ack to reach the server", func() bool { return b.backend.count("Ack") == i+1 })
	}
	return func() {
		close(held)
		wg.Wait()
	}
}

// Each delivery gets its own outcome, in the order given: good ones are
// acked, stale ones fail alone with ErrLeaseLost and stay reserved.
func TestClient_AckBatch_ResultsPerItemInOrder(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		n     int
		stale []int
	}{
		{name: "AllAcked", n: 5},
		{name: "MixedAckedAndLeaseLost", n: 6, stale: []int{0, 3, 5}},
		{name: "AllLeaseLost", n: 3, stale: []int{0, 1, 2}},
		{name: "OneItemIsAPlainAck", n: 1},
		{name: "Empty", n: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := setupAckBatch(t, false)
			jcs := b.reserve(t, tt.n)
			isStale := make([]bool, tt.n)
			for _, i := range tt.stale {
				jcs[i].LeaseToken++
				isStale[i] = true
			}
			errs := b.client.AckBatch(b.ctx, jcs)
			if len(errs) != tt.n {
				t.Fatalf("%d results for %d deliveries", len(errs), tt.n)
			}
			for i, err := range errs {
				switch {
				case isStale[i] && !errors.Is(err, client.ErrLeaseLost):
					t.Errorf("delivery %d (stale): err = %v, want ErrLeaseLost", i, err)
				case !isStale[i] && err != nil:
					t.Errorf("delivery %d: %v", i, err)
				}
			}
			if st := queueStats(t, b.client, "q"); st.Reserved != uint64(len(tt.stale)) {
				t.Errorf("reserved = %d, want %d (the stale deliveries)", st.Reserved, len(tt.stale))
			}
			plain, batches := b.recorder.calls()
			wantPlain, wantBatches := 0, 1
			switch tt.n {
			case 0:
				wantBatches = 0
			case 1:
				wantPlain, wantBatches = 1, 0
			}
			if plain != wantPlain || len(batches) != wantBatches {
				t.Errorf("%d Ack and %d AckBatch calls, want %d and %d", plain, len(batches), wantPlain, wantBatches)
			}
		})
	}
}

// An AckBatch queued behind busy send slots leaves in the same AckBatch
// call as single Acks queued beside it.
func TestClient_AckBatch_CoalescesWithConcurrentAcks(t *testing.T) {
	t.Parallel()
	b := setupAckBatch(t, false)
	const lone, singles, listed = 4, 3, 10
	jcs := b.reserve(t, lone+singles+listed)
	release := b.holdAcks(t, jcs[:lone])

	var wg sync.WaitGroup
	singleErrs := make([]error, singles)
	for i := range singles {
		wg.Add(1)
		go func() {
			defer wg.Done()
			singleErrs[i] = b.client.Ack(b.ctx, jcs[lone+i])
		}()
	}
	var listErrs []error
	wg.Add(1)
	go func() {
		defer wg.Done()
		listErrs = b.client.AckBatch(b.ctx, jcs[lone+singles:])
	}()
	waitFor(t, "the acks queued", func() bool { return b.client.AckBacklog().Queued == singles+listed })
	release()
	wg.Wait()

	for i, err := range append(singleErrs, listErrs...) {
		if err != nil {
			t.Errorf("ack %d: %v", i, err)
		}
	}
	plain, batches := b.recorder.calls()
	if plain != lone || len(batches) != 1 || batches[0] != singles+listed {
		t.Errorf("%d Ack calls and AckBatch calls of %v, want %d and [%d]", plain, batches, lone, singles+listed)
	}
	if st := queueStats(t, b.client, "q"); st.Reserved != 0 {
		t.Errorf("reserved = %d, want 0", st.Reserved)
	}
}

// A ctx that ends before a delivery was sent withdraws it: the caller gets
// ctx's error and nothing goes to the server. One that ends after it was
// sent leaves its outcome unknown (and the server still acks it).
func TestClient_AckBatch_CtxEnd(t *testing.T) {
	t.Parallel()
	const listed = 5
	tests := []struct {
		name string
		// held lone acks block at the server; with all four send slots
		// held the list queues in the client, with three it goes out.
		held int
		// cancel ends ctx at the point the case is about; nil cancels
		// before AckBatch is called.
		cancel       func(t *testing.T, b *ackBatchBundle, cancel context.CancelFunc)
		wantErr      error
		wantBatches  int
		wantReserved uint64
	}{
		{
			name:         "CancelledBeforeTheCall",
			held:         4,
			wantErr:      context.Canceled,
			wantReserved: listed,
		},
		{
			name: "CancelledWhileQueued",
			held: 4,
			cancel: func(t *testing.T, b *ackBatchBundle, cancel context.CancelFunc) {
				t.Helper()
				waitFor(t, "the list queued", func() bool { return b.client.AckBacklog().Queued == listed })
				cancel()
			},
			wantErr:      context.Canceled,
			wantReserved: listed,
		},
		{
			name: "CancelledAfterSending",
			held: 3,
			cancel: func(t *testing.T, b *ackBatchBundle, cancel context.CancelFunc) {
				t.Helper()
				waitFor(t, "the list at the server", func() bool { return b.backend.count("Ack") > 3 })
				cancel()
			},
			wantErr:      client.ErrUnknownOutcome,
			wantBatches:  1,
			wantReserved: 0,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := setupAckBatch(t, false)
			jcs := b.reserve(t, tt.held+listed)
			release := b.holdAcks(t, jcs[:tt.held])
			ctx, cancel := context.WithCancel(b.ctx)
			defer cancel()
			if tt.cancel == nil {
				cancel()
			}
			done := make(chan []error, 1)
			go func() { done <- b.client.AckBatch(ctx, jcs[tt.held:]) }()
			if tt.cancel != nil {
				tt.cancel(t, b, cancel)
			}
			errs := <-done
			release()

			for i, err := range errs {
				if !errors.Is(err, tt.wantErr) {
					t.Errorf("delivery %d: err = %v, want %v", i, err, tt.wantErr)
				}
				if withdrawn := tt.wantErr == context.Canceled; withdrawn && err != ctx.Err() { //nolint:errorlint // the very error, not one wrapping it
					t.Errorf("delivery %d: err = %v, want ctx.Err() itself", i, err)
				}
			}
			waitFor(t, "the acker idle", func() bool { return b.client.AckBacklog().Idle() })
			if _, batches := b.recorder.calls(); len(batches) != tt.wantBatches {
				t.Errorf("AckBatch calls of %v, want %d", batches, tt.wantBatches)
			}
			if st := queueStats(t, b.client, "q"); st.Reserved != tt.wantReserved {
				t.Errorf("reserved = %d, want %d", st.Reserved, tt.wantReserved)
			}
		})
	}
}

// Against a server without AckBatch, the first list learns so from one
// Unimplemented answer and every item is still acked (or not) on its own
// with plain Acks; later lists go straight to plain Acks.
func TestClient_AckBatch_FallsBackToPlainAcks(t *testing.T) {
	t.Parallel()
	b := setupAckBatch(t, true)
	const n = 10
	for round := range 2 {
		jcs := b.reserve(t, n)
		jcs[7].LeaseToken++
		errs := b.client.AckBatch(b.ctx, jcs)
		for i, err := range errs {
			switch {
			case i == 7 && !errors.Is(err, client.ErrLeaseLost):
				t.Errorf("round %d, stale delivery: err = %v, want ErrLeaseLost", round, err)
			case i != 7 && err != nil:
				t.Errorf("round %d, delivery %d: %v", round, i, err)
			}
		}
		plain, batches := b.recorder.calls()
		if plain != n*(round+1) || len(batches) != 1 {
			t.Errorf("after round %d: %d Ack and %d AckBatch calls, want %d and 1", round, plain, len(batches), n*(round+1))
		}
		if st := queueStats(t, b.client, "q"); st.Reserved != uint64(round+1) {
			t.Errorf("after round %d: reserved = %d, want %d (the stale deliveries)", round, st.Reserved, round+1)
		}
	}
}

// A list longer than one AckBatch may carry goes out in several, never
// more than the acker's in-flight limit at once.
func TestClient_AckBatch_SplitsLongLists(t *testing.T) {
	t.Parallel()
	b := setupAckBatch(t, false)
	const n = 1100 // 256 × 4 + 76
	jcs := b.reserve(t, n)
	for i, err := range b.client.AckBatch(b.ctx, jcs) {
		if err != nil {
			t.Errorf("delivery %d: %v", i, err)
		}
	}
	plain, batches := b.recorder.calls()
	total := 0
	for _, size := range batches {
		if size > 256 {
			t.Errorf("an AckBatch call carried %d deliveries, over 256", size)
		}
		total += size
	}
	if plain != 0 || len(batches) != 5 || total != n {
		t.Errorf("%d Ack calls and AckBatch calls of %v, want 0 and 5 carrying %d", plain, batches, n)
	}
	b.recorder.mu.Lock()
	maxInFlight := b.recorder.maxInFlight
	b.recorder.mu.Unlock()
	if maxInFlight > 4 {
		t.Errorf("%d AckBatch calls at once, want at most 4", maxInFlight)
	}
	if st := queueStats(t, b.client, "q"); st.Reserved != 0 {
		t.Errorf("reserved = %d, want 0", st.Reserved)
	}
}
