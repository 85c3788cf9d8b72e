package rpc

import (
	"context"
	"errors"
	"strconv"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc/metadata"

	"github.com/sepp-io/sepp/cluster"
	"github.com/sepp-io/sepp/engine"
)

// Tracing (docs/tracing.md). With Options.TracerProvider set, the node
// records a span for each Enqueue, Reserve, Ack and Nack it answers of a
// job that carries a W3C trace context, as a child of that context: the
// producer's span. Spans are recorded here, around the proposal, never in
// the engine or the state machine, which stay deterministic; a span
// reflects what this node saw of the call. A job without a trace context
// gets no span: it would be the root of a trace of its own, with nothing
// to join. Without a provider every helper below returns at its first
// test, allocating nothing (TestTracing_OffCostsNothing).

// ScopeName is the instrumentation scope of the server's spans.
const ScopeName = "github.com/sepp-io/sepp/rpc"

// messagingSystem is messaging.system of every span.
const messagingSystem = "sepp"

// traceParent is ctx with t (a job's trace context) as its remote parent;
// ok is false when t holds no valid span context.
func traceParent(ctx context.Context, t engine.TraceContext) (context.Context, bool) {
	ctx = propagation.TraceContext{}.Extract(ctx, traceCarrier(t))
	return ctx, trace.SpanContextFromContext(ctx).IsValid()
}

// traceCarrier is a job's trace context as a propagation.TextMapCarrier.
type traceCarrier engine.TraceContext

func (c traceCarrier) Get(key string) string {
	switch key {
	case "traceparent":
		return c.Traceparent
	case "tracestate":
		return c.Tracestate
	}
	return ""
}
func (traceCarrier) Set(string, string) {}
func (traceCarrier) Keys() []string     { return []string{"traceparent", "tracestate"} }

// incomingTrace is the trace context of the call's gRPC metadata
// (traceparent, tracestate), for an enqueue whose job carries none.
func incomingTrace(ctx context.Context) (engine.TraceContext, bool) {
	md, ok := metadata.FromIncomingContext(ctx)
	if !ok {
		return engine.TraceContext{}, false
	}
	tp := md.Get("traceparent")
	if len(tp) != 1 {
		return engine.TraceContext{}, false
	}
	t := engine.TraceContext{Traceparent: tp[0]}
	if ts := md.Get("tracestate"); len(ts) == 1 {
		t.Tracestate = ts[0]
	}
	return t, engine.CheckTraceContext(&t) == nil
}

// jobSpan starts the span of operation op ("enqueue", "reserve", "ack",
// "nack") on one job of queue, a child of t; nil when tracing is off or t
// holds no valid span context. start, when set, backdates the span (a
// reserve's spans start when the call did).
func (s *server) jobSpan(ctx context.Context, op, opType, queue string, t engine.TraceContext, start time.Time) trace.Span {
	if s.tracer == nil {
		return nil
	}
	ctx, ok := traceParent(ctx, t)
	if !ok {
		return nil
	}
	opts := []trace.SpanStartOption{
		trace.WithSpanKind(trace.SpanKindServer),
		trace.WithAttributes(
			attribute.String("messaging.system", messagingSystem),
			attribute.String("messaging.destination.name", queue),
			attribute.String("messaging.operation.name", op),
			attribute.String("messaging.operation.type", opType),
			attribute.String("sepp.node_id", s.b.Self().ID),
		),
	}
	if !start.IsZero() {
		opts = append(opts, trace.WithTimestamp(start))
	}
	_, span := s.tracer.Start(ctx, op+" "+queue, opts...)
	return span
}

// endJobSpan ends span (nil: nothing) with the job's id and the outcome.
// A follower's NotLeader is no failure of the job: the call goes on to the
// leader (forwarded, or redirected by the client), whose span tells the
// rest; the follower's span says so instead of an error.
func endJobSpan(span trace.Span, id engine.JobID, err error) {
	if span == nil {
		return
	}
	if id != 0 {
		span.SetAttributes(attribute.String("messaging.message.id", strconv.FormatUint(uint64(id), 10)))
	}
	var nl *cluster.NotLeaderError
	if errors.As(err, &nl) {
		span.SetAttributes(attribute.Bool("sepp.not_leader", true), attribute.String("sepp.leader_id", nl.Leader.ID))
		span.End()
		return
	}
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
}

// enqueueSpans starts the spans of an enqueue's items: each item's trace
// context, or for a single enqueue without one, the call's metadata. nil
// when tracing is off or no item has one.
func (s *server) enqueueSpans(ctx context.Context, items []engine.EnqueueParams) []trace.Span {
	if s.tracer == nil {
		return nil
	}
	var spans []trace.Span
	for i := range items {
		var span trace.Span
		if t := items[i].Trace; t != nil {
			span = s.jobSpan(ctx, "enqueue", "send", items[i].Queue, *t, time.Time{})
		} else if len(items) == 1 {
			if t, ok := incomingTrace(ctx); ok {
				span = s.jobSpan(ctx, "enqueue", "send", items[i].Queue, t, time.Time{})
			}
		}
		if span != nil && spans == nil {
			spans = make([]trace.Span, len(items))
		}
		if span != nil {
			spans[i] = span
		}
	}
	return spans
}

// reserveSpans records, for each delivery of a traced job, a span from the
// reserve's start to now.
func (s *server) reserveSpans(ctx context.Context, start time.Time, ds []engine.Delivery, workerID string) {
	if s.tracer == nil {
		return
	}
	for i := range ds {
		d := &ds[i]
		if d.Job.Trace == nil {
			continue
		}
		if span := s.jobSpan(ctx, "reserve", "receive", d.Job.Queue, *d.Job.Trace, start); span != nil {
			span.SetAttributes(attribute.String("sepp.worker_id", workerID), attribute.Int("sepp.attempt", int(d.Attempt)))
			endJobSpan(span, d.Job.ID, nil)
		}
	}
}

// settleSpans starts the spans of an ack or a nack (op) of the jobs refs
// name, from their trace contexts as this node holds them (a local read:
// a trace context never changes once the job is enqueued). nil when
// tracing is off or no job has one.
func (s *server) settleSpans(ctx context.Context, op string, refs []engine.LeaseRef) []trace.Span {
	if s.tracer == nil {
		return nil
	}
	type found struct {
		queue string
		t     engine.TraceContext
		ok    bool
	}
	got := make([]found, len(refs))
	any := false
	_ = s.b.Read(ctx, true, func(e engine.View) error {
		for i, r := range refs {
			f := &got[i]
			f.queue, f.t, f.ok = e.JobTrace(r.JobID)
			any = any || f.ok
		}
		return nil
	})
	if !any {
		return nil
	}
	spans := make([]trace.Span, len(refs))
	for i, f := range got {
		if f.ok {
			spans[i] = s.jobSpan(ctx, op, "settle", f.queue, f.t, time.Time{})
		}
	}
	return spans
}

// tracerOf is tp's tracer for the server's spans; nil without tp.
func tracerOf(tp trace.TracerProvider) trace.Tracer {
	if tp == nil {
		return nil
	}
	return tp.Tracer(ScopeName)
}
