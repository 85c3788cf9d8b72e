package rpc_test

import (
	"context"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc/metadata"

	seppv1 "github.com/sepp-io/sepp/proto/sepp/v1"
	"github.com/sepp-io/sepp/rpc"
	"github.com/sepp-io/sepp/rpc/rpctest"
)

// With a TracerProvider the server records a span for the enqueue,
// reserve, ack and nack of each traced job, a child of the job's trace
// context; untraced jobs get none; an enqueue without a trace context
// field joins the call's traceparent metadata.
func TestTracing_ServerSpansJoinTheJobsTrace(t *testing.T) {
	t.Parallel()
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	env := rpctest.Start(t, retentionConfig(), rpc.Options{Version: "test", TracerProvider: tp})

	const (
		traceID  = "4bf92f3577b34da6a3ce929d0e0e4736"
		parentA  = "00f067aa0ba902b7"
		parentB  = "b7ad6b7169203331"
		traceID2 = "0af7651916cd43dd8448eb211c80319c"
		traceID3 = "11111111111111111111111111111111"
	)
	a := enqueue(t, env, &seppv1.EnqueueRequest{Queue: "q", JobType: "t", TraceContext: &seppv1.TraceContext{Traceparent: "00-" + traceID + "-" + parentA + "-01"}})
	enqueue(t, env, &seppv1.EnqueueRequest{Queue: "q", JobType: "t"}) // untraced: no span
	enqueue(t, env, &seppv1.EnqueueRequest{Queue: "q", JobType: "t", TraceContext: &seppv1.TraceContext{Traceparent: "00-" + traceID3 + "-" + parentA + "-01"}})
	md := metadata.AppendToOutgoingContext(ctxT(t), "traceparent", "00-"+traceID2+"-"+parentB+"-01")
	b, err := env.Queue.Enqueue(md, &seppv1.EnqueueRequest{Queue: "q", JobType: "t"})
	if err != nil {
		t.Fatal(err)
	}
	ds := reserve(t, env, &seppv1.ReserveRequest{Queue: "q", WorkerId: "w", Max: 4})
	for _, d := range ds {
		switch d.GetJob().GetId() {
		case a.GetJobId():
			if _, err := env.Queue.Ack(ctxT(t), &seppv1.AckRequest{Ctx: d.GetCtx()}); err != nil {
				t.Fatal(err)
			}
		default:
			nack(t, env, d.GetCtx(), directiveDefault(), "again")
		}
	}

	type key struct{ name, trace, parent string }
	got := map[key]int{}
	for _, s := range rec.Ended() {
		if s.SpanKind() != trace.SpanKindServer {
			t.Errorf("span %s kind %v", s.Name(), s.SpanKind())
		}
		got[key{s.Name(), s.SpanContext().TraceID().String(), s.Parent().SpanID().String()}]++
	}
	want := map[key]int{
		{"enqueue q", traceID, parentA}: 1,
		{"reserve q", traceID, parentA}: 1,
		{"ack q", traceID, parentA}:     1,
		// b carries no trace context of its own: only its enqueue, from
		// the metadata, is traced.
		{"enqueue q", traceID2, parentB}: 1,
		{"enqueue q", traceID3, parentA}: 1,
		{"reserve q", traceID3, parentA}: 1,
		{"nack q", traceID3, parentA}:    1,
	}
	if len(got) != len(want) {
		t.Fatalf("spans %v, want %v (job b %d)", got, want, b.GetJobId())
	}
	for k, n := range want {
		if got[k] != n {
			t.Fatalf("spans %v, want %v", got, want)
		}
	}
}
