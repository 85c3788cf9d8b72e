package engine_test

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"strconv"
	"testing"
	"time"

	"github.com/sepp-io/sepp/engine"
	et "github.com/sepp-io/sepp/engine/enginetest"
)

func intervalSchedule(name string, next time.Time) engine.ScheduleParams {
	return engine.ScheduleParams{
		Name: name, Kind: engine.ScheduleInterval, Interval: time.Second, TimeZone: "UTC",
		Template: engine.JobTemplate{Queue: "q", JobType: "report", Payload: []byte("p"), Custom: map[string]string{"tenant": "a"}},
		NextTick: next,
	}
}

func TestUpsertSchedule_Validates(t *testing.T) {
	next := et.Epoch.Add(time.Second)
	tests := []struct {
		name    string
		mutate  func(*engine.ScheduleParams)
		wantErr string
	}{
		{name: "Interval", mutate: func(*engine.ScheduleParams) {}},
		{name: "Cron", mutate: func(p *engine.ScheduleParams) { p.Kind, p.Interval, p.Cron = engine.ScheduleCron, 0, "*/5 * * * *" }},
		{name: "PausedWithoutNext", mutate: func(p *engine.ScheduleParams) { p.Paused, p.NextTick = true, time.Time{} }},
		{name: "EmptyName", mutate: func(p *engine.ScheduleParams) { p.Name = "" }, wantErr: "name: must not be empty"},
		{name: "LongName", mutate: func(p *engine.ScheduleParams) { p.Name = string(make([]byte, 201)) }, wantErr: "name: is 201 bytes, the limit is 200"},
		{name: "NoKind", mutate: func(p *engine.ScheduleParams) { p.Kind = 0 }, wantErr: "kind: must be cron (1) or interval (2), got 0"},
		{name: "ShortInterval", mutate: func(p *engine.ScheduleParams) { p.Interval = time.Millisecond }, wantErr: "interval: must be at least 1s, got 1ms"},
		{name: "CronEmpty", mutate: func(p *engine.ScheduleParams) { p.Kind, p.Interval = engine.ScheduleCron, 0 }, wantErr: "cron: must not be empty for a cron schedule"},
		{name: "CronWithInterval", mutate: func(p *engine.ScheduleParams) { p.Kind, p.Cron = engine.ScheduleCron, "* * * * *" }, wantErr: "interval: must be unset for a cron schedule"},
		{name: "BadOverlap", mutate: func(p *engine.ScheduleParams) { p.Overlap = 7 }, wantErr: "overlap: must be skip (0) or allow (1), got 7"},
		{name: "BadCatchUp", mutate: func(p *engine.ScheduleParams) { p.CatchUp = 3 }, wantErr: "catch_up: must be once (0) or skip (1), got 3"},
		{name: "NoNextTick", mutate: func(p *engine.ScheduleParams) { p.NextTick = time.Time{} }, wantErr: "next_tick: must be set for a schedule that is not paused"},
		{name: "ReservedCustom", mutate: func(p *engine.ScheduleParams) { p.Template.Custom[engine.CustomScheduleTick] = "1" }, wantErr: `template.custom: key "sepp_schedule_tick" is set by every fire and cannot be given`},
		{name: "BadPriority", mutate: func(p *engine.ScheduleParams) { p.Template.Priority = et.Ptr[uint32](10) }, wantErr: "template.priority: must be 0..9, got 10"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := et.New(t)
			p := intervalSchedule("nightly", next)
			tt.mutate(&p)
			err := e.UpsertSchedule(et.Epoch, p)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				et.RequireInvariants(t, e)
				return
			}
			if !errors.Is(err, engine.ErrInvalidArgument) || err.Error() != tt.wantErr {
				t.Fatalf("err = %v, want %q wrapping ErrInvalidArgument", err, tt.wantErr)
			}
			if len(e.Schedules()) != 0 {
				t.Fatal("a refused upsert created a schedule")
			}
		})
	}
}

// fireStep fires tick (seconds after Epoch) of schedule "s", optionally
// acking the job reserved before it; it checks the outcome.
type fireStep struct {
	tick      int // seconds after Epoch; 0 means no fire
	ackFirst  bool
	reserve   bool // reserve (and hold) the job after firing
	pause     bool
	resume    bool
	wantJob   bool
	wantDup   bool
	wantSkip  string
	wantFired uint64
	missed    bool
}

