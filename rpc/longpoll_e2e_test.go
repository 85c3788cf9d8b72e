package rpc_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/sepp-io/sepp/cluster"
	"github.com/sepp-io/sepp/engine"
	seppv1 "github.com/sepp-io/sepp/proto/sepp/v1"
	"github.com/sepp-io/sepp/rpc"
	"github.com/sepp-io/sepp/rpc/rpctest"
)

// waitingSignal returns a channel closed the first time a long-poll looks at
// the local state (a stale Read), i.e. once a Reserve is waiting.
func waitingSignal(env *rpctest.Env) <-chan struct{} {
	ch := make(chan struct{})
	var once sync.Once
	env.Backend.FailWith(func(op string) error {
		if op == "Read" {
			once.Do(func() { close(ch) })
		}
		return nil
	})
	return ch
}

type reserveResult struct {
	resp *seppv1.ReserveResponse
	err  error
}

func reserveAsync(ctx context.Context, env *rpctest.Env, req *seppv1.ReserveRequest) <-chan reserveResult {
	ch := make(chan reserveResult, 1)
	go func() {
		resp, err := env.Queue.Reserve(ctx, req)
		ch <- reserveResult{resp, err}
	}()
	return ch
}

func awaitSignal(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(testTimeout):
		t.Fatalf("timed out waiting for %s", what)
	}
}

func awaitReserve(t *testing.T, ch <-chan reserveResult) reserveResult {
	t.Helper()
	select {
	case r := <-ch:
		return r
	case <-time.After(testTimeout):
		t.Fatal("timed out waiting for the long-poll reserve to return")
		return reserveResult{}
	}
}

