package clientcheck_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sepp-io/sepp/client"
	"github.com/sepp-io/sepp/engine"
	"github.com/sepp-io/sepp/rpc"
)

func startWorker(t *testing.T, c *client.Client, opts client.WorkerOptions, queue string, h client.HandlerFunc) *client.Worker {
	t.Helper()
	if opts.Wait == 0 {
		opts.Wait = 100 * time.Millisecond
	}
	if opts.OnError == nil {
		opts.OnError = func(err error) { t.Logf("worker: %v", err) }
	}
	w := client.NewWorker(c, opts)
	w.Handle(queue, "", h)
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = w.Stop(ctx)
	})
	return w
}

func TestWorker_HandlerOutcomes(t *testing.T) {
	tests := []struct {
		name        string
		maxAttempts uint32
		handler     func(d *client.Delivery) error
		// check runs once the job settled; attempts are the attempts the
		// handler saw.
		settled func(c *client.Client, id uint64) bool
		check   func(t *testing.T, c *client.Client, id uint64, attempts []uint32)
	}{
		{
			name: "NilAcks", maxAttempts: 3,
			handler: func(*client.Delivery) error { return nil },
			settled: func(c *client.Client, id uint64) bool { return jobGone(c, id) },
			check: func(t *testing.T, c *client.Client, id uint64, attempts []uint32) {
				t.Helper()
				if len(attempts) != 1 {
					t.Fatalf("attempts = %v, want one", attempts)
				}
			},
		},
		{
			// spec: ATT-1 spec: ATT-2 spec: NAK-3
			name: "PlainErrorRetriesUntilExhausted", maxAttempts: 3,
			handler: func(*client.Delivery) error { return errors.New("smtp timeout") },
			settled: deadLettered,
			check: func(t *testing.T, c *client.Client, id uint64, attempts []uint32) {
				t.Helper()
				requireDeadLetter(t, c, id, client.CauseAttemptsExhausted, 3, "smtp timeout")
				if fmt.Sprint(attempts) != "[1 2 3]" {
					t.Fatalf("attempts = %v, want [1 2 3]", attempts)
				}
			},
		},
		{
			name: "RetryRetriesUntilExhausted", maxAttempts: 2,
			handler: func(*client.Delivery) error { return client.Retry(errors.New("flaky")) },
			settled: deadLettered,
			check: func(t *testing.T, c *client.Client, id uint64, attempts []uint32) {
				t.Helper()
				requireDeadLetter(t, c, id, client.CauseAttemptsExhausted, 2, "flaky")
			},
		},
		{
			// spec: NAK-9
			name: "RetryAfterSchedulesTheRetry", maxAttempts: 3,
			handler: func(*client.Delivery) error { return client.RetryAfter(time.Hour, errors.New("rate limited")) },
			settled: func(c *client.Client, id uint64) bool {
				j, err := c.GetJob(context.Background(), id, false)
				return err == nil && j.State == client.StateScheduled
			},
			check: func(t *testing.T, c *client.Client, id uint64, attempts []uint32) {
				t.Helper()
				j, err := c.GetJob(context.Background(), id, false)
				if err != nil {
					t.Fatal(err)
				}
				if j.NextAttemptAt.Before(j.EnqueuedAt.Add(30*time.Minute)) || !strings.Contains(j.LastReason, "rate limited") {
					t.Fatalf("job = %+v, want the retry an hour out with the reason", j)
				}
			},
		},
		{
			// spec: NAK-10
			name: "PermanentDeadLettersAtOnce", maxAttempts: 5,
			handler: func(*client.Delivery) error { return client.Permanent(errors.New("bad address")) },
			settled: deadLettered,
			check: func(t *testing.T, c *client.Client, id uint64, attempts []uint32) {
				t.Helper()
				requireDeadLetter(t, c, id, client.CauseRejected, 1, "bad address")
			},
		},
		{
			name: "PanicIsAFailure", maxAttempts: 2,
			handler: func(*client.Delivery) error { panic("boom") },
			settled: deadLettered,
			check: func(t *testing.T, c *client.Client, id uint64, attempts []uint32) {
				t.Helper()
				requireDeadLetter(t, c, id, client.CauseAttemptsExhausted, 2, "panic: boom")
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := startNode(t, "n1", withRetention)
			c := newClient(t, []string{n.addr})
			res, err := c.Enqueue(testContext(t), client.NewEnqueueRequest("q", "t").WithMaxAttempts(tt.maxAttempts))
			if err != nil {
				t.Fatal(err)
			}
			var (
				mu       sync.Mutex
				attempts []uint32
			)
			startWorker(t, c, client.WorkerOptions{OnError: func(error) {}}, "q", func(ctx context.Context, d *client.Delivery) error {
				mu.Lock()
				attempts = append(attempts, d.Ctx.Attempt)
				mu.Unlock()
				if got, ok := client.DeliveryFromContext(ctx); !ok || got.Ctx.JobID != d.Ctx.JobID {
					t.Errorf("DeliveryFromContext = %v, %v", got, ok)
				}
				if d.Ctx.MaxAttempts != tt.maxAttempts { // spec: ATT-6
					t.Errorf("handler saw max_attempts %d, want %d", d.Ctx.MaxAttempts, tt.maxAttempts)
				}
				return tt.handler(d)
			})
			waitFor(t, "the job to settle", func() bool { return tt.settled(c, res.JobID) })
			mu.Lock()
			defer mu.Unlock()
			tt.check(t, c, res.JobID, attempts)
		})
	}
}

