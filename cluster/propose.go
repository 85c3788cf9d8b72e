package cluster

import (
	"context"
	"fmt"

	"github.com/sepp-io/sepp/engine"
)

// Propose carries out one write (an engine.Op) through the log: each case
// builds the op's command, proposes it and returns the applied result, of
// the type op's engine.OpOf names. It is the one write entry of the API
// layer (rpc.Backend); the methods it calls hold each op's command
// builder, version gate and answer.
func (n *Node) Propose(ctx context.Context, op engine.Op) (any, error) {
	switch op := op.(type) {
	case engine.EnqueueOp:
		return n.Enqueue(ctx, op.Params)
	case engine.EnqueueBatchOp:
		return n.EnqueueBatch(ctx, op.Items)
	case engine.ReserveOp:
		return n.Reserve(ctx, op.Params)
	case engine.AckOp:
		return engine.Done{}, n.Ack(ctx, op.Ref)
	case engine.NackOp:
		return n.Nack(ctx, op.Params)
	case engine.ReleaseOp:
		return engine.Done{}, n.Release(ctx, op.Ref)
	case engine.ExtendLeaseOp:
		return n.ExtendLease(ctx, op.Params)
	case engine.DrainDeadLettersOp:
		return n.DrainDeadLetters(ctx, op.Params)
	case engine.RequeueDeadLettersOp:
		return n.RequeueDeadLetters(ctx, op.IDs)
	case engine.DeleteDeadLettersOp:
		return n.DeleteDeadLetters(ctx, op.IDs)
	case engine.DeadLetterJobsOp:
		return n.DeadLetterJobs(ctx, op.IDs, op.Reason)
	case engine.PauseQueueOp:
		return engine.Done{}, n.PauseQueue(ctx, op.Queue)
	case engine.ResumeQueueOp:
		return engine.Done{}, n.ResumeQueue(ctx, op.Queue)
	case engine.CreateQueueOp:
		return engine.Done{}, n.CreateQueue(ctx, op.Config, op.Paused)
	case engine.UpdateQueueOp:
		return engine.Done{}, n.UpdateQueue(ctx, op.Update)
	case engine.DeleteQueueOp:
		return n.DeleteQueue(ctx, op.Queue, op.Force)
	case engine.PurgeQueueOp:
		return n.PurgeQueue(ctx, op.Queue, op.Target)
	case engine.ActOnJobsOp:
		return n.ActOnJobs(ctx, op.Params)
	case engine.StartRedriveOp:
		return n.StartRedrive(ctx, op.Params)
	case engine.SetRedriveStateOp:
		return n.SetRedriveState(ctx, op.ID, op.State, op.By)
	case engine.CreateScheduleOp, engine.UpdateScheduleOp, engine.SetSchedulePausedOp, engine.DeleteScheduleOp,
		engine.UpsertScheduleOp, engine.PauseScheduleOp:
		return engine.Done{}, n.writeSchedule(ctx, op)
	}
	return nil, fmt.Errorf("cluster: %T is not an operation this node proposes", op)
}
