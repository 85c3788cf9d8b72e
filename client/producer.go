package client

import (
	"context"
	"runtime"
	"sync"
	"time"

	"google.golang.org/protobuf/proto"

	seppv1 "github.com/sepp-io/sepp/proto/sepp/v1"
)

// ProducerOptions shape a Producer; zero values take the defaults.
type ProducerOptions struct {
	// Linger is how long the first job of a batch waits for company
	// (default 1ms). Jobs arriving while the batches in flight are full
	// wait anyway, so under load batches fill without added latency.
	Linger time.Duration
	// LingerIdle ends the linger early once no job has come for this long
	// (default 20µs; negative: never, the batch waits the whole Linger).
	// A caller that hands over a burst of jobs and then waits for their
	// results, as one with a window of outstanding jobs does, would
	// otherwise have every batch wait out the linger after its last job,
	// and a lone job would always wait the whole Linger.
	// Below a millisecond the producer waits for the next job by yielding
	// the processor and looking again, not on a timer: Go's timers wake an
	// otherwise idle process about once a millisecond, so a 100µs timer
	// ended a lone job's linger a millisecond late. That wait uses CPU, at
	// most LingerIdle per pause in the caller's jobs; keep it short.
	LingerIdle time.Duration
	// MaxBatch caps the jobs per EnqueueBatch call (default 256; keep it at
	// or below the server's max_batch_size). Every call costs the cluster a
	// fixed amount besides its jobs (a log entry, fsyncs on three disks,
	// replication round trips), so larger batches cost less per job: in the
	// project's benchmark (docs/benchmarks.md) 44 µs of server CPU per job at
	// 128, 37 at 256.
	MaxBatch int
	// MaxBatchBytes caps the encoded size of one batch (default 1 MiB; keep
	// it below the server's max_message_bytes).
	MaxBatchBytes int
	// MaxInFlight caps the batches sent at once (default 1). At 1 the
	// producer keeps order: a batch leaves once the one before it has its
	// result, so jobs are enqueued (and get their ids, and wait on their
	// queue) in the order they were handed to the producer; jobs handed
	// over meanwhile gather into the next batch, so under load batches
	// fill up to MaxBatch instead. Above 1, batches travel concurrently and
	// the server may apply a later batch first: more throughput on a
	// high-latency link, no order between batches.
	MaxInFlight int
}

// Producer coalesces concurrent enqueues into EnqueueBatch calls, for
// throughput: many goroutines (or one goroutine with EnqueueAsync) can hand
// it jobs, and each gets its own result. It is safe for concurrent use.
// Retries and idempotency are those of Client.EnqueueBatch: every job has
// its own idempotency key, so a retried batch adds no job twice.
//
// Order: with the default MaxInFlight of 1, jobs are enqueued in the order
// they were handed over, so two EnqueueAsync calls made one after the other
// give the first the lower id and, on one queue and priority, the earlier
// delivery. Jobs handed over concurrently by several goroutines take the
// order in which the producer received them. A job that fails leaves no
// gap in the order of the others.
type Producer struct {
	c    *Client
	opts ProducerOptions
	in   chan *pendingItem

	mu     sync.RWMutex
	closed bool

	sendCtx    context.Context // cancelled when Close gives up waiting
	cancelSend context.CancelFunc
	inFlight   chan struct{}
	loopDone   chan struct{}
	sends      sync.WaitGroup
}

type pendingItem struct {
	ctx  context.Context
	m    *seppv1.EnqueueRequest // the wire form, built once
	key  string
	size int
	p    *PendingEnqueue
}

// PendingEnqueue is the future result of an EnqueueAsync.
type PendingEnqueue struct {
	done chan struct{}
	res  EnqueueResult
	err  error
	end  func(uint64, error) // the Tracing's, or nil
}

// Done is closed once the result is known.
func (pe *PendingEnqueue) Done() <-chan struct{} { return pe.done }

// Wait blocks until the result is known or ctx ends. A ctx ending here
// abandons the wait only: the job may still be enqueued.
func (pe *PendingEnqueue) Wait(ctx context.Context) (EnqueueResult, error) {
	select {
	case <-pe.done:
		return pe.res, pe.err
	case <-ctx.Done():
		return EnqueueResult{}, ctx.Err()
	}
}

// Result returns the result once Done is closed (it blocks until then).
func (pe *PendingEnqueue) Result() (EnqueueResult, error) {
	<-pe.done
	return pe.res, pe.err
}

