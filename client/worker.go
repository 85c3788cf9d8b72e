package client

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"
)

// WorkerOptions shape a Worker; zero values take the defaults.
type WorkerOptions struct {
	// WorkerID names the worker in job listings and attempt history
	// (default host-pid-random).
	WorkerID string
	// Concurrency caps the handlers running at once across all queues
	// (default 10).
	Concurrency int
	// Lease is the lease asked for on each job (default 30s). The worker
	// extends it while the handler runs, every Lease/3.
	Lease time.Duration
	// Wait is the long-poll wait of each reserve (default 5s; the server
	// caps it).
	Wait time.Duration
	// MaxReserve caps the jobs asked for in one reserve (default 16).
	MaxReserve int
	// ShutdownTimeout bounds Run's graceful stop (default 30s).
	ShutdownTimeout time.Duration
	// OnError receives failures the worker handles itself (reserve errors,
	// a lost lease, an ack that failed); default: logged with slog.
	OnError func(error)
	// MaxReasonBytes truncates the nack reason built from a handler's error
	// (default 1024).
	MaxReasonBytes int
	// ProgressInterval is the least time between two lease extensions
	// that a handler's Delivery.Progress brings forward (default 1s): a
	// handler may report as often as it likes, the server hears the
	// latest report at most this often (and with every regular
	// extension, every Lease/3).
	ProgressInterval time.Duration
}

// Worker reserves jobs from the queues it has handlers for and runs them,
// up to Concurrency at a time. It extends a running job's lease, acks on
// success, nacks on failure (mapping HandlerError onto the directive),
// recovers panics as failures, and on Stop finishes running handlers and
// hands back jobs it holds but has not started.
type Worker struct {
	c    *Client
	opts WorkerOptions

	mu       sync.Mutex
	handlers map[string]map[string]HandlerFunc // queue → job type ("" any) → handler
	started  bool
	stopped  bool

	slots       chan struct{}
	pollCtx     context.Context
	stopPolling context.CancelFunc
	handlerCtx  context.Context
	abort       context.CancelCauseFunc
	pollers     sync.WaitGroup
	running     sync.WaitGroup
}

// errWorkerStopping cancels handlers whose Stop ran out of time.
var errWorkerStopping = errors.New("worker stopping")

// NewWorker returns a worker that uses c. Register handlers, then Start.
func NewWorker(c *Client, opts WorkerOptions) *Worker {
	if opts.WorkerID == "" {
		host, _ := os.Hostname()
		var b [4]byte
		_, _ = rand.Read(b[:])
		opts.WorkerID = fmt.Sprintf("%s-%d-%s", host, os.Getpid(), hex.EncodeToString(b[:]))
	}
	if opts.Concurrency <= 0 {
		opts.Concurrency = 10
	}
	if opts.Lease <= 0 {
		opts.Lease = 30 * time.Second
	}
	if opts.Wait <= 0 {
		opts.Wait = 5 * time.Second
	}
	if opts.MaxReserve <= 0 {
		opts.MaxReserve = 16
	}
	if opts.ShutdownTimeout <= 0 {
		opts.ShutdownTimeout = 30 * time.Second
	}
	if opts.MaxReasonBytes <= 0 {
		opts.MaxReasonBytes = 1024
	}
	if opts.ProgressInterval <= 0 {
		opts.ProgressInterval = time.Second
	}
	if opts.OnError == nil {
		opts.OnError = func(err error) { slog.Warn("sepp worker", "err", err) }
	}
	return &Worker{c: c, opts: opts, handlers: make(map[string]map[string]HandlerFunc)}
}

// ID is the worker id sent with every reserve.
func (w *Worker) ID() string { return w.opts.WorkerID }

// Handle registers h for jobs of jobType on queue; an empty jobType handles
// every type of the queue that has no handler of its own. A job whose type
// has no handler is nacked (it fails its attempt) with a reason saying so.
// Handle must be called before Start.
func (w *Worker) Handle(queue, jobType string, h HandlerFunc) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.started {
		panic("client: Worker.Handle called after Start")
	}
	if queue == "" || h == nil {
		panic("client: Worker.Handle needs a queue and a handler")
	}
	if w.handlers[queue] == nil {
		w.handlers[queue] = make(map[string]HandlerFunc)
	}
	w.handlers[queue][jobType] = h
}