func TestFireSchedule_Table(t *testing.T) {
	sec := func(n int) time.Time { return et.Epoch.Add(time.Duration(n) * time.Second) }
	tests := []struct {
		name    string
		overlap engine.OverlapPolicy
		steps   []fireStep
	}{
		{name: "EachTickOnce", overlap: engine.OverlapAllow, steps: []fireStep{
			{tick: 1, wantJob: true, wantFired: 1},
			{tick: 1, wantDup: true, wantFired: 1},
			{tick: 2, wantJob: true, wantFired: 2},
			{tick: 1, wantDup: true, wantFired: 2},
		}},
		{name: "OverlapSkipWhileWaiting", overlap: engine.OverlapSkip, steps: []fireStep{
			{tick: 1, wantJob: true, wantFired: 1},
			{tick: 2, wantSkip: "overlap", wantFired: 1},
			{tick: 3, reserve: true, wantSkip: "overlap", wantFired: 1},
			{tick: 4, ackFirst: true, wantJob: true, wantFired: 2},
		}},
		{name: "OverlapAllowWhileWaiting", overlap: engine.OverlapAllow, steps: []fireStep{
			{tick: 1, wantJob: true, wantFired: 1},
			{tick: 2, wantJob: true, wantFired: 2},
		}},
		{name: "PausedConsumesTick", overlap: engine.OverlapAllow, steps: []fireStep{
			{tick: 1, wantJob: true, wantFired: 1},
			{pause: true},
			{tick: 2, wantSkip: "paused", wantFired: 1},
			{resume: true},
			{tick: 2, wantDup: true, wantFired: 1},
			{tick: 3, wantJob: true, wantFired: 2},
		}},
		{name: "MissedConsumesTick", overlap: engine.OverlapAllow, steps: []fireStep{
			{tick: 1, missed: true, wantSkip: "missed", wantFired: 0},
			{tick: 1, wantDup: true, wantFired: 0},
			{tick: 2, wantJob: true, wantFired: 1},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := et.New(t)
			p := intervalSchedule("s", sec(1))
			p.Overlap = tt.overlap
			if err := e.UpsertSchedule(et.Epoch, p); err != nil {
				t.Fatal(err)
			}
			var held []engine.Delivery
			for i, st := range tt.steps {
				now := sec(10 * (i + 1))
				switch {
				case st.pause:
					if err := e.SetSchedulePaused(now, "s", true, time.Time{}); err != nil {
						t.Fatal(err)
					}
					continue
				case st.resume:
					if err := e.SetSchedulePaused(now, "s", false, sec(3)); err != nil {
						t.Fatal(err)
					}
					continue
				}
				if st.ackFirst {
					for _, d := range held {
						if err := e.Ack(now, et.Ref(d)); err != nil {
							t.Fatal(err)
						}
					}
					held = nil
				}
				res, err := e.FireSchedule(now, "s", sec(st.tick), sec(st.tick+1), st.missed)
				if err != nil {
					t.Fatalf("step %d: %v", i, err)
				}
				if (res.JobID != 0 && !res.Duplicate) != st.wantJob || res.Duplicate != st.wantDup || res.Skipped != st.wantSkip {
					t.Fatalf("step %d: result %+v, want job %v dup %v skip %q", i, res, st.wantJob, st.wantDup, st.wantSkip)
				}
				if st.wantJob {
					j, err := e.GetJob(res.JobID)
					if err != nil {
						t.Fatal(err)
					}
					if j.Custom[engine.CustomScheduleName] != "s" || j.Custom[engine.CustomScheduleTick] != strconv.FormatInt(sec(st.tick).UnixNano(), 10) || j.Custom["tenant"] != "a" {
						t.Fatalf("step %d: job custom %v", i, j.Custom)
					}
				}
				if st.reserve {
					held = append(held, et.MustReserve(t, e, now, "q", 10)...)
				}
				s, err := e.GetSchedule("s")
				if err != nil {
					t.Fatal(err)
				}
				if s.Fired != st.wantFired {
					t.Fatalf("step %d: fired %d, want %d", i, s.Fired, st.wantFired)
				}
				if !st.wantDup && !s.NextTick.Equal(sec(st.tick+1)) && !s.Paused {
					t.Fatalf("step %d: next tick %v, want %v", i, s.NextTick, sec(st.tick+1))
				}
				et.RequireInvariants(t, e)
			}
		})
	}
}

