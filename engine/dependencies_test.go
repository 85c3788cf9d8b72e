package engine_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/sepp-io/sepp/engine"
	et "github.com/sepp-io/sepp/engine/enginetest"
)

// after is et.Job(queue) waiting for the batch items named.
func after(queue string, policy engine.ParentFailure, items ...int) engine.EnqueueParams {
	p := et.Job(queue)
	p.After = items
	p.OnParentFailure = policy
	return p
}

func mustBatch(t testing.TB, e *engine.Engine, now time.Time, items ...engine.EnqueueParams) []engine.JobID {
	t.Helper()
	res, err := e.EnqueueBatch(now, items)
	if err != nil {
		t.Fatal(err)
	}
	ids := make([]engine.JobID, len(res))
	for i, r := range res {
		if r.Err != nil {
			t.Fatalf("item %d: %v", i, r.Err)
		}
		ids[i] = r.Result.JobID
	}
	return ids
}

func stateOf(t *testing.T, e *engine.Engine, id engine.JobID) engine.State {
	t.Helper()
	j, err := e.GetJob(id)
	if errors.Is(err, engine.ErrNotFound) {
		return engine.StateUnknown
	}
	if err != nil {
		t.Fatal(err)
	}
	return j.State
}

// finish reserves the next job of queue, which must be id, and acks it
// (ok) or nacks it to the dead letters.
func finish(t *testing.T, e *engine.Engine, now time.Time, queue string, id engine.JobID, ok bool) {
	t.Helper()
	d := et.MustReserveOne(t, e, now, queue)
	if d.Job.ID != id {
		t.Fatalf("reserved job %d, want %d", d.Job.ID, id)
	}
	if ok {
		if err := e.Ack(now, et.Ref(d)); err != nil {
			t.Fatal(err)
		}
		return
	}
	if _, err := e.Nack(now, engine.NackParams{LeaseRef: et.Ref(d), Directive: engine.DirectiveDeadLetter, Reason: "bad input"}); err != nil {
		t.Fatal(err)
	}
}

// dependenciesEngine is progressEngine plus a workflow part way through:
// a completed and a dead parent, blocked, released and compact children.
func dependenciesEngine(t testing.TB) *engine.Engine {
	t.Helper()
	e := progressEngine(t)
	now := e.Now().Add(time.Second)
	res, err := e.EnqueueBatch(now, []engine.EnqueueParams{
		et.Job("wf"), et.Job("wf"), et.Job("wf"),
		after("wf.next", engine.ParentFailureCancel, 0),
		after("wf.next", engine.ParentFailureRun, 0, 1, 2),
	})
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range res {
		if r.Err != nil {
			t.Fatalf("item %d: %v", i, r.Err)
		}
	}
	ds := et.MustReserve(t, e, now, "wf", 2)
	if err := e.Ack(now, et.Ref(ds[0])); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Nack(now, engine.NackParams{LeaseRef: et.Ref(ds[1]), Directive: engine.DirectiveDeadLetter}); err != nil {
		t.Fatal(err)
	}
	return e
}

