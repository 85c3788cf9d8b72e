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
	return n.createSchedule(ctx, p)
}

// UpdateSchedule changes an existing schedule: update gets its current
// state and returns the new definition (a partial update merges the fields
// it changes into cur). It runs under scheduleWriteMu, so two updates
// through this leader see each other's result. The paused state stays as it
// was (the returned Paused is ignored); an unknown name is
// engine.ErrNotFound.
func (n *Node) UpdateSchedule(ctx context.Context, name string, update func(cur engine.Schedule) (engine.ScheduleParams, error)) error {
	if err := n.schedulesAvailable(ctx); err != nil {
		return err
	}
	n.scheduleWriteMu.Lock()
	defer n.scheduleWriteMu.Unlock()
	cur, err := n.currentSchedule(ctx, name)
	if err != nil {
		return err
	}
	p, err := update(cur)
	if err != nil {
		return err
	}
	if p.Name != name {
		return &engine.FieldError{Field: "name", Reason: fmt.Sprintf("an update of %q cannot rename it to %q", name, p.Name), Err: engine.ErrInvalidArgument}
	}
	p.Paused = cur.Paused
	return n.UpsertSchedule(ctx, p)
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

func (n *Node) createSchedule(ctx context.Context, p engine.ScheduleParams) error {
	if err := n.schedulesAvailable(ctx); err != nil {
		return err
	}
	n.scheduleWriteMu.Lock()
	defer n.scheduleWriteMu.Unlock()
	_, getErr := n.currentSchedule(ctx, p.Name)
	switch {
	case getErr == nil:
		return &engine.FieldError{Field: "name", Reason: fmt.Sprintf("schedule %q exists", p.Name), Err: engine.ErrAlreadyExists}
	case !errors.Is(getErr, engine.ErrNotFound):
		return getErr // a bad name
	}
	return n.UpsertSchedule(ctx, p)
}
