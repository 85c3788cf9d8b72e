package rpc_test

import (
	"strings"
	"testing"

	"google.golang.org/grpc/codes"

	"github.com/sepp-io/sepp/engine"
	seppv1 "github.com/sepp-io/sepp/proto/sepp/v1"
)

// A job's trace context through gRPC: kept by an enqueue (single and
// batched), returned by a reserve and an inspection, on the dead-letter
// record and its forwarded copy; an invalid one is INVALID_ARGUMENT naming
// the field and its limit.
func TestTraceContext_ThroughGRPC(t *testing.T) {
	t.Parallel()
	cfg := retentionConfig()
	cfg.Queues = append(cfg.Queues, engine.QueueConfig{Name: "traced.dead"}, engine.QueueConfig{Name: "traced", DeadLetterQueue: "traced.dead"})
	env := start(t, cfg)
	tc := &seppv1.TraceContext{Traceparent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", Tracestate: "congo=t61rcWkgMzE"}
	res := enqueue(t, env, &seppv1.EnqueueRequest{Queue: "traced", JobType: "t", TraceContext: tc})
	plain := enqueue(t, env, &seppv1.EnqueueRequest{Queue: "traced", JobType: "t"})
	batch, err := env.Queue.EnqueueBatch(ctxT(t), &seppv1.EnqueueBatchRequest{Jobs: []*seppv1.EnqueueRequest{
		{Queue: "traced", JobType: "t", TraceContext: tc},
		{Queue: "traced", JobType: "t", TraceContext: &seppv1.TraceContext{Traceparent: "bogus"}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	st := requireItemCode(t, batch.GetResults()[1].GetError(), codes.InvalidArgument)
	if !strings.Contains(st, "jobs[1].trace_context.traceparent") {
		t.Fatalf("batch item error %q does not name jobs[1].trace_context.traceparent", st)
	}
	same := func(got *seppv1.TraceContext) bool {
		return got.GetTraceparent() == tc.GetTraceparent() && got.GetTracestate() == tc.GetTracestate()
	}
	job, err := env.Admin.GetJob(ctxT(t), &seppv1.GetJobRequest{JobId: res.GetJobId()})
	if err != nil || !same(job.GetJob().GetTraceContext()) {
		t.Fatalf("GetJob trace_context %v, %v", job.GetJob().GetTraceContext(), err)
	}
	got := reserve(t, env, &seppv1.ReserveRequest{Queue: "traced", WorkerId: "w", Max: 3})
	if len(got) != 3 {
		t.Fatalf("reserved %d jobs, want 3", len(got))
	}
	for _, rj := range got {
		want := rj.GetJob().GetId() != plain.GetJobId()
		if want != same(rj.GetJob().GetTraceContext()) || !want && rj.GetJob().GetTraceContext() != nil {
			t.Fatalf("job %d delivered with trace_context %v", rj.GetJob().GetId(), rj.GetJob().GetTraceContext())
		}
		if rj.GetJob().GetId() == res.GetJobId() {
			nack(t, env, rj.GetCtx(), directiveDeadLetter(), "poison")
		}
	}
	rec, err := env.Admin.GetDeadLetter(ctxT(t), &seppv1.GetDeadLetterRequest{JobId: res.GetJobId()})
	if err != nil || !same(rec.GetRecord().GetJob().GetTraceContext()) {
		t.Fatalf("dead letter trace_context %v, %v", rec.GetRecord().GetJob().GetTraceContext(), err)
	}
	if fwd := reserveOne(t, env, "traced.dead"); !same(fwd.GetJob().GetTraceContext()) {
		t.Fatalf("forwarded copy's trace_context %v", fwd.GetJob().GetTraceContext())
	}

	for _, tt := range []struct {
		tc           *seppv1.TraceContext
		field, limit string
	}{
		{&seppv1.TraceContext{Traceparent: strings.Repeat("a", 129)}, "trace_context.traceparent", "limit of 128"},
		{&seppv1.TraceContext{Traceparent: "00-4BF92F3577B34DA6A3CE929D0E0E4736-00F067AA0BA902B7-01"}, "trace_context.traceparent", "lowercase hex"},
		{&seppv1.TraceContext{Tracestate: "a=b"}, "trace_context.traceparent", "is required"},
		{&seppv1.TraceContext{Traceparent: tc.GetTraceparent(), Tracestate: strings.Repeat("a", 513)}, "trace_context.tracestate", "limit of 512"},
	} {
		_, err := env.Queue.Enqueue(ctxT(t), &seppv1.EnqueueRequest{Queue: "traced", JobType: "t", TraceContext: tt.tc})
		requireFieldViolation(t, requireCode(t, err, codes.InvalidArgument), tt.field, tt.limit)
	}
}

func requireItemCode(t *testing.T, e *seppv1.ItemError, code codes.Code) string {
	t.Helper()
	if codes.Code(e.GetCode()) != code {
		t.Fatalf("item error %v, want %v", e, code)
	}
	return e.GetMessage()
}
