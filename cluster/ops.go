package cluster

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/sepp-io/sepp/engine"
	"github.com/sepp-io/sepp/fsm"
	cmdpb "github.com/sepp-io/sepp/proto/seppcmd/v1"
)

// The writes behind Propose (propose.go), one method per engine.Op, each
// with its command builder and version gate; unexported, so Propose is the
// one way in (AckBatch, the API's batched ack, stays beside it). Each is
// one command through the log; each returns
// the engine's result, an engine error (errors.Is an engine sentinel), or a
// node error: *NotLeaderError / ErrNoLeader / ErrShutdown / a context error
// (nothing proposed, safe to retry) or ErrUnknownOutcome (retry with the
// same idempotency key or request id).

// enqueue adds one job.
func (n *Node) enqueue(ctx context.Context, p engine.EnqueueParams) (engine.EnqueueResult, error) {
	if p.Unique != nil || p.Expiry != nil {
		if err := n.checkUniqueVersion(ctx, []engine.EnqueueParams{p}); err != nil {
			return engine.EnqueueResult{}, err
		}
	}
	if p.Trace != nil {
		keep, err := n.keepTrace(ctx)
		if err != nil {
			return engine.EnqueueResult{}, err
		}
		if !keep {
			p.Trace = nil
		}
	}
	res, err := n.propose(ctx, n.enqueueCommand(p))
	if err != nil {
		return engine.EnqueueResult{}, err
	}
	return res.Enqueue, res.Err
}

// enqueueCommand is the log's form of one enqueue: the producer's public
// EnqueueRequest once every member applies fsm.CommandVersionPublicEnqueue
// and that form states p exactly, else the older params, which every
// binary applies (fsm/enqueue_public.go).
func (n *Node) enqueueCommand(p engine.EnqueueParams) *cmdpb.Command {
	if n.membersApply(fsm.CommandVersionPublicEnqueue) {
		if c, ok := fsm.PublicEnqueueCommand(p); ok {
			return c
		}
	}
	return fsm.EnqueueCommand(p)
}

// enqueueBatchCommand is enqueueCommand for a batch.
func (n *Node) enqueueBatchCommand(items []engine.EnqueueParams) *cmdpb.Command {
	if n.membersApply(fsm.CommandVersionPublicEnqueue) {
		if c, ok := fsm.PublicEnqueueBatchCommand(items); ok {
			return c
		}
	}
	return fsm.EnqueueBatchCommand(items)
}

// enqueueBatch adds several jobs, normally in one command; each item
// succeeds or fails on its own. A batch above max_entry_bytes is split
// across commands (enqueueBatchSplit), so that no batch of valid items
// fails whole for the size of its log entry.
func (n *Node) enqueueBatch(ctx context.Context, items []engine.EnqueueParams) ([]engine.BatchItemResult, error) {
	if err := n.checkUniqueVersion(ctx, items); err != nil {
		return nil, err
	}
	if fsm.HasTrace(items) {
		keep, err := n.keepTrace(ctx)
		if err != nil {
			return nil, err
		}
		if !keep {
			items = fsm.StripTrace(items)
		}
	}
	chunks := splitBatch(items, n.cfg.MaxEntryBytes)
	if fsm.HasAfter(items) {
		// Items name each other by index within one command: a batch
		// with dependencies is applied whole or not at all.
		if len(chunks) > 1 {
			return nil, &engine.FieldError{Field: "jobs", Err: engine.ErrInvalidArgument,
				Reason: fmt.Sprintf("a batch whose jobs wait for each other (after) must fit in one log entry of max_entry_bytes %d; send smaller payloads or fewer jobs", n.cfg.MaxEntryBytes)}
		}
		c, ok := fsm.PublicEnqueueBatchCommand(items)
		if !ok {
			return nil, &engine.FieldError{Field: "jobs", Err: engine.ErrInvalidArgument,
				Reason: "a batch whose jobs wait for each other (after) states its durations in whole milliseconds"}
		}
		res, err := n.propose(ctx, c)
		if err != nil {
			return nil, err
		}
		return res.Batch, res.Err
	}
	if len(chunks) > 1 {
		return n.enqueueBatchSplit(ctx, items, chunks)
	}
	res, err := n.propose(ctx, n.enqueueBatchCommand(items))
	if err != nil {
		return nil, err
	}
	return res.Batch, res.Err
}

