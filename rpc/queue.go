package rpc

import (
	"context"
	"errors"
	"go.opentelemetry.io/otel/attribute"
	"math"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/sepp-io/sepp/apiconv"
	"github.com/sepp-io/sepp/cluster"
	"github.com/sepp-io/sepp/engine"
	seppv1 "github.com/sepp-io/sepp/proto/sepp/v1"
)

// queueService implements sepp.v1.QueueService. Handlers validate what the
// engine does not (names, durations, directives), call the Backend, and
// return its errors raw: mapErrors turns them into statuses in one place.
type queueService struct {
	seppv1.UnimplementedQueueServiceServer
	*server
}

func (s *queueService) Enqueue(ctx context.Context, req *seppv1.EnqueueRequest) (*seppv1.EnqueueResponse, error) {
	if len(req.GetAfter()) > 0 {
		return nil, invalidField("after", "only in EnqueueBatch or AckRequest.follow_ups",
			"names requests of the same call: only an EnqueueBatch's jobs or an ack's follow-ups can wait for each other")
	}
	p, err := enqueueParams("", req)
	if err != nil {
		return nil, err
	}
	spans := s.enqueueSpans(ctx, []engine.EnqueueParams{p})
	res, err := Propose(ctx, s.b, engine.EnqueueOp{Params: p})
	if spans != nil {
		endJobSpan(spans[0], res.JobID, err)
	}
	if err != nil {
		return nil, err
	}
	return enqueueResultToProto(res), nil
}

func enqueueResultToProto(r engine.EnqueueResult) *seppv1.EnqueueResponse {
	return &seppv1.EnqueueResponse{JobId: uint64(r.JobID), State: jobStateToProto(r.State), Duplicate: r.Duplicate}
}

func (s *queueService) EnqueueBatch(ctx context.Context, req *seppv1.EnqueueBatchRequest) (*seppv1.EnqueueBatchResponse, error) {
	jobs := req.GetJobs()
	if len(jobs) == 0 {
		return nil, invalidField("jobs", "1..max_batch_size", "needs at least one job")
	}
	// Items the rpc layer rejects fail alone, like items the engine
	// rejects; the rest go to the engine in one proposal. The params are
	// filled in place (an EnqueueParams is large), and positions maps
	// them back to items only once an item has been rejected: until
	// then param k is item k.
	results := make([]*seppv1.EnqueueBatchResult, len(jobs))
	params := make([]engine.EnqueueParams, len(jobs))
	var positions []int
	kept := 0
	whole := batchHasAfter(jobs)
	for i, item := range jobs {
		if err := fillEnqueueParams(&params[kept], "", item); err != nil {
			// Again, naming the item (only now: the name costs allocations).
			err = fillEnqueueParams(&params[kept], itemPrefix(i), item)
			if whole {
				// Jobs that wait for each other name each other by
				// index: the batch is taken whole or refused whole.
				return nil, err
			}
			results[i] = &seppv1.EnqueueBatchResult{Outcome: &seppv1.EnqueueBatchResult_Error{Error: itemErrorFor(err)}}
			if positions == nil {
				positions = make([]int, kept, len(jobs))
				for k := range positions {
					positions[k] = k
				}
			}
			continue
		}
		if positions != nil {
			positions = append(positions, i)
		}
		kept++
	}
	params = params[:kept]
	if len(params) > 0 {
		spans := s.enqueueSpans(ctx, params)
		items, err := Propose(ctx, s.b, engine.EnqueueBatchOp{Items: params})
		for k, span := range spans {
			switch {
			case err != nil:
				endJobSpan(span, 0, err)
			case k < len(items):
				endJobSpan(span, items[k].Result.JobID, items[k].Err)
			default:
				endJobSpan(span, 0, nil)
			}
		}
		if err != nil {
			return nil, renameField(err, "items", "jobs")
		}
		if len(items) != len(params) {
			return nil, errors.New("enqueue batch: backend returned " + itoa(len(items)) + " results for " + itoa(len(params)) + " items")
		}
		// The results of a batch are allocated together, not three
		// objects per job.
		outs := make([]enqueuedResult, len(items))
		for k, item := range items {
			i := k
			if positions != nil {
				i = positions[k]
			}
			if item.Err != nil {
				results[i] = &seppv1.EnqueueBatchResult{Outcome: &seppv1.EnqueueBatchResult_Error{Error: itemErrorFor(prefixField(itemPrefix(i), item.Err))}}
				continue
			}
			o := &outs[k]
			o.resp.JobId, o.resp.State, o.resp.Duplicate = uint64(item.Result.JobID), jobStateToProto(item.Result.State), item.Result.Duplicate
			o.enqueued.Enqueued = &o.resp
			o.result.Outcome = &o.enqueued
			results[i] = &o.result
		}
	}
	return &seppv1.EnqueueBatchResponse{Results: results}, nil
}

