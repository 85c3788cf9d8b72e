package engine

import (
	"fmt"
	"time"
)

// Op is one write to the queue state, as a value: the closed set of types
// below (OpOf's unexported method keeps any other out). A node proposes an
// Op through one entry (rpc.Backend's Propose; cluster.Node turns it into
// a log command, a test backend applies it with Apply) instead of one
// method per write at every layer, so a new write is a new type here and
// a case in the two switches that carry it out, not a method on every
// backend, fake and wrapper.
type Op interface {
	// OpName names the write ("Enqueue", "Ack", ...): for errors, logs and
	// tests that fail or observe writes by kind.
	OpName() string
}

// OpOf is an Op whose result is an R. Propose helpers are generic over it,
// so a call site gets its result typed: rpc.Propose(ctx, b, AckOp{...}).
type OpOf[R any] interface {
	Op
	yields(R)
}

// Done is the result of a write that answers nothing but its error.
type Done struct{}

// The writes, each with the engine method it runs.
type (
	// EnqueueOp adds one job (Enqueue).
	EnqueueOp struct{ Params EnqueueParams }
	// EnqueueBatchOp adds jobs, each with its own result (EnqueueBatch).
	EnqueueBatchOp struct{ Items []EnqueueParams }
	// ReserveOp leases jobs to a worker (Reserve).
	ReserveOp struct{ Params ReserveParams }
	// AckOp completes a leased job (Ack).
	// Result, when set, is kept with the completed job (completed.go).
	AckOp struct {
		Ref    LeaseRef
		Result []byte
	}
	// AckFollowUpsOp completes a leased job and enqueues its follow-ups
	// in the same transition, all or nothing (AckWithFollowUps); the
	// results are the follow-ups', in order.
	AckFollowUpsOp struct {
		Ref       LeaseRef
		Result    []byte
		FollowUps []EnqueueParams
	}
	// NackOp fails a leased job with a retry directive (Nack).
	NackOp struct{ Params NackParams }
	// ReleaseOp hands a leased job back unharmed (Release).
	ReleaseOp struct{ Ref LeaseRef }
	// ExtendLeaseOp extends a lease (ExtendLease).
	ExtendLeaseOp struct{ Params ExtendParams }
	// DrainDeadLettersOp removes and returns dead letters (DrainDeadLetters).
	DrainDeadLettersOp struct{ Params DrainParams }
	// RequeueDeadLettersOp puts dead letters back on their queues.
	RequeueDeadLettersOp struct{ IDs []JobID }
	// DeleteDeadLettersOp removes dead letters.
	DeleteDeadLettersOp struct{ IDs []JobID }
	// DeadLetterJobsOp dead-letters waiting jobs by an operator's hand.
	DeadLetterJobsOp struct {
		IDs    []JobID
		Reason string
	}
	// PauseQueueOp stops a queue handing out jobs.
	PauseQueueOp struct{ Queue string }
	// ResumeQueueOp undoes PauseQueueOp.
	ResumeQueueOp struct{ Queue string }
	// CreateQueueOp creates a queue at runtime.
	CreateQueueOp struct {
		Config QueueConfig
		Paused bool
	}
	// UpdateQueueOp changes a queue's settings.
	UpdateQueueOp struct{ Update QueueUpdate }
	// DeleteQueueOp removes a queue (with its jobs when Force).
	DeleteQueueOp struct {
		Queue string
		Force bool
	}
	// PurgeQueueOp removes a queue's waiting jobs or dead letters.
	PurgeQueueOp struct {
		Queue  string
		Target PurgeTarget
	}
	// ActOnJobsOp runs an operator's action on selected jobs.
	ActOnJobsOp struct{ Params JobActionParams }
	// StartRedriveOp starts a task that moves dead letters back.
	StartRedriveOp struct{ Params RedriveParams }
	// SetRedriveStateOp pauses, resumes or cancels a redrive task.
	SetRedriveStateOp struct {
		ID    uint64
		State RedriveState
		By    string
	}

	// The periodic schedule writes as the API asks them. The engine has no
	// clock or zone database to evaluate a spec, so the leader turns each
	// into the write the log carries (schedspec.Prepare: the spec parsed,
	// the first tick computed, the name checked against the current state)
	// before it is applied.

	// CreateScheduleOp creates a schedule; an existing name is
	// ErrAlreadyExists.
	CreateScheduleOp struct{ Params ScheduleParams }
	// UpdateScheduleOp changes an existing schedule (ErrNotFound when it
	// does not exist): Update gets the current definition and returns the
	// new one, so a partial update merges into what is there, with no
	// other write of a schedule between the read and the write through
	// this leader. The paused state stays as it was.
	UpdateScheduleOp struct {
		Name   string
		Update func(cur Schedule) (ScheduleParams, error)
	}
	// SetSchedulePausedOp pauses or resumes a schedule; a resumed schedule
	// next fires at its first tick after now (paused ticks are not caught
	// up).
	SetSchedulePausedOp struct {
		Name   string
		Paused bool
	}
	// DeleteScheduleOp removes a schedule (DeleteSchedule); as the API asks
	// it and as the log carries it.
	DeleteScheduleOp struct{ Name string }

	// UpsertScheduleOp creates or replaces a schedule whose first tick is
	// computed (UpsertSchedule): a prepared CreateScheduleOp or
	// UpdateScheduleOp.
	UpsertScheduleOp struct{ Params ScheduleParams }
	// PauseScheduleOp is a prepared SetSchedulePausedOp: NextTick is the
	// first tick after now of a resumed schedule (SetSchedulePaused).
	PauseScheduleOp struct {
		Name     string
		Paused   bool
		NextTick time.Time
	}
)

