package rpctest

import (
	"context"
	"fmt"
	"time"

	"github.com/sepp-io/sepp/engine"
	"github.com/sepp-io/sepp/schedspec"
)

// Periodic schedules on the LocalBackend: the spec is parsed and the first
// tick computed on the backend's clock, as cluster.Node does on the
// leader's. There is no scheduler loop: FireDueSchedules fires what is due.

func (b *LocalBackend) CreateSchedule(ctx context.Context, p engine.ScheduleParams) error {
	return b.writeSchedule(ctx, "CreateSchedule", p, false)
}

func (b *LocalBackend) UpdateSchedule(ctx context.Context, name string, update func(cur engine.Schedule) (engine.ScheduleParams, error)) error {
	b.scheduleMu.Lock()
	defer b.scheduleMu.Unlock()
	var cur engine.Schedule
	if err := b.Read(ctx, false, func(e engine.View) error {
		var err error
		cur, err = e.GetSchedule(name)
		return err
	}); err != nil {
		return err
	}
	p, err := update(cur)
	if err != nil {
		return err
	}
	if p.Name != name {
		return &engine.FieldError{Field: "name", Reason: fmt.Sprintf("an update of %q cannot rename it to %q", name, p.Name), Err: engine.ErrInvalidArgument}
	}
	return b.writeSchedule(ctx, "UpdateSchedule", p, true)
}

func (b *LocalBackend) writeSchedule(ctx context.Context, op string, p engine.ScheduleParams, update bool) error {
	return b.write(ctx, op, func(now time.Time) error {
		cur, err := b.eng.GetSchedule(p.Name)
		exists := err == nil
		switch {
		case update && !exists:
			return err
		case !update && exists:
			return &engine.FieldError{Field: "name", Reason: fmt.Sprintf("schedule %q exists", p.Name), Err: engine.ErrAlreadyExists}
		}
		if update {
			p.Paused = cur.Paused
		}
		spec, err := schedspec.Parse(p)
		if err != nil {
			return err
		}
		p.NextTick = time.Time{}
		if !p.Paused {
			if p.NextTick, err = schedspec.FirstTick(spec, now); err != nil {
				return err
			}
		}
		return b.eng.UpsertSchedule(now, p)
	})
}

func (b *LocalBackend) DeleteSchedule(ctx context.Context, name string) error {
	return b.write(ctx, "DeleteSchedule", func(now time.Time) error {
		return b.eng.DeleteSchedule(now, name)
	})
}

func (b *LocalBackend) SetSchedulePaused(ctx context.Context, name string, paused bool) error {
	return b.write(ctx, "SetSchedulePaused", func(now time.Time) error {
		var next time.Time
		if !paused {
			s, err := b.eng.GetSchedule(name)
			if err != nil {
				return err
			}
			spec, err := schedspec.Parse(s.ScheduleParams)
			if err != nil {
				return err
			}
			if next, err = schedspec.FirstTick(spec, now); err != nil {
				return err
			}
		}
		return b.eng.SetSchedulePaused(now, name, paused, next)
	})
}

// FireDueSchedules fires every schedule tick due by the backend's clock,
// as the leader's scheduler would (schedspec.Plan, one second of grace),
// and returns the jobs enqueued.
func (b *LocalBackend) FireDueSchedules(ctx context.Context) ([]engine.JobID, error) {
	var jobs []engine.JobID
	err := b.write(ctx, "FireDueSchedules", func(now time.Time) error {
		for _, s := range b.eng.Schedules() {
			for !s.Paused && !s.NextTick.IsZero() && !s.NextTick.After(now) {
				spec, err := schedspec.Parse(s.ScheduleParams)
				if err != nil {
					return err
				}
				f, ok := schedspec.Plan(spec, s.NextTick, now, s.CatchUp, time.Second)
				if !ok {
					break
				}
				res, err := b.eng.FireSchedule(now, s.Name, f.Tick, f.Next, f.Missed)
				if err != nil {
					return err
				}
				if res.JobID != 0 && !res.Duplicate {
					jobs = append(jobs, res.JobID)
				}
				if s, err = b.eng.GetSchedule(s.Name); err != nil {
					return err
				}
			}
		}
		return nil
	})
	return jobs, err
}