func (pe *PendingEnqueue) resolve(res EnqueueResult, err error) {
	if pe.end != nil {
		pe.end(res.JobID, err)
	}
	pe.res, pe.err = res, err
	close(pe.done)
}

// NewProducer starts a producer sending through c. Close it to flush.
func (c *Client) NewProducer(opts ProducerOptions) *Producer {
	if opts.Linger <= 0 {
		opts.Linger = time.Millisecond
	}
	if opts.LingerIdle == 0 {
		opts.LingerIdle = 20 * time.Microsecond
	}
	if opts.MaxBatch <= 0 {
		opts.MaxBatch = 256
	}
	if opts.MaxBatchBytes <= 0 {
		opts.MaxBatchBytes = 1 << 20
	}
	if opts.MaxInFlight <= 0 {
		opts.MaxInFlight = 1
	}
	p := &Producer{
		c:        c,
		opts:     opts,
		in:       make(chan *pendingItem, opts.MaxBatch),
		inFlight: make(chan struct{}, opts.MaxInFlight),
		loopDone: make(chan struct{}),
	}
	p.sendCtx, p.cancelSend = context.WithCancel(context.Background())
	go p.loop()
	return p
}

// EnqueueAsync hands req to the producer and returns at once (unless the
// producer's queue is full, when it waits for room or ctx). ctx bounds the
// wait before the job is sent; once sent, the job's fate is the batch's.
func (p *Producer) EnqueueAsync(ctx context.Context, req *EnqueueRequest) *PendingEnqueue {
	pe := &PendingEnqueue{done: make(chan struct{})}
	if err := req.validate(""); err != nil {
		pe.resolve(EnqueueResult{}, &Error{Op: "enqueue", Kinds: []error{ErrInvalidArgument}, Detail: err})
		return pe
	}
	if req != nil && len(req.After) > 0 {
		// The producer batches other callers' jobs with this one: its
		// indexes would name their jobs. A workflow is one EnqueueBatch.
		pe.resolve(EnqueueResult{}, &Error{Op: "enqueue", Kinds: []error{ErrInvalidArgument},
			Detail: &FieldError{Field: "after", Limit: "only in EnqueueBatch or AckWithFollowUps",
				Description: "after names requests of the same call; a Producer batches jobs of many callers, so enqueue a workflow with EnqueueBatch"}})
		return pe
	}
	// Fix the key and take the wire form now: the request may be reused by
	// the caller after this.
	key := req.IdempotencyKey
	if key == "" {
		key = newKey()
	}
	m := req.toProto(key)
	if p.c.opts.tracing != nil && req.TraceContext == nil {
		// The job's span starts as it is handed over and ends with its
		// result, however it was batched.
		_, tc, end := p.c.startSend(ctx, req.Queue, req.JobType, 1)
		setTraceContext(m, tc)
		pe.end = end
	}
	it := &pendingItem{ctx: ctx, m: m, key: key, p: pe, size: proto.Size(m)}
	p.mu.RLock()
	defer p.mu.RUnlock()
	if p.closed {
		pe.resolve(EnqueueResult{}, ErrClosed)
		return pe
	}
	select {
	case p.in <- it:
	case <-ctx.Done():
		pe.resolve(EnqueueResult{}, ctx.Err())
	}
	return pe
}

// Enqueue hands req to the producer and waits for its result.
func (p *Producer) Enqueue(ctx context.Context, req *EnqueueRequest) (EnqueueResult, error) {
	return p.EnqueueAsync(ctx, req).Wait(ctx)
}

// Close sends what is queued and waits for every result. If ctx ends first,
// batches still in flight are abandoned (their jobs' results are errors
// matching ErrUnknownOutcome or the context's error).
func (p *Producer) Close(ctx context.Context) error {
	p.mu.Lock()
	if !p.closed {
		p.closed = true
		close(p.in)
	}
	p.mu.Unlock()
	done := make(chan struct{})
	go func() {
		<-p.loopDone
		p.sends.Wait()
		close(done)
	}()
	select {
	case <-done:
		p.cancelSend()
		return nil
	case <-ctx.Done():
		p.cancelSend()
		<-done
		return ctx.Err()
	}
}