// enqueuedResult is the three messages of one enqueued item's result, to
// allocate a batch's results in one piece.
type enqueuedResult struct {
	result   seppv1.EnqueueBatchResult
	enqueued seppv1.EnqueueBatchResult_Enqueued
	resp     seppv1.EnqueueResponse
}

// itemPrefix names item i of a batch in a field path: "jobs[3].".
func itemPrefix(i int) string { return "jobs[" + itoa(i) + "]." }

// batchHasAfter reports whether a job of the batch waits for another.
func batchHasAfter(jobs []*seppv1.EnqueueRequest) bool {
	for _, j := range jobs {
		if len(j.GetAfter()) > 0 {
			return true
		}
	}
	return false
}

// renameField makes a whole-request engine FieldError name the request's
// field (the engine calls a batch "items"; the API calls it "jobs").
func renameField(err error, from, to string) error {
	var fe *engine.FieldError
	if errors.As(err, &fe) && fe.Field == from {
		return &engine.FieldError{Field: to, Reason: fe.Reason, Err: fe.Err}
	}
	return err
}

// prefixField makes an engine FieldError of a batch item name its position
// ("jobs[3].priority"), keeping the sentinel for the status table.
func prefixField(prefix string, err error) error {
	var fe *engine.FieldError
	if errors.As(err, &fe) {
		return &engine.FieldError{Field: prefix + fe.Field, Reason: fe.Reason, Err: fe.Err}
	}
	return err
}

func (s *queueService) Reserve(ctx context.Context, req *seppv1.ReserveRequest) (*seppv1.ReserveResponse, error) {
	var start time.Time
	if s.tracer != nil {
		start = time.Now()
	}
	lease, err := validateDuration("lease", req.GetLease())
	if err != nil {
		return nil, err
	}
	wait, err := validateDuration("wait", req.GetWait())
	if err != nil {
		return nil, err
	}
	wait = min(wait, s.opts.MaxReserveWait)
	p := engine.ReserveParams{
		Queue:     req.GetQueue(),
		WorkerID:  req.GetWorkerId(),
		N:         int(min(req.GetMax(), 1<<20)), // the engine clamps to max_reserve_batch
		Lease:     lease,
		RequestID: req.GetRequestId(),
	}
	var ds []engine.Delivery
	if wait > 0 && s.leads() {
		// A waiting reserve on the leader proposes only when its applied
		// state shows something to answer with: an empty reserve would
		// cost a replicated, fsynced log entry and find nothing. Register
		// as a waiter before looking, so an entry applied after the look
		// (the job enqueued meanwhile) still wakes us. A follower proposes
		// at once, as before: its refusal names the leader to go to.
		w := s.register()
		if !s.canReserve(ctx, p) {
			ds, err = s.longPoll(ctx, p, wait, &w)
			if err != nil {
				return nil, err
			}
			s.reserveSpans(ctx, start, ds, p.WorkerID)
			return s.reserveResponse(ctx, ds, p.WorkerID), nil
		}
	}
	ds, err = Propose(ctx, s.b, engine.ReserveOp{Params: p})
	if err != nil {
		return nil, err
	}
	if len(ds) == 0 && wait > 0 {
		ds, err = s.longPoll(ctx, p, wait, nil)
		if err != nil {
			return nil, err
		}
	}
	s.reserveSpans(ctx, start, ds, p.WorkerID)
	return s.reserveResponse(ctx, ds, p.WorkerID), nil
}

// leads reports whether this node is the leader, whose applied state is
// what the next proposal runs on (a read of it may lag the proposals in
// flight, which wake the waiters as they apply).
func (s *queueService) leads() bool {
	self := s.b.Self().ID
	return self != "" && s.b.Leader().ID == self
}

