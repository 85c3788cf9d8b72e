// Package otelsepp traces the sepp Go client with OpenTelemetry: the
// producer's span of each enqueue (kind producer, "send <queue>") whose
// context the job carries in its trace_context field, and the worker's span
// of each handler run (kind consumer, "process <queue>"), a child of the
// producer's span or, with WithLinkedProcess, the root of a trace of its own
// linked to it. Both carry the messaging semantic conventions
// (messaging.system=sepp, messaging.destination.name, messaging.operation.*,
// messaging.message.id). The server joins the same trace when it exports
// spans ([tracing] in its config; docs/tracing.md).
//
//	c, err := client.New(ctx, addrs, client.WithTracing(otelsepp.New()))
//
// The client module itself has no OpenTelemetry dependency: this module
// implements its client.Tracing.
package otelsepp

import (
	"context"
	"strconv"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/sepp-io/sepp/client"
)

// ScopeName is the instrumentation scope of the spans (the tracer's name).
const ScopeName = "github.com/sepp-io/sepp/client/otelsepp"

// System is messaging.system of every span.
const System = "sepp"

// Option configures a Tracing.
type Option func(*Tracing)

// WithTracerProvider sets the provider of the tracer (default: otel's
// global one, otel.GetTracerProvider, as it is when New runs).
func WithTracerProvider(tp trace.TracerProvider) Option {
	return func(t *Tracing) { t.tp = tp }
}

// WithPropagator sets how a span's context becomes a job's trace context
// and back (default: W3C trace context, propagation.TraceContext; a
// composite works too, but only traceparent and tracestate travel with the
// job).
func WithPropagator(p propagation.TextMapPropagator) Option {
	return func(t *Tracing) { t.prop = p }
}

// WithLinkedProcess makes each handler's span the root of a trace of its
// own, linked to the producer's span, instead of its child. A job may wait
// in its queue for hours or be retried for days: a trace per run keeps
// the producer's trace short, and the link still leads from one to the
// other.
func WithLinkedProcess() Option {
	return func(t *Tracing) { t.linked = true }
}

// Tracing implements client.Tracing with OpenTelemetry. Build it with New.
type Tracing struct {
	tp     trace.TracerProvider
	prop   propagation.TextMapPropagator
	tracer trace.Tracer
	linked bool
}

var _ client.Tracing = (*Tracing)(nil)

// New returns a Tracing; pass it to client.WithTracing.
func New(opts ...Option) *Tracing {
	t := &Tracing{}
	for _, o := range opts {
		o(t)
	}
	if t.tp == nil {
		t.tp = otel.GetTracerProvider()
	}
	if t.prop == nil {
		t.prop = propagation.TraceContext{}
	}
	t.tracer = t.tp.Tracer(ScopeName)
	return t
}

// carrier is a job's trace context as a propagation.TextMapCarrier.
type carrier client.TraceContext

func (c *carrier) Get(key string) string {
	switch key {
	case "traceparent":
		return c.Traceparent
	case "tracestate":
		return c.Tracestate
	}
	return ""
}

func (c *carrier) Set(key, value string) {
	switch key {
	case "traceparent":
		c.Traceparent = value
	case "tracestate":
		c.Tracestate = value
	}
}

func (c *carrier) Keys() []string { return []string{"traceparent", "tracestate"} }

// Inject is the trace context of ctx's span as a job carries it (zero
// when ctx has no valid span context).
func (t *Tracing) Inject(ctx context.Context) client.TraceContext {
	var c carrier
	t.prop.Inject(ctx, &c)
	return client.TraceContext(c)
}

// Extract is ctx with the span context of a job's trace context as its
// remote parent (ctx unchanged when tc holds none).
func (t *Tracing) Extract(ctx context.Context, tc client.TraceContext) context.Context {
	c := carrier(tc)
	return t.prop.Extract(ctx, &c)
}

// StartSend starts the producer's span, "send <queue>", and returns its
// context as the trace context the jobs carry.
func (t *Tracing) StartSend(ctx context.Context, s client.Send) (context.Context, client.TraceContext, func(uint64, error)) {
	attrs := []attribute.KeyValue{
		semconv.MessagingSystemKey.String(System),
		semconv.MessagingDestinationName(s.Queue),
		semconv.MessagingOperationName("send"),
		semconv.MessagingOperationTypeSend,
		attribute.String("sepp.job_type", s.JobType),
	}
	if s.Jobs != 1 {
		attrs = append(attrs, semconv.MessagingBatchMessageCount(s.Jobs))
	}
	ctx, span := t.tracer.Start(ctx, "send "+s.Queue, trace.WithSpanKind(trace.SpanKindProducer), trace.WithAttributes(attrs...))
	return ctx, t.Inject(ctx), func(jobID uint64, err error) {
		if jobID != 0 {
			span.SetAttributes(semconv.MessagingMessageID(strconv.FormatUint(jobID, 10)))
		}
		if err != nil {
			span.RecordError(err)
			span.SetStatus(codes.Error, err.Error())
		}
		span.End()
	}
}

// StartProcess starts the worker's span of one handler run, "process
// <queue>", a child of the job's trace context (or linked to it, with
// WithLinkedProcess).
func (t *Tracing) StartProcess(ctx context.Context, d *client.Delivery) (context.Context, func(client.Outcome)) {
	queue := d.Ctx.Queue
	if queue == "" {
		queue = d.Job.Queue
	}
	opts := []trace.SpanStartOption{
		trace.WithSpanKind(trace.SpanKindConsumer),
		trace.WithAttributes(
			semconv.MessagingSystemKey.String(System),
			semconv.MessagingDestinationName(queue),
			semconv.MessagingOperationName("process"),
			semconv.MessagingOperationTypeProcess,
			semconv.MessagingMessageID(strconv.FormatUint(d.Ctx.JobID, 10)),
			attribute.String("sepp.job_type", d.Job.Type),
			attribute.Int("sepp.attempt", int(d.Ctx.Attempt)),
		),
	}
	if tc := d.Job.TraceContext; tc != nil {
		producer := trace.SpanContextFromContext(t.Extract(context.Background(), *tc))
		if producer.IsValid() {
			if t.linked {
				opts = append(opts, trace.WithNewRoot(), trace.WithLinks(trace.Link{SpanContext: producer}))
			} else {
				ctx = trace.ContextWithRemoteSpanContext(ctx, producer)
			}
		}
	}
	ctx, span := t.tracer.Start(ctx, "process "+queue, opts...)
	return ctx, func(o client.Outcome) {
		if !o.Ack {
			span.SetAttributes(attribute.String("sepp.outcome", o.String()))
			if o.Err != nil {
				span.RecordError(o.Err)
				span.SetStatus(codes.Error, o.Err.Error())
			} else {
				span.SetStatus(codes.Error, o.String())
			}
		}
		span.End()
	}
}