// TestDependencies_FanOutFanIn is the three-step workflow: a root, three
// jobs after it, a callback after the three that runs whatever they did.
// Each job is Ready only once its parents ended; the callback sees each
// parent's outcome; the state survives a snapshot at every step.
func TestDependencies_FanOutFanIn(t *testing.T) { // spec: none (workflows)
	t.Parallel()
	clock := et.NewClock()
	e := et.New(t, et.WithRetention(time.Hour))
	ids := mustBatch(t, e, clock.Now(),
		et.Job("root"),
		after("fan", engine.ParentFailureCancel, 0),
		after("fan", engine.ParentFailureCancel, 0),
		after("fan", engine.ParentFailureCancel, 0),
		after("callback", engine.ParentFailureRun, 1, 2, 3),
	)
	root, fan, cb := ids[0], ids[1:4], ids[4]
	for _, id := range append(fan, cb) {
		if s := stateOf(t, e, id); s != engine.StateBlocked {
			t.Fatalf("job %d is %v before its parents ran, want blocked", id, s)
		}
	}
	if ds := et.MustReserve(t, e, clock.Now(), "fan", 10); len(ds) != 0 {
		t.Fatalf("reserved %d blocked jobs", len(ds))
	}
	st, _ := e.QueueStats(clock.Now(), "fan")
	if st.Blocked != 3 || st.Ready != 0 {
		t.Fatalf("fan stats blocked/ready %d/%d, want 3/0", st.Blocked, st.Ready)
	}
	et.RequireInvariants(t, e)

	finish(t, e, clock.Advance(time.Second), "root", root, true)
	for _, id := range fan {
		if s := stateOf(t, e, id); s != engine.StateReady {
			t.Fatalf("job %d is %v after its parent completed, want ready", id, s)
		}
	}
	et.RequireInvariants(t, e)
	finish(t, e, clock.Advance(time.Second), "fan", fan[0], true)
	finish(t, e, clock.Advance(time.Second), "fan", fan[1], false)
	if s := stateOf(t, e, cb); s != engine.StateBlocked {
		t.Fatalf("callback is %v with one parent left, want blocked", s)
	}
	et.RequireInvariants(t, e)
	finish(t, e, clock.Advance(time.Second), "fan", fan[2], true)
	j, err := e.GetJob(cb)
	if err != nil {
		t.Fatal(err)
	}
	if j.State != engine.StateReady || !j.RunsAfterParentFailure {
		t.Fatalf("callback %v run-after-failure %v, want ready and true", j.State, j.RunsAfterParentFailure)
	}
	want := []engine.ParentLink{
		{ID: fan[0], State: engine.StateCompleted, Ended: true},
		{ID: fan[1], State: engine.StateDead, Cause: engine.CauseRejected, Ended: true},
		{ID: fan[2], State: engine.StateCompleted, Ended: true},
	}
	if len(j.Parents) != len(want) {
		t.Fatalf("callback parents %+v, want %+v", j.Parents, want)
	}
	for i := range want {
		if j.Parents[i] != want[i] {
			t.Fatalf("callback parent %d: %+v, want %+v", i, j.Parents[i], want[i])
		}
	}
	et.RequireInvariants(t, e)
	finish(t, e, clock.Advance(time.Second), "callback", cb, true)
	et.RequireInvariants(t, e)
}

// TestDependencies_CancelCascades: under the default policy a parent that
// dies cancels its children at once, and theirs through them; a sibling
// branch whose parents completed is untouched.
func TestDependencies_CancelCascades(t *testing.T) {
	t.Parallel()
	clock := et.NewClock()
	e := et.New(t, et.WithRetention(time.Hour))
	ids := mustBatch(t, e, clock.Now(),
		et.Job("a"), // 0
		et.Job("b"), // 1
		after("c", engine.ParentFailureCancel, 0),    // 2: after a
		after("c", engine.ParentFailureCancel, 2),    // 3: after 2
		after("c", engine.ParentFailureCancel, 1),    // 4: after b only
		after("c", engine.ParentFailureCancel, 1, 3), // 5: after b and 3
	)
	finish(t, e, clock.Now(), "a", ids[0], false)
	for _, i := range []int{2, 3, 5} {
		j, err := e.GetJob(ids[i])
		if err != nil {
			t.Fatal(err)
		}
		if j.State != engine.StateDead || !strings.Contains(j.LastReason, "parent job") {
			t.Fatalf("item %d: %v %q, want dead with a reason naming its parent", i, j.State, j.LastReason)
		}
		rec, err := e.GetDeadLetter(ids[i])
		if err != nil || rec.Cause != engine.CauseCancelled {
			t.Fatalf("item %d record: %+v %v, want cause cancelled", i, rec, err)
		}
	}
	if s := stateOf(t, e, ids[4]); s != engine.StateBlocked {
		t.Fatalf("item 4 is %v, want still blocked on b", s)
	}
	et.RequireInvariants(t, e)
	finish(t, e, clock.Now(), "b", ids[1], true)
	if s := stateOf(t, e, ids[4]); s != engine.StateReady {
		t.Fatalf("item 4 is %v after b completed, want ready", s)
	}
	et.RequireInvariants(t, e)

	// A child of a parent and of that parent's child: the parent's end
	// cancels its first child, which cancels the second before the
	// parent's turn reaches it (the model test found it panicking).
	sib := mustBatch(t, e, clock.Now(), et.Job("x"), after("y", engine.ParentFailureCancel, 0), after("y", engine.ParentFailureCancel, 0, 1))
	finish(t, e, clock.Now(), "x", sib[0], false)
	for _, id := range sib[1:] {
		if s := stateOf(t, e, id); s != engine.StateDead {
			t.Fatalf("job %d is %v, want dead", id, s)
		}
	}
	et.RequireInvariants(t, e)
}