func jobGone(c *client.Client, id uint64) bool {
	_, err := c.GetJob(context.Background(), id, false)
	return errors.Is(err, client.ErrNotFound)
}

func deadLettered(c *client.Client, id uint64) bool {
	_, err := c.GetDeadLetter(context.Background(), id, false)
	return err == nil
}

func requireDeadLetter(t *testing.T, c *client.Client, id uint64, cause client.DeadLetterCause, finalAttempt uint32, reason string) {
	t.Helper()
	r, err := c.GetDeadLetter(context.Background(), id, false)
	if err != nil {
		t.Fatal(err)
	}
	if r.Cause != cause || r.FinalAttempt != finalAttempt || !strings.Contains(r.LastReason, reason) {
		t.Fatalf("record: cause %s, final attempt %d, reason %q; want %s, %d, %q", r.Cause, r.FinalAttempt, r.LastReason, cause, finalAttempt, reason)
	}
}

func TestWorker_ExtendsLeaseOfLongHandler(t *testing.T) {
	n := startNode(t, "n1", nil)
	c := newClient(t, []string{n.addr})
	res, err := c.Enqueue(testContext(t), client.NewEnqueueRequest("q", "t"))
	if err != nil {
		t.Fatal(err)
	}
	const lease = 300 * time.Millisecond
	var calls atomic.Int32
	release := make(chan struct{})
	startWorker(t, c, client.WorkerOptions{Lease: lease, Concurrency: 2}, "q", func(ctx context.Context, d *client.Delivery) error {
		calls.Add(1)
		select {
		case <-release:
			return nil
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	})
	// Four extensions at lease/3 span more than a whole lease: without them
	// the job would have expired and gone to the worker's second slot.
	waitFor(t, "four lease extensions", func() bool { return n.backend.count("ExtendLease") >= 4 })
	if got := calls.Load(); got != 1 {
		t.Fatalf("handler ran %d times while its lease was being extended, want 1", got)
	}
	if st := queueStats(t, c, "q"); st.Reserved != 1 || st.Ready != 0 {
		t.Fatalf("reserved %d, ready %d; want the job still leased", st.Reserved, st.Ready)
	}
	close(release)
	waitFor(t, "the ack", func() bool { return jobGone(c, res.JobID) })
	if got := calls.Load(); got != 1 {
		t.Fatalf("handler ran %d times, want 1", got)
	}
}

func TestWorker_LostLeaseCancelsHandler(t *testing.T) {
	n := startNode(t, "n1", nil)
	c := newClient(t, []string{n.addr})
	if _, err := c.Enqueue(testContext(t), client.NewEnqueueRequest("q", "t")); err != nil {
		t.Fatal(err)
	}
	n.backend.setAfter(func(op string) error {
		if op == "ExtendLease" {
			return fmt.Errorf("lease taken over: %w", engine.ErrLeaseLost)
		}
		return nil
	})
	causes := make(chan error, 1)
	startWorker(t, c, client.WorkerOptions{Lease: 150 * time.Millisecond}, "q", func(ctx context.Context, d *client.Delivery) error {
		<-ctx.Done()
		causes <- context.Cause(ctx)
		return ctx.Err()
	})
	var cause error
	select {
	case cause = <-causes:
	case <-testContext(t).Done():
		t.Fatal("handler was never cancelled")
	}
	if !errors.Is(cause, client.ErrLeaseLost) {
		t.Fatalf("handler context cause = %v, want ErrLeaseLost", cause)
	}
	// The worker must not answer for a delivery it no longer holds.
	waitFor(t, "the handler's return to be processed", func() bool { return n.backend.count("ExtendLease") >= 1 })
	if a, nk := n.backend.count("Ack"), n.backend.count("Nack"); a != 0 || nk != 0 {
		t.Fatalf("acks %d, nacks %d after a lost lease; want none", a, nk)
	}
}

func TestWorker_StopFinishesRunningHandlers(t *testing.T) {
	n := startNode(t, "n1", nil)
	c := newClient(t, []string{n.addr})
	ctx := testContext(t)
	first, err := c.Enqueue(ctx, client.NewEnqueueRequest("q", "t").WithPriority(client.P9))
	if err != nil {
		t.Fatal(err)
	}
	second, err := c.Enqueue(ctx, client.NewEnqueueRequest("q", "t"))
	if err != nil {
		t.Fatal(err)
	}
	started := make(chan uint64, 2)
	finish := make(chan struct{})
	w := startWorker(t, c, client.WorkerOptions{Concurrency: 1}, "q", func(ctx context.Context, d *client.Delivery) error {
		started <- d.Ctx.JobID
		<-finish
		return nil
	})
	if id := <-started; id != first.JobID {
		t.Fatalf("first handler ran job %d, want %d", id, first.JobID)
	}
	stopped := make(chan error, 1)
	go func() { stopped <- w.Stop(ctx) }()
	select {
	case err := <-stopped:
		t.Fatalf("Stop returned (%v) while a handler was still running", err)
	default:
	}
	close(finish)
	if err := <-stopped; err != nil {
		t.Fatal(err)
	}
	if !jobGone(c, first.JobID) {
		t.Fatal("the running job was not acked before Stop returned")
	}
	j, err := c.GetJob(ctx, second.JobID, false)
	if err != nil || j.State != client.StateReady || j.Attempt != 0 {
		t.Fatalf("second job = %+v, %v; want it never started and still ready", j, err)
	}
	if len(started) != 0 {
		t.Fatal("a handler started after Stop")
	}
}

func TestWorker_StopOutOfTimeCancelsAndReleases(t *testing.T) {
	n := startNode(t, "n1", nil)
	c := newClient(t, []string{n.addr})
	ctx := testContext(t)
	res, err := c.Enqueue(ctx, client.NewEnqueueRequest("q", "t"))
	if err != nil {
		t.Fatal(err)
	}
	started := make(chan struct{})
	w := startWorker(t, c, client.WorkerOptions{}, "q", func(ctx context.Context, d *client.Delivery) error {
		close(started)
		<-ctx.Done()
		return ctx.Err()
	})
	<-started
	expired, cancel := context.WithCancel(ctx)
	cancel()
	if err := w.Stop(expired); !errors.Is(err, context.Canceled) {
		t.Fatalf("Stop = %v, want context.Canceled", err)
	}
	j, err := c.GetJob(ctx, res.JobID, false)
	if err != nil {
		t.Fatal(err)
	}
	if j.State != client.StateReady || len(j.History) != 1 || j.History[0].Outcome != "released" {
		t.Fatalf("job = %+v; want it released back to ready", j)
	}
	if n.backend.count("Nack") != 0 {
		t.Fatal("a job cancelled by Stop was nacked (burning an attempt) instead of released")
	}
}

func TestWorker_StopReleasesJobsOfAReserveCutShort(t *testing.T) {
	n := startNode(t, "n1", nil)
	c := newClient(t, []string{n.addr})
	ctx := testContext(t)
	res, err := c.Enqueue(ctx, client.NewEnqueueRequest("q", "t"))
	if err != nil {
		t.Fatal(err)
	}
	// The first reserve blocks until the worker gives up on it, then leases
	// the job anyway: the answer is lost in flight.
	inReserve := make(chan struct{})
	var once sync.Once
	n.backend.setReserveHook(func(rctx context.Context, p engine.ReserveParams) ([]engine.Delivery, error) {
		first := false
		once.Do(func() { first = true })
		if !first {
			return rpc.Propose(rctx, n.backend.LocalBackend, engine.ReserveOp{Params: p})
		}
		close(inReserve)
		<-rctx.Done()
		if _, err := rpc.Propose(context.Background(), n.backend.LocalBackend, engine.ReserveOp{Params: p}); err != nil {
			t.Errorf("late reserve: %v", err)
		}
		return nil, rctx.Err()
	})
	var ran atomic.Bool
	w := startWorker(t, c, client.WorkerOptions{}, "q", func(ctx context.Context, d *client.Delivery) error {
		ran.Store(true)
		return nil
	})
	<-inReserve
	if err := w.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if ran.Load() {
		t.Fatal("a handler ran after Stop")
	}
	j, err := c.GetJob(ctx, res.JobID, false)
	if err != nil {
		t.Fatal(err)
	}
	if j.State != client.StateReady || len(j.History) != 1 || j.History[0].Outcome != "released" {
		t.Fatalf("job = %+v; want the lost reservation found and released", j)
	}
}

func TestWorker_NoHandlerForTypeFailsTheAttempt(t *testing.T) {
	n := startNode(t, "n1", withRetention)
	c := newClient(t, []string{n.addr})
	res, err := c.Enqueue(testContext(t), client.NewEnqueueRequest("q", "unknown_type").WithMaxAttempts(1))
	if err != nil {
		t.Fatal(err)
	}
	w := client.NewWorker(c, client.WorkerOptions{Wait: 100 * time.Millisecond, OnError: func(error) {}})
	w.Handle("q", "known_type", func(context.Context, *client.Delivery) error { return nil })
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = w.Stop(testContext(t)) }()
	waitFor(t, "the dead letter", func() bool { return deadLettered(c, res.JobID) })
	requireDeadLetter(t, c, res.JobID, client.CauseAttemptsExhausted, 1, `no handler registered for job type "unknown_type"`)
}

