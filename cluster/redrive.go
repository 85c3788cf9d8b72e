package cluster

import (
	"context"
	"time"

	"github.com/hashicorp/raft"

	"github.com/sepp-io/sepp/engine"
	"github.com/sepp-io/sepp/fsm"
)

// Redrive tasks (engine/redrive.go): the operator starts, pauses, resumes
// and cancels them through the log; the leader moves their records by
// proposing RedriveStep commands paced by its own clock at each task's
// rate. The task's cursor is replicated state, so a new leader resumes
// where the old one's last applied step left off.

// redrivePace is how often the leader considers a running task's next
// step: a task of rate r moves about r/10 records per step.
const redrivePace = 100 * time.Millisecond

// startRedrive starts a redrive task.
func (n *Node) startRedrive(ctx context.Context, p engine.RedriveParams) (engine.RedriveTask, error) {
	res, err := n.proposeVersioned(ctx, fsm.RedriveStartCommand(p))
	if err != nil {
		return engine.RedriveTask{}, err
	}
	return res.Redrive, res.Err
}

// setRedriveState pauses (RedrivePaused), resumes (RedriveRunning) or
// cancels (RedriveCancelled) a task; by names who, for the audit record.
func (n *Node) setRedriveState(ctx context.Context, id uint64, state engine.RedriveState, by string) (engine.RedriveTask, error) {
	res, err := n.proposeVersioned(ctx, fsm.RedriveSetStateCommand(id, state, by))
	if err != nil {
		return engine.RedriveTask{}, err
	}
	return res.Redrive, res.Err
}

// RedriveDryRun counts (and samples) what a task started now would move,
// from this node's state.
func (n *Node) RedriveDryRun(p engine.RedriveParams, sample int) (count int, recs []engine.DeadLetterRecord, err error) {
	now := n.clock()
	rerr := n.fsm.Read(func(e *engine.Engine) error {
		count, recs, err = e.RedriveDryRun(now, p, sample)
		return nil
	})
	if rerr != nil {
		return 0, nil, rerr
	}
	return count, recs, err
}

// RedriveTasks lists the tasks and audit records from this node's state.
func (n *Node) RedriveTasks() ([]engine.RedriveTask, error) {
	var out []engine.RedriveTask
	err := n.fsm.Read(func(e *engine.Engine) error {
		out = e.RedriveTasks()
		return nil
	})
	return out, err
}

// GetRedrive returns one task or audit record from this node's state.
func (n *Node) GetRedrive(id uint64) (engine.RedriveTask, error) {
	var (
		out engine.RedriveTask
		err error
	)
	if rerr := n.fsm.Read(func(e *engine.Engine) error {
		out, err = e.GetRedrive(id)
		return nil
	}); rerr != nil {
		return engine.RedriveTask{}, rerr
	}
	return out, err
}

// redriveCredit is the leader's pacing of one task: records it may move
// now, earned at the task's rate since the last look.
type redriveCredit struct {
	at     time.Time
	credit float64
}

// runRedriver proposes the running tasks' steps while this node leads. A
// task earns rate × elapsed records of credit (at most one second's worth,
// so a pause or an election never bursts), and a step of the whole credit
// goes out once it reaches one record. It proposes nothing while some
// member does not apply the redrive commands (a member of an older binary
// joined after the task started).
func (n *Node) runRedriver(ctx context.Context) {
	credits := make(map[uint64]*redriveCredit)
	timer := time.NewTimer(redrivePace)
	defer timer.Stop()
	for {
		applied := n.fsm.Applied()
		var runs []engine.RedriveRun
		_ = n.fsm.Read(func(e *engine.Engine) error {
			runs = e.RunningRedrives()
			return nil
		})
		if len(runs) > 0 && n.membersApply(fsm.CommandVersionRedrive) {
			now := n.clock()
			live := make(map[uint64]bool, len(runs))
			for _, r := range runs {
				live[r.ID] = true
				c := credits[r.ID]
				if c == nil {
					credits[r.ID] = &redriveCredit{at: now}
					continue
				}
				if el := now.Sub(c.at); el > 0 {
					c.credit = min(c.credit+float64(r.Rate)*el.Seconds(), float64(r.Rate))
				}
				c.at = now
				step := min(int(c.credit), r.MaxStep)
				if step < 1 {
					continue
				}
				res, err := n.proposeInternal(ctx, fsm.RedriveStepCommand(r.ID, step))
				switch {
				case err != nil:
					if ctx.Err() != nil || n.raft.State() != raft.Leader {
						return
					}
					n.log.Warn("redrive step failed", "task", r.ID, "error", err)
				case res.Err != nil:
					n.log.Error("redrive step rejected by the engine", "task", r.ID, "error", res.Err)
				default:
					c.credit -= float64(step)
				}
			}
			for id := range credits { // any order: only deletes
				if !live[id] {
					delete(credits, id)
				}
			}
		}
		if len(runs) == 0 {
			clear(credits)
			select {
			case <-applied:
			case <-ctx.Done():
				return
			}
			continue
		}
		timer.Reset(redrivePace)
		select {
		case <-timer.C:
		case <-ctx.Done():
			return
		}
	}
}
