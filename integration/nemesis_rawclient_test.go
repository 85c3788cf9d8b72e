package integration

import (
	"context"
	"fmt"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/sepp-io/sepp/integration/history"
	seppv1 "github.com/sepp-io/sepp/proto/sepp/v1"
)

// rawClient is a second, minimal client of sepp built from the generated
// stubs of proto/sepp/v1 and plain grpc alone, as a user in another
// language would write one from the .proto files: it knows nothing of
// client/. It follows the leader by the NotLeader detail of an UNAVAILABLE
// answer, tries the next address when a node does not answer, and retries
// a call whose outcome is unknown with the same idempotency key or request
// id (acks and nacks are fenced by the lease token). Its calls go into the
// same history as the Go client's, so the checker holds both to the same
// promises.
type rawClient struct {
	addrs []string
	mu    sync.Mutex
	conns map[string]*grpc.ClientConn
	cur   string // where the next call goes: the last leader named
}

func newRawClient(addrs []string) *rawClient {
	return &rawClient{addrs: addrs, conns: map[string]*grpc.ClientConn{}, cur: addrs[0]}
}

func (r *rawClient) Close() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, cc := range r.conns {
		cc.Close()
	}
}

func (r *rawClient) conn(addr string) (*grpc.ClientConn, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if cc, ok := r.conns[addr]; ok {
		return cc, nil
	}
	cc, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return nil, err
	}
	r.conns[addr] = cc
	return cc, nil
}

// next moves to the address after addr (a node that did not answer).
func (r *rawClient) next(addr string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i, a := range r.addrs {
		if a == addr {
			r.cur = r.addrs[(i+1)%len(r.addrs)]
			return
		}
	}
	r.cur = r.addrs[0]
}

// Budgets of the raw client: one attempt, and one call with its retries.
const (
	rawAttemptTimeout = time.Second
	rawCallTimeout    = 10 * time.Second
)

// call runs fn against the node believed to lead until it succeeds, fails
// for good, or the call's budget runs out. The outcome is OK on success;
// Failed only when every attempt certainly did not apply (a NotLeader
// answer, or a definite refusal such as a stale lease); otherwise Unknown.
func (r *rawClient) call(ctx context.Context, extra time.Duration, fn func(ctx context.Context, q seppv1.QueueServiceClient) error) (history.Outcome, error) {
	o, _, err := r.callAmbiguous(ctx, extra, fn)
	return o, err
}

// callAmbiguous is call, also reporting whether an attempt before the last
// may have applied.
func (r *rawClient) callAmbiguous(ctx context.Context, extra time.Duration, fn func(ctx context.Context, q seppv1.QueueServiceClient) error) (history.Outcome, bool, error) {
	ctx, cancel := context.WithTimeout(ctx, rawCallTimeout)
	defer cancel()
	maybeApplied := false
	backoff := 10 * time.Millisecond
	for {
		r.mu.Lock()
		addr := r.cur
		r.mu.Unlock()
		cc, err := r.conn(addr)
		if err != nil {
			return history.Failed, maybeApplied, err
		}
		actx, acancel := context.WithTimeout(ctx, rawAttemptTimeout+extra)
		err = fn(actx, seppv1.NewQueueServiceClient(cc))
		acancel()
		if err == nil {
			return history.OK, maybeApplied, nil
		}
		st, _ := status.FromError(err)
		notLeader := false
		for _, d := range st.Details() {
			if nl, ok := d.(*seppv1.NotLeader); ok {
				notLeader = true
				r.mu.Lock()
				if nl.GetLeaderGrpcAddr() != "" {
					r.cur = nl.GetLeaderGrpcAddr()
				}
				r.mu.Unlock()
				if nl.GetLeaderGrpcAddr() == "" {
					r.next(addr) // an election is on: ask around
				}
			}
		}
		switch {
		case notLeader:
			// Nothing applied: retry at once on the named leader.
		case st.Code() == codes.Unavailable || st.Code() == codes.Aborted || st.Code() == codes.DeadlineExceeded:
			// No leader, a transport failure (maybe after the request was
			// sent), an unknown outcome, or no answer in time: it may have
			// applied.
			maybeApplied = true
			r.next(addr)
		default:
			// A real answer (stale lease, not found, bad argument).
			if maybeApplied {
				return history.Unknown, true, err
			}
			return history.Failed, false, err
		}
		if ctx.Err() != nil {
			if maybeApplied {
				return history.Unknown, true, err
			}
			return history.Failed, false, err
		}
		pause(ctx, backoff)
		backoff = min(2*backoff, 200*time.Millisecond)
	}
}

// startRawWorkload adds producers and workers that use rawClient to w:
// they share its record, job budget, hold and stop flags, so w.stop and the
// checker treat them like the Go client's.
func startRawWorkload(ctx context.Context, w *workload, addrs []string, producers, workers int) (closeAll func()) {
	var clients []*rawClient
	for i := range producers {
		c := newRawClient(addrs)
		clients = append(clients, c)
		w.producerWG.Add(1)
		go func() {
			defer w.producerWG.Done()
			w.produceRaw(ctx, 50+i, c)
		}()
	}
	for i := range workers {
		c := newRawClient(addrs)
		clients = append(clients, c)
		w.workerWG.Add(1)
		go func() {
			defer w.workerWG.Done()
			w.workRaw(ctx, 150+i, c)
		}()
	}
	return func() {
		for _, c := range clients {
			c.Close()
		}
	}
}

