package engine_test

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/sepp-io/sepp/engine"
	et "github.com/sepp-io/sepp/engine/enginetest"
)

const (
	traceparentA = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	traceparentB = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00"
)

// traceEngine holds traced jobs waiting, reserved, dead-lettered and
// forwarded to a dead-letter queue, beside untraced ones, so the fuzzer
// starts from a layout 13 snapshot.
func traceEngine(t testing.TB) *engine.Engine {
	t.Helper()
	e := payloadsOffEngine(t)
	now := e.Now().Add(time.Second)
	for i, tc := range []*engine.TraceContext{
		{Traceparent: traceparentA, Tracestate: "vendor=a,other=b"},
		nil,
		{Traceparent: traceparentB},
		{Traceparent: traceparentA},
	} {
		p := et.Job("a")
		p.Trace = tc
		p.Payload = []byte{byte('0' + i)}
		et.MustEnqueue(t, e, now, p)
	}
	// Reserve what is ready; dead-letter the first traced job (forwarded
	// to a.dead with its trace), keep the rest reserved.
	ds := et.MustReserve(t, e, now, "a", 100)
	for _, d := range ds {
		if d.Job.Trace != nil && d.Job.Trace.Tracestate != "" {
			if _, err := e.Nack(now, engine.NackParams{LeaseRef: et.Ref(d), Directive: engine.DirectiveDeadLetter, Reason: "traced death"}); err != nil {
				t.Fatal(err)
			}
		}
	}
	return e
}

func TestTraceContext_KeptWithTheJob(t *testing.T) {
	t.Parallel()
	clock := et.NewClock()
	e := et.New(t, et.WithRetention(time.Hour),
		et.WithQueue(engine.QueueConfig{Name: "a", DeadLetterQueue: "a.dead", DefaultMaxAttempts: et.Ptr[uint32](1)}),
		et.WithQueue(engine.QueueConfig{Name: "a.dead"}))
	// The caller's buffer changes after the enqueue: the engine keeps a copy.
	buf := []byte(traceparentA)
	p := et.Job("a")
	p.Trace = &engine.TraceContext{Traceparent: string(buf), Tracestate: "k=v"}
	traced := et.MustEnqueue(t, e, clock.Now(), p)
	plain := et.MustEnqueue(t, e, clock.Now(), et.Job("a"))
	p.Trace.Traceparent = traceparentB

	j, err := e.GetJob(traced)
	if err != nil {
		t.Fatal(err)
	}
	if j.Trace == nil || *j.Trace != (engine.TraceContext{Traceparent: traceparentA, Tracestate: "k=v"}) {
		t.Fatalf("GetJob trace %+v", j.Trace)
	}
	j.Trace.Traceparent = "mutated" // a view is the caller's
	if j, _ := e.GetJob(plain); j.Trace != nil {
		t.Fatalf("untraced job has trace %+v", j.Trace)
	}
	ds := et.MustReserve(t, e, clock.Now(), "a", 2)
	if ds[0].Job.ID != traced || ds[0].Job.Trace == nil || ds[0].Job.Trace.Traceparent != traceparentA || ds[1].Job.Trace != nil {
		t.Fatalf("deliveries %+v, %+v", ds[0].Job.Trace, ds[1].Job.Trace)
	}
	// Dead: the record keeps it, and the copy forwarded to a.dead too.
	if _, err := e.Nack(clock.Now(), engine.NackParams{LeaseRef: et.Ref(ds[0]), Directive: engine.DirectiveDeadLetter, Reason: "x"}); err != nil {
		t.Fatal(err)
	}
	recs, err := e.ListDeadLetters("a", engine.Page{})
	if err != nil || len(recs) != 1 || recs[0].Job.Trace == nil || recs[0].Job.Trace.Traceparent != traceparentA {
		t.Fatalf("dead letters %+v, %v", recs, err)
	}
	fwd := et.MustReserveOne(t, e, clock.Now(), "a.dead")
	if fwd.Job.Trace == nil || *fwd.Job.Trace != (engine.TraceContext{Traceparent: traceparentA, Tracestate: "k=v"}) {
		t.Fatalf("forwarded copy's trace %+v", fwd.Job.Trace)
	}
	// A fresh redrive replays the record with its trace context.
	if _, err := e.StartRedrive(clock.Now(), engine.RedriveParams{Selection: engine.RedriveSelection{Queue: "a"}, Fresh: true}); err != nil {
		t.Fatal(err)
	}
	for _, task := range e.RedriveTasks() {
		if _, err := e.RedriveStep(clock.Advance(time.Second), task.ID, 10); err != nil {
			t.Fatal(err)
		}
	}
	again := et.MustReserveOne(t, e, clock.Now(), "a")
	if again.Job.ID == traced || again.Job.Trace == nil || again.Job.Trace.Traceparent != traceparentA {
		t.Fatalf("redriven job %d trace %+v", again.Job.ID, again.Job.Trace)
	}
	et.RequireInvariants(t, e)
}

