package engine_test

import (
	"bytes"
	"slices"
	"testing"
	"time"

	"github.com/sepp-io/sepp/engine"
	et "github.com/sepp-io/sepp/engine/enginetest"
)

// waitingWant is what GetJob of Job must show as its waiting children.
type waitingWant struct {
	Job   engine.JobID
	IDs   []engine.JobID
	Total int
}

// TestGetJob_WaitingChildren: GetJob of a job lists the Blocked jobs
// still waiting for it, in id order, up to MaxWaitingChildrenListed, and
// counts them all; a child leaves the list once it no longer waits for
// that parent (the parent ended: the child is released, cancelled or
// waits on its other parents; or the child ended first), and an ended
// parent lists none. The same holds after a snapshot and restore, which
// rebuilds the lists.
func TestGetJob_WaitingChildren(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		// run builds the scenario and says what each job read must show.
		run func(t *testing.T, e *engine.Engine, clock *et.Clock) []waitingWant
	}{
		{"FanOutListsEveryBlockedChild", func(t *testing.T, e *engine.Engine, clock *et.Clock) []waitingWant {
			t.Helper()
			ids := mustBatch(t, e, clock.Now(), et.Job("root"),
				after("fan", engine.ParentFailureCancel, 0), after("fan", engine.ParentFailureCancel, 0), after("fan", engine.ParentFailureRun, 0))
			return []waitingWant{
				{Job: ids[0], IDs: ids[1:], Total: 3},
				{Job: ids[1]}, {Job: ids[2]}, {Job: ids[3]},
			}
		}},
		{"FanInEachParentListsTheChild", func(t *testing.T, e *engine.Engine, clock *et.Clock) []waitingWant {
			t.Helper()
			ids := mustBatch(t, e, clock.Now(), et.Job("root"), et.Job("root"), et.Job("root"),
				after("fan", engine.ParentFailureCancel, 0, 1, 2))
			child := []engine.JobID{ids[3]}
			return []waitingWant{{ids[0], child, 1}, {ids[1], child, 1}, {ids[2], child, 1}, {Job: ids[3]}}
		}},
		{"BlockedParentListsItsChildren", func(t *testing.T, e *engine.Engine, clock *et.Clock) []waitingWant {
			t.Helper()
			// A chain root → middle → two leaves: the middle job waits
			// and is waited for.
			ids := mustBatch(t, e, clock.Now(), et.Job("root"), after("fan", engine.ParentFailureCancel, 0),
				after("fan", engine.ParentFailureCancel, 1), after("fan", engine.ParentFailureCancel, 1))
			return []waitingWant{{ids[0], ids[1:2], 1}, {ids[1], ids[2:4], 2}}
		}},
		{"ReleasedChildIsNoLongerListed", func(t *testing.T, e *engine.Engine, clock *et.Clock) []waitingWant {
			t.Helper()
			ids := mustBatch(t, e, clock.Now(), et.Job("root"), after("fan", engine.ParentFailureCancel, 0), after("fan", engine.ParentFailureCancel, 0))
			finish(t, e, clock.Advance(time.Second), "root", ids[0], true)
			if s := stateOf(t, e, ids[1]); s != engine.StateReady {
				t.Fatalf("child is %v after its parent completed, want ready", s)
			}
			// The completed root (its record kept) lists none.
			return []waitingWant{{Job: ids[0]}, {Job: ids[1]}, {Job: ids[2]}}
		}},
		{"ChildStillWaitingOnOtherParentsLeavesTheEndedOne", func(t *testing.T, e *engine.Engine, clock *et.Clock) []waitingWant {
			t.Helper()
			ids := mustBatch(t, e, clock.Now(), et.Job("root"), et.Job("root"), after("fan", engine.ParentFailureRun, 0, 1))
			finish(t, e, clock.Advance(time.Second), "root", ids[0], false)
			if s := stateOf(t, e, ids[2]); s != engine.StateBlocked {
				t.Fatalf("run-anyway child is %v with a parent left, want blocked", s)
			}
			// The dead parent (its record kept) lists none; the live one
			// still lists the child.
			return []waitingWant{{Job: ids[0]}, {ids[1], ids[2:3], 1}}
		}},
		{"CancelledChildIsNoLongerListed", func(t *testing.T, e *engine.Engine, clock *et.Clock) []waitingWant {
			t.Helper()
			ids := mustBatch(t, e, clock.Now(), et.Job("root"), et.Job("root"),
				after("fan", engine.ParentFailureCancel, 0, 1), after("fan", engine.ParentFailureCancel, 1))
			finish(t, e, clock.Advance(time.Second), "root", ids[0], false)
			if s := stateOf(t, e, ids[2]); s != engine.StateDead {
				t.Fatalf("child of a dead parent is %v, want dead (cancelled)", s)
			}
			// The cancelled child left the live parent's list too.
			return []waitingWant{{Job: ids[0]}, {ids[1], ids[3:4], 1}, {Job: ids[2]}}
		}},
		{"DeletedChildIsNoLongerListed", func(t *testing.T, e *engine.Engine, clock *et.Clock) []waitingWant {
			t.Helper()
			ids := mustBatch(t, e, clock.Now(), et.Job("root"), after("fan", engine.ParentFailureCancel, 0), after("fan", engine.ParentFailureCancel, 0))
			res, err := e.ActOnJobs(clock.Now(), engine.JobActionParams{Action: engine.JobActionDelete, IDs: ids[1:2]})
			if err != nil || res[0].Err != nil {
				t.Fatalf("delete child: %v %+v", err, res)
			}
			return []waitingWant{{ids[0], ids[2:3], 1}}
		}},
		{"RequeuedDeadParentListsNone", func(t *testing.T, e *engine.Engine, clock *et.Clock) []waitingWant {
			t.Helper()
			// A requeued parent is a new run its former children do not
			// wait for.
			ids := mustBatch(t, e, clock.Now(), et.Job("root"), after("fan", engine.ParentFailureRun, 0))
			finish(t, e, clock.Advance(time.Second), "root", ids[0], false)
			if r := e.RequeueDeadLetters(clock.Now(), ids[:1]); r[0].Err != nil {
				t.Fatalf("requeue: %v", r[0].Err)
			}
			if s := stateOf(t, e, ids[0]); s != engine.StateReady {
				t.Fatalf("requeued parent is %v, want ready", s)
			}
			return []waitingWant{{Job: ids[0]}}
		}},
		{"TruncatedToTheFirstInIDOrder", func(t *testing.T, e *engine.Engine, clock *et.Clock) []waitingWant {
			t.Helper()
			const n = engine.MaxWaitingChildrenListed + 30
			items := []engine.EnqueueParams{et.Job("root")}
			for range n {
				items = append(items, after("fan", engine.ParentFailureCancel, 0))
			}
			ids := mustBatch(t, e, clock.Now(), items...)
			return []waitingWant{{ids[0], ids[1 : 1+engine.MaxWaitingChildrenListed], n}}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			clock := et.NewClock()
			e := et.New(t, et.WithRetention(time.Hour), et.WithQueue(engine.QueueConfig{Name: "root", CompletedRetention: time.Hour}))
			wants := tc.run(t, e, clock)
			et.RequireInvariants(t, e)
			requireWaitingChildren(t, "", e, wants)

			var snap bytes.Buffer
			if err := e.Snapshot(&snap); err != nil {
				t.Fatal(err)
			}
			r := engine.New(engine.DefaultConfig())
			if err := r.Restore(&snap); err != nil {
				t.Fatal(err)
			}
			requireWaitingChildren(t, "after restore: ", r, wants)
		})
	}
}

