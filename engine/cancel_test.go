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

func TestActOnJobs_Cancel(t *testing.T) {
	const ready, scheduled, reserved, dead, unknown = "ready", "scheduled", "reserved", "dead", "unknown"
	for _, tc := range []struct {
		name      string
		action    engine.JobAction
		reason    string
		target    string
		retention time.Duration // -1: retention off
		maxDead   int
		wantErr   error
		wantMsg   string
		wantDead  bool   // a record with cause cancelled
		wantWhy   string // its last reason
	}{
		{name: "cancel reserved: dead-lettered", action: engine.JobActionCancel, reason: "stuck on a bad host", target: reserved, wantDead: true, wantWhy: "stuck on a bad host"},
		{name: "cancel reserved without a reason", action: engine.JobActionCancel, target: reserved, wantDead: true, wantWhy: engine.DefaultCancelReason},
		{name: "cancel reserved and delete", action: engine.JobActionCancelDelete, target: reserved},
		{name: "cancel reserved, retention off: dropped", action: engine.JobActionCancel, target: reserved, retention: -1},
		{name: "cancel reserved, dead store full", action: engine.JobActionCancel, target: reserved, maxDead: 1,
			wantErr: engine.ErrCapacity, wantMsg: "limits.max_dead_letters"},
		{name: "cancel-delete reserved, dead store full: goes ahead", action: engine.JobActionCancelDelete, target: reserved, maxDead: 1},
		{name: "cancel ready", action: engine.JobActionCancel, target: ready, wantErr: engine.ErrWrongState, wantMsg: "is ready, not reserved by a worker"},
		{name: "cancel scheduled", action: engine.JobActionCancelDelete, target: scheduled, wantErr: engine.ErrWrongState, wantMsg: "is scheduled, not reserved"},
		{name: "cancel dead", action: engine.JobActionCancel, target: dead, wantErr: engine.ErrWrongState, wantMsg: "is dead-lettered"},
		{name: "cancel unknown", action: engine.JobActionCancel, target: unknown, wantErr: engine.ErrNotFound},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clock := et.NewClock()
			retention := time.Hour
			if tc.retention != 0 {
				retention = 0
			}
			e := et.New(t, et.WithRetention(retention), func(c *engine.Config) {
				if tc.maxDead > 0 {
					c.Limits.MaxDeadLetters = tc.maxDead
				}
			})
			var d engine.Delivery
			r := et.MustEnqueue(t, e, clock.Now(), et.Job("q"))
			d = et.MustReserveOne(t, e, clock.Now(), "q")
			rdy := et.MustEnqueue(t, e, clock.Now(), et.Job("q"))
			p := et.Job("q")
			p.ScheduledAt = clock.Now().Add(time.Hour)
			s := et.MustEnqueue(t, e, clock.Now(), p)
			dd := et.MustEnqueue(t, e, clock.Now(), et.Job("q"))
			if tc.retention == 0 {
				if res := e.DeadLetterJobs(clock.Now(), []engine.JobID{dd}, ""); res[0].Err != nil {
					t.Fatal(res[0].Err)
				}
			}
			id := map[string]engine.JobID{ready: rdy, scheduled: s, reserved: r, dead: dd, unknown: 999}[tc.target]
			before := e.Digest()
			got, err := e.ActOnJobs(clock.Now(), engine.JobActionParams{Action: tc.action, IDs: []engine.JobID{id}, Reason: tc.reason})
			if err != nil || len(got) != 1 || got[0].JobID != id {
				t.Fatalf("ActOnJobs: %+v %v", got, err)
			}
			et.RequireInvariants(t, e)
			if tc.wantErr != nil {
				if !errors.Is(got[0].Err, tc.wantErr) || !strings.Contains(got[0].Err.Error(), tc.wantMsg) {
					t.Fatalf("item error %v, want %v containing %q", got[0].Err, tc.wantErr, tc.wantMsg)
				}
				if e.Digest() != before {
					t.Fatal("a refused cancel changed the state")
				}
				return
			}
			if got[0].Err != nil {
				t.Fatal(got[0].Err)
			}
			// The lease is gone at once: every call of the worker is lease-lost.
			if err := e.Ack(clock.Now(), et.Ref(d)); !errors.Is(err, engine.ErrLeaseLost) {
				t.Fatalf("ack after cancel: %v, want ErrLeaseLost", err)
			}
			if _, err := e.ExtendLease(clock.Now(), engine.ExtendParams{LeaseRef: et.Ref(d)}); !errors.Is(err, engine.ErrLeaseLost) {
				t.Fatalf("extend after cancel: %v, want ErrLeaseLost", err)
			}
			if _, err := e.Nack(clock.Now(), engine.NackParams{LeaseRef: et.Ref(d)}); !errors.Is(err, engine.ErrLeaseLost) {
				t.Fatalf("nack after cancel: %v, want ErrLeaseLost", err)
			}
			if j, err := e.GetJob(id); tc.wantDead && (err != nil || j.State != engine.StateDead) || !tc.wantDead && !errors.Is(err, engine.ErrNotFound) {
				t.Fatalf("GetJob of a cancelled job: %+v %v", j, err)
			}
			st, err := e.QueueStats(clock.Now(), "q")
			if err != nil {
				t.Fatal(err)
			}
			if st.Reserved != 0 {
				t.Fatalf("reserved %d after cancel", st.Reserved)
			}
			rec, err := e.GetDeadLetter(id)
			switch {
			case !tc.wantDead:
				if !errors.Is(err, engine.ErrNotFound) {
					t.Fatalf("dead letter of a %s: %+v %v", tc.name, rec, err)
				}
				wantCancelled := uint64(0)
				if tc.action == engine.JobActionCancel {
					wantCancelled = 1 // dropped for want of retention, still counted
				}
				if st.DeadLettered[engine.CauseCancelled] != wantCancelled {
					t.Fatalf("cancelled count %d, want %d", st.DeadLettered[engine.CauseCancelled], wantCancelled)
				}
				if tc.action == engine.JobActionCancelDelete && st.Purged != 1 {
					t.Fatalf("purged %d after cancel-delete, want 1", st.Purged)
				}
			case err != nil:
				t.Fatal(err)
			default:
				if rec.Cause != engine.CauseCancelled || rec.Cause.String() != "cancelled" || rec.LastReason != tc.wantWhy || rec.FinalAttempt != 1 {
					t.Fatalf("record %+v", rec)
				}
				h := rec.Job.History
				if len(h) == 0 || h[len(h)-1].Outcome != "cancelled" || h[len(h)-1].Reason != tc.wantWhy || h[len(h)-1].Attempt != 1 {
					t.Fatalf("history %+v", h)
				}
				if st.DeadLettered[engine.CauseCancelled] != 1 {
					t.Fatalf("cancelled count %d", st.DeadLettered[engine.CauseCancelled])
				}
			}
		})
	}
}

