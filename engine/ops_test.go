package engine_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/sepp-io/sepp/engine"
	"github.com/sepp-io/sepp/engine/enginetest"
)

// Every kind of write is applied by Apply, and answers its result type
// whether it succeeds or fails (zero-valued ops mostly fail validation).
func TestApply_EveryOpAnswersItsResultType(t *testing.T) {
	enginetest.RequireEveryOp(t)
	for _, c := range enginetest.EveryOp() {
		t.Run(c.Op.OpName(), func(t *testing.T) {
			e := engine.New(engine.DefaultConfig())
			v, err := e.Apply(enginetest.Epoch, c.Op)
			if err != nil && strings.Contains(err.Error(), "not an operation") {
				t.Fatalf("Apply does not carry %s: %v", c.Op.OpName(), err)
			}
			if !c.HasResultType(v) {
				t.Fatalf("Apply(%s) answered %T", c.Op.OpName(), v)
			}
		})
	}
}

// Apply runs the same engine method a direct call does: the same state and
// the same answer.
func TestApply_SameAsTheMethod(t *testing.T) {
	clock := enginetest.NewClock()
	viaApply, direct := engine.New(engine.DefaultConfig()), engine.New(engine.DefaultConfig())
	p := engine.EnqueueParams{Queue: "emails", JobType: "welcome", Payload: []byte("hi"), IdempotencyKey: "k1"}
	got, err := apply(viaApply, clock.Now(), engine.EnqueueOp{Params: p})
	if err != nil {
		t.Fatal(err)
	}
	want, err := direct.Enqueue(clock.Now(), p)
	if err != nil || got != want {
		t.Fatalf("Apply: %+v; Enqueue: %+v, %v", got, want, err)
	}
	rp := engine.ReserveParams{Queue: "emails", WorkerID: "w", N: 1}
	ds, err := apply(viaApply, clock.Now(), engine.ReserveOp{Params: rp})
	if err != nil || len(ds) != 1 {
		t.Fatalf("reserve through Apply: %v, %v", ds, err)
	}
	dd, err := direct.Reserve(clock.Now(), rp)
	if err != nil || len(dd) != 1 || ds[0].LeaseToken != dd[0].LeaseToken || ds[0].Job.ID != dd[0].Job.ID {
		t.Fatalf("reserve: Apply %+v, method %+v (%v)", ds, dd, err)
	}
	ref := engine.LeaseRef{JobID: ds[0].Job.ID, LeaseToken: ds[0].LeaseToken}
	if _, err := apply(viaApply, clock.Now(), engine.AckOp{Ref: ref}); err != nil {
		t.Fatal(err)
	}
	if err := direct.Ack(clock.Now(), ref); err != nil {
		t.Fatal(err)
	}
	if a, b := viaApply.Digest(), direct.Digest(); a != b {
		t.Fatalf("state after Apply differs from the methods': %x != %x", a, b)
	}
}

// apply is Apply with its result typed.
func apply[R any](e *engine.Engine, now time.Time, op engine.OpOf[R]) (R, error) {
	v, err := e.Apply(now, op)
	return engine.ResultOf(op, v, err)
}

// A result of another type than the op's is an error naming both, not a
// zero value passed on.
func TestResultOf_RefusesAnotherType(t *testing.T) {
	_, err := engine.ResultOf(engine.EnqueueOp{}, engine.Done{}, nil)
	if err == nil || !strings.Contains(err.Error(), "Enqueue answered engine.Done") {
		t.Fatalf("err %v; want one naming the op and both types", err)
	}
	boom := errors.New("boom")
	if _, err := engine.ResultOf(engine.AckOp{}, nil, boom); !errors.Is(err, boom) {
		t.Fatalf("err %v; want the backend's error", err)
	}
}
