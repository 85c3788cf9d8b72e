package cluster

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/hashicorp/raft"
	"google.golang.org/protobuf/proto"

	"github.com/sepp-io/sepp/engine"
	"github.com/sepp-io/sepp/fsm"
	seppv1 "github.com/sepp-io/sepp/proto/sepp/v1"
	cmdpb "github.com/sepp-io/sepp/proto/seppcmd/v1"
)

// Handing a job to a waiting worker in the entry that enqueues it.
//
// A reserve that waits (a long poll) and finds nothing would otherwise
// wait for the entry that enqueues a job to be applied, then propose a
// reserve of its own: two commits between the producer's call and the
// worker's delivery. Instead the leader's proposer holds the waiting
// reserve's command ("parks" it), and when it forms an entry that enqueues
// jobs a reserve could take at once into that queue, it appends the parked
// reserves after them, as if their callers had proposed them at that
// moment. The state machine applies the enqueues, then the reserves, in
// log order like any other entry, on every replica alike: the handoff is a
// choice of what the leader proposes together, not a new command, so it
// needs no command version and changes nothing in the engine.
//
// A parked reserve whose entry finds nothing (the queue is paused, a
// reserve limit holds, another reserve took the jobs first) answers empty,
// and its caller looks again and parks again, as it would after an empty
// proposal of its own.

// parkedReserves holds the waiting reserves by queue, oldest first, so the
// workers that waited longest are handed jobs first.
type parkedReserves struct {
	mu      sync.Mutex
	byQueue map[string][]*proposal
	closed  bool
	// count is how many are parked: formEntries reads it on every entry,
	// and a zero costs it nothing more.
	count atomic.Int64
}

// park adds a reserve command to the parked set; false when the proposer
// has stopped taking commands.
func (p *proposer) park(cmd *cmdpb.Command) (*proposal, bool) {
	reserve := cmd.GetJobReserve()
	if reserve == nil {
		return nil, false
	}
	pr := &proposal{cmd: cmd, size: proto.Size(cmd), done: make(chan proposalOutcome, 1), answered: make(chan struct{})}
	ps := &p.parked
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if ps.closed {
		return nil, false
	}
	if ps.byQueue == nil {
		ps.byQueue = make(map[string][]*proposal)
	}
	ps.byQueue[reserve.GetQueue()] = append(ps.byQueue[reserve.GetQueue()], pr)
	ps.count.Add(1)
	return pr, true
}

// unpark withdraws a parked reserve; false when an entry has taken it
// already (its outcome then comes on pr.done).
func (p *proposer) unpark(pr *proposal) bool {
	ps := &p.parked
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if !pr.state.CompareAndSwap(proposalPending, proposalWithdrawn) {
		return false
	}
	queue := pr.cmd.GetJobReserve().GetQueue()
	list := ps.byQueue[queue]
	for i, other := range list {
		if other == pr {
			list = append(list[:i], list[i+1:]...)
			break
		}
	}
	if len(list) == 0 {
		delete(ps.byQueue, queue)
	} else {
		ps.byQueue[queue] = list
	}
	ps.count.Add(-1)
	return true
}

// attachParked appends to batch the parked reserves of the queues that
// batch enqueues ready jobs into, oldest first, until the jobs they ask
// for cover the jobs enqueued (now is the entry's leader time, which
// decides whether a scheduled job is due).
func (p *proposer) attachParked(batch []*proposal, now int64) []*proposal {
	if p.parked.count.Load() == 0 {
		return batch
	}
	var enqueued []queueJobs
	for _, pr := range batch {
		enqueued = countReadyEnqueues(enqueued, pr.cmd, now)
	}
	if len(enqueued) == 0 {
		return batch
	}
	ps := &p.parked
	ps.mu.Lock()
	defer ps.mu.Unlock()
	for _, qj := range enqueued {
		list := ps.byQueue[qj.queue]
		want, taken := qj.jobs, 0
		for taken < len(list) && want > 0 {
			pr := list[taken]
			taken++
			if !take(pr) {
				continue // withdrawn under ps.mu cannot be listed; defensive
			}
			batch = append(batch, pr)
			want -= max(int(pr.cmd.GetJobReserve().GetN()), 1)
		}
		if taken == 0 {
			continue
		}
		if taken == len(list) {
			delete(ps.byQueue, qj.queue)
		} else {
			ps.byQueue[qj.queue] = append(list[:0], list[taken:]...)
		}
		ps.count.Add(-int64(taken))
	}
	return batch
}

// closeParked answers every parked reserve with ErrShutdown (none reached
// raft) and refuses new ones.
func (p *proposer) closeParked() {
	ps := &p.parked
	ps.mu.Lock()
	defer ps.mu.Unlock()
	ps.closed = true
	for queue, list := range ps.byQueue {
		for _, pr := range list {
			if take(pr) {
				pr.answer(proposalOutcome{err: ErrShutdown})
			}
		}
		delete(ps.byQueue, queue)
	}
	ps.count.Store(0)
}

