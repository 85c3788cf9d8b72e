package client

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	seppv1 "github.com/sepp-io/sepp/proto/sepp/v1"
)

// The acker coalesces concurrent Acks into AckBatch calls. A lone Ack goes
// out at once as a plain Ack (no linger, no added latency); while
// ackMaxInFlight calls are on the wire, further Acks queue and leave
// together in the next call. Every caller still waits for its own
// confirmed (committed) result: a batch is only fewer round trips and, on
// the server, fewer log entries.
//
// AckBatch queues all its items at once behind one waiter, so a list of
// acks costs one wait, not a goroutine and a channel per item; the senders
// split it into calls of at most ackMaxBatch.
const (
	ackMaxInFlight = 4
	ackMaxBatch    = 256 // well under the server's MaxAckBatch (1000)
)

// Item states. A caller whose ctx ends may withdraw an item no sender has
// taken yet (then nothing was sent). A sender stores the item's err before
// it marks the item answered, so a caller that sees ackAnswered may read it.
const (
	ackPending int32 = iota
	ackTaken
	ackWithdrawn
	ackAnswered
)

type ackItem struct {
	ctx   context.Context
	jc    JobContext
	state atomic.Int32
	err   error // set by the sender; readable once state is ackAnswered
	w     *ackWaiter
}

// ackWaiter is what one Ack or AckBatch call waits on: done closes when a
// sender has answered every item. Withdrawn items are never answered, but
// their caller has stopped waiting by then.
type ackWaiter struct {
	unanswered atomic.Int32
	done       chan struct{}
}

func (w *ackWaiter) init(n int) {
	w.unanswered.Store(int32(n))
	w.done = make(chan struct{})
}

func (it *ackItem) answer(err error) {
	it.err = err
	it.state.Store(ackAnswered)
	if it.w.unanswered.Add(-1) == 0 {
		close(it.w.done)
	}
}

// outcome is what the caller is told about an item once it stops waiting
// because ctx ended.
func (it *ackItem) outcome(ctxErr error) error {
	if it.state.CompareAndSwap(ackPending, ackWithdrawn) {
		return ctxErr
	}
	if it.state.Load() == ackAnswered {
		return it.err
	}
	// Sent: it may be acked by now.
	return &unknownOutcomeError{op: "ack", last: ctxErr}
}

type acker struct {
	c           *Client
	mu          sync.Mutex
	queue       []*ackItem
	senders     int
	unsupported atomic.Bool // the server has no AckBatch: plain Acks only
}

// ack queues jc and waits for its own outcome.
func (a *acker) ack(ctx context.Context, jc JobContext) error {
	if a.unsupported.Load() {
		return a.c.ackOne(ctx, jc)
	}
	// One allocation for the item and its waiter.
	call := &struct {
		w  ackWaiter
		it [1]ackItem
	}{}
	call.w.init(1)
	it := &call.it[0]
	it.ctx, it.jc, it.w = ctx, jc, &call.w
	a.enqueue(call.it[:])
	select {
	case <-call.w.done:
		return it.err
	case <-ctx.Done():
		return it.outcome(ctx.Err())
	}
}

// ackBatch queues every jc behind one waiter and returns one result per
// jc, in order.
func (a *acker) ackBatch(ctx context.Context, jcs []JobContext) []error {
	errs := make([]error, len(jcs))
	if len(jcs) == 0 {
		return errs
	}
	if err := ctx.Err(); err != nil {
		for i := range errs {
			errs[i] = err
		}
		return errs
	}
	w := &ackWaiter{}
	w.init(len(jcs))
	items := make([]ackItem, len(jcs))
	for i := range items {
		items[i].ctx, items[i].jc, items[i].w = ctx, jcs[i], w
	}
	a.enqueue(items)
	select {
	case <-w.done:
		for i := range items {
			errs[i] = items[i].err
		}
	case <-ctx.Done():
		for i := range items {
			errs[i] = items[i].outcome(ctx.Err())
		}
	}
	return errs
}