func TestScheduleLifecycle_Errors(t *testing.T) {
	e := et.New(t)
	for name, err := range map[string]error{
		"fire":   func() error { _, err := e.FireSchedule(et.Epoch, "none", et.Epoch, et.Epoch, false); return err }(),
		"delete": e.DeleteSchedule(et.Epoch, "none"),
		"pause":  e.SetSchedulePaused(et.Epoch, "none", true, time.Time{}),
		"get":    func() error { _, err := e.GetSchedule("none"); return err }(),
	} {
		if !errors.Is(err, engine.ErrNotFound) || err.Error() != `name: no schedule "none"` {
			t.Errorf("%s: err = %v, want not found naming the schedule", name, err)
		}
	}
	if err := e.UpsertSchedule(et.Epoch, intervalSchedule("s", et.Epoch.Add(time.Second))); err != nil {
		t.Fatal(err)
	}
	if err := e.SetSchedulePaused(et.Epoch, "s", false, time.Time{}); err == nil || err.Error() != "next_tick: must be set to resume a schedule" {
		t.Fatalf("resume without next tick: %v", err)
	}
	if err := e.DeleteSchedule(et.Epoch, "s"); err != nil {
		t.Fatal(err)
	}
	if len(e.Schedules()) != 0 {
		t.Fatal("schedule still listed after delete")
	}
}

// TestUpsertSchedule_KeepsLastFiredTick: redefining a schedule never fires
// a tick it fired already.
func TestUpsertSchedule_KeepsLastFiredTick(t *testing.T) {
	e := et.New(t)
	tick := et.Epoch.Add(time.Second)
	if err := e.UpsertSchedule(et.Epoch, intervalSchedule("s", tick)); err != nil {
		t.Fatal(err)
	}
	if _, err := e.FireSchedule(et.Epoch.Add(time.Second), "s", tick, tick.Add(time.Second), false); err != nil {
		t.Fatal(err)
	}
	p := intervalSchedule("s", tick)
	p.Interval = 5 * time.Second
	if err := e.UpsertSchedule(et.Epoch.Add(2*time.Second), p); err != nil {
		t.Fatal(err)
	}
	res, err := e.FireSchedule(et.Epoch.Add(2*time.Second), "s", tick, tick.Add(5*time.Second), false)
	if err != nil || !res.Duplicate {
		t.Fatalf("refire after upsert: %+v, %v; want duplicate", res, err)
	}
}

// TestSchedule_SnapshotLayout: a state without schedules writes the older
// layout byte for byte; one with schedules writes layout 6 and restores to
// an equal state that keeps deduplicating.
func TestSchedule_SnapshotLayout(t *testing.T) {
	e := et.New(t)
	et.MustEnqueue(t, e, et.Epoch, et.Job("q"))
	before := snapshotBytes(t, e)
	if v := before[8]; v != 2 {
		t.Fatalf("layout without schedules = %d, want 2", v)
	}
	p := intervalSchedule("s", et.Epoch.Add(time.Second))
	p.Template.Priority = et.Ptr[uint32](7)
	if err := e.UpsertSchedule(et.Epoch, p); err != nil {
		t.Fatal(err)
	}
	if err := e.UpsertSchedule(et.Epoch, engine.ScheduleParams{Name: "paused", Kind: engine.ScheduleCron, Cron: "0 0 * * *", TimeZone: "Europe/Berlin", Paused: true, Template: engine.JobTemplate{Queue: "q", JobType: "t"}}); err != nil {
		t.Fatal(err)
	}
	tick := et.Epoch.Add(time.Second)
	if _, err := e.FireSchedule(tick, "s", tick, tick.Add(time.Second), false); err != nil {
		t.Fatal(err)
	}
	data := snapshotBytes(t, e)
	if v := data[8]; v != 6 {
		t.Fatalf("layout with schedules = %d, want 6", v)
	}
	restored := et.New(t)
	if err := restored.Restore(bytes.NewReader(data)); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(snapshotBytes(t, restored), data) {
		t.Fatal("restored state snapshots differently")
	}
	res, err := restored.FireSchedule(tick, "s", tick, tick.Add(time.Second), false)
	if err != nil || !res.Duplicate {
		t.Fatalf("refire after restore: %+v, %v; want duplicate", res, err)
	}
	for _, name := range []string{"s", "paused"} {
		if err := restored.DeleteSchedule(tick, name); err != nil {
			t.Fatal(err)
		}
	}
	if v := snapshotBytes(t, restored)[8]; v != 2 {
		t.Fatalf("layout after deleting every schedule = %d, want 2", v)
	}
}

