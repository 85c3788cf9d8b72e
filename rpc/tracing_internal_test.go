package rpc

import (
	"context"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/sepp-io/sepp/cluster"
	"github.com/sepp-io/sepp/engine"
)

// readCounter is a Backend whose Read counts its calls and serves an
// engine holding one traced job.
type readCounter struct {
	Backend
	e     *engine.Engine
	reads int
}

func (r *readCounter) Read(_ context.Context, _ bool, fn func(engine.View) error) error {
	r.reads++
	return fn(r.e)
}

func (r *readCounter) Self() cluster.NodeInfo { return cluster.NodeInfo{ID: "n1"} }

// TestTracing_OffCostsNothing: without a TracerProvider the span helpers
// of Enqueue, Reserve, Ack and Nack allocate nothing and read nothing, for
// traced jobs too; with one, the same calls record their spans (so the
// measurement is of code that does work when tracing is on).
func TestTracing_OffCostsNothing(t *testing.T) {
	e := engine.New(engine.DefaultConfig())
	tc := &engine.TraceContext{Traceparent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}
	res, err := e.Enqueue(time.Unix(1, 0), engine.EnqueueParams{Queue: "q", JobType: "t", Trace: tc})
	if err != nil {
		t.Fatal(err)
	}
	ds, err := e.Reserve(time.Unix(1, 0), engine.ReserveParams{Queue: "q", N: 1, WorkerID: "w"})
	if err != nil || len(ds) != 1 {
		t.Fatal(ds, err)
	}
	items := []engine.EnqueueParams{{Queue: "q", JobType: "t", Trace: tc}}
	refs := []engine.LeaseRef{{JobID: res.JobID, LeaseToken: ds[0].LeaseToken}}
	ctx := context.Background()
	all := func(s *server) {
		for _, span := range s.enqueueSpans(ctx, items) {
			endJobSpan(span, 1, nil)
		}
		s.reserveSpans(ctx, time.Time{}, ds, "w")
		for _, span := range s.settleSpans(ctx, "ack", refs) {
			endJobSpan(span, res.JobID, nil)
		}
	}

	b := &readCounter{e: e}
	off := &server{b: b, tracer: tracerOf(nil)}
	if allocs := testing.AllocsPerRun(100, func() { all(off) }); allocs != 0 {
		t.Fatalf("tracing off: %v allocations per call, want 0", allocs)
	}
	if b.reads != 0 {
		t.Fatalf("tracing off: %d reads of the state, want 0", b.reads)
	}

	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	defer func() { _ = tp.Shutdown(ctx) }()
	on := &server{b: b, tracer: tracerOf(tp)}
	all(on)
	if n := len(rec.Ended()); n != 3 || b.reads != 1 {
		t.Fatalf("tracing on: %d spans and %d reads, want 3 and 1", n, b.reads)
	}
}

// TestTracing_NotLeaderIsNoError: a follower's span of a call it answers
// with NotLeader (the call goes on to the leader) says so, without an
// error status; any other failure is an error.
func TestTracing_NotLeaderIsNoError(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	defer func() { _ = tp.Shutdown(context.Background()) }()
	s := &server{b: &readCounter{e: engine.New(engine.DefaultConfig())}, tracer: tracerOf(tp)}
	tc := engine.TraceContext{Traceparent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}
	endJobSpan(s.jobSpan(context.Background(), "ack", "settle", "q", tc, time.Time{}), 7, &cluster.NotLeaderError{Leader: cluster.NodeInfo{ID: "n2"}})
	endJobSpan(s.jobSpan(context.Background(), "ack", "settle", "q", tc, time.Time{}), 7, engine.ErrLeaseLost)
	spans := rec.Ended()
	if len(spans) != 2 {
		t.Fatalf("%d spans", len(spans))
	}
	attrs := map[string]string{}
	for _, kv := range spans[0].Attributes() {
		attrs[string(kv.Key)] = kv.Value.String()
	}
	if spans[0].Status().Code.String() != "Unset" || attrs["sepp.not_leader"] != "true" || attrs["sepp.leader_id"] != "n2" || attrs["messaging.message.id"] != "7" {
		t.Fatalf("not-leader span: status %v, attributes %v", spans[0].Status(), attrs)
	}
	if spans[1].Status().Code.String() != "Error" {
		t.Fatalf("lost-lease span: status %v", spans[1].Status())
	}
}
