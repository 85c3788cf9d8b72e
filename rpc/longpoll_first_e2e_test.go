package rpc_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/sepp-io/sepp/cluster"
	"github.com/sepp-io/sepp/cluster/clustertest"
	"github.com/sepp-io/sepp/engine"
	seppv1 "github.com/sepp-io/sepp/proto/sepp/v1"
	"github.com/sepp-io/sepp/rpc"
	"github.com/sepp-io/sepp/rpc/rpctest"
)

// proposals counts the Reserves a backend runs (each one a log entry on a
// cluster node) and signals every local read (each look of a reserve at the
// state before it waits or proposes).
type proposals struct {
	mu       sync.Mutex
	reserves int
	reads    chan struct{}
}

func countProposals(env *rpctest.Env) *proposals {
	p := &proposals{reads: make(chan struct{}, 100)}
	env.Backend.FailWith(func(op string) error {
		switch op {
		case "Read":
			p.reads <- struct{}{}
		case "Reserve":
			p.mu.Lock()
			p.reserves++
			p.mu.Unlock()
		}
		return nil
	})
	return p
}

func (p *proposals) count() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.reserves
}

// A waiting Reserve on the leader proposes only when its state shows
// something to reserve: an empty queue costs no log entry, however long the
// worker waits and whatever else is applied meanwhile.
func TestReserve_LongPollFirstLook(t *testing.T) {
	t.Parallel()
	long := durationpb.New(time.Minute) // clamped to the 30s cap; the test never waits for it

	t.Run("EmptyQueueProposesNothingUntilAJobArrives", func(t *testing.T) {
		env := start(t, nil)
		props := countProposals(env)
		res := reserveAsync(ctxT(t), env, &seppv1.ReserveRequest{Queue: "q", WorkerId: "w", Wait: long})
		awaitSignal(t, props.reads, "the reserve to look at the empty queue")
		// Entries that give q nothing wake the reserve; it looks again
		// and goes back to waiting.
		for range 2 {
			enqueue(t, env, &seppv1.EnqueueRequest{Queue: "other"})
			awaitSignal(t, props.reads, "the reserve to look again")
		}
		if n := props.count(); n != 0 {
			t.Fatalf("a reserve waiting on an empty queue proposed %d reserves, want none", n)
		}
		id := enqueue(t, env, &seppv1.EnqueueRequest{Queue: "q"}).GetJobId()
		r := awaitReserve(t, res)
		if r.err != nil || len(r.resp.GetJobs()) != 1 || r.resp.GetJobs()[0].GetCtx().GetJobId() != id {
			t.Fatalf("long-poll = %v, %v; want job %d", r.resp, r.err, id)
		}
		if n := props.count(); n != 1 {
			t.Errorf("one job for one waiting reserve: %d reserves proposed, want 1", n)
		}
	})
	t.Run("JobEnqueuedBeforeTheWait", func(t *testing.T) {
		env := start(t, nil)
		id := enqueue(t, env, &seppv1.EnqueueRequest{Queue: "q"}).GetJobId()
		props := countProposals(env)
		jobs := reserve(t, env, &seppv1.ReserveRequest{Queue: "q", Wait: long})
		if len(jobs) != 1 || jobs[0].GetCtx().GetJobId() != id || props.count() != 1 {
			t.Fatalf("long-poll with a Ready job = %v after %d proposals; want job %d at once", jobs, props.count(), id)
		}
	})
	t.Run("JobEnqueuedBetweenTheLookAndTheWait", func(t *testing.T) {
		// The job is applied right after the reserve's first look found
		// the queue empty, before it waits: it must still wake it.
		lb, err := rpctest.NewLocalBackend(engine.Config{Limits: engine.DefaultLimits()}, cluster.NodeInfo{ID: "node-1"}, nil)
		if err != nil {
			t.Fatal(err)
		}
		eb := &enqueueAfterLook{LocalBackend: lb, queue: "q"}
		qc := seppv1.NewQueueServiceClient(rpctest.Dial(t, rpctest.Serve(t, eb, rpc.Options{})))
		resp, err := qc.Reserve(ctxT(t), &seppv1.ReserveRequest{Queue: "q", Wait: long})
		if err != nil || len(resp.GetJobs()) != 1 || resp.GetJobs()[0].GetCtx().GetJobId() != eb.enqueued.Load() {
			t.Fatalf("long-poll = %v, %v; want job %d, enqueued after its first look", resp, err, eb.enqueued.Load())
		}
	})
	t.Run("PausedQueueResumed", func(t *testing.T) {
		env := start(t, nil)
		id := enqueue(t, env, &seppv1.EnqueueRequest{Queue: "q"}).GetJobId()
		if _, err := env.Admin.PauseQueue(ctxT(t), &seppv1.PauseQueueRequest{Queue: "q"}); err != nil {
			t.Fatal(err)
		}
		props := countProposals(env)
		res := reserveAsync(ctxT(t), env, &seppv1.ReserveRequest{Queue: "q", Wait: long})
		awaitSignal(t, props.reads, "the reserve to look at the paused queue")
		if _, err := env.Admin.ResumeQueue(ctxT(t), &seppv1.ResumeQueueRequest{Queue: "q"}); err != nil {
			t.Fatal(err)
		}
		r := awaitReserve(t, res)
		if r.err != nil || len(r.resp.GetJobs()) != 1 || r.resp.GetJobs()[0].GetCtx().GetJobId() != id {
			t.Fatalf("long-poll = %v, %v; want job %d once the queue resumes", r.resp, r.err, id)
		}
		if n := props.count(); n != 1 {
			t.Errorf("%d reserves proposed, want 1 (after the resume)", n)
		}
	})
	t.Run("RetryReplaysItsReservationAtOnce", func(t *testing.T) {
		// The queue is empty, but the request id names a reservation: the
		// retry must propose to get it back, not wait.
		env := start(t, nil)
		enqueue(t, env, &seppv1.EnqueueRequest{Queue: "q"})
		req := &seppv1.ReserveRequest{Queue: "q", RequestId: "r-1", Wait: long}
		first := reserve(t, env, req)
		retry := reserve(t, env, req)
		if len(first) != 1 || len(retry) != 1 || retry[0].GetCtx().GetLeaseToken() != first[0].GetCtx().GetLeaseToken() {
			t.Fatalf("retried long-poll = %v, want the delivery %v", retry, first)
		}
	})
	t.Run("InvalidRequestFailsAtOnce", func(t *testing.T) {
		env := start(t, nil)
		_, err := env.Queue.Reserve(ctxT(t), &seppv1.ReserveRequest{Queue: "bad name", Wait: long})
		requireCode(t, err, codes.InvalidArgument)
	})
	t.Run("FollowerRedirectsAtOnce", func(t *testing.T) {
		// A follower's state says nothing about what the leader would
		// hand out: it proposes, and its refusal names the leader.
		env := start(t, nil)
		env.Backend.SetLeader(cluster.NodeInfo{ID: "node-2", GRPCAddr: "10.0.0.2:50051"})
		ctx, cancel := context.WithCancel(ctxT(t))
		defer cancel()
		r := awaitReserve(t, reserveAsync(ctx, env, &seppv1.ReserveRequest{Queue: "q", Wait: long}))
		st := requireCode(t, r.err, codes.Unavailable)
		if nl, ok := detail[*seppv1.NotLeader](st); !ok || nl.GetLeaderId() != "node-2" {
			t.Errorf("NotLeader = %v, want node-2", nl)
		}
	})
}

