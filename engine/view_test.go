package engine_test

import (
	"bytes"
	"reflect"
	"testing"
	"time"

	"github.com/sepp-io/sepp/engine"
	"github.com/sepp-io/sepp/engine/enginetest"
)

// TestView_MethodsChangeNothing calls every method of engine.View on a
// state with work due (a lease past its expiry, a scheduled job past its
// time, a dead letter past its retention) at a now after all of it, and
// requires the snapshot and the held bytes unchanged: a transition added to
// the View (a Tick, a Reserve, anything that first runs what is due)
// changes them and fails here. Arguments are the state's own queue and job
// id, so a method does real work rather than refusing an unknown name.
func TestView_MethodsChangeNothing(t *testing.T) {
	clk := enginetest.NewClock()
	e := enginetest.New(t, enginetest.WithRetention(time.Minute))
	const queue = "default"
	leased := enginetest.MustEnqueue(t, e, clk.Now(), enginetest.Job(queue))
	enginetest.MustEnqueue(t, e, clk.Now(), enginetest.Job(queue))
	later := enginetest.Job(queue)
	later.ScheduledAt = clk.Now().Add(time.Second)
	enginetest.MustEnqueue(t, e, clk.Now(), later)
	d := enginetest.MustReserveOne(t, e, clk.Now(), queue)
	if d.Job.ID != leased {
		t.Fatalf("reserved job %d, want %d", d.Job.ID, leased)
	}
	dead := enginetest.MustEnqueue(t, e, clk.Now(), enginetest.Job(queue))
	dl := enginetest.MustReserveOne(t, e, clk.Now(), queue)
	if _, err := e.Nack(clk.Now(), engine.NackParams{LeaseRef: enginetest.Ref(dl), Directive: engine.DirectiveDeadLetter}); err != nil {
		t.Fatalf("nack: %v", err)
	}
	// Everything above is due by now: the lease expired, the scheduled
	// job's time came, the dead letter's retention ended.
	now := clk.Advance(time.Hour)

	var before bytes.Buffer
	if err := e.Snapshot(&before); err != nil {
		t.Fatal(err)
	}
	heldBefore := e.MemoryHeldTotal()

	var v engine.View = e
	args := map[reflect.Type]reflect.Value{
		reflect.TypeFor[time.Time]():            reflect.ValueOf(now),
		reflect.TypeFor[string]():               reflect.ValueOf(queue),
		reflect.TypeFor[engine.JobID]():         reflect.ValueOf(dead),
		reflect.TypeFor[int]():                  reflect.ValueOf(10),
		reflect.TypeFor[uint64]():               reflect.ValueOf(uint64(1)),
		reflect.TypeFor[engine.State]():         reflect.ValueOf(engine.StateReady),
		reflect.TypeFor[engine.Page]():          reflect.ValueOf(engine.Page{Limit: 10}),
		reflect.TypeFor[engine.ReserveParams](): reflect.ValueOf(engine.ReserveParams{Queue: queue, N: 1, WorkerID: "w"}),
		reflect.TypeFor[engine.DrainParams]():   reflect.ValueOf(engine.DrainParams{Queue: queue, Max: 10}),
		reflect.TypeFor[engine.RedriveParams](): reflect.ValueOf(engine.RedriveParams{Selection: engine.RedriveSelection{Queue: queue}}),
	}
	vt, vv := reflect.TypeFor[engine.View](), reflect.ValueOf(&v).Elem()
	if vt.NumMethod() == 0 {
		t.Fatal("engine.View has no methods")
	}
	for i := range vt.NumMethod() {
		m := vt.Method(i)
		in := make([]reflect.Value, m.Type.NumIn())
		for j := range in {
			a, ok := args[m.Type.In(j)]
			if !ok {
				t.Fatalf("View.%s takes a %v: give the test a value of it", m.Name, m.Type.In(j))
			}
			in[j] = a
		}
		vv.Method(i).Call(in)

		var after bytes.Buffer
		if err := e.Snapshot(&after); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(before.Bytes(), after.Bytes()) {
			t.Fatalf("View.%s changed the engine's snapshot", m.Name)
		}
		if held := e.MemoryHeldTotal(); held != heldBefore {
			t.Fatalf("View.%s changed the held bytes from %d to %d", m.Name, heldBefore, held)
		}
	}
	enginetest.RequireInvariants(t, e)
}