// Start begins reserving from every queue with a handler.
func (w *Worker) Start() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.started {
		return errors.New("client: worker already started")
	}
	if len(w.handlers) == 0 {
		return errors.New("client: worker has no handlers; call Handle before Start")
	}
	w.started = true
	w.slots = make(chan struct{}, w.opts.Concurrency)
	w.pollCtx, w.stopPolling = context.WithCancel(context.Background())
	w.handlerCtx, w.abort = context.WithCancelCause(context.Background())
	for queue := range w.handlers {
		w.pollers.Add(1)
		go w.poll(queue)
	}
	return nil
}

// Run starts the worker, blocks until ctx ends, then stops gracefully
// within ShutdownTimeout.
func (w *Worker) Run(ctx context.Context) error {
	if err := w.Start(); err != nil {
		return err
	}
	<-ctx.Done()
	sctx, cancel := context.WithTimeout(context.Background(), w.opts.ShutdownTimeout)
	defer cancel()
	return w.Stop(sctx)
}

// Stop stops reserving, releases jobs reserved but not started, and waits
// for running handlers to finish and be acked or nacked. If ctx ends first,
// the handlers' contexts are cancelled, Stop waits for them to return and
// releases their jobs (no attempt is burned), then returns ctx's error.
// Handlers must honour their context for Stop to return.
func (w *Worker) Stop(ctx context.Context) error {
	w.mu.Lock()
	if !w.started || w.stopped {
		w.mu.Unlock()
		return nil
	}
	w.stopped = true
	w.mu.Unlock()

	w.stopPolling()
	w.pollers.Wait()
	done := make(chan struct{})
	go func() {
		w.running.Wait()
		close(done)
	}()
	select {
	case <-done:
		w.abort(nil)
		return nil
	case <-ctx.Done():
		w.abort(errWorkerStopping)
		<-done
		return ctx.Err()
	}
}

func (w *Worker) report(err error) {
	if err != nil {
		w.opts.OnError(err)
	}
}

// poll reserves jobs of one queue as slots free up.
func (w *Worker) poll(queue string) {
	defer w.pollers.Done()
	var (
		held      int    // slots held for the reserve below
		requestID string // reused after a reserve with an unknown outcome
		failures  int
	)
	for {
		if held == 0 {
			select {
			case w.slots <- struct{}{}:
				held = 1
			case <-w.pollCtx.Done():
				return
			}
		fill:
			for held < w.opts.MaxReserve {
				select {
				case w.slots <- struct{}{}:
					held++
				default:
					break fill
				}
			}
		}
		if requestID == "" {
			requestID = newKey()
		}
		opts := ReserveOptions{WorkerID: w.opts.WorkerID, Max: held, Lease: w.opts.Lease, Wait: w.opts.Wait, RequestID: requestID}
		ds, err := w.c.Reserve(w.pollCtx, queue, opts)
		if w.pollCtx.Err() != nil {
			// Stopping. A reserve cut short may still have leased jobs:
			// ask again with the same request id (which returns those
			// deliveries rather than new ones, if it applied) and hand
			// back everything.
			if err != nil {
				ds = w.recoverReserve(queue, opts)
			}
			w.releaseAll(ds)
			w.freeSlots(held)
			return
		}
		if err != nil {
			w.report(fmt.Errorf("sepp worker: reserve from %q: %w", queue, err))
			if !errors.Is(err, ErrUnknownOutcome) && !errors.Is(err, ErrUnavailable) {
				requestID = ""
			}
			wait := w.c.backoff(failures)
			failures++
			t := time.NewTimer(wait)
			select {
			case <-t.C:
			case <-w.pollCtx.Done():
				t.Stop()
			}
			continue
		}
		failures = 0
		requestID = ""
		for i := range ds {
			d := ds[i]
			w.running.Add(1)
			go w.run(d)
		}
		w.freeSlots(held - len(ds))
		held = 0
	}
}

func (w *Worker) freeSlots(n int) {
	for range n {
		<-w.slots
	}
}

func (w *Worker) recoverReserve(queue string, opts ReserveOptions) []Delivery {
	ctx, cancel := context.WithTimeout(context.Background(), w.opts.Lease)
	defer cancel()
	opts.Wait = 0
	ds, err := w.c.Reserve(ctx, queue, opts)
	if err != nil {
		w.report(fmt.Errorf("sepp worker: stopping: could not settle a reserve cut short (its jobs come back when their leases expire): %w", err))
	}
	return ds
}