// enqueueAfterLook enqueues one job to queue right after the first local
// read returns, before the reader can act on what it saw.
type enqueueAfterLook struct {
	*rpctest.LocalBackend
	queue string

	once     sync.Once
	enqueued atomic.Uint64 // the job's id, once enqueued
}

func (b *enqueueAfterLook) Read(ctx context.Context, stale bool, fn func(e engine.View) error) error {
	err := b.LocalBackend.Read(ctx, stale, fn)
	b.once.Do(func() {
		// An enqueue that fails leaves the id 0, which no reserve returns.
		if res, err := rpc.Propose(ctx, b.LocalBackend, engine.EnqueueOp{Params: engine.EnqueueParams{Queue: b.queue, JobType: "t"}}); err == nil {
			b.enqueued.Store(uint64(res.JobID))
		}
	})
	return err
}

// raftNodeServing starts a one-node Raft cluster served over gRPC with
// maxWait as the long-poll cap, and returns the node, a client and its
// last log index. One write has gone through, so the leader's own first
// entries are in the log.
func raftNodeServing(ctx context.Context, t *testing.T, maxWait time.Duration) (*cluster.Node, seppv1.QueueServiceClient, func() uint64) {
	t.Helper()
	nodes := clustertest.New(t, 1, clustertest.WithInmemTransport())
	node := nodes.Node(nodes.WaitLeader())
	qc := seppv1.NewQueueServiceClient(rpctest.Dial(t, rpctest.Serve(t, node, rpc.Options{MaxReserveWait: maxWait})))
	if _, err := qc.Enqueue(ctx, &seppv1.EnqueueRequest{Queue: "other", JobType: "t"}); err != nil {
		t.Fatal(err)
	}
	return node, qc, func() uint64 {
		st, err := node.Status(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return st.LastLogIndex
	}
}

// TestReserve_LongPollWritesNoLogEntry: on a real Raft node, a worker that
// waits out its long poll on an empty queue adds nothing to the log.
func TestReserve_LongPollWritesNoLogEntry(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a Raft node")
	}
	ctx := ctxT(t)
	_, qc, lastIndex := raftNodeServing(ctx, t, 100*time.Millisecond)
	before := lastIndex()
	resp, err := qc.Reserve(ctx, &seppv1.ReserveRequest{Queue: "q", WorkerId: "w", Wait: durationpb.New(time.Minute)})
	if err != nil || len(resp.GetJobs()) != 0 {
		t.Fatalf("long-poll on an empty queue = %v, %v; want no jobs", resp, err)
	}
	if after := lastIndex(); after != before {
		t.Errorf("a long poll on an empty queue added %d log entries, want none", after-before)
	}
}