// An operator's cancel reaches a running handler through its heartbeat: the
// next lease extension after the cancel fails with ErrJobCancelled and
// cancels the handler's context with it, and the job is a dead letter with
// cause cancelled.
func TestWorker_OperatorCancelCancelsHandler(t *testing.T) {
	n := startNode(t, "n1", withRetention)
	c := newClient(t, []string{n.addr})
	res, err := c.Enqueue(testContext(t), client.NewEnqueueRequest("q", "t"))
	if err != nil {
		t.Fatal(err)
	}
	started := make(chan struct{})
	causes := make(chan error, 1)
	startWorker(t, c, client.WorkerOptions{Lease: 300 * time.Millisecond}, "q", func(ctx context.Context, d *client.Delivery) error {
		close(started)
		<-ctx.Done()
		causes <- context.Cause(ctx)
		return ctx.Err()
	})
	select {
	case <-started:
	case <-testContext(t).Done():
		t.Fatal("the handler never started")
	}
	got, err := c.CancelJobs(testContext(t), []uint64{res.JobID}, client.CancelJobsOptions{Reason: "operator stop"})
	if err != nil || len(got) != 1 || got[0].Err != nil {
		t.Fatalf("CancelJobs: %+v %v", got, err)
	}
	// An extension that entered before the cancel returned may still have
	// applied first; the one after it is the heartbeat that learns.
	extendsAtCancel := n.backend.count("ExtendLease")
	var cause error
	select {
	case cause = <-causes:
	case <-testContext(t).Done():
		t.Fatal("handler was never cancelled")
	}
	if !errors.Is(cause, client.ErrJobCancelled) {
		t.Fatalf("handler context cause = %v, want ErrJobCancelled", cause)
	}
	if extra := n.backend.count("ExtendLease") - extendsAtCancel; extra > 1 {
		t.Fatalf("%d heartbeats after the cancel before the handler was cancelled, want at most 1", extra)
	}
	r, err := c.GetDeadLetter(testContext(t), res.JobID, false)
	if err != nil || r.Cause != client.CauseCancelled || r.LastReason != "operator stop" || r.Cause.String() != "cancelled" {
		t.Fatalf("dead letter %+v %v", r, err)
	}
	if a, nk := n.backend.count("Ack"), n.backend.count("Nack"); a != 0 || nk != 0 {
		t.Fatalf("acks %d, nacks %d after a cancel; want none", a, nk)
	}
}

