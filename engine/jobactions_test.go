package engine_test

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sepp-io/sepp/engine"
	et "github.com/sepp-io/sepp/engine/enginetest"
)

// jobsOfEachState enqueues, on queue q, a Ready job, a Scheduled one (an
// hour out), a Reserved one and a dead-lettered one, and returns their ids.
func jobsOfEachState(t *testing.T, e *engine.Engine, now time.Time) (ready, scheduled, reserved, dead engine.JobID) {
	t.Helper()
	reserved = et.MustEnqueue(t, e, now, et.Job("q"))
	et.MustReserveOne(t, e, now, "q")
	ready = et.MustEnqueue(t, e, now, et.Job("q"))
	p := et.Job("q")
	p.ScheduledAt = now.Add(time.Hour)
	scheduled = et.MustEnqueue(t, e, now, p)
	dead = et.MustEnqueue(t, e, now, et.Job("q"))
	if r := e.DeadLetterJobs(now, []engine.JobID{dead}, ""); r[0].Err != nil {
		t.Fatal(r[0].Err)
	}
	return
}

func TestActOnJobs(t *testing.T) {
	const ready, scheduled, reserved, dead, unknown = "ready", "scheduled", "reserved", "dead", "unknown"
	for _, tc := range []struct {
		name    string
		p       engine.JobActionParams
		target  string
		wantErr error
		wantMsg string
		check   func(t *testing.T, j engine.Job, err error)
	}{
		{name: "delete ready", p: engine.JobActionParams{Action: engine.JobActionDelete}, target: ready,
			check: func(t *testing.T, _ engine.Job, err error) { t.Helper(); wantGone(t, err) }},
		{name: "delete scheduled", p: engine.JobActionParams{Action: engine.JobActionDelete}, target: scheduled,
			check: func(t *testing.T, _ engine.Job, err error) { t.Helper(); wantGone(t, err) }},
		{name: "delete reserved", p: engine.JobActionParams{Action: engine.JobActionDelete}, target: reserved,
			wantErr: engine.ErrWrongState, wantMsg: "only ready or scheduled jobs can be deleted"},
		{name: "delete dead", p: engine.JobActionParams{Action: engine.JobActionDelete}, target: dead,
			wantErr: engine.ErrWrongState, wantMsg: "requeue or delete its record instead"},
		{name: "delete unknown", p: engine.JobActionParams{Action: engine.JobActionDelete}, target: unknown, wantErr: engine.ErrNotFound},
		{name: "run scheduled now", p: engine.JobActionParams{Action: engine.JobActionRunNow}, target: scheduled,
			check: func(t *testing.T, j engine.Job, err error) { t.Helper(); wantState(t, j, err, engine.StateReady) }},
		{name: "run ready now: nothing to do", p: engine.JobActionParams{Action: engine.JobActionRunNow}, target: ready,
			check: func(t *testing.T, j engine.Job, err error) { t.Helper(); wantState(t, j, err, engine.StateReady) }},
		{name: "run reserved now", p: engine.JobActionParams{Action: engine.JobActionRunNow}, target: reserved, wantErr: engine.ErrWrongState},
		{name: "reschedule ready", p: engine.JobActionParams{Action: engine.JobActionReschedule, RunAt: et.Epoch.Add(2 * time.Hour)}, target: ready,
			check: func(t *testing.T, j engine.Job, err error) {
				t.Helper()
				wantState(t, j, err, engine.StateScheduled)
				if !j.ScheduledAt.Equal(et.Epoch.Add(2 * time.Hour)) {
					t.Fatalf("scheduled at %v", j.ScheduledAt)
				}
			}},
		{name: "reschedule scheduled into the past: ready", p: engine.JobActionParams{Action: engine.JobActionReschedule, RunAt: et.Epoch.Add(-time.Hour)}, target: scheduled,
			check: func(t *testing.T, j engine.Job, err error) { t.Helper(); wantState(t, j, err, engine.StateReady) }},
		{name: "reschedule beyond the horizon", p: engine.JobActionParams{Action: engine.JobActionReschedule, RunAt: et.Epoch.AddDate(1, 0, 0)}, target: ready,
			wantErr: engine.ErrScheduledTooFar, wantMsg: "beyond the schedule horizon"},
		{name: "reschedule reserved", p: engine.JobActionParams{Action: engine.JobActionReschedule, RunAt: et.Epoch}, target: reserved, wantErr: engine.ErrWrongState},
		{name: "priority of a ready job", p: engine.JobActionParams{Action: engine.JobActionPriority, Priority: 9}, target: ready,
			check: func(t *testing.T, j engine.Job, err error) {
				t.Helper()
				if err != nil || j.Priority != 9 || j.State != engine.StateReady {
					t.Fatalf("%+v %v", j, err)
				}
			}},
		{name: "priority of a reserved job", p: engine.JobActionParams{Action: engine.JobActionPriority, Priority: 2}, target: reserved,
			check: func(t *testing.T, j engine.Job, err error) {
				t.Helper()
				if err != nil || j.Priority != 2 || j.State != engine.StateReserved {
					t.Fatalf("%+v %v", j, err)
				}
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clock := et.NewClock()
			e := et.New(t, et.WithRetention(time.Hour))
			r, s, res, d := jobsOfEachState(t, e, clock.Now())
			id := map[string]engine.JobID{ready: r, scheduled: s, reserved: res, dead: d, unknown: 999}[tc.target]
			tc.p.IDs = []engine.JobID{id}
			before := e.Digest()
			got, err := e.ActOnJobs(clock.Now(), tc.p)
			if err != nil || len(got) != 1 || got[0].JobID != id {
				t.Fatalf("ActOnJobs: %+v %v", got, err)
			}
			et.RequireInvariants(t, e)
			if tc.wantErr != nil {
				if !errors.Is(got[0].Err, tc.wantErr) || !strings.Contains(got[0].Err.Error(), tc.wantMsg) {
					t.Fatalf("item error %v, want %v containing %q", got[0].Err, tc.wantErr, tc.wantMsg)
				}
				if e.Digest() != before {
					t.Fatal("a refused action changed the state")
				}
				return
			}
			if got[0].Err != nil {
				t.Fatal(got[0].Err)
			}
			j, err := e.GetJob(id)
			tc.check(t, j, err)
		})
	}
}