func requireWaitingChildren(t *testing.T, prefix string, e *engine.Engine, wants []waitingWant) {
	t.Helper()
	for _, w := range wants {
		j, err := e.GetJob(w.Job)
		if err != nil {
			t.Fatalf("%sget job %d: %v", prefix, w.Job, err)
		}
		if !slices.Equal(j.WaitingChildren, w.IDs) || j.WaitingChildrenTotal != w.Total {
			t.Errorf("%sjob %d (%v): waiting children %v of %d, want %v of %d", prefix, w.Job, j.State, j.WaitingChildren, j.WaitingChildrenTotal, w.IDs, w.Total)
		}
	}
}

// TestGetJob_WaitingChildrenOnlyOnGetJob: listings and deliveries, many
// jobs at once, do not carry the children; GetJob's list is its own copy.
func TestGetJob_WaitingChildrenOnlyOnGetJob(t *testing.T) {
	t.Parallel()
	clock := et.NewClock()
	e := et.New(t)
	ids := mustBatch(t, e, clock.Now(), et.Job("root"), after("fan", engine.ParentFailureCancel, 0))
	js, err := e.ListJobs("root", engine.StateReady, engine.Page{})
	if err != nil || len(js) != 1 {
		t.Fatalf("list: %v %+v", err, js)
	}
	if js[0].WaitingChildren != nil || js[0].WaitingChildrenTotal != 0 {
		t.Errorf("listed job carries waiting children %v of %d", js[0].WaitingChildren, js[0].WaitingChildrenTotal)
	}
	j, err := e.GetJob(ids[0])
	if err != nil {
		t.Fatal(err)
	}
	j.WaitingChildren[0] = 0 // the caller's copy: the engine's list is untouched
	d := et.MustReserveOne(t, e, clock.Now(), "root")
	if d.Job.WaitingChildren != nil || d.Job.WaitingChildrenTotal != 0 {
		t.Errorf("delivery carries waiting children %v of %d", d.Job.WaitingChildren, d.Job.WaitingChildrenTotal)
	}
	et.RequireInvariants(t, e)
	requireWaitingChildren(t, "reserved: ", e, []waitingWant{{ids[0], ids[1:], 1}})
}
