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

// deadSet builds an engine holding dead letters of queues "q" and "r" with
// varied causes, types and reasons, one second apart; it returns their ids in
// order of death.
func deadSet(t *testing.T, clock *et.Clock, mutate ...func(*engine.Config)) (*engine.Engine, []engine.JobID) {
	t.Helper()
	e := et.New(t, append([]func(*engine.Config){et.WithRetention(24 * time.Hour)}, mutate...)...)
	specs := []struct {
		queue, jobType, reason string
		reject                 bool
	}{
		{"q", "email", "smtp timeout", false},
		{"q", "email", "bad address", true},
		{"q", "sms", "smtp timeout", false},
		{"r", "email", "smtp timeout", false},
		{"q", "email", "smtp refused", false},
	}
	var ids []engine.JobID
	for _, s := range specs {
		clock.Advance(time.Second)
		p := et.Job(s.queue)
		p.JobType = s.jobType
		p.MaxAttempts = 1
		p.Priority = et.Ptr[uint32](7)
		p.Custom = map[string]string{"tenant": "acme"}
		id := et.MustEnqueue(t, e, clock.Now(), p)
		d := et.MustReserveOne(t, e, clock.Now(), s.queue)
		np := engine.NackParams{LeaseRef: et.Ref(d), Reason: s.reason}
		if s.reject {
			np.Directive = engine.DirectiveDeadLetter
		}
		if res, err := e.Nack(clock.Now(), np); err != nil || !res.DeadLettered {
			t.Fatalf("nack: %+v %v", res, err)
		}
		ids = append(ids, id)
	}
	return e, ids
}

func TestRedriveDryRun_Selection(t *testing.T) {
	clock := et.NewClock()
	e, ids := deadSet(t, clock)
	at := func(i int) time.Time { return et.Epoch.Add(time.Duration(i+1) * time.Second) }
	tests := []struct {
		name string
		sel  engine.RedriveSelection
		want []engine.JobID
	}{
		{"everything", engine.RedriveSelection{}, ids},
		{"queue", engine.RedriveSelection{Queue: "q"}, []engine.JobID{ids[0], ids[1], ids[2], ids[4]}},
		{"cause", engine.RedriveSelection{Cause: engine.CauseRejected}, []engine.JobID{ids[1]}},
		{"job type", engine.RedriveSelection{JobType: "sms"}, []engine.JobID{ids[2]}},
		{"reason substring", engine.RedriveSelection{ReasonContains: "smtp"}, []engine.JobID{ids[0], ids[2], ids[3], ids[4]}},
		{"failed after (inclusive)", engine.RedriveSelection{FailedAfter: at(3)}, []engine.JobID{ids[3], ids[4]}},
		{"failed before (exclusive)", engine.RedriveSelection{FailedBefore: at(1)}, []engine.JobID{ids[0]}},
		{"all together", engine.RedriveSelection{Queue: "q", JobType: "email", ReasonContains: "smtp", Cause: engine.CauseAttemptsExhausted, FailedAfter: at(0), FailedBefore: at(5)}, []engine.JobID{ids[0], ids[4]}},
		{"nothing matches", engine.RedriveSelection{JobType: "fax"}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := e.Digest()
			n, sample, err := e.RedriveDryRun(clock.Now(), engine.RedriveParams{Selection: tc.sel}, 2)
			if err != nil {
				t.Fatal(err)
			}
			if n != len(tc.want) {
				t.Fatalf("count %d, want %d", n, len(tc.want))
			}
			if want := tc.want[:min(2, len(tc.want))]; len(sample) != len(want) {
				t.Fatalf("sample of %d, want %d", len(sample), len(want))
			} else {
				for i := range want {
					if sample[i].Job.ID != want[i] {
						t.Fatalf("sample[%d] = job %d, want %d", i, sample[i].Job.ID, want[i])
					}
				}
			}
			if e.Digest() != before {
				t.Fatal("a dry run changed the state")
			}
		})
	}
}