func (p *Producer) loop() {
	defer close(p.loopDone)
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	idle := time.NewTimer(time.Hour)
	idle.Stop()
	for {
		first, ok := <-p.in
		if !ok {
			return
		}
		batch, open, slot := p.collect(first, timer, idle)
		if !slot {
			p.inFlight <- struct{}{}
		}
		p.sends.Add(1)
		go p.send(batch)
		if !open {
			return
		}
	}
}

// collect forms the batch that starts with first. For the linger the batch
// waits for company, until Linger has passed or no job has come for
// LingerIdle (checked every LingerIdle on the idle timer, so not a timer
// reset per job); after it, the batch leaves as soon as a send slot is
// free, and while every slot is taken it keeps taking jobs: a batch that has
// to wait anyway leaves fuller, so under load calls carry up to MaxBatch
// jobs instead of what one linger gathered. slot reports whether collect
// took the send slot; open is false once p.in is closed.
func (p *Producer) collect(first *pendingItem, timer, idle *time.Timer) (batch []*pendingItem, open, slot bool) {
	batch = []*pendingItem{first}
	bytes := first.size
	timer.Reset(p.opts.Linger)
	defer timer.Stop()
	var idleC <-chan time.Time
	yieldIdle := false // wait out LingerIdle by yielding, not on the idle timer
	if p.opts.LingerIdle > 0 && p.opts.LingerIdle < p.opts.Linger {
		if p.opts.LingerIdle < maxYieldIdle {
			yieldIdle = true
		} else {
			idle.Reset(p.opts.LingerIdle)
			defer idle.Stop()
			idleC = idle.C
		}
	}
	seen := len(batch) // the batch's size at the last idle check
	lingering := true
	for len(batch) < p.opts.MaxBatch && bytes < p.opts.MaxBatchBytes {
		var it *pendingItem
		var ok bool
		if lingering {
			// Jobs already queued are taken without the timer's select: a
			// producer that was held up by its window hands over a whole
			// window of jobs at once.
			select {
			case it, ok = <-p.in:
			default:
				if yieldIdle {
					var got bool
					if it, ok, got = p.nextWithin(p.opts.LingerIdle); !got {
						lingering = false
						continue
					}
					break
				}
				select {
				case it, ok = <-p.in:
				case <-timer.C:
					lingering = false
					continue
				case <-idleC:
					if len(batch) == seen {
						lingering = false
					} else {
						seen = len(batch)
						idle.Reset(p.opts.LingerIdle)
					}
					continue
				}
			}
		} else {
			select {
			case it, ok = <-p.in:
			case p.inFlight <- struct{}{}:
				return batch, true, true
			}
		}
		if !ok {
			return batch, false, false
		}
		batch = append(batch, it)
		bytes += it.size
	}
	return batch, true, false
}

// maxYieldIdle is the longest LingerIdle waited out by yielding; longer
// ones are timers, which are precise enough at a millisecond and more.
const maxYieldIdle = time.Millisecond

// nextWithin takes the next job if one comes within d, yielding the
// processor between looks so that a caller's goroutine on the same
// processor can hand it over; got is false when none came.
func (p *Producer) nextWithin(d time.Duration) (it *pendingItem, ok, got bool) {
	deadline := time.Now().Add(d)
	for {
		runtime.Gosched()
		select {
		case it, ok = <-p.in:
			return it, ok, true
		default:
		}
		if !time.Now().Before(deadline) {
			return nil, false, false
		}
	}
}

func (p *Producer) send(batch []*pendingItem) {
	defer func() {
		<-p.inFlight
		p.sends.Done()
	}()
	live := batch[:0:0]
	for _, it := range batch {
		if err := it.ctx.Err(); err != nil {
			it.p.resolve(EnqueueResult{}, err)
			continue
		}
		live = append(live, it)
	}
	if len(live) == 0 {
		return
	}
	jobs := make([]*seppv1.EnqueueRequest, len(live))
	keys := make([]string, len(live))
	for i, it := range live {
		jobs[i], keys[i] = it.m, it.key
	}
	results, err := p.c.enqueueBatchWire(p.sendCtx, jobs, keys)
	for i, it := range live {
		if err != nil {
			it.p.resolve(EnqueueResult{}, err)
			continue
		}
		res := results[i]
		if res.Err != nil {
			// A producer's caller sent one job, not a batch: drop "jobs[i]".
			res.Err = renameItemField(res.Err, itemName(i), "")
		}
		it.p.resolve(res.Result, res.Err)
	}
}
