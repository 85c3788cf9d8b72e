package schedspec

import (
	"errors"
	"fmt"
	"time"

	"github.com/sepp-io/sepp/engine"
)

// Lookup reads one schedule from a state that includes every committed
// write (engine.ErrNotFound when there is none).
type Lookup func(name string) (engine.Schedule, error)

// Prepare turns a schedule write as the API asks it into the write the log
// carries, read through get at the leader's now:
//
//   - CreateScheduleOp: ErrAlreadyExists when the name is taken; else an
//     UpsertScheduleOp with the spec checked and the first tick computed.
//   - UpdateScheduleOp: ErrNotFound for an unknown name; else the update's
//     definition, under the same name and paused state, as an
//     UpsertScheduleOp.
//   - SetSchedulePausedOp: a PauseScheduleOp; a resume carries the first
//     tick after now (ErrNotFound for an unknown name).
//
// Any other op is returned as it is (NeedsPrepare says which are not).
// Both backends call it (cluster.Node on the leader, rpctest's in-memory
// node), so a schedule write means the same thing in both; the engine
// cannot do it at apply, having no zone database.
//
// The ScheduleUpsert command creates or replaces, so create and update are
// told apart here, not at apply: a caller serializes its Prepare and the
// write it makes (the leader's scheduleWriteMu) so that two writes through
// one leader see each other. It must not hold the state's lock across
// Prepare: an update's function may read the state itself (the API checks
// a strict server's queue that way).
func Prepare(get Lookup, now time.Time, op engine.Op) (engine.Op, error) {
	if !NeedsPrepare(op) {
		return op, nil
	}
	switch op := op.(type) {
	case engine.CreateScheduleOp:
		switch _, err := get(op.Params.Name); {
		case err == nil:
			return nil, &engine.FieldError{Field: "name", Reason: fmt.Sprintf("schedule %q exists", op.Params.Name), Err: engine.ErrAlreadyExists}
		case !errors.Is(err, engine.ErrNotFound):
			return nil, err // a bad name
		}
		return upsert(op.Params, now)
	case engine.UpdateScheduleOp:
		cur, err := get(op.Name)
		if err != nil {
			return nil, err
		}
		p, err := op.Update(cur)
		if err != nil {
			return nil, err
		}
		if p.Name != op.Name {
			return nil, &engine.FieldError{Field: "name", Reason: fmt.Sprintf("an update of %q cannot rename it to %q", op.Name, p.Name), Err: engine.ErrInvalidArgument}
		}
		p.Paused = cur.Paused
		return upsert(p, now)
	case engine.SetSchedulePausedOp:
		prepared := engine.PauseScheduleOp{Name: op.Name, Paused: op.Paused}
		if op.Paused {
			return prepared, nil
		}
		s, err := get(op.Name)
		if err != nil {
			return nil, err
		}
		spec, err := Parse(s.ScheduleParams)
		if err != nil {
			return nil, err
		}
		if prepared.NextTick, err = FirstTick(spec, now); err != nil {
			return nil, err
		}
		return prepared, nil
	}
	return op, nil
}

// NeedsPrepare reports whether op is a schedule write in the API's form,
// which Prepare turns into the write the log carries and the engine
// refuses to apply as it is: a backend that carries writes out sends these
// through Prepare (under its schedule lock), any other op straight on.
// This is the one list of them; Prepare's cases must cover it
// (TestNeedsPrepare).
func NeedsPrepare(op engine.Op) bool {
	switch op.(type) {
	case engine.CreateScheduleOp, engine.UpdateScheduleOp, engine.SetSchedulePausedOp:
		return true
	}
	return false
}

// upsert checks p's spec and stamps its first tick after now (none while
// paused).
func upsert(p engine.ScheduleParams, now time.Time) (engine.Op, error) {
	spec, err := Parse(p)
	if err != nil {
		return nil, err
	}
	p.NextTick = time.Time{}
	if !p.Paused {
		if p.NextTick, err = FirstTick(spec, now); err != nil {
			return nil, err
		}
	}
	return engine.UpsertScheduleOp{Params: p}, nil
}
