package rpc_test

import (
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/sepp-io/sepp/engine"
	seppv1 "github.com/sepp-io/sepp/proto/sepp/v1"
)

// The attempt history with its detail (start, end, duration, worker, lease
// token, outcome, directive, reason) and a forwarded job's origin reach
// clients through GetJob, GetDeadLetter, ListDeadLetters and
// DrainDeadLetters; a producer's sepp.cause key arrives as sent.
func TestAttemptHistoryAndOriginOverGRPC(t *testing.T) {
	t.Parallel()
	two := uint32(2)
	cfg := &engine.Config{Limits: engine.DefaultLimits(), Queues: []engine.QueueConfig{
		{Name: "work", DeadLetterQueue: "work.dead", DefaultMaxAttempts: &two},
		{Name: "work.dead"},
	}}
	cfg.Limits.DeadLetterRetention = time.Hour
	env := start(t, cfg)
	id := enqueue(t, env, &seppv1.EnqueueRequest{Queue: "work", Custom: map[string]string{engine.FieldCause: "mine"}}).GetJobId()

	first := reserveOne(t, env, "work")
	started1 := env.Clock.Now()
	got, err := env.Admin.GetJob(ctxT(t), &seppv1.GetJobRequest{JobId: id})
	if err != nil || !got.GetJob().GetStartedAt().AsTime().Equal(started1) {
		t.Fatalf("GetJob of the reserved job: started_at %v, %v; want %v", got.GetJob().GetStartedAt(), err, started1)
	}
	env.Clock.Advance(2 * time.Second)
	nack(t, env, first.GetCtx(), &seppv1.RetryDirective{Directive: &seppv1.RetryDirective_After{After: durationpb.New(0)}}, "flaky")
	second := reserveOne(t, env, "work")
	env.Clock.Advance(3 * time.Second)
	nack(t, env, second.GetCtx(), nil, "still failing")

	check := func(where string, j *seppv1.Job) {
		t.Helper()
		h := j.GetHistory()
		if len(h) != 2 {
			t.Fatalf("%s: history %v, want 2 attempts", where, h)
		}
		for i, want := range []struct {
			lease     uint64
			dur       time.Duration
			directive string
			reason    string
		}{
			{first.GetCtx().GetLeaseToken(), 2 * time.Second, "after", "flaky"},
			{second.GetCtx().GetLeaseToken(), 3 * time.Second, "default", "still failing"},
		} {
			a := h[i]
			if a.GetLeaseToken() != want.lease || a.GetDuration().AsDuration() != want.dur || a.GetDirective() != want.directive ||
				a.GetReason() != want.reason || a.GetOutcome() != "nack" || a.GetWorkerId() != "w1" ||
				a.GetEndedAt().AsTime().Sub(a.GetStartedAt().AsTime()) != want.dur {
				t.Errorf("%s: attempt %d = %v, want lease %d, %v, %s, %q", where, i+1, a, want.lease, want.dur, want.directive, want.reason)
			}
		}
	}
	job, err := env.Admin.GetJob(ctxT(t), &seppv1.GetJobRequest{JobId: id})
	if err != nil {
		t.Fatal(err)
	}
	check("GetJob", job.GetJob())
	dl, err := env.Admin.GetDeadLetter(ctxT(t), &seppv1.GetDeadLetterRequest{JobId: id})
	if err != nil {
		t.Fatal(err)
	}
	check("GetDeadLetter", dl.GetRecord().GetJob())
	list, err := env.Admin.ListDeadLetters(ctxT(t), &seppv1.ListDeadLettersRequest{Queue: "work"})
	if err != nil || len(list.GetRecords()) != 1 {
		t.Fatalf("ListDeadLetters: %v, %v", list, err)
	}
	check("ListDeadLetters", list.GetRecords()[0].GetJob())

	fwd := reserveOne(t, env, "work.dead").GetJob()
	o := fwd.GetOrigin()
	if o.GetQueue() != "work" || o.GetJobId() != id || o.GetCause() != seppv1.DeadLetterCause_DEAD_LETTER_CAUSE_ATTEMPTS_EXHAUSTED ||
		o.GetLastReason() != "still failing" || o.GetFinalAttempt() != 2 || o.GetFailedAt() == nil {
		t.Errorf("forwarded origin = %v", o)
	}
	if c := fwd.GetCustom(); len(c) != 1 || c[engine.FieldCause] != "mine" {
		t.Errorf("forwarded custom = %v, want the producer's sepp.cause only", c)
	}
	drained, err := env.Queue.DrainDeadLetters(ctxT(t), &seppv1.DrainDeadLettersRequest{Queue: func() *string { s := "work"; return &s }(), Max: 1})
	if err != nil || len(drained.GetRecords()) != 1 {
		t.Fatalf("DrainDeadLetters: %v, %v", drained, err)
	}
	check("DrainDeadLetters", drained.GetRecords()[0].GetJob())
}
