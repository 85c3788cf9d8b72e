package otelsepp_test

import (
	"context"
	"errors"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/sepp-io/sepp/client"
	"github.com/sepp-io/sepp/client/otelsepp"
)

func setup(t *testing.T, opts ...otelsepp.Option) (*otelsepp.Tracing, *tracetest.SpanRecorder, trace.Tracer) {
	t.Helper()
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	return otelsepp.New(append([]otelsepp.Option{otelsepp.WithTracerProvider(tp)}, opts...)...), rec, tp.Tracer("test")
}

func attrs(s sdktrace.ReadOnlySpan) map[attribute.Key]attribute.Value {
	m := map[attribute.Key]attribute.Value{}
	for _, kv := range s.Attributes() {
		m[kv.Key] = kv.Value
	}
	return m
}

// The producer's span is a child of the caller's; the job carries its
// context; the worker's span is its child, with the messaging attributes.
func TestSendThenProcess_OneTrace(t *testing.T) {
	tr, rec, test := setup(t)
	ctx, parent := test.Start(context.Background(), "produce")
	sctx, tc, end := tr.StartSend(ctx, client.Send{Queue: "emails", JobType: "welcome", Jobs: 1})
	send := trace.SpanContextFromContext(sctx)
	if tc.Traceparent != "00-"+send.TraceID().String()+"-"+send.SpanID().String()+"-01" {
		t.Fatalf("traceparent %q, want the send span's", tc.Traceparent)
	}
	end(42, nil)
	parent.End()

	d := &client.Delivery{Ctx: client.JobContext{JobID: 42, Queue: "emails", Attempt: 1}, Job: client.Job{Queue: "emails", Type: "welcome", TraceContext: &tc}}
	pctx, done := tr.StartProcess(context.Background(), d)
	if got := trace.SpanContextFromContext(pctx); got.TraceID() != send.TraceID() {
		t.Fatalf("process span in trace %s, want %s", got.TraceID(), send.TraceID())
	}
	done(client.Outcome{Ack: true})

	spans := rec.Ended()
	if len(spans) != 3 {
		t.Fatalf("%d spans ended, want 3", len(spans))
	}
	byName := map[string]sdktrace.ReadOnlySpan{}
	for _, s := range spans {
		byName[s.Name()] = s
	}
	sendSpan, proc := byName["send emails"], byName["process emails"]
	if sendSpan == nil || proc == nil {
		t.Fatalf("spans %v", byName)
	}
	if sendSpan.Parent().SpanID() != parent.SpanContext().SpanID() || sendSpan.SpanKind() != trace.SpanKindProducer {
		t.Fatalf("send span parent %s kind %v", sendSpan.Parent().SpanID(), sendSpan.SpanKind())
	}
	if proc.Parent().SpanID() != sendSpan.SpanContext().SpanID() || !proc.Parent().IsRemote() || proc.SpanKind() != trace.SpanKindConsumer {
		t.Fatalf("process span parent %s (remote %v) kind %v, want the send span %s", proc.Parent().SpanID(), proc.Parent().IsRemote(), proc.SpanKind(), sendSpan.SpanContext().SpanID())
	}
	for name, want := range map[string]map[attribute.Key]string{
		"send emails":    {"messaging.system": "sepp", "messaging.destination.name": "emails", "messaging.operation.type": "send", "messaging.operation.name": "send", "messaging.message.id": "42"},
		"process emails": {"messaging.system": "sepp", "messaging.destination.name": "emails", "messaging.operation.type": "process", "messaging.operation.name": "process", "messaging.message.id": "42"},
	} {
		got := attrs(byName[name])
		for k, v := range want {
			if got[k].AsString() != v {
				t.Errorf("%s: %s = %q, want %q", name, k, got[k].AsString(), v)
			}
		}
	}
}

// With WithLinkedProcess the worker's span starts a trace of its own,
// linked to the producer's span; a failed run records the error.
func TestProcess_Linked(t *testing.T) {
	tr, rec, _ := setup(t, otelsepp.WithLinkedProcess())
	sctx, tc, end := tr.StartSend(context.Background(), client.Send{Queue: "q", Jobs: 3})
	end(0, errors.New("boom"))
	send := trace.SpanContextFromContext(sctx)
	_, done := tr.StartProcess(context.Background(), &client.Delivery{Ctx: client.JobContext{JobID: 7}, Job: client.Job{Queue: "q", TraceContext: &tc}})
	done(client.Outcome{Err: errors.New("bad"), Directive: client.DefaultRetry()})
	var proc, sendSpan sdktrace.ReadOnlySpan
	for _, s := range rec.Ended() {
		switch s.Name() {
		case "process q":
			proc = s
		case "send q":
			sendSpan = s
		}
	}
	if proc == nil || sendSpan == nil {
		t.Fatal("spans missing")
	}
	if proc.SpanContext().TraceID() == send.TraceID() || proc.Parent().IsValid() {
		t.Fatal("linked process span joined the producer's trace")
	}
	if len(proc.Links()) != 1 || proc.Links()[0].SpanContext.SpanID() != send.SpanID() {
		t.Fatalf("links %v, want the send span", proc.Links())
	}
	if proc.Status().Code.String() != "Error" || sendSpan.Status().Code.String() != "Error" {
		t.Fatalf("statuses %v, %v", proc.Status(), sendSpan.Status())
	}
	if attrs(sendSpan)["messaging.batch.message_count"].AsInt64() != 3 {
		t.Fatalf("batch count %v", attrs(sendSpan)["messaging.batch.message_count"])
	}
}

// A job without a trace context, or an unsampled/absent parent: the
// worker's span is a root and nothing is injected from an empty context.
func TestNoContext(t *testing.T) {
	tr, _, _ := setup(t)
	if tc := tr.Inject(context.Background()); tc != (client.TraceContext{}) {
		t.Fatalf("injected %+v from an empty context", tc)
	}
	ctx, done := tr.StartProcess(context.Background(), &client.Delivery{Job: client.Job{Queue: "q"}})
	done(client.Outcome{Ack: true})
	if !trace.SpanContextFromContext(ctx).IsValid() {
		t.Fatal("no span started")
	}
}
