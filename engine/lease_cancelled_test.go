package engine_test

import (
	"errors"
	"testing"
	"time"

	"github.com/sepp-io/sepp/engine"
	et "github.com/sepp-io/sepp/engine/enginetest"
)

// A worker whose lease an operator's cancel revoked is told so
// (ErrLeaseCancelled, which is also ErrLeaseLost); a lease that merely
// expired, or one whose cancel left no trace, is only lost.
func TestLease_CancelledIsToldApartFromLost(t *testing.T) {
	for _, tc := range []struct {
		name          string
		end           func(t *testing.T, e *engine.Engine, clock *et.Clock, d engine.Delivery)
		recordFields  bool
		wantCancelled bool
	}{
		{name: "CancelRetained", recordFields: true, wantCancelled: true, end: func(t *testing.T, e *engine.Engine, clock *et.Clock, d engine.Delivery) {
			t.Helper()
			mustAct(t, e, clock.Now(), engine.JobActionCancel, d.Job.ID)
		}},
		{name: "CancelThenRequeued", recordFields: true, wantCancelled: true, end: func(t *testing.T, e *engine.Engine, clock *et.Clock, d engine.Delivery) {
			t.Helper()
			mustAct(t, e, clock.Now(), engine.JobActionCancel, d.Job.ID)
			if res := e.RequeueDeadLetters(clock.Now(), []engine.JobID{d.Job.ID}); res[0].Err != nil {
				t.Fatal(res[0].Err)
			}
		}},
		{name: "CancelDeleteLeavesNoTrace", recordFields: true, end: func(t *testing.T, e *engine.Engine, clock *et.Clock, d engine.Delivery) {
			t.Helper()
			mustAct(t, e, clock.Now(), engine.JobActionCancelDelete, d.Job.ID)
		}},
		{name: "CancelBeforeLeasesAreRecorded", end: func(t *testing.T, e *engine.Engine, clock *et.Clock, d engine.Delivery) {
			t.Helper()
			mustAct(t, e, clock.Now(), engine.JobActionCancel, d.Job.ID)
		}},
		{name: "Expired", recordFields: true, end: func(t *testing.T, e *engine.Engine, clock *et.Clock, d engine.Delivery) {
			t.Helper()
			clock.Advance(time.Hour)
			e.Tick(clock.Now())
		}},
		{name: "Released", recordFields: true, end: func(t *testing.T, e *engine.Engine, clock *et.Clock, d engine.Delivery) {
			t.Helper()
			if err := e.Release(clock.Now(), et.Ref(d)); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clock := et.NewClock()
			e := et.New(t, et.WithRetention(time.Hour))
			if tc.recordFields {
				e.EnableRecordFields(clock.Now())
			}
			et.MustEnqueue(t, e, clock.Now(), et.Job("q"))
			d := et.MustReserveOne(t, e, clock.Now(), "q")
			tc.end(t, e, clock, d)
			et.RequireInvariants(t, e)
			_, extendErr := e.ExtendLease(clock.Now(), engine.ExtendParams{LeaseRef: et.Ref(d)})
			ackErr := e.Ack(clock.Now(), et.Ref(d))
			for name, err := range map[string]error{"extend": extendErr, "ack": ackErr} {
				if !errors.Is(err, engine.ErrLeaseLost) {
					t.Fatalf("%s: %v, want ErrLeaseLost", name, err)
				}
				if got := errors.Is(err, engine.ErrLeaseCancelled); got != tc.wantCancelled {
					t.Fatalf("%s: %v; ErrLeaseCancelled %v, want %v", name, err, got, tc.wantCancelled)
				}
			}
		})
	}
}

func mustAct(t *testing.T, e *engine.Engine, now time.Time, a engine.JobAction, id engine.JobID) {
	t.Helper()
	res, err := e.ActOnJobs(now, engine.JobActionParams{Action: a, IDs: []engine.JobID{id}})
	if err != nil || res[0].Err != nil {
		t.Fatalf("ActOnJobs: %+v %v", res, err)
	}
}