func (EnqueueOp) OpName() string            { return "Enqueue" }
func (EnqueueBatchOp) OpName() string       { return "EnqueueBatch" }
func (ReserveOp) OpName() string            { return "Reserve" }
func (AckOp) OpName() string                { return "Ack" }
func (AckFollowUpsOp) OpName() string       { return "AckFollowUps" }
func (NackOp) OpName() string               { return "Nack" }
func (ReleaseOp) OpName() string            { return "Release" }
func (ExtendLeaseOp) OpName() string        { return "ExtendLease" }
func (DrainDeadLettersOp) OpName() string   { return "DrainDeadLetters" }
func (RequeueDeadLettersOp) OpName() string { return "RequeueDeadLetters" }
func (DeleteDeadLettersOp) OpName() string  { return "DeleteDeadLetters" }
func (DeadLetterJobsOp) OpName() string     { return "DeadLetterJobs" }
func (PauseQueueOp) OpName() string         { return "PauseQueue" }
func (ResumeQueueOp) OpName() string        { return "ResumeQueue" }
func (CreateQueueOp) OpName() string        { return "CreateQueue" }
func (UpdateQueueOp) OpName() string        { return "UpdateQueue" }
func (DeleteQueueOp) OpName() string        { return "DeleteQueue" }
func (PurgeQueueOp) OpName() string         { return "PurgeQueue" }
func (ActOnJobsOp) OpName() string          { return "ActOnJobs" }
func (StartRedriveOp) OpName() string       { return "StartRedrive" }
func (SetRedriveStateOp) OpName() string    { return "SetRedriveState" }
func (CreateScheduleOp) OpName() string     { return "CreateSchedule" }
func (UpdateScheduleOp) OpName() string     { return "UpdateSchedule" }
func (SetSchedulePausedOp) OpName() string  { return "SetSchedulePaused" }
func (DeleteScheduleOp) OpName() string     { return "DeleteSchedule" }
func (UpsertScheduleOp) OpName() string     { return "UpsertSchedule" }
func (PauseScheduleOp) OpName() string      { return "PauseSchedule" }

func (EnqueueOp) yields(EnqueueResult)               {}
func (EnqueueBatchOp) yields([]BatchItemResult)      {}
func (ReserveOp) yields([]Delivery)                  {}
func (AckOp) yields(Done)                            {}
func (AckFollowUpsOp) yields([]EnqueueResult)        {}
func (NackOp) yields(NackResult)                     {}
func (ReleaseOp) yields(Done)                        {}
func (ExtendLeaseOp) yields(time.Time)               {}
func (DrainDeadLettersOp) yields([]DeadLetterRecord) {}
func (RequeueDeadLettersOp) yields([]ItemResult)     {}
func (DeleteDeadLettersOp) yields([]ItemResult)      {}
func (DeadLetterJobsOp) yields([]ItemResult)         {}
func (PauseQueueOp) yields(Done)                     {}
func (ResumeQueueOp) yields(Done)                    {}
func (CreateQueueOp) yields(Done)                    {}
func (UpdateQueueOp) yields(Done)                    {}
func (DeleteQueueOp) yields(QueueRemoval)            {}
func (PurgeQueueOp) yields(QueueRemoval)             {}
func (ActOnJobsOp) yields([]ItemResult)              {}
func (StartRedriveOp) yields(RedriveTask)            {}
func (SetRedriveStateOp) yields(RedriveTask)         {}
func (CreateScheduleOp) yields(Done)                 {}
func (UpdateScheduleOp) yields(Done)                 {}
func (SetSchedulePausedOp) yields(Done)              {}
func (DeleteScheduleOp) yields(Done)                 {}
func (UpsertScheduleOp) yields(Done)                 {}
func (PauseScheduleOp) yields(Done)                  {}