// waiter is what wakes a waiting reserve: the next applied entry, or the
// next release of a poll claim. Taken before a look at the state, it cannot
// miss a change made after the look.
type waiter struct {
	applied, released <-chan struct{}
}

func (s *queueService) register() waiter {
	return waiter{applied: s.b.Applied(), released: s.polls.changed()}
}

// canReserve reports whether a reserve with p could answer anything but an
// empty result now, judging by this node's applied state (engine
// CanReserve: Ready jobs, a due promotion or lease expiry, a reservation to
// replay, a request the engine would refuse).
func (s *queueService) canReserve(ctx context.Context, p engine.ReserveParams) bool {
	can := true
	if err := s.b.Read(ctx, true, func(e engine.View) error {
		can = e.CanReserve(s.now(), p)
		return nil
	}); err != nil {
		// A failed local read must not hide a job or an error: let the
		// proposal decide (it fails properly if the node is unwell).
		s.log.Debug("long-poll reserve check failed", "queue", p.Queue, "error", err)
		return true
	}
	return can
}

// longPoll waits up to wait for a job of p.Queue after a reserve found none,
// or, with first set, after canReserve found nothing to reserve since first
// was registered. It proposes (again) only when this node's own state (a
// stale local read, which costs no Raft round) shows the queue has Ready
// jobs and is not paused, so an idle waiting worker writes nothing to the
// log. Each wake-up is an applied entry, which is also when promotions,
// nacks, releases and lease expiries make jobs Ready.
func (s *queueService) longPoll(ctx context.Context, p engine.ReserveParams, wait time.Duration, first *waiter) ([]engine.Delivery, error) {
	select {
	case s.longPolls <- struct{}{}:
		defer func() { <-s.longPolls }()
	default:
		return nil, status.Errorf(codes.ResourceExhausted,
			"wait: this server already holds its limit of %d waiting reserves; retry with a shorter or no wait, or later",
			cap(s.longPolls))
	}
	timer := time.NewTimer(wait)
	defer timer.Stop()
	// emptyProposals counts reserves since the last wake-up that found
	// nothing although the local state showed Ready jobs: another worker
	// won the race. Looking again at once catches jobs that became Ready
	// meanwhile; the bound keeps a state that shows Ready jobs the engine
	// will not hand out from becoming a loop of proposals.
	const maxEmptyProposals = 2
	emptyProposals := 0
	// With first, the caller has looked already, after registering.
	look, w := first == nil, waiter{}
	if first != nil {
		w = *first
	}
	// On the leader the wait is also a parked reserve: the entry that
	// enqueues a job into the queue takes it along and hands the job over
	// in the same commit (cluster/handoff.go). It stays parked across
	// wake-ups and is withdrawn only to propose through the look below, or
	// to leave; one an entry took already is waited for instead.
	var parked *cluster.ParkedReserve
	unpark := func() ([]engine.Delivery, error) {
		if parked == nil {
			return nil, nil
		}
		defer func() { parked = nil }()
		if parked.Withdraw() {
			return nil, nil
		}
		return parked.Wait(ctx)
	}
	for {
		if look {
			// Register before looking, so an entry applied (or a claim
			// released) between the look and the wait still wakes us.
			w = s.register()
			if emptyProposals < maxEmptyProposals {
				if ready := s.readyToReserve(ctx, p.Queue); ready > 0 && s.polls.claim(p.Queue, ready, p.N) {
					if ds, err := unpark(); err != nil || len(ds) > 0 {
						s.polls.release(p.Queue, p.N)
						return ds, err
					}
					ds, err := Propose(ctx, s.b, engine.ReserveOp{Params: p})
					s.polls.release(p.Queue, p.N)
					if err != nil || len(ds) > 0 {
						return ds, err
					}
					emptyProposals++
					continue
				}
			}
		}
		look = true
		if parked == nil {
			parked = s.park(p)
		}
		var answered <-chan struct{}
		if parked != nil {
			answered = parked.Answered()
		}
		select {
		case <-answered:
			ds, err := unpark()
			if err != nil || len(ds) > 0 {
				return ds, err
			}
		case <-w.applied:
			emptyProposals = 0
		case <-w.released:
		case <-timer.C:
			return unpark()
		case <-ctx.Done():
			if ds, err := unpark(); err != nil || len(ds) > 0 {
				return ds, err
			}
			return nil, ctx.Err()
		}
	}
}