// TestDependencies_RemovalsAndOperatorActions: deleting, purging or
// dead-lettering a parent ends it for its children; a blocked job can be
// deleted or dead-lettered but not run now or rescheduled; a scheduled
// child waits for its run time once released.
func TestDependencies_RemovalsAndOperatorActions(t *testing.T) {
	t.Parallel()
	clock := et.NewClock()
	e := et.New(t, et.WithRetention(time.Hour))

	// A run-anyway child of a deleted parent runs; a cancel one dies.
	ids := mustBatch(t, e, clock.Now(), et.Job("p"), after("c", engine.ParentFailureRun, 0), after("c", engine.ParentFailureCancel, 0))
	res, err := e.ActOnJobs(clock.Now(), engine.JobActionParams{Action: engine.JobActionDelete, IDs: []engine.JobID{ids[0]}})
	if err != nil || res[0].Err != nil {
		t.Fatalf("delete parent: %v %+v", err, res)
	}
	if s := stateOf(t, e, ids[1]); s != engine.StateReady {
		t.Fatalf("run-anyway child of a deleted parent is %v, want ready", s)
	}
	if s := stateOf(t, e, ids[2]); s != engine.StateDead {
		t.Fatalf("cancel child of a deleted parent is %v, want dead", s)
	}
	et.RequireInvariants(t, e)

	// Operator actions on a blocked job.
	ids = mustBatch(t, e, clock.Now(), et.Job("p2"), after("c2", engine.ParentFailureCancel, 0), after("c2", engine.ParentFailureCancel, 0))
	for _, a := range []engine.JobAction{engine.JobActionRunNow, engine.JobActionReschedule} {
		res, err := e.ActOnJobs(clock.Now(), engine.JobActionParams{Action: a, IDs: []engine.JobID{ids[1]}, RunAt: clock.Now()})
		if err != nil || !errors.Is(res[0].Err, engine.ErrWrongState) {
			t.Fatalf("%v on a blocked job: %v %+v, want ErrWrongState", a, err, res)
		}
	}
	res, err = e.ActOnJobs(clock.Now(), engine.JobActionParams{Action: engine.JobActionDelete, IDs: []engine.JobID{ids[1]}})
	if err != nil || res[0].Err != nil {
		t.Fatalf("delete blocked: %v %+v", err, res)
	}
	if r := e.DeadLetterJobs(clock.Now(), []engine.JobID{ids[2]}, "no longer needed"); r[0].Err != nil {
		t.Fatalf("dead-letter blocked: %v", r[0].Err)
	}
	et.RequireInvariants(t, e)
	finish(t, e, clock.Now(), "p2", ids[0], true) // its children are gone: nothing to release
	et.RequireInvariants(t, e)

	// A child scheduled for later is Scheduled when released early,
	// Ready when released after its run time.
	later := mustBatch(t, e, clock.Now(), et.Job("p3"), func() engine.EnqueueParams {
		p := after("c3", engine.ParentFailureCancel, 0)
		p.ScheduledAt = clock.Now().Add(time.Minute)
		return p
	}())
	finish(t, e, clock.Now(), "p3", later[0], true)
	if s := stateOf(t, e, later[1]); s != engine.StateScheduled {
		t.Fatalf("child released before its run time is %v, want scheduled", s)
	}
	et.RequireInvariants(t, e)

	// Purging a queue ends its jobs for children elsewhere; deleting a
	// queue with force ends a chain inside it.
	ids = mustBatch(t, e, clock.Now(), et.Job("p4"), after("p4", engine.ParentFailureCancel, 0), after("c4", engine.ParentFailureRun, 0, 1))
	if _, err := e.PurgeQueue(clock.Now(), "p4", engine.PurgeWaiting); err != nil {
		t.Fatal(err)
	}
	if s := stateOf(t, e, ids[2]); s != engine.StateReady {
		t.Fatalf("run-anyway child of purged parents is %v, want ready", s)
	}
	et.RequireInvariants(t, e)
	chain := mustBatch(t, e, clock.Now(), et.Job("p5"), after("p5", engine.ParentFailureCancel, 0), after("p5", engine.ParentFailureCancel, 1))
	res2, err := e.DeleteQueue(clock.Now(), "p5", true)
	if err != nil {
		t.Fatal(err)
	}
	// The root goes first and cancels the chain after it: one job removed,
	// two records (then deleted with the queue).
	if res2.Jobs != 1 || res2.DeadLetters != 2 {
		t.Fatalf("delete of the chain's queue: %+v, want 1 job and 2 records of %v", res2, chain)
	}
	et.RequireInvariants(t, e)
}