// A state with a cancelled record is written in layout 8 and restored
// exactly; one that never cancelled into the dead letters keeps the older
// layout an older binary reads.
func TestSnapshot_CancelLayoutOnlyWhenUsed(t *testing.T) {
	clock := et.NewClock()
	e := et.New(t, et.WithRetention(time.Hour))
	layout := func() byte { return snapshotBytes(t, e)[len("SEPPENG\x00")] }
	for range 2 {
		et.MustEnqueue(t, e, clock.Now(), et.Job("q"))
	}
	ds := et.MustReserve(t, e, clock.Now(), "q", 2)
	if res, err := e.ActOnJobs(clock.Now(), engine.JobActionParams{Action: engine.JobActionCancelDelete, IDs: []engine.JobID{ds[0].Job.ID}}); err != nil || res[0].Err != nil {
		t.Fatalf("%+v %v", res, err)
	}
	if got := layout(); got != 4 {
		t.Fatalf("layout %d after a cancel-delete (a purge), want 4", got)
	}
	if res, err := e.ActOnJobs(clock.Now(), engine.JobActionParams{Action: engine.JobActionCancel, IDs: []engine.JobID{ds[1].Job.ID}}); err != nil || res[0].Err != nil {
		t.Fatalf("%+v %v", res, err)
	}
	if got := layout(); got != 8 {
		t.Fatalf("layout %d after a cancel, want 8", got)
	}
	restored := engine.New(engine.DefaultConfig())
	if err := restored.Restore(bytes.NewReader(snapshotBytes(t, e))); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(snapshotBytes(t, restored), snapshotBytes(t, e)) {
		t.Fatal("restored engine differs")
	}
	et.RequireInvariants(t, restored)
	s, _ := restored.QueueStats(clock.Now(), "q")
	if s.DeadLettered[engine.CauseCancelled] != 1 || s.Purged != 1 {
		t.Fatalf("restored stats %+v", s)
	}
	// The record drained, the state still says cancel was used: layout 8
	// stays, so the count survives.
	if _, err := e.DrainDeadLetters(clock.Now(), engine.DrainParams{Queue: "q", Max: 1}); err != nil {
		t.Fatal(err)
	}
	if got := layout(); got != 8 {
		t.Fatalf("layout %d after the drain, want 8", got)
	}
}