// park parks a reserve with p on the leader's proposer, when the backend
// can hand jobs over in the entry that enqueues them; nil otherwise.
func (s *queueService) park(p engine.ReserveParams) *cluster.ParkedReserve {
	parker, ok := s.b.(reserveParker)
	if !ok {
		return nil
	}
	return parker.ParkReserve(p)
}

// reserveParker is a Backend whose leader hands a job to a waiting reserve
// in the entry that enqueues it (cluster.Node).
type reserveParker interface {
	ParkReserve(p engine.ReserveParams) *cluster.ParkedReserve
}

// pollClaims keeps the waiting Reserves of a queue from all proposing for
// the same few jobs: a waiter proposes only while the Ready jobs this node
// sees outnumber the jobs the waiters already proposing have asked for.
// One new job wakes every waiter, but only one of them spends a log entry
// on it; the others go back to waiting. (Reserves that do not wait never
// claim: they propose at once, as before.)
type pollClaims struct {
	mu      sync.Mutex
	claimed map[string]int
	ch      chan struct{} // closed and replaced when a claim is released
}

func newPollClaims() *pollClaims {
	return &pollClaims{claimed: map[string]int{}, ch: make(chan struct{})}
}

// changed returns a channel closed at the next release.
func (c *pollClaims) changed() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ch
}

// claim reserves n of queue's ready jobs for one waiter's proposal; false
// when the waiters already proposing have asked for all of them.
func (c *pollClaims) claim(queue string, ready, n int) bool {
	n = max(n, 1)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.claimed[queue] >= ready {
		return false
	}
	c.claimed[queue] += n
	return true
}

func (c *pollClaims) release(queue string, n int) {
	n = max(n, 1)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.claimed[queue] -= n; c.claimed[queue] <= 0 {
		delete(c.claimed, queue)
	}
	close(c.ch)
	c.ch = make(chan struct{})
}

// readyToReserve returns how many Ready jobs this node's applied state
// shows on queue, 0 when it is paused. A queue the engine does not know yet
// has none.
func (s *queueService) readyToReserve(ctx context.Context, queue string) int {
	var ready int
	err := s.b.Read(ctx, true, func(e engine.View) error {
		ready = e.Reservable(queue)
		return nil
	})
	if err != nil {
		// A failed local read must not stall the poll: let the
		// proposal decide (it fails properly if the node is unwell).
		s.log.Debug("long-poll ready check failed", "queue", queue, "error", err)
		return math.MaxInt
	}
	return ready
}

func (s *queueService) Ack(ctx context.Context, req *seppv1.AckRequest) (*seppv1.AckResponse, error) {
	ref, err := leaseRef(req.GetCtx())
	if err != nil {
		return nil, err
	}
	if err := s.checkResult(req.GetResult()); err != nil {
		return nil, err
	}
	followUps, err := s.followUpParams(req.GetFollowUps())
	if err != nil {
		return nil, err
	}
	spans := s.settleSpans(ctx, "ack", []engine.LeaseRef{ref})
	var results []engine.EnqueueResult
	if len(followUps) > 0 {
		results, err = Propose(ctx, s.b, engine.AckFollowUpsOp{Ref: ref, Result: req.GetResult(), FollowUps: followUps})
	} else {
		_, err = Propose(ctx, s.b, engine.AckOp{Ref: ref, Result: req.GetResult()})
	}
	if spans != nil {
		endJobSpan(spans[0], ref.JobID, err)
	}
	if err != nil {
		return nil, err
	}
	if len(results) != len(followUps) {
		return nil, errors.New("ack: backend returned " + itoa(len(results)) + " follow-up results for " + itoa(len(followUps)))
	}
	out := &seppv1.AckResponse{}
	if len(results) > 0 {
		out.FollowUps = make([]*seppv1.EnqueueResponse, len(results))
		for i, r := range results {
			out.FollowUps[i] = enqueueResultToProto(r)
		}
	}
	return out, nil
}

