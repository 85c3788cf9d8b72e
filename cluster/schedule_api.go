package cluster

import (
	"context"
	"errors"
	"fmt"

	"github.com/sepp-io/sepp/engine"
)

// The schedule operations the public API needs on top of UpsertSchedule:
// a create that refuses an existing name and an update that refuses an
// unknown one. The ScheduleUpsert command itself creates or replaces (a
// new command version would be needed to make the state machine tell the
// two apart), so the check is the leader's: under scheduleWriteMu, against
// a state that includes every committed entry (a consistent read), right
// before the proposal. Two creates of one name through this leader are
// serialized and the second is AlreadyExists. What the check cannot see is
// a write proposed through an earlier leader and committed after this
// leader's read; such a race between a create and a delete or another
// create of the same name ends as an upsert (the last definition wins),
// never as a duplicate tick: the engine keeps the last fired tick.

// CreateSchedule creates a schedule; one of that name existing is
// engine.ErrAlreadyExists.
func (n *Node) CreateSchedule(ctx context.Context, p engine.ScheduleParams) error {
	return n.writeSchedule(ctx, p, false)
}

// UpdateSchedule replaces an existing schedule's definition, keeping its
// paused state (p.Paused is ignored); an unknown name is engine.ErrNotFound.
func (n *Node) UpdateSchedule(ctx context.Context, p engine.ScheduleParams) error {
	return n.writeSchedule(ctx, p, true)
}

func (n *Node) writeSchedule(ctx context.Context, p engine.ScheduleParams, update bool) error {
	if err := n.schedulesAvailable(ctx); err != nil {
		return err
	}
	n.scheduleWriteMu.Lock()
	defer n.scheduleWriteMu.Unlock()
	var (
		cur    engine.Schedule
		getErr error
	)
	if err := n.Read(ctx, false, func(e engine.View) error {
		cur, getErr = e.GetSchedule(p.Name)
		return nil
	}); err != nil {
		return err
	}
	exists := getErr == nil
	switch {
	case getErr != nil && !errors.Is(getErr, engine.ErrNotFound):
		return getErr // a bad name
	case update && !exists:
		return getErr
	case !update && exists:
		return &engine.FieldError{Field: "name", Reason: fmt.Sprintf("schedule %q exists", p.Name), Err: engine.ErrAlreadyExists}
	}
	if update {
		p.Paused = cur.Paused
	}
	return n.UpsertSchedule(ctx, p)
}
