package fsm

import (
	"fmt"
	"time"

	"github.com/sepp-io/sepp/engine"
	cmdpb "github.com/sepp-io/sepp/proto/seppcmd/v1"
)

// Redrive tasks: the commands of engine/redrive.go. All are of
// CommandVersionRedrive; the leader proposes them only while every member
// applies it (cluster), so an older member never meets one.

func redriveCommand() *cmdpb.Command { return &cmdpb.Command{Version: CommandVersionRedrive} }

// RedriveStartCommand builds a RedriveStart.
func RedriveStartCommand(p engine.RedriveParams) *cmdpb.Command {
	s := p.Selection
	c := redriveCommand()
	if s.Cause > engine.CauseAdmin {
		c.Version = CommandVersionDeadLetterEdges // cancelled, expired
	}
	c.Op = &cmdpb.Command_RedriveStart{RedriveStart: &cmdpb.RedriveStart{
		Selection: &cmdpb.RedriveSelection{
			Queue: s.Queue, Cause: uint32(s.Cause), JobType: s.JobType, ReasonContains: s.ReasonContains,
			FailedAfterUnixNano: unixNano(s.FailedAfter), FailedBeforeUnixNano: unixNano(s.FailedBefore),
		},
		ToQueue: p.ToQueue, Fresh: p.Fresh, Rate: clampUint32(p.Rate), By: p.By,
	}}
	return c
}

// RedriveStepCommand builds a RedriveStep of up to maxMoves records.
func RedriveStepCommand(task uint64, maxMoves int) *cmdpb.Command {
	c := redriveCommand()
	c.Op = &cmdpb.Command_RedriveStep{RedriveStep: &cmdpb.RedriveStep{TaskId: task, Max: clampUint32(maxMoves)}}
	return c
}

// RedriveSetStateCommand builds a RedriveSetState asking for state paused,
// running (resume) or cancelled.
func RedriveSetStateCommand(task uint64, state engine.RedriveState, by string) *cmdpb.Command {
	c := redriveCommand()
	c.Op = &cmdpb.Command_RedriveSetState{RedriveSetState: &cmdpb.RedriveSetState{TaskId: task, State: uint32(state), By: by}}
	return c
}

// clampUint32 keeps a negative or oversized int out of range in the
// command too, so the engine refuses it by name rather than seeing a
// wrapped value.
func clampUint32(v int) uint32 {
	switch {
	case v < 0:
		return 1<<32 - 1
	case uint64(v) > 1<<32-1:
		return 1<<32 - 1
	}
	return uint32(v)
}

// intFromUint32 widens a command's count; the engine checks its range.
func intFromUint32(v uint32) int {
	if v == 1<<32-1 {
		return -1
	}
	return int(v)
}

func (f *FSM) applyRedriveStart(now time.Time, version uint32, c *cmdpb.RedriveStart) Result {
	s := c.GetSelection()
	if version < CommandVersionDeadLetterEdges && s.GetCause() > uint32(engine.CauseAdmin) {
		// What binaries before the dead-letter edges answered: an older
		// entry must apply as it did then.
		return Result{Err: &engine.FieldError{Field: "selection.cause", Reason: fmt.Sprintf("unknown cause %d", s.GetCause()), Err: engine.ErrInvalidArgument}}
	}
	task, err := f.eng.StartRedrive(now, engine.RedriveParams{
		Selection: engine.RedriveSelection{
			Queue: s.GetQueue(), Cause: engine.Cause(min(s.GetCause(), 255)), JobType: s.GetJobType(), ReasonContains: s.GetReasonContains(),
			FailedAfter: fromUnixNano(s.GetFailedAfterUnixNano()), FailedBefore: fromUnixNano(s.GetFailedBeforeUnixNano()),
		},
		ToQueue: c.GetToQueue(), Fresh: c.GetFresh(), Rate: intFromUint32(c.GetRate()), By: c.GetBy(),
	})
	return Result{Redrive: task, Err: err}
}

func (f *FSM) applyRedriveStep(now time.Time, c *cmdpb.RedriveStep) Result {
	task, err := f.eng.RedriveStep(now, c.GetTaskId(), intFromUint32(c.GetMax()))
	return Result{Redrive: task, Err: err}
}

func (f *FSM) applyRedriveSetState(now time.Time, c *cmdpb.RedriveSetState) Result {
	var (
		task engine.RedriveTask
		err  error
	)
	switch s := engine.RedriveState(min(c.GetState(), 255)); s {
	case engine.RedrivePaused:
		task, err = f.eng.PauseRedrive(now, c.GetTaskId())
	case engine.RedriveRunning:
		task, err = f.eng.ResumeRedrive(now, c.GetTaskId())
	case engine.RedriveCancelled:
		task, err = f.eng.CancelRedrive(now, c.GetTaskId(), c.GetBy())
	default:
		err = &engine.FieldError{Field: "state", Reason: fmt.Sprintf("a redrive task can be set paused, running or cancelled, not %s", s), Err: engine.ErrInvalidArgument}
	}
	return Result{Redrive: task, Err: err}
}