// followUpParams checks an Ack's follow-ups as Enqueue checks a request,
// each naming its item (follow_ups[i].<field>). Any bad item refuses the
// ack: the follow-ups are all or nothing. Their number is the engine's to
// bound (limits.max_batch_size, EnqueueBatch's limit, refused at apply
// with nothing applied, as EnqueueBatch's is); the whole request is
// bounded by max_message_bytes already, which the log's command limit
// holds (cluster.Config.MaxCommandBytes), so the entry fits.
func (s *queueService) followUpParams(reqs []*seppv1.EnqueueRequest) ([]engine.EnqueueParams, error) {
	if len(reqs) == 0 {
		return nil, nil
	}
	params := make([]engine.EnqueueParams, len(reqs))
	for i, r := range reqs {
		if err := fillEnqueueParams(&params[i], "follow_ups["+itoa(i)+"].", r); err != nil {
			return nil, err
		}
	}
	return params, nil
}

// ErrResultNotKept refuses an Ack that carries a result while some member
// of the cluster keeps no results: nothing was applied, the lease still
// holds. A worker that sends a result expects it kept (WaitJob, GetJob),
// so dropping it silently would lose the job's outcome; the worker may ack
// without it. The gRPC layer answers FailedPrecondition with a
// PreconditionFailure of type VERSION naming the feature "results". (A
// queue whose completed_retention_ms is 0 refuses a result too, with
// engine.ErrNoCompletedRetention: the cluster keeps results, that queue
// does not.)
var ErrResultNotKept = cluster.ErrResultNotKept

// checkResult checks an Ack's result against max_result_bytes; whether it
// is kept is the cluster's and the queue's to say.
func (s *queueService) checkResult(result []byte) error {
	if n := len(result); n > s.opts.MaxResultBytes {
		return invalidField("result", "max_result_bytes="+itoa(s.opts.MaxResultBytes),
			"must be at most max_result_bytes=%d bytes, got %d", s.opts.MaxResultBytes, n)
	}
	return nil
}

// MaxAckBatch is the most deliveries one AckBatch call may carry.
const MaxAckBatch = 1000

// ackBatcher is implemented by backends that propose several acks together
// (cluster.Node: one log entry, one disk write). Other backends get one Ack
// per item.
type ackBatcher interface {
	AckBatch(ctx context.Context, refs []engine.LeaseRef) ([]error, error)
}

func (s *queueService) AckBatch(ctx context.Context, req *seppv1.AckBatchRequest) (*seppv1.AckBatchResponse, error) {
	n := len(req.GetCtxs())
	if n == 0 || n > MaxAckBatch {
		return nil, invalidField("ctxs", "1.."+itoa(MaxAckBatch), "must hold 1..%d deliveries, got %d", MaxAckBatch, n)
	}
	// Items the rpc layer rejects fail alone; the rest are acked together.
	results := make([]*seppv1.AckBatchResult, n)
	refs := make([]engine.LeaseRef, 0, n)
	positions := make([]int, 0, n)
	for i, jc := range req.GetCtxs() {
		ref, err := leaseRef(jc)
		if err != nil {
			var fe *fieldError
			if errors.As(err, &fe) {
				err = &fieldError{Field: "ctxs[" + itoa(i) + "]" + strings.TrimPrefix(fe.Field, "ctx"), Limit: fe.Limit, Reason: fe.Reason}
			}
			results[i] = &seppv1.AckBatchResult{Error: itemErrorFor(err)}
			continue
		}
		refs = append(refs, ref)
		positions = append(positions, i)
	}
	if len(refs) > 0 {
		spans := s.settleSpans(ctx, "ack", refs)
		errs, err := s.ackAll(ctx, refs)
		for k, span := range spans {
			switch {
			case err != nil:
				endJobSpan(span, refs[k].JobID, err)
			default:
				endJobSpan(span, refs[k].JobID, errs[k])
			}
		}
		if err != nil {
			return nil, err
		}
		for k, e := range errs {
			r := &seppv1.AckBatchResult{}
			if e != nil {
				r.Error = itemErrorFor(e)
			}
			results[positions[k]] = r
		}
	}
	return &seppv1.AckBatchResponse{Results: results}, nil
}