// reserve leases up to p.N jobs.
func (n *Node) reserve(ctx context.Context, p engine.ReserveParams) ([]engine.Delivery, error) {
	// A request id outlives its leases once every member applies that
	// (fsm.CommandVersionReserveRetry); until then reserves keep the
	// older form, which every member applies alike.
	p.RetryWindow = p.RequestID != "" && n.membersApply(fsm.CommandVersionReserveRetry)
	// The apply reads the deliveries' payloads only where a caller waits
	// for them: here, not on the other replicas.
	defer n.fsm.AnswerReserve(p.RequestID)()
	res, err := n.propose(ctx, fsm.ReserveCommand(p))
	if err != nil {
		return nil, err
	}
	return res.Deliveries, res.Err
}

// ack completes a delivery.
func (n *Node) ack(ctx context.Context, ref engine.LeaseRef, result []byte) error {
	cmd := fsm.AckWithResultCommand(ref, result)
	if len(result) > 0 {
		// Until every member keeps results, one that does not would drop
		// it: refused before anything is proposed, the lease still held.
		ok, err := n.membersApplyFor(ctx, fsm.CommandVersionResults)
		if err != nil {
			return err
		}
		if !ok {
			return fmt.Errorf("%w (%s)", ErrResultNotKept, n.memberLacking(fsm.CommandVersionResults))
		}
	}
	res, err := n.propose(ctx, cmd)
	if err != nil {
		return err
	}
	return res.Err
}

// ackFollowUps completes a delivery and enqueues its follow-ups in the
// same command (fsm.CommandVersionFollowUps), all or nothing; it returns the
// follow-ups' results.
func (n *Node) ackFollowUps(ctx context.Context, op engine.AckFollowUpsOp) ([]engine.EnqueueResult, error) {
	if len(op.FollowUps) == 0 {
		return nil, n.ack(ctx, op.Ref, op.Result)
	}
	// Until every member applies follow-ups, one that does not would
	// drop them and complete the job alone: refused before anything is
	// proposed, the lease still held (the worker may ack without them and
	// enqueue them on their own). Version 24 implies results, unique jobs,
	// expiry and trace contexts, so nothing else is gated here.
	ok, err := n.membersApplyFor(ctx, fsm.CommandVersionFollowUps)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("%w (%s)", ErrFollowUpsUnsupported, n.memberLacking(fsm.CommandVersionFollowUps))
	}
	if fsm.HasAfter(op.FollowUps) {
		if err := n.requireFeature(ctx, "dependencies (follow_ups[].after)", fsm.FeatureDependencies); err != nil {
			return nil, err
		}
	}
	res, err := n.propose(ctx, fsm.AckFollowUpsCommand(op.Ref, op.Result, op.FollowUps))
	if err != nil {
		return nil, err
	}
	return res.FollowUps, res.Err
}

// ErrFollowUpsUnsupported refuses an ack that carries follow-ups while
// some member of the cluster does not apply fsm.CommandVersionFollowUps:
// nothing was proposed, the lease still holds, and the worker may ack
// without them. The gRPC layer answers FailedPrecondition with a
// PreconditionFailure of type VERSION naming the feature "follow_ups".
var ErrFollowUpsUnsupported = errors.New("follow_ups: this cluster enqueues no follow-ups with an ack yet (the capability \"follow_ups\" is missing from GetServerInfo until every member applies its command version); ack without them")

// ErrResultNotKept refuses an ack that carries a result while some member
// of the cluster does not apply command version 20 (results): nothing was
// proposed, the lease still holds, and the worker may ack without it.
// The gRPC layer answers FailedPrecondition with a PreconditionFailure of
// type VERSION naming the feature "results".
var ErrResultNotKept = errors.New("result: this cluster keeps no job results yet (the capability \"results\" is missing from GetServerInfo until every member applies command version 20); ack without a result")

// ErrProgressUnsupported refuses a lease extension that carries progress
// while some member of the cluster does not apply fsm.CommandVersionProgress:
// nothing was proposed, the lease is as it was, and the worker may extend
// without progress. The gRPC layer answers FailedPrecondition with a
// PreconditionFailure of type VERSION naming the feature "progress".
var ErrProgressUnsupported = errors.New("progress: this cluster keeps no job progress yet (the capability \"progress\" is missing from GetServerInfo until every member applies its command version); extend the lease without progress")