func TestReserve_LongPoll(t *testing.T) {
	t.Parallel()
	long := durationpb.New(time.Minute) // clamped to the 30s cap; the test never waits for it

	t.Run("WakesOnEnqueue", func(t *testing.T) {
		env := start(t, nil)
		waiting := waitingSignal(env)
		res := reserveAsync(ctxT(t), env, &seppv1.ReserveRequest{Queue: "q", WorkerId: "w", Wait: long})
		awaitSignal(t, waiting, "the reserve to wait")
		id := enqueue(t, env, &seppv1.EnqueueRequest{Queue: "q"}).GetJobId()
		r := awaitReserve(t, res)
		if r.err != nil || len(r.resp.GetJobs()) != 1 || r.resp.GetJobs()[0].GetCtx().GetJobId() != id {
			t.Fatalf("long-poll = %v, %v; want job %d", r.resp, r.err, id)
		}
	})
	t.Run("WakesOnPromotion", func(t *testing.T) {
		env := start(t, nil)
		id := enqueue(t, env, &seppv1.EnqueueRequest{Queue: "q", ScheduledAt: timestamppb.New(env.Clock.Now().Add(time.Minute))}).GetJobId()
		waiting := waitingSignal(env)
		res := reserveAsync(ctxT(t), env, &seppv1.ReserveRequest{Queue: "q", Wait: long})
		awaitSignal(t, waiting, "the reserve to wait")
		env.Clock.Advance(time.Minute)
		env.Backend.Tick()
		r := awaitReserve(t, res)
		if r.err != nil || len(r.resp.GetJobs()) != 1 || r.resp.GetJobs()[0].GetCtx().GetJobId() != id {
			t.Fatalf("long-poll = %v, %v; want the promoted job %d", r.resp, r.err, id)
		}
	})
	t.Run("ReturnsEmptyWhenTheWaitEnds", func(t *testing.T) {
		env := start(t, nil)
		resp, err := env.Queue.Reserve(ctxT(t), &seppv1.ReserveRequest{Queue: "q", Wait: durationpb.New(20 * time.Millisecond)})
		if err != nil || len(resp.GetJobs()) != 0 {
			t.Fatalf("reserve on an empty queue = %v, %v; want no jobs and no error", resp, err)
		}
	})
	t.Run("PausedQueueDoesNotHandOutOrSpin", func(t *testing.T) {
		env := start(t, nil)
		enqueue(t, env, &seppv1.EnqueueRequest{Queue: "q"})
		if _, err := env.Admin.PauseQueue(ctxT(t), &seppv1.PauseQueueRequest{Queue: "q"}); err != nil {
			t.Fatal(err)
		}
		reads := make(chan struct{}, 100)
		var mu sync.Mutex
		reserves := 0
		env.Backend.FailWith(func(op string) error {
			switch op {
			case "Read":
				reads <- struct{}{}
			case "Reserve":
				mu.Lock()
				reserves++
				mu.Unlock()
			}
			return nil
		})
		ctx, cancel := context.WithCancel(ctxT(t))
		res := reserveAsync(ctx, env, &seppv1.ReserveRequest{Queue: "q", Wait: long})
		// Each enqueue is an applied entry that wakes the waiting reserve:
		// it must look (a local read) and, seeing the queue paused, not
		// propose.
		for i := range 3 {
			awaitSignal(t, reads, "the waiting reserve to look at the queue")
			if i < 2 {
				enqueue(t, env, &seppv1.EnqueueRequest{Queue: "q"})
			}
		}
		cancel()
		requireCode(t, awaitReserve(t, res).err, codes.Canceled)
		mu.Lock()
		proposed := reserves
		mu.Unlock()
		if proposed != 0 {
			t.Errorf("a waiting reserve on a paused queue proposed %d reserves, want none", proposed)
		}
		env.Backend.FailWith(nil)
		if _, err := env.Admin.ResumeQueue(ctxT(t), &seppv1.ResumeQueueRequest{Queue: "q"}); err != nil {
			t.Fatal(err)
		}
		reserveOne(t, env, "q")
	})
	t.Run("OneJobWakesOneProposal", func(t *testing.T) {
		// Every waiter wakes on the enqueue, but only as many propose as
		// there are Ready jobs to ask for: one job, one reserve entry.
		// The backend holds the reserve for the job (outside its lock)
		// until another reserve arrives, which claims must prevent, or
		// 200ms pass: the other waiters see the job still Ready meanwhile.
		const waiters = 4
		lb, err := rpctest.NewLocalBackend(engine.Config{Limits: engine.DefaultLimits()}, cluster.NodeInfo{ID: "node-1"}, nil)
		if err != nil {
			t.Fatal(err)
		}
		hb := &heldReserves{LocalBackend: lb, holdAt: 1, another: make(chan struct{}, waiters), initial: make(chan struct{})}
		// Each reserve looks at the empty queue once (a local read)
		// before it waits.
		var reads sync.Mutex
		nReads := 0
		lb.FailWith(func(op string) error {
			if op == "Read" {
				reads.Lock()
				if nReads++; nReads == waiters {
					close(hb.initial)
				}
				reads.Unlock()
			}
			return nil
		})
		cc, err := grpc.NewClient(rpctest.Serve(t, hb, rpc.Options{}), grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cc.Close() })
		qc := seppv1.NewQueueServiceClient(cc)
		ctx, cancel := context.WithCancel(ctxT(t))
		results := make(chan reserveResult, waiters)
		for range waiters {
			go func() {
				resp, err := qc.Reserve(ctx, &seppv1.ReserveRequest{Queue: "q", WorkerId: "w", Max: 1, Wait: long})
				results <- reserveResult{resp, err}
			}()
		}
		awaitSignal(t, hb.initial, "every reserve to find the queue empty")
		res, err := qc.Enqueue(ctxT(t), &seppv1.EnqueueRequest{Queue: "q", JobType: "t"})
		if err != nil {
			t.Fatal(err)
		}
		r := awaitReserve(t, results)
		if r.err != nil || len(r.resp.GetJobs()) != 1 || r.resp.GetJobs()[0].GetCtx().GetJobId() != res.GetJobId() {
			t.Fatalf("long-poll = %v, %v; want job %d", r.resp, r.err, res.GetJobId())
		}
		cancel()
		for range waiters - 1 {
			requireCode(t, awaitReserve(t, results).err, codes.Canceled)
		}
		// The empty queue costs no proposal; the job costs one.
		if proposed := hb.count(); proposed != 1 {
			t.Errorf("%d waiting reserves and one job: %d reserves proposed, want 1", waiters, proposed)
		}
	})
	t.Run("ConcurrentWaitsAreCapped", func(t *testing.T) {
		env := rpctest.Start(t, nil, rpc.Options{MaxConcurrentLongPolls: 1})
		waiting := waitingSignal(env)
		ctx, cancel := context.WithCancel(ctxT(t))
		first := reserveAsync(ctx, env, &seppv1.ReserveRequest{Queue: "q", Wait: long})
		awaitSignal(t, waiting, "the first reserve to wait")
		_, err := env.Queue.Reserve(ctxT(t), &seppv1.ReserveRequest{Queue: "q", Wait: long})
		st := requireCode(t, err, codes.ResourceExhausted)
		if want := "limit of 1"; !strings.Contains(st.Message(), want) || !strings.Contains(st.Message(), "wait") {
			t.Errorf("message %q does not name the field and the limit", st.Message())
		}
		// Without a wait the cap does not apply.
		if _, err := env.Queue.Reserve(ctxT(t), &seppv1.ReserveRequest{Queue: "q"}); err != nil {
			t.Errorf("reserve without wait while the cap is full: %v", err)
		}
		cancel()
		r := awaitReserve(t, first)
		requireCode(t, r.err, codes.Canceled)
	})
	t.Run("RequestIDReplaysTheReservation", func(t *testing.T) {
		env := start(t, nil)
		enqueue(t, env, &seppv1.EnqueueRequest{Queue: "q"})
		enqueue(t, env, &seppv1.EnqueueRequest{Queue: "q"})
		req := &seppv1.ReserveRequest{Queue: "q", RequestId: "r-1"}
		a := reserve(t, env, req)
		b := reserve(t, env, req)
		if len(a) != 1 || len(b) != 1 || a[0].GetCtx().GetLeaseToken() != b[0].GetCtx().GetLeaseToken() {
			t.Fatalf("retried reserve = %v, want the same delivery as %v", b, a)
		}
	})
}

// heldReserves counts reserves; the holdAt-th waits, outside the backend's
// lock, for another reserve or 200ms.
type heldReserves struct {
	*rpctest.LocalBackend
	holdAt  int
	another chan struct{}
	initial chan struct{} // closed by the test when its reserves are waiting

	mu sync.Mutex
	n  int
}

func (h *heldReserves) count() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.n
}

func (h *heldReserves) Propose(ctx context.Context, op engine.Op) (any, error) {
	if _, reserve := op.(engine.ReserveOp); !reserve {
		return h.LocalBackend.Propose(ctx, op)
	}
	h.mu.Lock()
	h.n++
	n := h.n
	h.mu.Unlock()
	switch {
	case n == h.holdAt:
		select {
		case <-h.another:
		case <-time.After(200 * time.Millisecond):
		}
	case n > h.holdAt:
		h.another <- struct{}{}
	}
	return h.LocalBackend.Propose(ctx, op)
}
