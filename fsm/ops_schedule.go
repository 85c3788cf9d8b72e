package fsm

import (
	"time"

	"github.com/sepp-io/sepp/engine"
	cmdpb "github.com/sepp-io/sepp/proto/seppcmd/v1"
)

// The periodic schedule operations (command version 7). Propose them only
// to a cluster whose every member applies CommandVersionSchedules.

func scheduleCommand() *cmdpb.Command { return &cmdpb.Command{Version: CommandVersionSchedules} }

// UpsertScheduleCommand builds a ScheduleUpsert.
func UpsertScheduleCommand(p engine.ScheduleParams) *cmdpb.Command {
	c := scheduleCommand()
	t := p.Template
	c.Op = &cmdpb.Command_ScheduleUpsert{ScheduleUpsert: &cmdpb.ScheduleUpsert{
		Name:          p.Name,
		Kind:          uint32(p.Kind),
		Cron:          p.Cron,
		IntervalNanos: int64(p.Interval),
		TimeZone:      p.TimeZone,
		Template: &cmdpb.EnqueueParams{
			Queue: t.Queue, JobType: t.JobType, Payload: t.Payload, Priority: clonePtr(t.Priority),
			Custom: t.Custom, MaxAttempts: t.MaxAttempts,
		},
		Overlap:          uint32(p.Overlap),
		CatchUp:          uint32(p.CatchUp),
		Paused:           p.Paused,
		NextTickUnixNano: unixNano(p.NextTick),
	}}
	return c
}

// DeleteScheduleCommand builds a ScheduleDelete.
func DeleteScheduleCommand(name string) *cmdpb.Command {
	c := scheduleCommand()
	c.Op = &cmdpb.Command_ScheduleDelete{ScheduleDelete: &cmdpb.ScheduleDelete{Name: name}}
	return c
}

// PauseScheduleCommand builds a SchedulePauseSet; a resume (paused false)
// carries the next tick.
func PauseScheduleCommand(name string, paused bool, nextTick time.Time) *cmdpb.Command {
	c := scheduleCommand()
	c.Op = &cmdpb.Command_SchedulePauseSet{SchedulePauseSet: &cmdpb.SchedulePauseSet{
		Name: name, Paused: paused, NextTickUnixNano: unixNano(nextTick),
	}}
	return c
}

// FireScheduleCommand builds a ScheduleFire of tick, storing nextTick;
// missed consumes the tick without a job.
func FireScheduleCommand(name string, tick, nextTick time.Time, missed bool) *cmdpb.Command {
	c := scheduleCommand()
	c.Op = &cmdpb.Command_ScheduleFire{ScheduleFire: &cmdpb.ScheduleFire{
		Name: name, TickUnixNano: unixNano(tick), NextTickUnixNano: unixNano(nextTick), Missed: missed,
	}}
	return c
}

// scheduleParamsFromProto decodes a ScheduleUpsert. Kinds and policies out
// of range pass through as they are, for the engine to refuse by name.
func scheduleParamsFromProto(c *cmdpb.ScheduleUpsert) engine.ScheduleParams {
	t := c.GetTemplate()
	return engine.ScheduleParams{
		Name:     c.GetName(),
		Kind:     engine.ScheduleKind(clampByte(c.GetKind())),
		Cron:     c.GetCron(),
		Interval: time.Duration(c.GetIntervalNanos()),
		TimeZone: c.GetTimeZone(),
		Template: engine.JobTemplate{
			Queue: t.GetQueue(), JobType: t.GetJobType(), Payload: t.GetPayload(),
			Priority: clonePtr(t.Priority), Custom: t.GetCustom(), MaxAttempts: t.GetMaxAttempts(),
		},
		Overlap:  engine.OverlapPolicy(clampByte(c.GetOverlap())),
		CatchUp:  engine.CatchUpPolicy(clampByte(c.GetCatchUp())),
		Paused:   c.GetPaused(),
		NextTick: fromUnixNano(c.GetNextTickUnixNano()),
	}
}

// clampByte maps a uint32 enum to a byte, sending every value above 255 to
// 255 (out of range for every enum) rather than wrapping into range.
func clampByte(v uint32) uint8 {
	if v > 255 {
		return 255
	}
	return uint8(v)
}

func (f *FSM) applyScheduleUpsert(now time.Time, c *cmdpb.ScheduleUpsert) Result {
	return Result{Err: f.eng.UpsertSchedule(now, scheduleParamsFromProto(c))}
}

func (f *FSM) applyScheduleDelete(now time.Time, c *cmdpb.ScheduleDelete) Result {
	return Result{Err: f.eng.DeleteSchedule(now, c.GetName())}
}

func (f *FSM) applySchedulePauseSet(now time.Time, c *cmdpb.SchedulePauseSet) Result {
	return Result{Err: f.eng.SetSchedulePaused(now, c.GetName(), c.GetPaused(), fromUnixNano(c.GetNextTickUnixNano()))}
}

func (f *FSM) applyScheduleFire(now time.Time, c *cmdpb.ScheduleFire) Result {
	res, err := f.eng.FireSchedule(now, c.GetName(), fromUnixNano(c.GetTickUnixNano()), fromUnixNano(c.GetNextTickUnixNano()), c.GetMissed())
	return Result{Fire: res, Err: err}
}