// Apply runs op at now and returns its result (of the type op's OpOf
// names; ResultOf turns it back into that type), as a log command of the
// newest version applies it: a queue's dead_letter_queue must name an
// existing queue. It is the engine's side of Propose for a backend without
// a log (rpc/rpctest): the state machine applies the same writes from
// their log commands, with the rules of each command's version.
func (e *Engine) Apply(now time.Time, op Op) (any, error) {
	switch op := op.(type) {
	case EnqueueOp:
		return e.Enqueue(now, op.Params)
	case EnqueueBatchOp:
		return e.EnqueueBatch(now, op.Items)
	case ReserveOp:
		return e.Reserve(now, op.Params)
	case AckOp:
		return Done{}, e.AckWithResult(now, op.Ref, op.Result)
	case AckFollowUpsOp:
		return e.AckWithFollowUps(now, op.Ref, op.Result, op.FollowUps)
	case NackOp:
		return e.Nack(now, op.Params)
	case ReleaseOp:
		return Done{}, e.Release(now, op.Ref)
	case ExtendLeaseOp:
		return e.ExtendLease(now, op.Params)
	case DrainDeadLettersOp:
		return e.DrainDeadLetters(now, op.Params)
	case RequeueDeadLettersOp:
		return e.RequeueDeadLetters(now, op.IDs), nil
	case DeleteDeadLettersOp:
		return e.DeleteDeadLetters(now, op.IDs), nil
	case DeadLetterJobsOp:
		return e.DeadLetterJobs(now, op.IDs, op.Reason), nil
	case PauseQueueOp:
		return Done{}, e.PauseQueue(now, op.Queue)
	case ResumeQueueOp:
		return Done{}, e.ResumeQueue(now, op.Queue)
	case CreateQueueOp:
		if err := e.CheckDeadLetterTarget("dead_letter_queue", op.Config.DeadLetterQueue); err != nil {
			return Done{}, err
		}
		return Done{}, e.CreateQueue(now, op.Config, op.Paused)
	case UpdateQueueOp:
		if op.Update.SetDeadLetterQueue {
			if err := e.CheckDeadLetterTarget("dead_letter_queue", op.Update.Set.DeadLetterQueue); err != nil {
				return Done{}, err
			}
		}
		return Done{}, e.UpdateQueue(now, op.Update)
	case DeleteQueueOp:
		return e.DeleteQueue(now, op.Queue, op.Force)
	case PurgeQueueOp:
		return e.PurgeQueue(now, op.Queue, op.Target)
	case ActOnJobsOp:
		return e.ActOnJobs(now, op.Params)
	case StartRedriveOp:
		return e.StartRedrive(now, op.Params)
	case SetRedriveStateOp:
		switch op.State {
		case RedrivePaused:
			return e.PauseRedrive(now, op.ID)
		case RedriveRunning:
			return e.ResumeRedrive(now, op.ID)
		default:
			return e.CancelRedrive(now, op.ID, op.By)
		}
	case UpsertScheduleOp:
		return Done{}, e.UpsertSchedule(now, op.Params)
	case PauseScheduleOp:
		return Done{}, e.SetSchedulePaused(now, op.Name, op.Paused, op.NextTick)
	case DeleteScheduleOp:
		return Done{}, e.DeleteSchedule(now, op.Name)
	case CreateScheduleOp, UpdateScheduleOp, SetSchedulePausedOp:
		return Done{}, fmt.Errorf("engine: %s is applied as the write schedspec.Prepare makes of it: %w", op.OpName(), ErrInvalidArgument)
	}
	return nil, fmt.Errorf("engine: %T is not an operation this engine applies", op)
}

// ResultOf turns what a Propose or Apply of op returned back into op's
// result type. A result of another type is a bug in the backend that
// carried op, reported as an error naming both types rather than a zero
// value passed on.
func ResultOf[R any](op OpOf[R], v any, err error) (R, error) {
	r, ok := v.(R)
	if err != nil {
		return r, err
	}
	if !ok {
		return r, fmt.Errorf("engine: %s answered %T, want %T", op.OpName(), v, r)
	}
	return r, nil
}