// TestDependencies_Refusals: a batch whose jobs wait for each other is
// decided whole: any item refused (bad after, a bad policy, an invalid
// job, a parent duplicate whose job is gone) refuses the batch, naming
// the item, and changes nothing; a lone Enqueue cannot wait. A retry of a
// whole workflow whose root is gone answers with the same jobs.
func TestDependencies_Refusals(t *testing.T) {
	t.Parallel()
	clock := et.NewClock()
	e := et.New(t)
	if _, err := e.Enqueue(clock.Now(), after("q", engine.ParentFailureCancel, 0)); !errors.Is(err, engine.ErrInvalidArgument) || !strings.Contains(err.Error(), "after") {
		t.Fatalf("lone enqueue with after: %v, want invalid naming after", err)
	}
	keyed := func(key string) engine.EnqueueParams {
		p := et.Job("q")
		p.IdempotencyKey = key
		return p
	}
	keyedAfter := func(key string, items ...int) engine.EnqueueParams {
		p := after("q", engine.ParentFailureCancel, items...)
		p.IdempotencyKey = key
		return p
	}
	first, err := e.EnqueueBatch(clock.Now(), []engine.EnqueueParams{keyed("root"), keyedAfter("child", 0)})
	if err != nil {
		t.Fatal(err)
	}
	finish(t, e, clock.Now(), "q", first[0].Result.JobID, true) // acked, nothing kept: gone
	et.RequireInvariants(t, e)

	tests := []struct {
		name  string
		items []engine.EnqueueParams
		err   error
		says  string
	}{
		{"after itself", []engine.EnqueueParams{et.Job("q"), after("q", engine.ParentFailureCancel, 1)}, engine.ErrInvalidArgument, "jobs[1].after[0]"},
		{"after a later item", []engine.EnqueueParams{after("q", engine.ParentFailureCancel, 1), et.Job("q")}, engine.ErrInvalidArgument, "jobs[0].after[0]"},
		{"after one twice", []engine.EnqueueParams{et.Job("q"), after("q", engine.ParentFailureCancel, 0, 0)}, engine.ErrInvalidArgument, "jobs[1].after[1]"},
		{"bad policy", []engine.EnqueueParams{et.Job("q"), after("q", engine.ParentFailure(7), 0)}, engine.ErrInvalidArgument, "jobs[1].on_parent_failure"},
		{"an invalid job", []engine.EnqueueParams{et.Job("q"), {Queue: "q"}, after("q", engine.ParentFailureCancel, 0)}, engine.ErrInvalidArgument, "jobs[1].job_type"},
		{"after a duplicate that is gone", []engine.EnqueueParams{keyed("root"), keyedAfter("other-child", 0)}, engine.ErrWrongState, "jobs[1]: after[0]: request 0 is a duplicate of job"},
	}
	for _, tt := range tests {
		before := e.Digest()
		_, err := e.EnqueueBatch(clock.Now(), tt.items)
		if !errors.Is(err, tt.err) || !strings.Contains(err.Error(), tt.says) {
			t.Errorf("%s: %v, want %v saying %q", tt.name, err, tt.err, tt.says)
		}
		if e.Digest() != before {
			t.Errorf("%s: the refused batch changed the state", tt.name)
		}
	}
	// The whole workflow again: both duplicates, the same ids.
	again, err := e.EnqueueBatch(clock.Now(), []engine.EnqueueParams{keyed("root"), keyedAfter("child", 0)})
	if err != nil {
		t.Fatal(err)
	}
	for i := range again {
		if !again[i].Result.Duplicate || again[i].Result.JobID != first[i].Result.JobID {
			t.Fatalf("retry item %d: %+v, want a duplicate of job %d", i, again[i].Result, first[i].Result.JobID)
		}
	}
	if again[1].Result.State != engine.StateReady {
		t.Fatalf("retried child is %v, want ready (its parent completed)", again[1].Result.State)
	}
	et.RequireInvariants(t, e)
}

