package sepptest

import (
	"testing"
	"time"

	"github.com/sepp-io/sepp/client"
)

// RunHandler runs h on d in the calling goroutine, as a Worker would, and
// returns the answer the Worker would send: Outcome.Ack for an ack, else
// the nack's Directive (DefaultRetry, After(d) or DeadLetter) and Reason,
// with the handler's error in Err. Nothing is sent to any server. The
// handler's context is the test's, ended when the test ends, and carries d
// (client.DeliveryFromContext).
//
// Fields d leaves zero are filled as a first delivery would have them:
// Ctx.Queue from Job.Queue, Ctx.JobID from Job.ID (1 when both are zero),
// Ctx.Attempt 1, Ctx.MaxAttempts 3 (the server's default), Ctx.LeaseToken
// 1 and Ctx.LeaseDeadline 30s from now. To test what a handler does on its
// last attempt, set Ctx.Attempt to Ctx.MaxAttempts.
func RunHandler(t testing.TB, h client.HandlerFunc, d client.Delivery) client.Outcome {
	t.Helper()
	if h == nil {
		t.Fatal("sepptest: RunHandler: handler is nil")
	}
	jc := &d.Ctx
	if jc.Queue == "" {
		jc.Queue = d.Job.Queue
	}
	if d.Job.Queue == "" {
		d.Job.Queue = jc.Queue
	}
	if jc.JobID == 0 {
		jc.JobID = max(d.Job.ID, 1)
	}
	if d.Job.ID == 0 {
		d.Job.ID = jc.JobID
	}
	if jc.Attempt == 0 {
		jc.Attempt = 1
	}
	if jc.MaxAttempts == 0 {
		jc.MaxAttempts = max(3, jc.Attempt)
	}
	if jc.LeaseToken == 0 {
		jc.LeaseToken = 1
	}
	if jc.LeaseDeadline.IsZero() {
		jc.LeaseDeadline = time.Now().Add(30 * time.Second)
	}
	if d.Job.Attempt == 0 {
		d.Job.Attempt = jc.Attempt
	}
	if d.Job.MaxAttempts == 0 {
		d.Job.MaxAttempts = jc.MaxAttempts
	}
	if d.Job.State == 0 {
		d.Job.State = client.StateReserved
	}
	return client.RunHandler(t.Context(), h, &d)
}
