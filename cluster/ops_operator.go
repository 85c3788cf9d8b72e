package cluster

import (
	"context"
	"errors"
	"fmt"

	"github.com/sepp-io/sepp/engine"
	"github.com/sepp-io/sepp/fsm"
	cmdpb "github.com/sepp-io/sepp/proto/seppcmd/v1"
)

// ErrUpgradeInProgress: the operation needs a command version some member
// of the cluster does not apply yet (a rolling upgrade is under way).
// Nothing was proposed; retry once every member runs the new binary.
var ErrUpgradeInProgress = errors.New("cluster upgrade in progress")

// proposeVersioned proposes cmd once every member applies its version; on
// a follower it proposes at once, so the caller gets the usual
// not-the-leader answer to follow.
func (n *Node) proposeVersioned(ctx context.Context, cmd *cmdpb.Command) (fsm.Result, error) {
	ok, err := n.membersApplyFor(ctx, cmd.GetVersion())
	if err != nil {
		return fsm.Result{}, err
	}
	if !ok {
		return fsm.Result{}, fmt.Errorf("%w: every member must apply %s for this operation (%s)", ErrUpgradeInProgress, versionNeed(cmd.GetVersion()), n.memberLacking(cmd.GetVersion()))
	}
	return n.propose(ctx, cmd)
}

// createQueue adds a configured queue: in the public settings' form once
// every member applies it (publicQueueSettings), else the log's own.
func (n *Node) createQueue(ctx context.Context, qc engine.QueueConfig, paused bool) error {
	cmd := fsm.CreateQueueCommand(qc, paused)
	if n.publicQueueSettings() {
		cmd = fsm.PublicCreateQueueCommand(qc, paused)
	}
	res, err := n.proposeVersioned(ctx, cmd)
	if err != nil {
		return err
	}
	return res.Err
}

// updateQueue changes a queue's settings, in the form createQueue uses.
func (n *Node) updateQueue(ctx context.Context, u engine.QueueUpdate) error {
	cmd := fsm.UpdateQueueCommand(u)
	if n.publicQueueSettings() {
		cmd = fsm.PublicUpdateQueueCommand(u)
	}
	res, err := n.proposeVersioned(ctx, cmd)
	if err != nil {
		return err
	}
	return res.Err
}

// publicQueueSettings reports whether a queue's settings may travel in
// the public form (fsm.CommandVersionPublicQueueSettings): once every
// member applies it, since an older one would read them as empty. It does
// not wait to learn what the members apply (membersApplyFor): the older
// form means the same to every binary, so a leader that does not know yet
// writes it, and the command's own version still gates what it sets
// (proposeVersioned).
func (n *Node) publicQueueSettings() bool {
	return n.membersApply(fsm.CommandVersionPublicQueueSettings)
}

// deleteQueue removes a queue, with its jobs when force is set.
func (n *Node) deleteQueue(ctx context.Context, queue string, force bool) (engine.QueueRemoval, error) {
	res, err := n.proposeVersioned(ctx, fsm.DeleteQueueCommand(queue, force))
	if err != nil {
		return engine.QueueRemoval{}, err
	}
	return res.Removed, res.Err
}

// purgeQueue removes a queue's waiting jobs or its dead letters.
func (n *Node) purgeQueue(ctx context.Context, queue string, target engine.PurgeTarget) (engine.QueueRemoval, error) {
	res, err := n.proposeVersioned(ctx, fsm.PurgeQueueCommand(queue, target))
	if err != nil {
		return engine.QueueRemoval{}, err
	}
	return res.Removed, res.Err
}

// actOnJobs applies an action to live jobs (delete, run now, reschedule,
// priority) and answers per job.
func (n *Node) actOnJobs(ctx context.Context, p engine.JobActionParams) ([]engine.ItemResult, error) {
	res, err := n.proposeVersioned(ctx, fsm.JobsActCommand(p))
	if err != nil {
		return nil, err
	}
	return res.Items, res.Err
}