func (w *Worker) releaseAll(ds []Delivery) {
	for _, d := range ds {
		ctx, cancel := context.WithTimeout(context.Background(), w.opts.Lease)
		if err := w.c.Release(ctx, d.Ctx); err != nil {
			w.report(fmt.Errorf("sepp worker: release job %d: %w", d.Ctx.JobID, err))
		}
		cancel()
	}
}

func (w *Worker) handlerFor(d *Delivery) HandlerFunc {
	w.mu.Lock()
	defer w.mu.Unlock()
	byType := w.handlers[d.Ctx.Queue]
	if byType == nil {
		byType = w.handlers[d.Job.Queue]
	}
	if h, ok := byType[d.Job.Type]; ok {
		return h
	}
	return byType[""]
}

// run executes one delivery and answers for it.
func (w *Worker) run(d Delivery) {
	defer w.running.Done()
	defer func() { <-w.slots }()
	if d.Ctx.Queue == "" {
		d.Ctx.Queue = d.Job.Queue
	}
	h := w.handlerFor(&d)
	if h == nil {
		w.nack(d, DefaultRetry(), fmt.Sprintf("no handler registered for job type %q on queue %q", d.Job.Type, d.Ctx.Queue))
		return
	}

	d.progress = newProgressBox()
	hctx, cancel := context.WithCancelCause(context.WithValue(w.handlerCtx, deliveryKey{}, &d))
	defer cancel(nil)
	keeperDone := make(chan struct{})
	handlerDone := make(chan struct{})
	// The keeper gets its copy of the delivery here, before the handler
	// runs: copied inside the goroutine, it would be read while the handler
	// writes its result or follow-ups (SetResult, AddFollowUp).
	kept := d
	go func() {
		defer close(keeperDone)
		w.keepLease(hctx, handlerDone, kept, cancel)
	}()
	var out Outcome
	if t := w.c.opts.tracing; t != nil {
		sctx, end := t.StartProcess(hctx, &d)
		out = w.invoke(sctx, h, &d)
		end(out)
	} else {
		out = w.invoke(hctx, h, &d)
	}
	close(handlerDone)
	<-keeperDone

	cause := context.Cause(hctx)
	switch {
	case errors.Is(cause, ErrJobCancelled):
		w.report(fmt.Errorf("sepp worker: job %d: cancelled by an operator while its handler ran; not answering for it: %w", d.Ctx.JobID, cause))
	case errors.Is(cause, ErrLeaseLost):
		w.report(fmt.Errorf("sepp worker: job %d: lease lost while its handler ran; not answering for it: %w", d.Ctx.JobID, cause))
	case out.Ack:
		ctx, c := context.WithTimeout(context.Background(), w.opts.Lease)
		defer c()
		if err := w.ack(ctx, &d); err != nil {
			w.report(fmt.Errorf("sepp worker: ack job %d: %w", d.Ctx.JobID, err))
		}
	case errors.Is(cause, errWorkerStopping):
		// The handler gave up because Stop ran out of time, not because
		// the job failed: hand it back without burning the attempt.
		w.releaseAll([]Delivery{d})
	default:
		w.nack(d, out.Directive, out.Reason)
	}
}

// ack acks d, with the result its handler set (Delivery.SetResult). A
// result the server refuses (it keeps none: ErrUnsupported, or the queue
// keeps no completed job: ErrWrongState) leaves the lease held; the job
// ran, so it is acked without the result rather than run again, and the
// refusal is reported.
func (w *Worker) ack(ctx context.Context, d *Delivery) error {
	if len(d.followUps) > 0 {
		return w.ackFollowUps(ctx, d)
	}
	if len(d.result) == 0 {
		return w.c.Ack(ctx, d.Ctx)
	}
	err := w.c.AckWithResult(ctx, d.Ctx, d.result)
	if errors.Is(err, ErrUnsupported) || errors.Is(err, ErrWrongState) {
		w.report(fmt.Errorf("sepp worker: job %d: result refused, acking without it: %w", d.Ctx.JobID, err))
		err = w.c.Ack(ctx, d.Ctx)
	}
	return err
}

func (w *Worker) nack(d Delivery, directive RetryDirective, reason string) {
	if len(reason) > w.opts.MaxReasonBytes {
		reason = reason[:w.opts.MaxReasonBytes]
	}
	ctx, cancel := context.WithTimeout(context.Background(), w.opts.Lease)
	defer cancel()
	if _, err := w.c.Nack(ctx, d.Ctx, directive, reason); err != nil {
		w.report(fmt.Errorf("sepp worker: nack job %d: %w", d.Ctx.JobID, err))
	}
}