func (w *workload) produceRaw(ctx context.Context, id int, c *rawClient) {
	for seq := 0; ; seq++ {
		if w.held(ctx, &w.stopProducers) {
			return
		}
		if w.produced.Add(1) > int64(w.opts.MaxJobs) {
			return
		}
		key := fmt.Sprintf("raw%d-%d", id, seq)
		prio := uint32((seq % 3) * 4)
		op := history.Op{Kind: history.KindEnqueue, Client: id, Key: key, Priority: prio, MaxAttempts: workMaxAttempts, Start: time.Now()}
		var res *seppv1.EnqueueResponse
		outcome, err := c.call(ctx, 0, func(ctx context.Context, q seppv1.QueueServiceClient) error {
			r, err := q.Enqueue(ctx, &seppv1.EnqueueRequest{
				Queue: workQueue, JobType: "work", Payload: []byte(key), Priority: &prio,
				MaxAttempts: workMaxAttempts, IdempotencyKey: key,
			})
			res = r
			return err
		})
		op.End, op.Outcome, op.Err = time.Now(), outcome, errString(err)
		if outcome == history.OK {
			op.JobID, op.Duplicate = res.GetJobId(), res.GetDuplicate()
		}
		w.rec.Add(op)
		pause(ctx, producerPace)
	}
}

func (w *workload) workRaw(ctx context.Context, id int, c *rawClient) {
	workerID := fmt.Sprintf("raw-worker-%d", id)
	for n := 0; ; n++ {
		if w.held(ctx, &w.stopWorkers) {
			return
		}
		op := history.Op{Kind: history.KindReserve, Client: id, Queue: workQueue, Start: time.Now()}
		// One request id for the call and its retries: a retried reserve
		// whose first attempt applied returns the same deliveries.
		reqID := fmt.Sprintf("%s-%d", workerID, n)
		var jobs []*seppv1.ReservedJob
		outcome, ambiguous, err := c.callAmbiguous(ctx, workReserveWait, func(ctx context.Context, q seppv1.QueueServiceClient) error {
			r, err := q.Reserve(ctx, &seppv1.ReserveRequest{
				Queue: workQueue, WorkerId: workerID, Max: 4, RequestId: reqID,
				Lease: durationpb.New(workLease), Wait: durationpb.New(workReserveWait),
			})
			jobs = r.GetJobs()
			return err
		})
		op.End, op.Outcome, op.Err = time.Now(), outcome, errString(err)
		for _, j := range jobs {
			jc := j.GetCtx()
			op.Deliveries = append(op.Deliveries, history.Delivery{
				JobID: jc.GetJobId(), Token: jc.GetLeaseToken(), Attempt: jc.GetAttempt(), MaxAttempts: jc.GetMaxAttempts(),
				Deadline: jc.GetLeaseDeadline().AsTime(), Priority: j.GetJob().GetPriority(), Key: string(j.GetJob().GetPayload()),
			})
		}
		w.rec.Add(op)
		if outcome == history.OK && ambiguous {
			// A retry with the request id returns the first attempt's
			// deliveries only while their leases live: one that outlived
			// them answers with others (or none), and what the first
			// handed out was never seen. Say so in the record.
			w.rec.Add(history.Op{Kind: history.KindReserve, Client: id, Queue: workQueue, Start: op.Start, End: op.End, Outcome: history.Unknown,
				Err: "an earlier attempt of this reserve may have applied"})
		}
		if outcome != history.OK {
			pause(ctx, 50*time.Millisecond)
			continue
		}
		for _, j := range jobs {
			w.answerRaw(ctx, id, c, j.GetCtx())
		}
	}
}

func (w *workload) answerRaw(ctx context.Context, id int, c *rawClient, jc *seppv1.JobContext) {
	f := fateOf(jc.GetJobId(), jc.GetAttempt())
	if f == fateAbandon {
		return
	}
	op := history.Op{Client: id, JobID: jc.GetJobId(), Token: jc.GetLeaseToken(), Attempt: jc.GetAttempt(), Start: time.Now()}
	var outcome history.Outcome
	var err error
	switch f {
	case fateAck:
		op.Kind = history.KindAck
		outcome, err = c.call(ctx, 0, func(ctx context.Context, q seppv1.QueueServiceClient) error {
			_, err := q.Ack(ctx, &seppv1.AckRequest{Ctx: jc})
			return err
		})
	case fateRetry, fateReject:
		op.Kind = history.KindNack
		dir := &seppv1.RetryDirective{Directive: &seppv1.RetryDirective_Default{Default: &emptypb.Empty{}}}
		if f == fateReject {
			dir, op.DeadLetter = &seppv1.RetryDirective{Directive: &seppv1.RetryDirective_DeadLetter{DeadLetter: &emptypb.Empty{}}}, true
		}
		outcome, err = c.call(ctx, 0, func(ctx context.Context, q seppv1.QueueServiceClient) error {
			r, err := q.Nack(ctx, &seppv1.NackRequest{Ctx: jc, Directive: dir, Reason: "integration: planned failure (raw client)"})
			op.DeadLettered = r.GetDeadLettered()
			return err
		})
	}
	op.End, op.Outcome, op.Err = time.Now(), outcome, errString(err)
	w.rec.Add(op)
}