func TestRedrive_Refusals(t *testing.T) {
	clock := et.NewClock()
	e, _ := deadSet(t, clock)
	tests := []struct {
		name    string
		p       engine.RedriveParams
		wantErr error
		wantMsg string
	}{
		{"unknown queue", engine.RedriveParams{Selection: engine.RedriveSelection{Queue: "nosuch"}}, engine.ErrNotFound, `selection.queue "nosuch"`},
		{"bad queue name", engine.RedriveParams{Selection: engine.RedriveSelection{Queue: "a b"}}, engine.ErrInvalidArgument, "selection.queue"},
		{"unknown cause", engine.RedriveParams{Selection: engine.RedriveSelection{Cause: 99}}, engine.ErrInvalidArgument, "selection.cause"},
		{"empty time range", engine.RedriveParams{Selection: engine.RedriveSelection{FailedAfter: et.Epoch, FailedBefore: et.Epoch}}, engine.ErrInvalidArgument, "selection.failed_before"},
		{"reason too long", engine.RedriveParams{Selection: engine.RedriveSelection{ReasonContains: strings.Repeat("x", 5000)}}, engine.ErrInvalidArgument, "selection.reason_contains"},
		{"same id to another queue", engine.RedriveParams{ToQueue: "r"}, engine.ErrInvalidArgument, "to_queue"},
		{"fresh to unknown queue", engine.RedriveParams{ToQueue: "nosuch", Fresh: true}, engine.ErrNotFound, `to_queue "nosuch"`},
		{"negative rate", engine.RedriveParams{Rate: -1}, engine.ErrInvalidArgument, "rate"},
		{"rate too high", engine.RedriveParams{Rate: engine.MaxRedriveRate + 1}, engine.ErrInvalidArgument, "rate"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := e.Digest()
			_, err := e.StartRedrive(clock.Now(), tc.p)
			if !errors.Is(err, tc.wantErr) || !strings.Contains(err.Error(), tc.wantMsg) {
				t.Fatalf("err %v, want %v naming %q", err, tc.wantErr, tc.wantMsg)
			}
			if _, _, err := e.RedriveDryRun(clock.Now(), tc.p, 1); !errors.Is(err, tc.wantErr) {
				t.Fatalf("dry run err %v, want %v", err, tc.wantErr)
			}
			if e.Digest() != before || len(e.RedriveTasks()) != 0 {
				t.Fatal("a refused start changed the state")
			}
		})
	}
	if _, _, err := e.RedriveDryRun(clock.Now(), engine.RedriveParams{}, engine.MaxRedriveSample+1); !errors.Is(err, engine.ErrInvalidArgument) {
		t.Fatalf("oversized sample: %v", err)
	}
}

