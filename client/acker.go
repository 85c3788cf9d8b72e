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
const (
	ackMaxInFlight = 4
	ackMaxBatch    = 256 // well under the server's MaxAckBatch (1000)
)

// Item states: a caller whose ctx ends may withdraw an item no sender has
// taken yet (then nothing was sent).
const (
	ackPending int32 = iota
	ackTaken
	ackWithdrawn
)

type ackItem struct {
	ctx   context.Context
	jc    JobContext
	state atomic.Int32
	done  chan error // buffered: the sender never blocks
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
	it := &ackItem{ctx: ctx, jc: jc, done: make(chan error, 1)}
	a.mu.Lock()
	a.queue = append(a.queue, it)
	if a.senders < ackMaxInFlight {
		a.senders++
		go a.send()
	}
	a.mu.Unlock()
	select {
	case err := <-it.done:
		return err
	case <-ctx.Done():
		if it.state.CompareAndSwap(ackPending, ackWithdrawn) {
			return ctx.Err()
		}
		// Sent: it may be acked by now.
		return &unknownOutcomeError{op: "ack", last: ctx.Err()}
	}
}

// send takes queued items until none are left; one goroutine per call in
// flight, never one per ack.
func (a *acker) send() {
	for {
		a.mu.Lock()
		n := min(len(a.queue), ackMaxBatch)
		if n == 0 {
			a.queue = nil // let a grown backing array go
			a.senders--
			a.mu.Unlock()
			return
		}
		taken := a.queue[:n:n]
		a.queue = a.queue[n:]
		a.mu.Unlock()
		batch := taken[:0:0]
		for _, it := range taken {
			if it.state.CompareAndSwap(ackPending, ackTaken) {
				batch = append(batch, it)
			}
		}
		switch len(batch) {
		case 0:
		case 1:
			batch[0].done <- a.c.ackOne(batch[0].ctx, batch[0].jc)
		default:
			a.sendBatch(batch)
		}
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
			it.done <- a.c.ackOne(it.ctx, it.jc)
		}
		return
	}
	for i, it := range batch {
		if err != nil {
			it.done <- err
			continue
		}
		it.done <- errs[i]
	}
}
