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
		return n.enqueue(ctx, op.Params)
	case engine.EnqueueBatchOp:
		return n.enqueueBatch(ctx, op.Items)
	case engine.ReserveOp:
		return n.reserve(ctx, op.Params)
	case engine.AckOp:
		return engine.Done{}, n.ack(ctx, op.Ref, op.Result)
	case engine.AckFollowUpsOp:
		return n.ackFollowUps(ctx, op)
	case engine.NackOp:
		return n.nack(ctx, op.Params)
	case engine.ReleaseOp:
		return engine.Done{}, n.release(ctx, op.Ref)
	case engine.ExtendLeaseOp:
		return n.extendLease(ctx, op.Params)
	case engine.DrainDeadLettersOp:
		return n.drainDeadLetters(ctx, op.Params)
	case engine.RequeueDeadLettersOp:
		return n.requeueDeadLetters(ctx, op.IDs)
	case engine.DeleteDeadLettersOp:
		return n.deleteDeadLetters(ctx, op.IDs)
	case engine.DeadLetterJobsOp:
		return n.deadLetterJobs(ctx, op.IDs, op.Reason)
	case engine.PauseQueueOp:
		return engine.Done{}, n.pauseQueue(ctx, op.Queue)
	case engine.ResumeQueueOp:
		return engine.Done{}, n.resumeQueue(ctx, op.Queue)
	case engine.CreateQueueOp:
		return engine.Done{}, n.createQueue(ctx, op.Config, op.Paused)
	case engine.UpdateQueueOp:
		return engine.Done{}, n.updateQueue(ctx, op.Update)
	case engine.DeleteQueueOp:
		return n.deleteQueue(ctx, op.Queue, op.Force)
	case engine.PurgeQueueOp:
		return n.purgeQueue(ctx, op.Queue, op.Target)
	case engine.ActOnJobsOp:
		return n.actOnJobs(ctx, op.Params)
	case engine.StartRedriveOp:
		return n.startRedrive(ctx, op.Params)
	case engine.SetRedriveStateOp:
		return n.setRedriveState(ctx, op.ID, op.State, op.By)
	case engine.CreateScheduleOp, engine.UpdateScheduleOp, engine.SetSchedulePausedOp, engine.DeleteScheduleOp,
		engine.UpsertScheduleOp, engine.PauseScheduleOp:
		return engine.Done{}, n.writeSchedule(ctx, op)
	}
	return nil, fmt.Errorf("cluster: %T is not an operation this node proposes", op)
}

// Do proposes op through n and returns its result typed: what a caller of
// one kind of write (a test, a tool) uses instead of a method per write.
func Do[R any](ctx context.Context, n *Node, op engine.OpOf[R]) (R, error) {
	v, err := n.Propose(ctx, op)
	return engine.ResultOf(op, v, err)
}
