package fsm

import (
	"testing"
	"time"

	"github.com/sepp-io/sepp/engine"
)

// A reserve with RetryWindow is of command version 14, and only that
// version makes its request id outlive the leases: applied from the older
// form, a retry after the leases lapsed finds the job dead-lettered; from
// version 14 it gets the job back on the same attempt.
func TestReserveRetryCommand(t *testing.T) {
	p := engine.ReserveParams{Queue: "q", WorkerID: "w", N: 1, Lease: time.Second, RequestID: "r"}
	if c := ReserveCommand(p); c.GetVersion() != commandV1 {
		t.Fatalf("reserve without RetryWindow: version %d, want 1", c.GetVersion())
	}
	noID := p
	noID.RequestID, noID.RetryWindow = "", true
	if c := ReserveCommand(noID); c.GetVersion() != commandV1 {
		t.Fatalf("RetryWindow without a request id: version %d, want 1", c.GetVersion())
	}
	for _, tc := range []struct {
		name        string
		retryWindow bool
		wantRetry   int
	}{
		{name: "version 1 forgets the id with its leases", retryWindow: false, wantRetry: 0},
		{name: "version 14 gets the job back", retryWindow: true, wantRetry: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rp := p
			rp.RetryWindow = tc.retryWindow
			one := uint32(1)
			f := newTestFSM(t)
			applyEntry(t, f, 1, stamped(t0, EnqueueCommand(engine.EnqueueParams{Queue: "q", JobType: "t", MaxAttempts: one})))
			if res := applyEntry(t, f, 2, stamped(t0, ReserveCommand(rp))); res[0].Err != nil || len(res[0].Deliveries) != 1 {
				t.Fatalf("reserve: %+v", res[0])
			}
			res := applyEntry(t, f, 3, stamped(t0.Add(5*time.Second), ReserveCommand(rp)))
			if res[0].Err != nil || len(res[0].Deliveries) != tc.wantRetry {
				t.Fatalf("retry after the lease lapsed: %d deliveries (%v), want %d", len(res[0].Deliveries), res[0].Err, tc.wantRetry)
			}
			if tc.wantRetry > 0 && res[0].Deliveries[0].Attempt != 1 {
				t.Fatalf("retry delivered attempt %d, want 1", res[0].Deliveries[0].Attempt)
			}
		})
	}
}