// ackAll acks refs through the backend's batch path when it has one. A
// non-nil error fails the whole call (the client retries it whole).
func (s *queueService) ackAll(ctx context.Context, refs []engine.LeaseRef) ([]error, error) {
	if ab, ok := s.b.(ackBatcher); ok {
		errs, err := ab.AckBatch(ctx, refs)
		if err == nil && len(errs) != len(refs) {
			err = errors.New("ack batch: backend returned " + itoa(len(errs)) + " results for " + itoa(len(refs)) + " items")
		}
		return errs, err
	}
	errs := make([]error, len(refs))
	for i, ref := range refs {
		_, err := Propose(ctx, s.b, engine.AckOp{Ref: ref})
		if err != nil && !isDeliveryError(err) {
			return nil, err
		}
		errs[i] = err
	}
	return errs, nil
}

// isDeliveryError reports whether err is the engine's answer about one
// delivery (lease lost, not found, wrong state) rather than a failure of
// the node or the call.
func isDeliveryError(err error) bool {
	for _, sentinel := range []error{engine.ErrLeaseLost, engine.ErrNotFound, engine.ErrWrongState, engine.ErrInvalidArgument, engine.ErrUnknownQueue} {
		if errors.Is(err, sentinel) {
			return true
		}
	}
	return false
}

func (s *queueService) Release(ctx context.Context, req *seppv1.ReleaseRequest) (*seppv1.ReleaseResponse, error) {
	ref, err := leaseRef(req.GetCtx())
	if err != nil {
		return nil, err
	}
	if _, err := Propose(ctx, s.b, engine.ReleaseOp{Ref: ref}); err != nil {
		return nil, err
	}
	return &seppv1.ReleaseResponse{}, nil
}

func (s *queueService) Nack(ctx context.Context, req *seppv1.NackRequest) (*seppv1.NackResponse, error) {
	ref, err := leaseRef(req.GetCtx())
	if err != nil {
		return nil, err
	}
	p := engine.NackParams{LeaseRef: ref, Reason: truncateReason(req.GetReason())}
	switch d := req.GetDirective().GetDirective().(type) {
	case *seppv1.RetryDirective_Default:
		p.Directive = engine.DirectiveDefault
	case nil:
		// No kind set. With nothing on the wire either (no directive field,
		// or an empty one) the worker never set a directive: the queue's
		// policy applies (spec NAK-12), so an outdated worker is paced
		// instead of refused and left to wait out its lease. Unknown fields
		// mean a newer client's kind this server does not know: never
		// guess what the worker meant.
		if len(req.GetDirective().ProtoReflect().GetUnknown()) > 0 {
			return nil, invalidField("directive", "one of default, after, dead_letter",
				"is of a kind this server does not know; set exactly one of default, after or dead_letter")
		}
		p.Directive = engine.DirectiveDefault
	case *seppv1.RetryDirective_After:
		after, err := validateDuration("directive.after", d.After)
		if err != nil {
			return nil, err
		}
		p.Directive, p.After = engine.DirectiveAfter, after
	case *seppv1.RetryDirective_DeadLetter:
		p.Directive = engine.DirectiveDeadLetter
	default:
		// A kind compiled into this server's proto but not handled here.
		return nil, invalidField("directive", "one of default, after, dead_letter",
			"must set exactly one of default, after or dead_letter")
	}
	spans := s.settleSpans(ctx, "nack", []engine.LeaseRef{ref})
	res, err := Propose(ctx, s.b, engine.NackOp{Params: p})
	if spans != nil {
		if err == nil {
			spans[0].SetAttributes(attribute.Bool("sepp.dead_lettered", res.DeadLettered))
		}
		endJobSpan(spans[0], ref.JobID, err)
	}
	if err != nil {
		return nil, err
	}
	return &seppv1.NackResponse{DeadLettered: res.DeadLettered, NextAttemptAt: timestampOrNil(res.NextAttemptAt)}, nil
}

func (s *queueService) ExtendLease(ctx context.Context, req *seppv1.ExtendLeaseRequest) (*seppv1.ExtendLeaseResponse, error) {
	ref, err := leaseRef(req.GetCtx())
	if err != nil {
		return nil, err
	}
	lease, err := validateDuration("lease", req.GetLease())
	if err != nil {
		return nil, err
	}
	progress, err := apiconv.Progress(req.GetProgress())
	if err != nil {
		return nil, err
	}
	deadline, err := Propose(ctx, s.b, engine.ExtendLeaseOp{Params: engine.ExtendParams{LeaseRef: ref, Lease: lease, Progress: progress}})
	if err != nil {
		return nil, err
	}
	return &seppv1.ExtendLeaseResponse{LeaseDeadline: timestampOrNil(deadline)}, nil
}