// panicError is a handler's recovered panic.
type panicError struct {
	value any
	stack []byte
}

func (p *panicError) Error() string { return fmt.Sprintf("panic: %v", p.value) }

// invoke runs the handler (its context already carries d) and maps its
// result to the answer, as RunHandler does; a panic is also reported.
func (w *Worker) invoke(ctx context.Context, h HandlerFunc, d *Delivery) Outcome {
	out := outcomeOf(invokeHandler(ctx, h, d))
	var pe *panicError
	if errors.As(out.Err, &pe) {
		w.report(fmt.Errorf("sepp worker: job %d: handler panicked: %v\n%s", d.Ctx.JobID, pe.value, pe.stack))
	}
	return out
}

// keepLease extends the delivery's lease every Lease/3 until the handler
// returns, carrying the handler's latest progress report (Delivery.Progress)
// when there is one; a report brings the next extension forward, to no
// sooner than ProgressInterval after the last. A lease the server reports
// lost, or one that lapsed by the local clock while extensions kept
// failing, cancels the handler with ErrLeaseLost; one an operator's cancel
// revoked, with ErrJobCancelled.
func (w *Worker) keepLease(ctx context.Context, handlerDone <-chan struct{}, d Delivery, cancel context.CancelCauseFunc) {
	interval := w.opts.Lease / 3
	deadline := time.Now().Add(w.opts.Lease)
	last := time.Now() // of the last extension (the reserve, at first)
	next := last.Add(interval)
	t := time.NewTimer(interval)
	defer t.Stop()
	var wake <-chan struct{}
	if d.progress != nil {
		wake = d.progress.wake
	}
	for {
		select {
		case <-handlerDone:
			return
		case <-ctx.Done():
			return
		case <-wake:
			if at := last.Add(w.opts.ProgressInterval); at.Before(next) {
				next = at
				t.Reset(time.Until(at))
			}
			continue
		case <-t.C:
		}
		ectx, ecancel := context.WithDeadline(ctx, deadline)
		err := w.extend(ectx, d)
		ecancel()
		last = time.Now()
		switch {
		case err == nil:
			deadline = time.Now().Add(w.opts.Lease)
			next = last.Add(interval)
			t.Reset(interval)
		case errors.Is(err, ErrJobCancelled):
			cancel(fmt.Errorf("job %d: %w", d.Ctx.JobID, ErrJobCancelled))
			return
		case errors.Is(err, ErrLeaseLost) || errors.Is(err, ErrNotFound):
			cancel(fmt.Errorf("job %d: %w", d.Ctx.JobID, ErrLeaseLost))
			return
		case !time.Now().Before(deadline):
			cancel(fmt.Errorf("job %d: lease ran out while extending it failed (%v): %w", d.Ctx.JobID, err, ErrLeaseLost))
			return
		default:
			w.report(fmt.Errorf("sepp worker: extend lease of job %d: %w", d.Ctx.JobID, err))
			retry := min(interval, time.Until(deadline)/2+time.Millisecond)
			next = time.Now().Add(retry)
			t.Reset(retry)
		}
	}
}

// extend extends d's lease once, with the handler's pending progress
// report if it has one. A report the server refuses (it keeps no progress
// yet: ErrUnsupported; out of its bounds: ErrInvalidArgument) is dropped,
// the refusal reported once per delivery, and the lease extended without
// it. A report whose extension failed otherwise is kept for the next
// attempt unless a newer one came.
func (w *Worker) extend(ctx context.Context, d Delivery) error {
	b := d.progress
	var p *Progress
	if b != nil {
		p = b.take()
	}
	if p == nil {
		_, err := w.c.ExtendLease(ctx, d.Ctx, w.opts.Lease)
		return err
	}
	_, err := w.c.ExtendLeaseWithProgress(ctx, d.Ctx, w.opts.Lease, *p)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, ErrUnsupported) || errors.Is(err, ErrInvalidArgument):
		b.mu.Lock()
		first := !b.refused
		b.refused = true
		b.mu.Unlock()
		if first {
			w.report(fmt.Errorf("sepp worker: job %d: progress refused, extending the lease without it: %w", d.Ctx.JobID, err))
		}
		_, err = w.c.ExtendLease(ctx, d.Ctx, w.opts.Lease)
		return err
	default:
		b.mu.Lock()
		if b.pending == nil {
			b.pending = p
		}
		b.mu.Unlock()
		return err
	}
}