// An operator's cancel ends the handler's context with ErrJobCancelled, a
// lost lease with ErrLeaseLost: the handler tells them apart, and the
// worker answers for neither delivery.
func TestWorker_CancelCauseIsNotLeaseLost(t *testing.T) {
	for _, tc := range []struct {
		name          string
		end           func(t *testing.T, c *client.Client, n *node, id uint64)
		wantCancelled bool
	}{
		{name: "OperatorCancel", wantCancelled: true, end: func(t *testing.T, c *client.Client, _ *node, id uint64) {
			t.Helper()
			res, err := c.CancelJobs(testContext(t), []uint64{id}, client.CancelJobsOptions{Reason: "stuck"})
			if err != nil || res[0].Err != nil {
				t.Fatalf("cancel: %+v %v", res, err)
			}
		}},
		{name: "LeaseLost", end: func(t *testing.T, _ *client.Client, n *node, _ uint64) {
			t.Helper()
			n.backend.setAfter(func(op string) error {
				if op == "ExtendLease" {
					return fmt.Errorf("lease taken over: %w", engine.ErrLeaseLost)
				}
				return nil
			})
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := startNode(t, "n1", withRetention) // a cancelled job is kept as a dead letter
			c := newClient(t, []string{n.addr})
			res, err := c.Enqueue(testContext(t), client.NewEnqueueRequest("q", "t"))
			if err != nil {
				t.Fatal(err)
			}
			started := make(chan struct{})
			causes := make(chan error, 1)
			startWorker(t, c, client.WorkerOptions{Lease: 300 * time.Millisecond}, "q", func(ctx context.Context, d *client.Delivery) error {
				close(started)
				<-ctx.Done()
				causes <- context.Cause(ctx)
				return ctx.Err()
			})
			select {
			case <-started:
			case <-testContext(t).Done():
				t.Fatal("the handler never started")
			}
			tc.end(t, c, n, res.JobID)
			var cause error
			select {
			case cause = <-causes:
			case <-testContext(t).Done():
				t.Fatal("handler was never cancelled")
			}
			if got := errors.Is(cause, client.ErrJobCancelled); got != tc.wantCancelled {
				t.Fatalf("cause %v: ErrJobCancelled %v, want %v", cause, got, tc.wantCancelled)
			}
			if got := errors.Is(cause, client.ErrLeaseLost); got == tc.wantCancelled {
				t.Fatalf("cause %v: ErrLeaseLost %v, want %v", cause, got, !tc.wantCancelled)
			}
			if a, nk := n.backend.count("Ack"), n.backend.count("Nack"); a != 0 || nk != 0 {
				t.Fatalf("acks %d, nacks %d; want none", a, nk)
			}
		})
	}
}