func (s *queueService) DrainDeadLetters(ctx context.Context, req *seppv1.DrainDeadLettersRequest) (*seppv1.DrainDeadLettersResponse, error) {
	p := engine.DrainParams{Max: int(min(req.GetMax(), 1<<20))} // the engine clamps to max_reserve_batch
	if req.Queue != nil {
		p.Queue = req.GetQueue()
	}
	p.Max = s.drainMax(ctx, p)
	recs, err := Propose(ctx, s.b, engine.DrainDeadLettersOp{Params: p})
	if err != nil {
		return nil, err
	}
	out := &seppv1.DrainDeadLettersResponse{Records: deadLettersToProto(recs)}
	// Say whether an empty answer means "nothing dead" or "dead jobs are
	// dropped", with the count dropped. The records are already drained, so
	// a failed read must not lose them: it leaves the two fields unset.
	_ = s.b.Read(ctx, false, func(e engine.View) error {
		out.DeadLetterRetentionEnabled = e.Config().Limits.DeadLetterRetention > 0
		if p.Queue != "" {
			if q, err := e.QueueStats(time.Time{}, p.Queue); err == nil {
				out.DroppedTotal = q.Dropped
			}
			return nil
		}
		for _, q := range e.Stats(time.Time{}) {
			out.DroppedTotal += q.Dropped
		}
		return nil
	})
	return out, nil
}

func (s *queueService) GetServerInfo(ctx context.Context, req *seppv1.GetServerInfoRequest) (*seppv1.GetServerInfoResponse, error) {
	var cfg engine.Config
	var held, diskHeld int64
	var offHeap bool
	if err := s.b.Read(ctx, req.GetAllowStale(), func(e engine.View) error {
		cfg = e.Config()
		held = e.MemoryHeldTotal()
		diskHeld, offHeap = e.DiskHeld(), e.PayloadsOffHeap()
		return nil
	}); err != nil {
		return nil, err
	}
	self, leader := s.b.Self(), s.b.Leader()
	l := cfg.Limits
	out := &seppv1.GetServerInfoResponse{
		Version:                    s.opts.Version,
		NodeId:                     self.ID,
		LeaderId:                   leader.ID,
		LeaderGrpcAddr:             leader.GRPCAddr,
		Stale:                      req.GetAllowStale() && leader.ID != self.ID,
		DeadLetterRetentionEnabled: l.DeadLetterRetention > 0,
		DeadLetterRetentionMs:      l.DeadLetterRetention.Milliseconds(),
		MaxReserveBatch:            uint32(max(l.MaxReserveBatch, 0)),
		MaxScheduleHorizonMs:       l.MaxScheduleHorizon.Milliseconds(),
		Limits:                     limitsToProto(l, s.opts),
	}
	out.Limits.MemoryHeldBytes = uint64(max(held, 0))
	out.Limits.DiskHeldBytes = uint64(max(diskHeld, 0))
	out.Limits.PayloadsOffHeap = offHeap
	for _, q := range cfg.Queues {
		out.Queues = append(out.Queues, queueLimitsToProto(q, l))
	}
	// Every member's facts, as this node's replicated state records them,
	// and from their command versions which features the whole cluster
	// can use now.
	var clusterVersion uint32
	if st, err := s.b.Status(ctx); err == nil {
		for _, m := range st.Members {
			if f := memberFactsToProto(m.Facts); f != nil {
				out.Members = append(out.Members, f)
			}
		}
		clusterVersion = cluster.ClusterCommandVersion(st.Members)
		out.Limits.PayloadStoreBytes = st.PayloadStoreBytes
		out.Limits.SnapshotCheckpointPinnedBytes = st.SnapshotCheckpointPinnedBytes
	}
	for _, f := range cluster.Features() {
		out.Capabilities = append(out.Capabilities, &seppv1.Capability{
			Name: f.Name, CommandVersion: f.CommandVersion, ClusterReady: f.CommandVersion <= clusterVersion,
		})
	}
	return out, nil
}
