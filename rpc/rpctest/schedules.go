package rpctest

import (
	"context"
	"time"

	"github.com/sepp-io/sepp/engine"
	"github.com/sepp-io/sepp/schedspec"
)

// Periodic schedules on the LocalBackend: a schedule write is prepared
// (schedspec.Prepare) on the backend's clock in Propose, as cluster.Node
// prepares it on the leader's. There is no scheduler loop:
// FireDueSchedules fires what is due.

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