func wantGone(t *testing.T, err error) {
	t.Helper()
	if !errors.Is(err, engine.ErrNotFound) {
		t.Fatalf("GetJob after delete: %v, want ErrNotFound", err)
	}
}

func wantState(t *testing.T, j engine.Job, err error, s engine.State) {
	t.Helper()
	if err != nil || j.State != s {
		t.Fatalf("job %+v %v, want state %v", j, err, s)
	}
}

func TestActOnJobs_RefusedWhole(t *testing.T) {
	clock := et.NewClock()
	e := et.New(t)
	id := et.MustEnqueue(t, e, clock.Now(), et.Job("q"))
	if _, err := e.ActOnJobs(clock.Now(), engine.JobActionParams{Action: engine.JobActionPriority, Priority: 10, IDs: []engine.JobID{id}}); !errors.Is(err, engine.ErrInvalidArgument) || !strings.Contains(err.Error(), "priority: must be 0..9, got 10") {
		t.Fatalf("priority 10: %v", err)
	}
	if _, err := e.ActOnJobs(clock.Now(), engine.JobActionParams{Action: 42, IDs: []engine.JobID{id}}); !errors.Is(err, engine.ErrInvalidArgument) {
		t.Fatalf("unknown action: %v", err)
	}
}

// A reprioritised job takes its place by the new priority and its original
// enqueue time: ahead of later jobs of that priority, behind earlier ones.
func TestActOnJobs_PriorityKeepsEnqueueOrder(t *testing.T) {
	clock := et.NewClock()
	e := et.New(t)
	p := func(prio uint32) engine.EnqueueParams { j := et.Job("q"); j.Priority = et.Ptr(prio); return j }
	early5 := et.MustEnqueue(t, e, clock.Now(), p(5))
	moved := et.MustEnqueue(t, e, clock.Now(), p(1))
	late5 := et.MustEnqueue(t, e, clock.Now(), p(5))
	if r, err := e.ActOnJobs(clock.Now(), engine.JobActionParams{Action: engine.JobActionPriority, Priority: 5, IDs: []engine.JobID{moved}}); err != nil || r[0].Err != nil {
		t.Fatalf("%+v %v", r, err)
	}
	got := et.IDs(et.MustReserve(t, e, clock.Now(), "q", 3))
	if want := []engine.JobID{early5, moved, late5}; len(got) != 3 || got[0] != want[0] || got[1] != want[1] || got[2] != want[2] {
		t.Fatalf("delivery order %v, want %v", got, want)
	}
	et.RequireInvariants(t, e)
}

// A Ready job moved to another priority leaves a tombstone in its old
// level's ring; taking its place in the new level's ring must not bring
// that slot back to life (found by the model test's set-priority op: the
// job sat in two rings and could be delivered twice).
func TestJobActions_PriorityChangeLeavesNoSecondPlace(t *testing.T) {
	t.Parallel()
	clock := et.NewClock()
	e := et.New(t)
	var ids []engine.JobID
	for range 3 {
		ids = append(ids, et.MustEnqueue(t, e, clock.Now(), et.Job("q")))
	}
	// The middle job moves to priority 5: its old slot is not at the
	// ring's front, so it stays as a tombstone.
	res, err := e.ActOnJobs(clock.Now(), engine.JobActionParams{Action: engine.JobActionPriority, IDs: ids[1:2], Priority: 5})
	if err != nil || res[0].Err != nil {
		t.Fatal(err, res)
	}
	et.RequireInvariants(t, e)
	ds, err := e.Reserve(clock.Now(), engine.ReserveParams{Queue: "q", N: 10})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := et.IDs(ds), []engine.JobID{ids[1], ids[0], ids[2]}; !slices.Equal(got, want) {
		t.Fatalf("reserved %v, want %v (the raised job first, each once)", got, want)
	}
	et.RequireInvariants(t, e)
}