// TestSchedule_ModelEachTickFiresOnce drives random fires, re-fires of old
// ticks (a deposed leader's or a replayed proposal), snapshots and restores
// (a restart), acks and upserts, and checks the invariant that each tick of
// each schedule made at most one job, and exactly one when the schedule
// allows overlap, by counting the jobs by their tick field.
func TestSchedule_ModelEachTickFiresOnce(t *testing.T) {
	for seed := uint64(1); seed <= 20; seed++ {
		rng := rand.New(rand.NewPCG(seed, 26))
		e := et.New(t)
		names := []string{"a", "b", "c"}
		for i, n := range names {
			p := intervalSchedule(n, et.Epoch.Add(time.Second))
			p.Overlap = engine.OverlapPolicy(i % 2)
			if err := e.UpsertSchedule(et.Epoch, p); err != nil {
				t.Fatal(err)
			}
		}
		next := map[string]int{"a": 1, "b": 1, "c": 1}
		made := map[string]map[string]int{}
		now := et.Epoch
		for step := 0; step < 300; step++ {
			now = now.Add(100 * time.Millisecond)
			n := names[rng.IntN(len(names))]
			switch r := rng.IntN(10); {
			case r < 5: // the next tick, possibly skipping some (catch-up)
				tick := next[n] + rng.IntN(2)
				next[n] = tick + 1
				fire(t, e, now, n, tick, made)
			case r < 7: // an old tick again
				if next[n] > 1 {
					fire(t, e, now, n, 1+rng.IntN(next[n]-1), made)
				}
			case r < 8: // restart
				data := snapshotBytes(t, e)
				e = et.New(t)
				if err := e.Restore(bytes.NewReader(data)); err != nil {
					t.Fatal(err)
				}
			case r < 9:
				for _, d := range et.MustReserve(t, e, now, "q", 3) {
					if err := e.Ack(now, et.Ref(d)); err != nil {
						t.Fatal(err)
					}
				}
			default: // redefinition keeps the dedup
				if err := e.UpsertSchedule(now, intervalSchedule(n, now.Add(time.Second))); err != nil {
					t.Fatal(err)
				}
			}
		}
		for n, ticks := range made {
			for tick, c := range ticks {
				if c > 1 {
					t.Fatalf("seed %d: schedule %s tick %s made %d jobs", seed, n, tick, c)
				}
			}
		}
		et.RequireInvariants(t, e)
	}
}

func fire(t *testing.T, e *engine.Engine, now time.Time, name string, tick int, made map[string]map[string]int) {
	t.Helper()
	at := et.Epoch.Add(time.Duration(tick) * time.Second)
	before, _ := e.GetSchedule(name)
	res, err := e.FireSchedule(now, name, at, at.Add(time.Second), false)
	if err != nil {
		t.Fatal(err)
	}
	newTick := at.After(before.LastFiredTick)
	if res.Duplicate == newTick {
		t.Fatalf("tick %d of %s: duplicate %v, but last fired was %v", tick, name, res.Duplicate, before.LastFiredTick)
	}
	if newTick && before.Overlap == engine.OverlapAllow && res.JobID == 0 {
		t.Fatalf("tick %d of %s with overlap allowed made no job: %q", tick, name, res.Skipped)
	}
	if res.Duplicate || res.JobID == 0 {
		return
	}
	j, err := e.GetJob(res.JobID)
	if err != nil {
		t.Fatal(err)
	}
	if made[name] == nil {
		made[name] = map[string]int{}
	}
	made[name][j.Custom[engine.CustomScheduleTick]]++
}

// scheduledEngine is richEngine with a fired schedule and a paused one
// (snapshot layout 6), a FuzzRestore seed.
func scheduledEngine(t testing.TB) *engine.Engine {
	t.Helper()
	e := richEngine(t)
	now := e.Now()
	p := intervalSchedule("s", now.Add(time.Second))
	p.Template.Priority = et.Ptr[uint32](3)
	if err := e.UpsertSchedule(now, p); err != nil {
		t.Fatal(err)
	}
	if _, err := e.FireSchedule(now, "s", now.Add(time.Second), now.Add(2*time.Second), false); err != nil {
		t.Fatal(err)
	}
	if err := e.UpsertSchedule(now, engine.ScheduleParams{Name: "paused", Kind: engine.ScheduleCron, Cron: "@daily", Paused: true, Template: engine.JobTemplate{Queue: "q", JobType: "t"}}); err != nil {
		t.Fatal(err)
	}
	return e
}
