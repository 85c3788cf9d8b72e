package schedspec

import (
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/sepp-io/sepp/engine"
)

// Prepare gives each schedule write as the API asks it the write the log
// carries, checked against the current state: the same answers on the
// leader (cluster) and in the in-memory backend (rpctest), which both call
// it.
func TestPrepare(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	hourly := engine.ScheduleParams{
		Name: "hourly", Kind: engine.ScheduleCron, Cron: "@hourly",
		Template: engine.JobTemplate{Queue: "q", JobType: "t"},
	}
	nextHour := time.Date(2026, 1, 2, 4, 0, 0, 0, time.UTC)
	withName := func(p engine.ScheduleParams, name string) engine.ScheduleParams { p.Name = name; return p }
	paused := hourly
	paused.Paused = true
	every5 := hourly
	every5.Cron = "*/5 * * * *"

	tests := []struct {
		name    string
		op      engine.Op
		want    engine.Op
		wantErr error
	}{
		{name: "create stamps the first tick",
			op:   engine.CreateScheduleOp{Params: withName(hourly, "new")},
			want: engine.UpsertScheduleOp{Params: func() engine.ScheduleParams { p := withName(hourly, "new"); p.NextTick = nextHour; return p }()}},
		{name: "a paused create has no tick",
			op:   engine.CreateScheduleOp{Params: withName(paused, "new")},
			want: engine.UpsertScheduleOp{Params: withName(paused, "new")}},
		{name: "create of an existing name", op: engine.CreateScheduleOp{Params: hourly}, wantErr: engine.ErrAlreadyExists},
		{name: "create with a bad spec",
			op:      engine.CreateScheduleOp{Params: func() engine.ScheduleParams { p := withName(hourly, "new"); p.Cron = "61 * * * *"; return p }()},
			wantErr: engine.ErrInvalidArgument},
		{name: "update keeps the paused state and stamps the tick",
			op: engine.UpdateScheduleOp{Name: "hourly", Update: func(cur engine.Schedule) (engine.ScheduleParams, error) {
				p := cur.ScheduleParams
				p.Cron, p.Paused = "*/5 * * * *", true // Paused is ignored
				return p, nil
			}},
			want: engine.UpsertScheduleOp{Params: func() engine.ScheduleParams {
				p := every5
				p.NextTick = time.Date(2026, 1, 2, 3, 5, 0, 0, time.UTC)
				return p
			}()}},
		{name: "update of an unknown name",
			op:      engine.UpdateScheduleOp{Name: "nosuch", Update: func(engine.Schedule) (engine.ScheduleParams, error) { return hourly, nil }},
			wantErr: engine.ErrNotFound},
		{name: "update cannot rename",
			op:      engine.UpdateScheduleOp{Name: "hourly", Update: func(engine.Schedule) (engine.ScheduleParams, error) { return withName(hourly, "other"), nil }},
			wantErr: engine.ErrInvalidArgument},
		{name: "pause reads nothing", op: engine.SetSchedulePausedOp{Name: "nosuch", Paused: true},
			want: engine.PauseScheduleOp{Name: "nosuch", Paused: true}},
		{name: "resume carries the first tick after now", op: engine.SetSchedulePausedOp{Name: "hourly"},
			want: engine.PauseScheduleOp{Name: "hourly", NextTick: nextHour}},
		{name: "resume of an unknown name", op: engine.SetSchedulePausedOp{Name: "nosuch"}, wantErr: engine.ErrNotFound},
		{name: "delete is carried as it is", op: engine.DeleteScheduleOp{Name: "nosuch"}, want: engine.DeleteScheduleOp{Name: "nosuch"}},
		{name: "other writes are carried as they are", op: engine.PauseQueueOp{Queue: "q"}, want: engine.PauseQueueOp{Queue: "q"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := engine.New(engine.DefaultConfig())
			seeded := hourly
			seeded.NextTick = now.Add(-5 * time.Minute).Truncate(time.Hour)
			if err := e.UpsertSchedule(now.Add(-time.Hour), seeded); err != nil {
				t.Fatal(err)
			}
			got, err := Prepare(e.GetSchedule, now, tc.op)
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("err %v, want %v", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !sameOp(got, tc.want) {
				t.Fatalf("got %#v\nwant %#v", got, tc.want)
			}
		})
	}
}

// sameOp compares the prepared ops this test expects; ScheduleParams holds
// slices and maps, so == cannot.
func sameOp(a, b engine.Op) bool {
	ua, okA := a.(engine.UpsertScheduleOp)
	ub, okB := b.(engine.UpsertScheduleOp)
	if okA || okB {
		pa, pb := ua.Params, ub.Params
		return okA && okB && pa.Name == pb.Name && pa.Cron == pb.Cron && pa.Paused == pb.Paused &&
			pa.NextTick.Equal(pb.NextTick) && pa.Template.Queue == pb.Template.Queue
	}
	return a == b
}

// NeedsPrepare names exactly the writes Prepare turns into others: a write
// it names comes back as another type (the engine refuses the API's form),
// any other comes back as it was, so a backend that asks NeedsPrepare
// sends every schedule write through Prepare and nothing else.
func TestNeedsPrepare(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	hourly := engine.ScheduleParams{Name: "hourly", Kind: engine.ScheduleCron, Cron: "@hourly", Template: engine.JobTemplate{Queue: "q", JobType: "t"}}
	get := func(name string) (engine.Schedule, error) {
		if name == hourly.Name {
			return engine.Schedule{ScheduleParams: hourly}, nil
		}
		return engine.Schedule{}, engine.ErrNotFound
	}
	tests := []struct {
		op   engine.Op
		want bool
	}{
		{engine.CreateScheduleOp{Params: engine.ScheduleParams{Name: "new", Kind: engine.ScheduleCron, Cron: "@hourly", Template: hourly.Template}}, true},
		{engine.UpdateScheduleOp{Name: "hourly", Update: func(cur engine.Schedule) (engine.ScheduleParams, error) { return cur.ScheduleParams, nil }}, true},
		{engine.SetSchedulePausedOp{Name: "hourly", Paused: false}, true},
		{engine.SetSchedulePausedOp{Name: "hourly", Paused: true}, true},
		{engine.DeleteScheduleOp{Name: "hourly"}, false},
		{engine.UpsertScheduleOp{Params: hourly}, false},
		{engine.PauseScheduleOp{Name: "hourly", Paused: true}, false},
		{engine.CreateQueueOp{Config: engine.QueueConfig{Name: "q"}}, false},
		{engine.AckOp{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.op.OpName(), func(t *testing.T) {
			if got := NeedsPrepare(tt.op); got != tt.want {
				t.Fatalf("NeedsPrepare = %v, want %v", got, tt.want)
			}
			prepared, err := Prepare(get, now, tt.op)
			if err != nil {
				t.Fatalf("Prepare: %v", err)
			}
			if changed := reflect.TypeOf(prepared) != reflect.TypeOf(tt.op); changed != tt.want {
				t.Fatalf("Prepare turned %T into %T; NeedsPrepare says %v", tt.op, prepared, tt.want)
			}
		})
	}
}