// enqueue hands items to the senders, starting as many as the items need
// calls while send slots are free. Once the server is known to lack
// AckBatch each call carries one item, so a list still goes out
// ackMaxInFlight plain Acks at a time.
func (a *acker) enqueue(items []ackItem) {
	perCall := ackMaxBatch
	if a.unsupported.Load() {
		perCall = 1
	}
	calls := (len(items) + perCall - 1) / perCall
	a.mu.Lock()
	for i := range items {
		a.queue = append(a.queue, &items[i])
	}
	for ; calls > 0 && a.senders < ackMaxInFlight; calls-- {
		a.senders++
		go a.send()
	}
	a.mu.Unlock()
}

// send takes queued items until none are left; one goroutine per call in
// flight, never one per ack.
func (a *acker) send() {
	for {
		perCall := ackMaxBatch
		if a.unsupported.Load() {
			perCall = 1
		}
		a.mu.Lock()
		n := min(len(a.queue), perCall)
		if n == 0 {
			a.queue = nil // let a grown backing array go
			a.senders--
			a.mu.Unlock()
			return
		}
		taken := a.queue[:n:n]
		a.queue = a.queue[n:]
		a.mu.Unlock()
		// Filtered in place: these slots are this sender's alone now.
		batch := taken[:0]
		for _, it := range taken {
			if it.state.CompareAndSwap(ackPending, ackTaken) {
				batch = append(batch, it)
			}
		}
		clear(taken[len(batch):])
		switch len(batch) {
		case 0:
		case 1:
			batch[0].answer(a.c.ackOne(batch[0].ctx, batch[0].jc))
		default:
			a.sendBatch(batch)
		}
		clear(batch) // the backing array may outlive this call; drop the items
	}
}

// sendBatch acks the items with one AckBatch call (retried whole, like any
// call, through leader changes) and answers each with its own result.
func (a *acker) sendBatch(batch []*ackItem) {
	m := &seppv1.AckBatchRequest{Ctxs: make([]*seppv1.JobContext, len(batch))}
	for i, it := range batch {
		m.Ctxs[i] = it.jc.toProto()
	}
	errs := make([]error, len(batch))
	unimplemented := false
	// Not any one caller's ctx: the call serves them all, and the client's
	// retry timeout bounds it. A caller that stops waiting is told the
	// outcome is unknown.
	err := a.c.call(context.Background(), "ack", retrySafe, 0, func(ctx context.Context, at *attempt) error {
		resp, err := a.c.queueService(at).AckBatch(ctx, m, a.c.opts.callOptions...)
		if err != nil {
			unimplemented = status.Code(err) == codes.Unimplemented
			return err
		}
		if len(resp.GetResults()) != len(batch) {
			return &Error{Op: "ack", Kinds: []error{ErrInternal}, Message: "server answered a different number of ack results than acks sent"}
		}
		a.c.confirmLeader(at.addr)
		for i, r := range resp.GetResults() {
			e := itemError("ack", r.GetError())
			// An earlier attempt may have acked it: the lease is then gone
			// because of us, which is not a failure we can claim.
			if e != nil && at.maybeApplied && errors.Is(e, ErrLeaseLost) {
				e = &unknownOutcomeError{op: "ack", last: e}
			}
			errs[i] = e
		}
		return nil
	})
	if unimplemented {
		// An older server: ack one by one from now on.
		a.unsupported.Store(true)
		for _, it := range batch {
			it.answer(a.c.ackOne(it.ctx, it.jc))
		}
		return
	}
	for i, it := range batch {
		if err != nil {
			it.answer(err)
			continue
		}
		it.answer(errs[i])
	}
}

// AckBacklog is what a Client's acks are waiting on: Queued acks wait for a
// free send slot (at most ackMaxInFlight calls are on the wire at once),
// Sending is the number of calls carrying acks on their way to the server.
// A worker that drains before it exits, or exports its own metrics, reads
// it; a backlog that keeps growing means the server answers acks more
// slowly than the handlers finish jobs.
type AckBacklog struct {
	Queued  int
	Sending int
}

// Idle reports whether every ack taken so far has had its answer.
func (b AckBacklog) Idle() bool { return b.Queued == 0 && b.Sending == 0 }

// AckBacklog reports the acks (single or batched) this client has taken and
// not yet had answered.
func (c *Client) AckBacklog() AckBacklog {
	c.acks.mu.Lock()
	defer c.acks.mu.Unlock()
	return AckBacklog{Queued: len(c.acks.queue), Sending: c.acks.senders}
}
