package engine_test

import (
	"testing"
	"time"

	"github.com/sepp-io/sepp/engine"
	et "github.com/sepp-io/sepp/engine/enginetest"
)

// A reserve whose answer was lost is retried with its request id. With
// RetryWindow (command version 14) the id outlives the leases, so a retry
// that comes after they lapsed still gets the jobs, on the attempt they
// lost: no job is used up, let alone dead-lettered, unseen.
func TestReserve_RetryWindowRecoversLapsedLeases(t *testing.T) {
	const lease = 10 * time.Second
	for _, tc := range []struct {
		name        string
		maxAttempts uint32
		retryWindow bool
		othersTake  bool          // another worker reserves the job before the retry
		retryAfter  time.Duration // from the first reserve
		wantRetry   int           // deliveries the retry returns
		wantAttempt uint32        // their attempt number
		wantState   engine.State
		wantDead    uint64 // dead-lettered with cause lease_expired
	}{
		{name: "an earlier attempt comes back on the same attempt", maxAttempts: 3, retryWindow: true, retryAfter: lease + time.Second,
			wantRetry: 1, wantAttempt: 1, wantState: engine.StateReserved},
		{name: "the last attempt is held, not dead-lettered, and comes back", maxAttempts: 1, retryWindow: true, retryAfter: lease + time.Minute,
			wantRetry: 1, wantAttempt: 1, wantState: engine.StateReserved},
		{name: "a job reserved by another worker since stays theirs", maxAttempts: 3, retryWindow: true, othersTake: true, retryAfter: lease + time.Second,
			wantRetry: 0, wantState: engine.StateReserved},
		{name: "a last attempt nobody asks again for dies once the id is forgotten", maxAttempts: 1, retryWindow: true, retryAfter: lease + 2*time.Minute + time.Second,
			wantRetry: 0, wantState: engine.StateDead, wantDead: 1},
		{name: "without the window (an older command) the lapsed attempt is used up", maxAttempts: 3, retryAfter: lease + time.Second,
			wantRetry: 1, wantAttempt: 2}, // a fresh reserve: the id was forgotten
		{name: "without the window a last attempt dies unseen", maxAttempts: 1, retryAfter: lease + time.Second,
			wantRetry: 0, wantState: engine.StateDead, wantDead: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			clock := et.NewClock()
			e := et.New(t, et.WithRetention(time.Hour), func(c *engine.Config) { c.Limits.IdempotencyWindow = 2 * time.Minute })
			p := et.Job("q")
			p.MaxAttempts = tc.maxAttempts
			id := et.MustEnqueue(t, e, clock.Now(), p)
			req := engine.ReserveParams{Queue: "q", Lease: lease, RequestID: "lost", RetryWindow: tc.retryWindow, WorkerID: "w1"}
			first, err := e.Reserve(clock.Now(), req)
			if err != nil || len(first) != 1 {
				t.Fatalf("first reserve: %v %v", et.IDs(first), err)
			}
			// The answer is lost; the leases lapse.
			e.Tick(clock.Advance(lease + time.Second))
			et.RequireInvariants(t, e)
			if tc.othersTake {
				if ds := et.MustReserve(t, e, clock.Now(), "q", 1); len(ds) != 1 || ds[0].Attempt != 2 {
					t.Fatalf("the other worker got %+v, want the job on attempt 2", ds)
				}
			}
			e.Tick(clock.Advance(tc.retryAfter - lease - time.Second))
			retry, err := e.Reserve(clock.Now(), req)
			if err != nil {
				t.Fatal(err)
			}
			if len(retry) != tc.wantRetry {
				t.Fatalf("the retry returned %d deliveries, want %d", len(retry), tc.wantRetry)
			}
			if tc.wantRetry > 0 {
				d := retry[0]
				if d.Job.ID != id || d.Attempt != tc.wantAttempt {
					t.Fatalf("the retry returned job %d on attempt %d, want job %d on attempt %d", d.Job.ID, d.Attempt, id, tc.wantAttempt)
				}
				if !d.LeaseDeadline.After(clock.Now().Add(lease - time.Millisecond)) {
					t.Fatalf("lease deadline %v, want a full lease from %v", d.LeaseDeadline, clock.Now())
				}
				// The delivery is the worker's: it acks with it.
				if err := e.Ack(clock.Now(), et.Ref(d)); err != nil {
					t.Fatalf("ack of the recovered delivery: %v", err)
				}
				tc.wantState = engine.StateUnknown
			}
			et.RequireInvariants(t, e)
			j, err := e.GetJob(id)
			switch {
			case tc.wantState == engine.StateUnknown:
				if err == nil && j.State != engine.StateDead {
					t.Fatalf("job is %v after its ack", j.State)
				}
			case err != nil:
				t.Fatal(err)
			case j.State != tc.wantState:
				t.Fatalf("job is %v, want %v", j.State, tc.wantState)
			}
			s, _ := e.QueueStats(clock.Now(), "q")
			if got := s.DeadLettered[engine.CauseLeaseExpired]; got != tc.wantDead {
				t.Fatalf("dead-lettered on lease expiry: %d, want %d", got, tc.wantDead)
			}
			// Everything is forgotten in the end.
			e.Tick(clock.Advance(24 * time.Hour))
			if rk := e.RememberedKeys(); rk.ReserveRequestIDs != 0 {
				t.Fatalf("%d reserve request ids still remembered", rk.ReserveRequestIDs)
			}
			et.RequireInvariants(t, e)
		})
	}
}