// spec: DLQ-12
func TestRedrive_SameIDStepsByCursorUntilDone(t *testing.T) {
	clock := et.NewClock()
	e, ids := deadSet(t, clock)
	task, err := e.StartRedrive(clock.Now(), engine.RedriveParams{Selection: engine.RedriveSelection{Queue: "q"}, Rate: 2, By: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	if task.State != engine.RedriveRunning || task.Remaining != 4 || task.Params.Rate != 2 {
		t.Fatalf("started %+v", task)
	}
	steps := []struct {
		wantMoved  uint64
		wantCursor engine.JobID
		wantState  engine.RedriveState
	}{
		{2, ids[1], engine.RedriveRunning},
		{4, ids[4], engine.RedriveDone},
	}
	for i, s := range steps {
		task, err = e.RedriveStep(clock.Advance(time.Second), task.ID, 2)
		if err != nil {
			t.Fatal(err)
		}
		if task.Moved != s.wantMoved || task.Cursor != s.wantCursor || task.State != s.wantState {
			t.Fatalf("step %d: %+v", i, task)
		}
	}
	if task.EndedAt != clock.Now() || task.Remaining != 0 {
		t.Fatalf("ended %+v", task)
	}
	// The jobs are back with their own ids, attempt reset; r's record stays.
	for _, d := range et.MustReserve(t, e, clock.Now(), "q", 10) {
		if d.Attempt != 1 {
			t.Fatalf("job %d delivered as attempt %d", d.Job.ID, d.Attempt)
		}
	}
	if _, err := e.GetDeadLetter(ids[3]); err != nil {
		t.Fatalf("record of queue r: %v", err)
	}
	// A step after the end moves nothing.
	again, err := e.RedriveStep(clock.Now(), task.ID, 2)
	if err != nil || again.Moved != 4 || again.State != engine.RedriveDone {
		t.Fatalf("step after done: %+v %v", again, err)
	}
	et.RequireInvariants(t, e)
}

// A job the task requeued that dies again after the task started is not
// selected a second time.
func TestRedrive_DoesNotReselectARecordThatDiedAgain(t *testing.T) {
	clock := et.NewClock()
	e, ids := deadSet(t, clock)
	task, err := e.StartRedrive(clock.Now(), engine.RedriveParams{Selection: engine.RedriveSelection{Queue: "q", JobType: "sms"}})
	if err != nil {
		t.Fatal(err)
	}
	// A second, later record of the same selection, dead after the start.
	clock.Advance(time.Second)
	p := et.Job("q")
	p.JobType = "sms"
	p.MaxAttempts = 1
	late := et.MustEnqueue(t, e, clock.Now(), p)
	task, _ = e.RedriveStep(clock.Now(), task.ID, 1)
	if task.Moved != 1 || task.Cursor != ids[2] {
		t.Fatalf("first step %+v", task)
	}
	d := et.MustReserveOne(t, e, clock.Now(), "q")
	if d.Job.ID != ids[2] {
		// late was enqueued after ids[2] went back, both Ready: take the requeued one.
		d = et.MustReserveOne(t, e, clock.Now(), "q")
	}
	if _, err := e.Nack(clock.Now(), engine.NackParams{LeaseRef: et.Ref(d), Reason: "again", Directive: engine.DirectiveDeadLetter}); err != nil {
		t.Fatal(err)
	}
	task, _ = e.RedriveStep(clock.Advance(time.Second), task.ID, 5)
	if task.Moved != 1 || task.State != engine.RedriveDone {
		t.Fatalf("second step %+v", task)
	}
	if _, err := e.GetDeadLetter(d.Job.ID); err != nil {
		t.Fatalf("the re-dead job's record was moved again: %v", err)
	}
	_ = late
}

// spec: DLQ-10
func TestRedrive_FreshReplayToAnotherQueue(t *testing.T) {
	clock := et.NewClock()
	e, ids := deadSet(t, clock)
	if err := e.CreateQueue(clock.Now(), engine.QueueConfig{Name: "replays"}, false); err != nil {
		t.Fatal(err)
	}
	task, err := e.StartRedrive(clock.Now(), engine.RedriveParams{Selection: engine.RedriveSelection{Cause: engine.CauseRejected}, ToQueue: "replays", Fresh: true})
	if err != nil {
		t.Fatal(err)
	}
	if task, err = e.RedriveStep(clock.Now(), task.ID, 10); err != nil || task.State != engine.RedriveDone || task.Moved != 1 {
		t.Fatalf("step %+v %v", task, err)
	}
	if _, err := e.GetDeadLetter(ids[1]); !errors.Is(err, engine.ErrNotFound) {
		t.Fatalf("replayed record still held: %v", err)
	}
	d := et.MustReserveOne(t, e, clock.Now(), "replays")
	if d.Job.ID == ids[1] || d.Attempt != 1 || d.Job.JobType != "email" || d.Job.Priority != 7 || d.Job.Custom["tenant"] != "acme" || string(d.Job.Payload) != "payload" {
		t.Fatalf("replayed job %+v attempt %d", d.Job, d.Attempt)
	}
	et.RequireInvariants(t, e)
}

func TestRedrive_FullQueueStopsTheStepAndRetries(t *testing.T) {
	clock := et.NewClock()
	e, ids := deadSet(t, clock, et.WithQueue(engine.QueueConfig{Name: "q", MaxLength: et.Ptr(1)}))
	task, err := e.StartRedrive(clock.Now(), engine.RedriveParams{Selection: engine.RedriveSelection{Queue: "q"}})
	if err != nil {
		t.Fatal(err)
	}
	task, _ = e.RedriveStep(clock.Now(), task.ID, 10)
	if task.Moved != 1 || task.Cursor != ids[0] || task.State != engine.RedriveRunning || !strings.Contains(task.LastError, "max_length") {
		t.Fatalf("step into a full queue: %+v", task)
	}
	if err := e.Ack(clock.Now(), et.Ref(et.MustReserveOne(t, e, clock.Now(), "q"))); err != nil {
		t.Fatal(err)
	}
	task, _ = e.RedriveStep(clock.Now(), task.ID, 10)
	if task.Moved != 2 || task.Cursor != ids[1] || task.LastError == "" {
		t.Fatalf("retry: %+v", task)
	}
}

func TestRedrive_PauseResumeCancel(t *testing.T) {
	clock := et.NewClock()
	e, _ := deadSet(t, clock)
	task, _ := e.StartRedrive(clock.Now(), engine.RedriveParams{By: "alice"})
	id := task.ID
	tests := []struct {
		name      string
		op        func() (engine.RedriveTask, error)
		wantState engine.RedriveState
		wantErr   error
		wantMoved uint64
	}{
		{"resume a running task", func() (engine.RedriveTask, error) { return e.ResumeRedrive(clock.Now(), id) }, 0, engine.ErrWrongState, 0},
		{"pause", func() (engine.RedriveTask, error) { return e.PauseRedrive(clock.Now(), id) }, engine.RedrivePaused, nil, 0},
		{"a paused task's step moves nothing", func() (engine.RedriveTask, error) { return e.RedriveStep(clock.Now(), id, 3) }, engine.RedrivePaused, nil, 0},
		{"pause again", func() (engine.RedriveTask, error) { return e.PauseRedrive(clock.Now(), id) }, 0, engine.ErrWrongState, 0},
		{"resume", func() (engine.RedriveTask, error) { return e.ResumeRedrive(clock.Now(), id) }, engine.RedriveRunning, nil, 0},
		{"step", func() (engine.RedriveTask, error) { return e.RedriveStep(clock.Now(), id, 3) }, engine.RedriveRunning, nil, 3},
		{"cancel", func() (engine.RedriveTask, error) { return e.CancelRedrive(clock.Now(), id, "bob") }, engine.RedriveCancelled, nil, 3},
		{"a cancelled task's step moves nothing", func() (engine.RedriveTask, error) { return e.RedriveStep(clock.Now(), id, 3) }, engine.RedriveCancelled, nil, 3},
		{"cancel again", func() (engine.RedriveTask, error) { return e.CancelRedrive(clock.Now(), id, "bob") }, 0, engine.ErrWrongState, 0},
		{"resume a cancelled task", func() (engine.RedriveTask, error) { return e.ResumeRedrive(clock.Now(), id) }, 0, engine.ErrWrongState, 0},
		{"unknown task", func() (engine.RedriveTask, error) { return e.PauseRedrive(clock.Now(), id+1) }, 0, engine.ErrNotFound, 0},
		{"bad step size", func() (engine.RedriveTask, error) { return e.RedriveStep(clock.Now(), id, 0) }, 0, engine.ErrInvalidArgument, 0},
	}
	for _, tc := range tests {
		clock.Advance(time.Second)
		got, err := tc.op()
		if !errors.Is(err, tc.wantErr) {
			t.Fatalf("%s: err %v, want %v", tc.name, err, tc.wantErr)
		}
		if err == nil && (got.State != tc.wantState || got.Moved != tc.wantMoved) {
			t.Fatalf("%s: %+v", tc.name, got)
		}
	}
	audit, err := e.GetRedrive(id)
	if err != nil || audit.Params.By != "alice" || audit.EndedBy != "bob" || audit.Moved != 3 || audit.EndedAt.IsZero() || !audit.CreatedAt.Before(audit.EndedAt) {
		t.Fatalf("audit record %+v %v", audit, err)
	}
}

func TestRedrive_AuditIsBoundedAndActiveTasksToo(t *testing.T) {
	clock := et.NewClock()
	e, _ := deadSet(t, clock)
	for i := range engine.MaxRedriveAudit + 5 {
		task, err := e.StartRedrive(clock.Advance(time.Second), engine.RedriveParams{Selection: engine.RedriveSelection{JobType: "fax"}})
		if err != nil {
			t.Fatalf("start %d: %v", i, err)
		}
		if task, _ = e.RedriveStep(clock.Now(), task.ID, 1); task.State != engine.RedriveDone {
			t.Fatalf("empty selection not done: %+v", task)
		}
	}
	tasks := e.RedriveTasks()
	if len(tasks) != engine.MaxRedriveAudit || tasks[0].ID != 6 || tasks[len(tasks)-1].ID != engine.MaxRedriveAudit+5 {
		t.Fatalf("%d audit records, ids %d..%d", len(tasks), tasks[0].ID, tasks[len(tasks)-1].ID)
	}
	for range engine.MaxActiveRedrives {
		if _, err := e.StartRedrive(clock.Now(), engine.RedriveParams{}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := e.StartRedrive(clock.Now(), engine.RedriveParams{}); !errors.Is(err, engine.ErrCapacity) {
		t.Fatalf("start beyond the active bound: %v", err)
	}
	if n := len(e.RedriveTasks()); n != engine.MaxRedriveAudit+engine.MaxActiveRedrives {
		t.Fatalf("%d tasks", n)
	}
}

func TestRedrive_SnapshotRoundTripAndLayout(t *testing.T) {
	clock := et.NewClock()
	e, _ := deadSet(t, clock)
	plain := snapshotBytes(t, e)
	a, _ := e.StartRedrive(clock.Now(), engine.RedriveParams{Selection: engine.RedriveSelection{Queue: "q", ReasonContains: "smtp", FailedAfter: et.Epoch, FailedBefore: clock.Now()}, Rate: 3, By: "alice"})
	if _, err := e.RedriveStep(clock.Advance(time.Second), a.ID, 1); err != nil {
		t.Fatal(err)
	}
	b, _ := e.StartRedrive(clock.Now(), engine.RedriveParams{Fresh: true})
	if _, err := e.CancelRedrive(clock.Now(), b.ID, "bob"); err != nil {
		t.Fatal(err)
	}
	snap := snapshotBytes(t, e)
	if bytes.Equal(snap[:9], plain[:9]) {
		t.Fatal("a state with redrive tasks kept the older layout")
	}
	restored := engine.New(engine.DefaultConfig())
	if err := restored.Restore(bytes.NewReader(snap)); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(snapshotBytes(t, restored), snap) || restored.Digest() != e.Digest() {
		t.Fatal("restored engine differs")
	}
	// Both go on identically: the restored task resumes after its cursor.
	for _, x := range []*engine.Engine{e, restored} {
		task, err := x.RedriveStep(clock.Now(), a.ID, 10)
		// failed_before excludes the record that died at the start.
		if err != nil || task.Moved != 2 || task.State != engine.RedriveDone {
			t.Fatalf("step after restore: %+v %v", task, err)
		}
	}
	if restored.Digest() != e.Digest() {
		t.Fatal("restored engine diverged")
	}
	// An engine without tasks writes the layout it wrote before redrives.
	fresh, _ := deadSet(t, et.NewClock())
	if !bytes.Equal(snapshotBytes(t, fresh)[:9], plain[:9]) {
		t.Fatal("layout changed without a redrive task")
	}
}

// TestRedrive_SelectsCancelledAndExpired: a redrive selects the dead
// letters an operator's cancel and an expiry produce by their cause, and a
// cancelled task's record counts the matching records it left unmoved.
func TestRedrive_SelectsCancelledAndExpired(t *testing.T) {
	clock := et.NewClock()
	e := et.New(t, et.WithRetention(24*time.Hour))
	// expired: a job not reserved within its ttl.
	p := et.Job("q")
	p.Expiry = &engine.ExpiryOpts{TTL: time.Second}
	expired := et.MustEnqueue(t, e, clock.Now(), p)
	// cancelled: an operator cancels a reserved job.
	cancelled := et.MustEnqueue(t, e, clock.Now(), et.Job("r"))
	et.MustReserveOne(t, e, clock.Now(), "r")
	if res, err := e.ActOnJobs(clock.Now(), engine.JobActionParams{Action: engine.JobActionCancel, IDs: []engine.JobID{cancelled}}); err != nil || res[0].Err != nil {
		t.Fatalf("cancel: %+v %v", res, err)
	}
	clock.Advance(2 * time.Second)
	e.Tick(clock.Now())
	for _, tc := range []struct {
		cause engine.Cause
		want  engine.JobID
	}{
		{engine.CauseExpired, expired},
		{engine.CauseCancelled, cancelled},
	} {
		t.Run(tc.cause.String(), func(t *testing.T) {
			n, recs, err := e.RedriveDryRun(clock.Now(), engine.RedriveParams{Selection: engine.RedriveSelection{Cause: tc.cause}}, 10)
			if err != nil || n != 1 || len(recs) != 1 || recs[0].Job.ID != tc.want {
				t.Fatalf("dry run of cause %v: %d %+v %v; want job %d", tc.cause, n, recs, err, tc.want)
			}
		})
	}
	task, err := e.StartRedrive(clock.Now(), engine.RedriveParams{Selection: engine.RedriveSelection{Cause: engine.CauseExpired}, By: "alice"})
	if err != nil || task.Remaining != 1 {
		t.Fatalf("start: %+v %v", task, err)
	}
	if task, err = e.CancelRedrive(clock.Now(), task.ID, "bob"); err != nil {
		t.Fatal(err)
	}
	if audit, err := e.GetRedrive(task.ID); err != nil || audit.State != engine.RedriveCancelled || audit.Moved != 0 || audit.Remaining != 1 {
		t.Fatalf("audit of a task cancelled before its first step: %+v %v; want 0 moved, 1 remaining", audit, err)
	}
	et.RequireInvariants(t, e)
}