// TestReserve_LongPollHandedTheJobInTheEnqueuesEntry: on a real Raft
// leader, a worker waiting in a long poll gets a job from the very log
// entry that enqueues it: the enqueue adds one entry, not two, and the
// reserve rode along with it (cluster/handoff.go).
func TestReserve_LongPollHandedTheJobInTheEnqueuesEntry(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a Raft node")
	}
	ctx := ctxT(t)
	node, qc, lastIndex := raftNodeServing(ctx, t, 30*time.Second)
	for _, tc := range []struct {
		name    string
		enqueue *seppv1.EnqueueRequest
	}{
		{"OneJob", &seppv1.EnqueueRequest{Queue: "q", JobType: "t", Payload: []byte("first")}},
		{"AgainAfterTheFirst", &seppv1.EnqueueRequest{Queue: "q", JobType: "t", Payload: []byte("second")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			handed := node.HandedOverJobs()
			got := make(chan *seppv1.ReserveResponse, 1)
			errs := make(chan error, 1)
			go func() {
				resp, err := qc.Reserve(ctx, &seppv1.ReserveRequest{Queue: "q", WorkerId: "w", Max: 10, Wait: durationpb.New(20 * time.Second)})
				got <- resp
				errs <- err
			}()
			for deadline := time.Now().Add(10 * time.Second); node.ParkedReserves() == 0; {
				if time.Now().After(deadline) {
					t.Fatal("the waiting reserve was not parked within 10s")
				}
				time.Sleep(time.Millisecond)
			}
			before := lastIndex()
			enq, err := qc.Enqueue(ctx, tc.enqueue)
			if err != nil {
				t.Fatal(err)
			}
			resp := <-got
			if err := <-errs; err != nil {
				t.Fatal(err)
			}
			if len(resp.GetJobs()) != 1 || resp.GetJobs()[0].GetJob().GetId() != enq.GetJobId() {
				t.Fatalf("waiting reserve got %v, want job %d", resp.GetJobs(), enq.GetJobId())
			}
			if string(resp.GetJobs()[0].GetJob().GetPayload()) != string(tc.enqueue.GetPayload()) {
				t.Fatalf("handed job's payload %q, want %q", resp.GetJobs()[0].GetJob().GetPayload(), tc.enqueue.GetPayload())
			}
			if added := lastIndex() - before; added != 1 {
				t.Errorf("enqueue and handoff added %d log entries, want 1", added)
			}
			if n := node.HandedOverJobs() - handed; n != 1 {
				t.Errorf("%d jobs counted handed over, want 1", n)
			}
			if n := node.ParkedReserves(); n != 0 {
				t.Errorf("%d reserves still parked, want 0", n)
			}
		})
	}
}