// queueJobs counts the jobs an entry enqueues into one queue that a
// reserve could take at once.
type queueJobs struct {
	queue string
	jobs  int
}

// countReadyEnqueues adds to counts, in the order the queues first appear,
// the jobs cmd enqueues that are ready at now: not scheduled later and not
// waiting for parents. Whether the engine makes them ready (a duplicate
// key, a paused queue) is for the apply to say; a reserve that finds
// nothing answers empty.
func countReadyEnqueues(counts []queueJobs, cmd *cmdpb.Command, now int64) []queueJobs {
	add := func(queue string) {
		for i := range counts {
			if counts[i].queue == queue {
				counts[i].jobs++
				return
			}
		}
		counts = append(counts, queueJobs{queue: queue, jobs: 1})
	}
	addParams := func(ep *cmdpb.EnqueueParams) {
		if ep.GetScheduledAtUnixNano() <= now {
			add(ep.GetQueue())
		}
	}
	addRequests := func(reqs ...*seppv1.EnqueueRequest) {
		for _, r := range reqs {
			if len(r.GetAfter()) > 0 || (r.GetScheduledAt() != nil && r.GetScheduledAt().AsTime().UnixNano() > now) {
				continue
			}
			add(r.GetQueue())
		}
	}
	switch op := cmd.GetOp().(type) {
	case *cmdpb.Command_JobEnqueue:
		if r := op.JobEnqueue.GetRequest(); r != nil {
			addRequests(r)
		} else if ep := op.JobEnqueue.GetParams(); ep != nil {
			addParams(ep)
		}
	case *cmdpb.Command_JobEnqueueBatch:
		if reqs := op.JobEnqueueBatch.GetRequests(); len(reqs) > 0 {
			addRequests(reqs...)
		} else {
			for _, ep := range op.JobEnqueueBatch.GetItems() {
				addParams(ep)
			}
		}
	case *cmdpb.Command_JobAck:
		addRequests(op.JobAck.GetFollowUps()...)
	}
	return counts
}

// ParkedReserve is a waiting reserve the leader holds until an entry
// enqueues into its queue (see the top of handoff.go). Its owner either
// withdraws it or waits for its outcome, once.
type ParkedReserve struct {
	node     *Node
	pr       *proposal
	answered func() // ends the fsm's AnswerReserve registration
	once     sync.Once
}

// ParkReserve parks a reserve with p on this node's proposer; nil when the
// node is not a serving leader (the caller then waits and proposes as
// before).
func (n *Node) ParkReserve(p engine.ReserveParams) *ParkedReserve {
	lr := n.ready.Load()
	if n.raft.State() != raft.Leader || lr == nil || lr.term != n.raft.CurrentTerm() {
		return nil
	}
	select {
	case <-lr.ch: // the leader is serving
	default:
		return nil
	}
	p.RetryWindow = p.RequestID != "" && n.membersApply(fsm.CommandVersionReserveRetry)
	answered := n.fsm.AnswerReserve(p.RequestID)
	pr, ok := n.prop.park(fsm.ReserveCommand(p))
	if !ok {
		answered()
		return nil
	}
	return &ParkedReserve{node: n, pr: pr, answered: answered}
}

// Answered is closed once an entry has taken the reserve and its outcome
// is known; Wait then returns at once.
func (r *ParkedReserve) Answered() <-chan struct{} { return r.pr.answered }

// Withdraw takes the reserve back unless an entry has taken it; false
// means its outcome is coming and the caller must Wait for it.
func (r *ParkedReserve) Withdraw() bool {
	if !r.node.prop.unpark(r.pr) {
		return false
	}
	r.once.Do(r.answered)
	return true
}

func (r *ParkedReserve) outcome(out proposalOutcome) ([]engine.Delivery, error) {
	r.once.Do(r.answered)
	if out.err != nil {
		return nil, out.err
	}
	return out.res.Deliveries, out.res.Err
}

// Wait waits for the outcome of a reserve that Withdraw could not take
// back. If ctx ends first the reserve may have taken jobs under a lease
// that nobody will hear of: an unknown outcome, as for any proposal.
func (r *ParkedReserve) Wait(ctx context.Context) ([]engine.Delivery, error) {
	select {
	case out := <-r.pr.done:
		return r.outcome(out)
	default:
	}
	select {
	case out := <-r.pr.done:
		return r.outcome(out)
	case <-ctx.Done():
		r.once.Do(r.answered)
		return nil, fmt.Errorf("%w: %w while waiting for commit", ErrUnknownOutcome, ctx.Err())
	}
}