func TestTraceContext_Checked(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		trace engine.TraceContext
		field string
		want  string
	}{
		{"StateWithoutParent", engine.TraceContext{Tracestate: "a=b"}, "trace_context.traceparent", "is required"},
		{"ParentTooLong", engine.TraceContext{Traceparent: "01-" + strings.Repeat("a", 130)}, "trace_context.traceparent", "above the limit of 128"},
		{"StateTooLong", engine.TraceContext{Traceparent: traceparentA, Tracestate: strings.Repeat("a", 513)}, "trace_context.tracestate", "above the limit of 512"},
		{"Uppercase", engine.TraceContext{Traceparent: strings.ToUpper(traceparentA)}, "trace_context.traceparent", "lowercase hex"},
		{"VersionFF", engine.TraceContext{Traceparent: "ff" + traceparentA[2:]}, "trace_context.traceparent", "version ff"},
		{"ZeroTraceID", engine.TraceContext{Traceparent: "00-00000000000000000000000000000000-00f067aa0ba902b7-01"}, "trace_context.traceparent", "trace_id"},
		{"ZeroParentID", engine.TraceContext{Traceparent: "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01"}, "trace_context.traceparent", "parent_id"},
		{"Version00Longer", engine.TraceContext{Traceparent: traceparentA + "-xx"}, "trace_context.traceparent", "55 bytes"},
		{"StateControlByte", engine.TraceContext{Traceparent: traceparentA, Tracestate: "a=\nb"}, "trace_context.tracestate", "printable ASCII"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := et.New(t)
			p := et.Job("q")
			p.Trace = &tc.trace
			_, err := e.Enqueue(et.Epoch, p)
			var fe *engine.FieldError
			if !errors.As(err, &fe) || !errors.Is(err, engine.ErrInvalidArgument) || fe.Field != tc.field || !strings.Contains(fe.Reason, tc.want) {
				t.Fatalf("err %v, want an invalid %s saying %q", err, tc.field, tc.want)
			}
		})
	}
	// A later version may append fields.
	if err := engine.CheckTraceContext(&engine.TraceContext{Traceparent: "01" + traceparentA[2:] + "-later"}); err != nil {
		t.Fatal(err)
	}
}

// TestTraceContext_Charged: a trace context is counted in the memory
// budget, and a job without one costs what it did before.
func TestTraceContext_Charged(t *testing.T) {
	t.Parallel()
	held := func(tc *engine.TraceContext) int64 {
		e := et.New(t)
		p := et.Job("q")
		p.Trace = tc
		et.MustEnqueue(t, e, et.Epoch, p)
		return e.MemoryHeldTotal()
	}
	plain, traced := held(nil), held(&engine.TraceContext{Traceparent: traceparentA, Tracestate: "k=v"})
	if traced <= plain+int64(len(traceparentA)) {
		t.Fatalf("held %d with a trace context, %d without", traced, plain)
	}
}

func TestTraceContext_SnapshotRoundTrip(t *testing.T) {
	t.Parallel()
	e := traceEngine(t)
	snap := snapshotBytes(t, e)
	if snap[8] != 13 {
		t.Fatalf("layout %d, want 13", snap[8])
	}
	restored := engine.New(engine.DefaultConfig())
	if err := restored.Restore(bytes.NewReader(snap)); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(snapshotBytes(t, restored), snap) || restored.Digest() != e.Digest() {
		t.Fatal("restored engine differs from the original")
	}
	et.RequireInvariants(t, restored)
	var traced int
	for _, d := range et.MustReserve(t, restored, restored.Now().Add(time.Hour), "a.dead", 10) {
		if d.Job.Trace != nil && d.Job.Trace.Tracestate == "vendor=a,other=b" {
			traced++
		}
	}
	if traced != 1 {
		t.Fatalf("%d forwarded traced jobs after restore, want 1", traced)
	}
	// Without any trace context the engine writes the older layout.
	if data := snapshotBytes(t, payloadsOffEngine(t)); data[8] != 12 {
		t.Fatalf("untraced engine writes layout %d, want 12", data[8])
	}
}
