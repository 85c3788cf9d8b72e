package cluster

import (
	"context"
	"fmt"

	"github.com/sepp-io/sepp/engine"
	"github.com/sepp-io/sepp/fsm"
	cmdpb "github.com/sepp-io/sepp/proto/seppcmd/v1"
	"github.com/sepp-io/sepp/schedspec"
)

// writeSchedule carries out a schedule write (Propose's schedule cases).
// The ScheduleUpsert command itself creates or replaces (a new command
// version would be needed to make the state machine tell create from
// update), so the leader prepares the write (schedspec.Prepare: the name
// checked, the spec parsed, the first tick computed) under
// scheduleWriteMu, against a state that includes every committed entry (a
// consistent read), right before the proposal. Two creates of one name
// through this leader are serialized and the second is AlreadyExists; two
// updates see each other's result. What the check cannot see is a write
// proposed through an earlier leader and committed after this leader's
// read; such a race between a create and a delete or another create of
// the same name ends as an upsert (the last definition wins), never as a
// duplicate tick: the engine keeps the last fired tick.
func (n *Node) writeSchedule(ctx context.Context, op engine.Op) error {
	if err := n.schedulesAvailable(ctx); err != nil {
		return err
	}
	n.scheduleWriteMu.Lock()
	defer n.scheduleWriteMu.Unlock()
	prepared, err := schedspec.Prepare(func(name string) (engine.Schedule, error) {
		return n.currentSchedule(ctx, name)
	}, n.clock(), op)
	if err != nil {
		return err
	}
	cmd := scheduleCommand(prepared)
	if cmd == nil {
		return fmt.Errorf("cluster: %T is not a schedule write", prepared)
	}
	res, err := n.propose(ctx, cmd)
	if err != nil {
		return err
	}
	return res.Err
}

// currentSchedule reads schedule name from a consistent state.
func (n *Node) currentSchedule(ctx context.Context, name string) (engine.Schedule, error) {
	var (
		cur    engine.Schedule
		getErr error
	)
	if err := n.Read(ctx, false, func(e engine.View) error {
		cur, getErr = e.GetSchedule(name)
		return nil
	}); err != nil {
		return engine.Schedule{}, err
	}
	return cur, getErr
}

// scheduleCommand is the log command of a prepared schedule write; nil for
// any other op.
func scheduleCommand(op engine.Op) *cmdpb.Command {
	switch op := op.(type) {
	case engine.UpsertScheduleOp:
		return fsm.UpsertScheduleCommand(op.Params)
	case engine.PauseScheduleOp:
		return fsm.PauseScheduleCommand(op.Name, op.Paused, op.NextTick)
	case engine.DeleteScheduleOp:
		return fsm.DeleteScheduleCommand(op.Name)
	}
	return nil
}