// AckBatch completes several deliveries; each succeeds or fails on its own
// (errs[i], nil when acked), in order, as if acked one by one. The acks
// travel as one JobAckBatch command when every member can apply it (see
// ackBatchCommands), else as one JobAck command each; either way they are
// handed to the proposer together, so they normally share one log entry
// and one disk write. A non-nil error means the call failed as a whole
// (not the leader, shutdown, or an unknown outcome): some acks may have
// been applied, and the caller should retry them all.
func (n *Node) AckBatch(ctx context.Context, refs []engine.LeaseRef) (errs []error, err error) {
	if err := n.waitReady(ctx); err != nil {
		return nil, err
	}
	cmds, batched := n.ackBatchCommands(refs)
	results, err := n.prop.proposeAll(ctx, cmds...)
	if err != nil {
		return nil, err
	}
	if !batched {
		errs = make([]error, len(refs))
		for i, res := range results {
			errs[i] = res.Err
		}
		return errs, nil
	}
	errs = make([]error, 0, len(refs))
	for i, res := range results {
		want := len(cmds[i].GetJobAckBatch().GetJobIds())
		switch {
		case res.Err != nil:
			// Not a result the state machine gives a JobAckBatch; should
			// one appear, it is every ref's answer.
			for range want {
				errs = append(errs, res.Err)
			}
		case len(res.Acks) != want:
			return nil, fmt.Errorf("%w: state machine answered %d acks for a batch of %d", ErrUnknownOutcome, len(res.Acks), want)
		default:
			errs = append(errs, res.Acks...)
		}
	}
	return errs, nil
}

// ackBatchCommands turns refs into commands: JobAckBatch commands of at
// most ackRefsPerCommand refs when every member of the configuration is
// known to apply them (batched), one JobAck per ref otherwise, which every
// binary applies. A member of an older binary would stop on a log entry
// holding a JobAckBatch, so during a rolling upgrade the acks go one by
// one until the last member has said (by its replicated metadata) that it
// applies CommandVersionAckBatch.
func (n *Node) ackBatchCommands(refs []engine.LeaseRef) (cmds []*cmdpb.Command, batched bool) {
	if len(refs) > 1 && n.membersApply(fsm.CommandVersionAckBatch) {
		per := ackRefsPerCommand(n.cfg.MaxEntryBytes)
		cmds = make([]*cmdpb.Command, 0, (len(refs)+per-1)/per)
		for start := 0; start < len(refs); start += per {
			cmds = append(cmds, fsm.AckBatchCommand(refs[start:min(start+per, len(refs))]))
		}
		return cmds, true
	}
	cmds = make([]*cmdpb.Command, len(refs))
	for i, ref := range refs {
		cmds[i] = fsm.AckCommand(ref)
	}
	return cmds, false
}

// ackRefsPerCommand bounds a JobAckBatch so that its command stays under
// the proposer's max_entry_bytes: a ref is two varints of at most 10 bytes
// in the two packed lists (24 per ref leaves room to spare), and the
// command around them, with the lists' tags and lengths, less than 64.
func ackRefsPerCommand(maxEntryBytes int) int {
	return max(1, (maxEntryBytes-64)/24)
}

// membersApply reports whether every server of the raft configuration,
// voter or not (all apply the log), is known to apply commands of version
// v: this node, by its own binary, and every other by the
// MaxCommandVersion of its replicated metadata. A server without metadata
// is not known to.
func (n *Node) membersApply(v uint32) bool {
	return n.memberLacking(v) == ""
}

// membersApplyFor is membersApply for a client request that needs command
// version v. An answer that is not yet yes may only mean that this node has
// not learned yet what its members apply: a new cluster's leader asks them
// within its first moments, and a newly elected leader's state holds what
// earlier terms recorded only once it is ready. So it then waits for this
// node to be a ready leader and for its term's first round of questions
// (bounded by MemberQuestions.FirstRoundWait and ctx), and asks again: a request in a
// new cluster's first second, or just after a failover, is not refused
// for want of what the leader is about to know. err is the answer of a
// node that is not the leader (or shuts down) to follow instead.
func (n *Node) membersApplyFor(ctx context.Context, v uint32) (bool, error) {
	if n.membersApply(v) {
		return true, nil
	}
	if err := n.waitReady(ctx); err != nil {
		return false, err
	}
	if lr := n.ready.Load(); lr != nil && lr.factsAsked != nil && !closed(lr.factsAsked) {
		n.versionWaits.Add(1)
		t := time.NewTimer(n.questions.FirstRoundWait)
		defer t.Stop()
		select {
		case <-lr.factsAsked:
		case <-t.C:
		case <-ctx.Done():
		case <-n.shutdownCh:
			return false, ErrShutdown
		}
	}
	return n.membersApply(v), nil
}