// TestDependencies_OneJobTwoRequests: two requests of a batch that are one
// job (the second a duplicate of the first's key) are one parent: the
// child lists it once and is released when it completes (the model test
// found it listed twice, the child then blocked for ever).
func TestDependencies_OneJobTwoRequests(t *testing.T) {
	t.Parallel()
	clock := et.NewClock()
	e := et.New(t)
	keyed := et.Job("p")
	keyed.IdempotencyKey = "same"
	ids := mustBatch(t, e, clock.Now(), keyed, keyed, after("c", engine.ParentFailureCancel, 0, 1))
	if ids[0] != ids[1] {
		t.Fatalf("the two keyed requests are jobs %d and %d, want one", ids[0], ids[1])
	}
	j, err := e.GetJob(ids[2])
	if err != nil || len(j.Parents) != 1 || j.Parents[0].ID != ids[0] {
		t.Fatalf("child %+v (%v), want one parent %d", j.Parents, err, ids[0])
	}
	finish(t, e, clock.Now(), "p", ids[0], true)
	if s := stateOf(t, e, ids[2]); s != engine.StateReady {
		t.Fatalf("child is %v after its parent completed, want ready", s)
	}
	et.RequireInvariants(t, e)
}

// TestDependencies_FollowUps: an ack's follow-ups can wait for each other
// and for the acked job's other follow-ups, in the same transition.
func TestDependencies_FollowUps(t *testing.T) {
	t.Parallel()
	clock := et.NewClock()
	e := et.New(t)
	root := et.MustEnqueue(t, e, clock.Now(), et.Job("root"))
	d := et.MustReserveOne(t, e, clock.Now(), "root")
	out, err := e.AckWithFollowUps(clock.Now(), et.Ref(d), nil, []engine.EnqueueParams{
		et.Job("fan"), et.Job("fan"), after("join", engine.ParentFailureRun, 0, 1),
	})
	if err != nil {
		t.Fatal(err)
	}
	if out[2].State != engine.StateBlocked {
		t.Fatalf("callback follow-up %+v, want blocked", out[2])
	}
	_ = root
	et.RequireInvariants(t, e)
	finish(t, e, clock.Now(), "fan", out[0].JobID, true)
	finish(t, e, clock.Now(), "fan", out[1].JobID, true)
	if s := stateOf(t, e, out[2].JobID); s != engine.StateReady {
		t.Fatalf("callback is %v after both completed, want ready", s)
	}
	et.RequireInvariants(t, e)

	// A follow-up after an index that is not earlier refuses the ack.
	et.MustEnqueue(t, e, clock.Now(), et.Job("root"))
	d = et.MustReserveOne(t, e, clock.Now(), "root")
	_, err = e.AckWithFollowUps(clock.Now(), et.Ref(d), nil, []engine.EnqueueParams{after("join", engine.ParentFailureRun, 0)})
	if !errors.Is(err, engine.ErrInvalidArgument) || !strings.Contains(err.Error(), "follow_ups[0].after[0]") {
		t.Fatalf("follow-up after itself: %v, want invalid naming follow_ups[0].after[0]", err)
	}
}
