package client

import "context"

// Tracing connects the client to a tracing library: the client calls it
// around the enqueues it sends and a Worker around the handlers it runs. The
// client has no tracing dependency of its own; the module
// github.com/sepp-io/sepp/client/otelsepp implements Tracing with
// OpenTelemetry. Set it with WithTracing. Its methods are called
// concurrently.
type Tracing interface {
	// StartSend is called before an Enqueue, an EnqueueBatch or a
	// Producer's enqueue of one job sends, unless every job it sends has
	// a trace context of its own (WithTraceContext). It returns the context to send
	// under, the trace context each job without one of its own carries
	// (zero: none), and end, which the client calls once with the
	// outcome: the job's id for one job (0 for a batch, or on error) and
	// the call's error.
	StartSend(ctx context.Context, s Send) (context.Context, TraceContext, func(jobID uint64, err error))
	// StartProcess is called by a Worker before it runs a handler for d
	// (d.Job.TraceContext is the producer's). The handler runs under the
	// returned context; end is called with the handler's outcome once it
	// returned, before the Worker acks or nacks.
	StartProcess(ctx context.Context, d *Delivery) (context.Context, func(Outcome))
}

// Send describes what a Tracing's StartSend is about to send.
type Send struct {
	Queue   string // the queue of the (first) job
	JobType string // the type of the (first) job
	Jobs    int    // 1, or a batch's size
}

// WithTracing makes the client and its Workers call t around what they
// send and process. Without it the client traces nothing and costs
// nothing for it.
func WithTracing(t Tracing) Option { return func(o *options) { o.tracing = t } }

// startSend runs the client's Tracing for reqs, when it has one: it
// returns the context to send under, the trace context to stamp on jobs
// without one, and end (nil without a Tracing).
func (c *Client) startSend(ctx context.Context, queue, jobType string, n int) (context.Context, *TraceContext, func(uint64, error)) {
	t := c.opts.tracing
	if t == nil {
		return ctx, nil, nil
	}
	ctx, tc, end := t.StartSend(ctx, Send{Queue: queue, JobType: jobType, Jobs: n})
	if tc.Traceparent == "" {
		return ctx, nil, end
	}
	return ctx, &tc, end
}