// memberLacking says which member keeps v from being applied everywhere,
// and why; "" when every member applies v.
func (n *Node) memberLacking(v uint32) string {
	if v > fsm.CommandVersion {
		return fmt.Sprintf("this node's binary applies up to command version %d", fsm.CommandVersion)
	}
	cf := n.raft.GetConfiguration()
	if cf.Error() != nil {
		return "the cluster's membership cannot be read: " + cf.Error().Error()
	}
	for _, s := range cf.Configuration().Servers {
		if string(s.ID) == n.self.ID {
			continue
		}
		meta, ok := n.fsm.Node(string(s.ID))
		switch {
		case ok && meta.AppliesCommandVersion(v):
			continue
		case !ok || (meta.MaxCommandVersion == 0 && !meta.Facts.Reported):
			return fmt.Sprintf("member %s has not yet told the leader which command versions it applies (is it down?)", s.ID)
		default:
			return fmt.Sprintf("member %s applies up to command version %d", s.ID, max(meta.MaxCommandVersion, 1))
		}
	}
	return ""
}

// nack fails a delivery.
func (n *Node) nack(ctx context.Context, p engine.NackParams) (engine.NackResult, error) {
	res, err := n.propose(ctx, fsm.NackCommand(p))
	if err != nil {
		return engine.NackResult{}, err
	}
	return res.Nack, res.Err
}

// release gives a delivery back without counting a failure.
func (n *Node) release(ctx context.Context, ref engine.LeaseRef) error {
	res, err := n.propose(ctx, fsm.ReleaseCommand(ref))
	if err != nil {
		return err
	}
	return res.Err
}

// extendLease pushes a lease's deadline out and returns the new deadline.
func (n *Node) extendLease(ctx context.Context, p engine.ExtendParams) (time.Time, error) {
	if p.Progress != nil {
		// Until every member applies progress, one that does not would
		// drop it and its state would differ: refused before anything is
		// proposed (the lease not extended either, so that a worker sees
		// the refusal rather than losing its report silently; it may
		// extend without progress).
		ok, err := n.membersApplyFor(ctx, fsm.CommandVersionProgress)
		if err != nil {
			return time.Time{}, err
		}
		if !ok {
			return time.Time{}, fmt.Errorf("%w (%s)", ErrProgressUnsupported, n.memberLacking(fsm.CommandVersionProgress))
		}
	}
	res, err := n.propose(ctx, fsm.ExtendLeaseCommand(p))
	if err != nil {
		return time.Time{}, err
	}
	return res.Deadline, res.Err
}

// drainDeadLetters removes and returns up to p.Max dead-letter records.
func (n *Node) drainDeadLetters(ctx context.Context, p engine.DrainParams) ([]engine.DeadLetterRecord, error) {
	res, err := n.propose(ctx, fsm.DrainCommand(p))
	if err != nil {
		return nil, err
	}
	return res.Records, res.Err
}

// requeueDeadLetters makes dead jobs Ready again.
func (n *Node) requeueDeadLetters(ctx context.Context, ids []engine.JobID) ([]engine.ItemResult, error) {
	res, err := n.propose(ctx, fsm.RequeueDeadLettersCommand(ids))
	if err != nil {
		return nil, err
	}
	return res.Items, res.Err
}

// deleteDeadLetters drops dead-letter records.
func (n *Node) deleteDeadLetters(ctx context.Context, ids []engine.JobID) ([]engine.ItemResult, error) {
	res, err := n.propose(ctx, fsm.DeleteDeadLettersCommand(ids))
	if err != nil {
		return nil, err
	}
	return res.Items, res.Err
}

// deadLetterJobs dead-letters live jobs on an operator's word.
func (n *Node) deadLetterJobs(ctx context.Context, ids []engine.JobID, reason string) ([]engine.ItemResult, error) {
	res, err := n.propose(ctx, fsm.DeadLetterJobsCommand(ids, reason))
	if err != nil {
		return nil, err
	}
	return res.Items, res.Err
}

// pauseQueue stops deliveries from a queue.
func (n *Node) pauseQueue(ctx context.Context, queue string) error {
	res, err := n.propose(ctx, fsm.PauseQueueCommand(queue))
	if err != nil {
		return err
	}
	return res.Err
}

// resumeQueue resumes deliveries from a queue.
func (n *Node) resumeQueue(ctx context.Context, queue string) error {
	res, err := n.propose(ctx, fsm.ResumeQueueCommand(queue))
	if err != nil {
		return err
	}
	return res.Err
}
