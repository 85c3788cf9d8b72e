package fsm

import (
	"bytes"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/sepp-io/sepp/engine"
	cmdpb "github.com/sepp-io/sepp/proto/seppcmd/v1"
)

// TestScheduleCommands_RoundTripAndDedup: the schedule operations carry
// CommandVersionSchedules, a definition survives the log, and a ScheduleFire
// applied twice (a tick proposed by two leaders) makes one job, also on a
// replica restored from a snapshot taken between the two.
func TestScheduleCommands_RoundTripAndDedup(t *testing.T) {
	tick := t0.Add(time.Second)
	p := engine.ScheduleParams{
		Name: "nightly", Kind: engine.ScheduleCron, Cron: "0 3 * * *", TimeZone: "Europe/Berlin",
		Template: engine.JobTemplate{Queue: "q", JobType: "report", Payload: []byte("x"), Priority: ptr[uint32](4), Custom: map[string]string{"tenant": "a"}, MaxAttempts: 3},
		Overlap:  engine.OverlapAllow, CatchUp: engine.CatchUpSkip, NextTick: tick,
	}
	upsert := UpsertScheduleCommand(p)
	fire := FireScheduleCommand("nightly", tick, tick.Add(24*time.Hour), false)
	for _, c := range [...]interface{ GetVersion() uint32 }{upsert, fire, DeleteScheduleCommand("x"), PauseScheduleCommand("x", true, time.Time{})} {
		if c.GetVersion() != CommandVersionSchedules {
			t.Fatalf("schedule command version %d, want %d", c.GetVersion(), CommandVersionSchedules)
		}
	}
	if got := scheduleParamsFromProto(upsert.GetScheduleUpsert()); !reflect.DeepEqual(got, p) {
		t.Fatalf("round trip %+v, want %+v", got, p)
	}
	f := newTestFSM(t)
	r := applyEntry(t, f, 1, append(stamped(t0, upsert), stamped(tick, fire)...))
	if r[0].Err != nil || r[1].Err != nil || r[1].Fire.JobID == 0 {
		t.Fatalf("upsert %v, fire %+v %v", r[0].Err, r[1].Fire, r[1].Err)
	}
	var snap bytes.Buffer
	if err := f.Read(func(e *engine.Engine) error { return e.Snapshot(&snap) }); err != nil {
		t.Fatal(err)
	}
	replica := newTestFSM(t)
	if err := replica.Read(func(e *engine.Engine) error { return e.Restore(&snap) }); err != nil {
		t.Fatal(err)
	}
	for _, m := range []*FSM{f, replica} {
		r := applyEntry(t, m, 2, stamped(tick.Add(time.Second), fire))
		if r[0].Err != nil || !r[0].Fire.Duplicate {
			t.Fatalf("second fire: %+v %v, want a duplicate", r[0].Fire, r[0].Err)
		}
		var s engine.Schedule
		if err := m.Read(func(e *engine.Engine) error {
			var err error
			s, err = e.GetSchedule("nightly")
			return err
		}); err != nil {
			t.Fatal(err)
		}
		if s.Fired != 1 || !s.NextTick.Equal(tick.Add(24*time.Hour)) {
			t.Fatalf("schedule after two fires: fired %d next %v", s.Fired, s.NextTick)
		}
	}
	r = applyEntry(t, f, 3, stamped(tick, PauseScheduleCommand("nightly", false, time.Time{}), DeleteScheduleCommand("nightly"), DeleteScheduleCommand("nightly")))
	if r[0].Err == nil || !strings.Contains(r[0].Err.Error(), "next_tick") || r[1].Err != nil || !errors.Is(r[2].Err, engine.ErrNotFound) {
		t.Fatalf("resume without tick %v, delete %v, delete again %v", r[0].Err, r[1].Err, r[2].Err)
	}
}

// TestScheduleCommand_OlderVersionRefused: a schedule operation stamped
// with a version below 7 is refused at decode, as a writer bug.
func TestScheduleCommand_OlderVersionRefused(t *testing.T) {
	c := FireScheduleCommand("s", t0, t0, false)
	c.Version = CommandVersionReserveLimits
	data, err := EncodeEntry([]*cmdpb.Command{c})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := DecodeEntry(data); !errors.Is(err, ErrDecode) || !strings.Contains(err.Error(), "its operation needs 7") {
		t.Fatalf("decode: %v", err)
	}
}
