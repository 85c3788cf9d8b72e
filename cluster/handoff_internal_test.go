package cluster

import (
	"context"
	"errors"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/sepp-io/sepp/engine"
	"github.com/sepp-io/sepp/fsm"
	seppv1 "github.com/sepp-io/sepp/proto/sepp/v1"
	cmdpb "github.com/sepp-io/sepp/proto/seppcmd/v1"
)

func publicEnqueue(reqs ...*seppv1.EnqueueRequest) *cmdpb.Command {
	c := &cmdpb.Command{}
	if len(reqs) == 1 {
		c.Op = &cmdpb.Command_JobEnqueue{JobEnqueue: &cmdpb.JobEnqueue{Request: reqs[0]}}
		return c
	}
	c.Op = &cmdpb.Command_JobEnqueueBatch{JobEnqueueBatch: &cmdpb.JobEnqueueBatch{Requests: reqs}}
	return c
}

// TestHandoff_CountsJobsAReserveCouldTakeAtOnce: a parked reserve rides
// along only with jobs that are ready when the entry applies.
func TestHandoff_CountsJobsAReserveCouldTakeAtOnce(t *testing.T) {
	now := time.Unix(1e9, 0)
	later := timestamppb.New(now.Add(time.Second))
	earlier := timestamppb.New(now.Add(-time.Second))
	tests := []struct {
		name string
		cmds []*cmdpb.Command
		want []queueJobs
	}{
		{"an enqueue's params", []*cmdpb.Command{fsm.EnqueueCommand(engine.EnqueueParams{Queue: "q", JobType: "t"})}, []queueJobs{{"q", 1}}},
		{"params scheduled later", []*cmdpb.Command{fsm.EnqueueCommand(engine.EnqueueParams{Queue: "q", JobType: "t", ScheduledAt: now.Add(time.Second)})}, nil},
		{"params scheduled now", []*cmdpb.Command{fsm.EnqueueCommand(engine.EnqueueParams{Queue: "q", JobType: "t", ScheduledAt: now})}, []queueJobs{{"q", 1}}},
		{"a public request", []*cmdpb.Command{publicEnqueue(&seppv1.EnqueueRequest{Queue: "q"})}, []queueJobs{{"q", 1}}},
		{"a request waiting for parents", []*cmdpb.Command{publicEnqueue(&seppv1.EnqueueRequest{Queue: "q", After: []uint32{0}})}, nil},
		{"a request scheduled later", []*cmdpb.Command{publicEnqueue(&seppv1.EnqueueRequest{Queue: "q", ScheduledAt: later})}, nil},
		{"a request scheduled earlier", []*cmdpb.Command{publicEnqueue(&seppv1.EnqueueRequest{Queue: "q", ScheduledAt: earlier})}, []queueJobs{{"q", 1}}},
		{
			"a batch over two queues, in order of appearance",
			[]*cmdpb.Command{publicEnqueue(&seppv1.EnqueueRequest{Queue: "b"}, &seppv1.EnqueueRequest{Queue: "a"}, &seppv1.EnqueueRequest{Queue: "b"})},
			[]queueJobs{{"b", 2}, {"a", 1}},
		},
		{
			"a batch in params form",
			[]*cmdpb.Command{fsm.EnqueueBatchCommand([]engine.EnqueueParams{{Queue: "q", JobType: "t"}, {Queue: "q", JobType: "t"}})},
			[]queueJobs{{"q", 2}},
		},
		{
			"an ack's follow-ups",
			[]*cmdpb.Command{{Op: &cmdpb.Command_JobAck{JobAck: &cmdpb.JobAck{FollowUps: []*seppv1.EnqueueRequest{{Queue: "next"}}}}}},
			[]queueJobs{{"next", 1}},
		},
		{
			"commands across the entry add up",
			[]*cmdpb.Command{
				fsm.EnqueueCommand(engine.EnqueueParams{Queue: "q", JobType: "t"}),
				fsm.ReserveCommand(engine.ReserveParams{Queue: "q", N: 1}),
				publicEnqueue(&seppv1.EnqueueRequest{Queue: "q"}),
			},
			[]queueJobs{{"q", 2}},
		},
		{"a reserve enqueues nothing", []*cmdpb.Command{fsm.ReserveCommand(engine.ReserveParams{Queue: "q", N: 1})}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []queueJobs
			for _, c := range tt.cmds {
				got = countReadyEnqueues(got, c, now.UnixNano())
			}
			if len(got) != len(tt.want) {
				t.Fatalf("counted %v, want %v", got, tt.want)
			}
			for i := range got {
				if got[i] != tt.want[i] {
					t.Fatalf("counted %v, want %v", got, tt.want)
				}
			}
		})
	}
}

func parkReserve(t *testing.T, p *proposer, queue, worker string, n int) *proposal {
	t.Helper()
	pr, ok := p.park(fsm.ReserveCommand(engine.ReserveParams{Queue: queue, WorkerID: worker, N: n, Lease: time.Minute}))
	if !ok {
		t.Fatal("park refused")
	}
	return pr
}

// enqueueAndCommit proposes an enqueue, commits the entry it goes into
// and returns the enqueue's result and the workers of the reserves that
// rode along.
func enqueueAndCommit(t *testing.T, p *proposer, r *fakeRaft, cmd *cmdpb.Command) (fsm.Result, []string) {
	t.Helper()
	ctx := context.Background()
	enq, err := p.enqueue(ctx, cmd)
	if err != nil {
		t.Fatal(err)
	}
	e := nextEntry(t, r)
	workers := reserveWorkers(t, e.data)
	r.commit(e) // before any check: the cleanup waits for every entry
	res, err := p.await(ctx, enq)
	if err != nil || res.Err != nil {
		t.Fatalf("enqueue: %v, %v", err, res.Err)
	}
	return res, workers
}

// outcomeOf waits for a parked reserve's outcome, announced by answered.
func outcomeOf(t *testing.T, pr *proposal) proposalOutcome {
	t.Helper()
	select {
	case <-pr.answered:
		return <-pr.done
	case <-time.After(10 * time.Second):
		t.Fatal("the parked reserve got no outcome within 10s")
		return proposalOutcome{}
	}
}

func reserveWorkers(t *testing.T, data []byte) []string {
	t.Helper()
	var workers []string
	for _, c := range decodeCommands(t, data) {
		if r := c.GetJobReserve(); r != nil {
			workers = append(workers, r.GetWorkerId())
		}
	}
	return workers
}

// TestHandoff_ParkedReserveRidesWithTheEnqueue: the entry that enqueues a
// job into a queue carries the oldest parked reserve of that queue, which
// gets the job from that entry's apply; reserves of other queues, and
// those the jobs do not cover, stay parked.
func TestHandoff_ParkedReserveRidesWithTheEnqueue(t *testing.T) {
	p, r := newFakeProposer(t)
	first := parkReserve(t, p, "q", "first", 1)
	second := parkReserve(t, p, "q", "second", 1)
	other := parkReserve(t, p, "other", "other", 1)

	res, got := enqueueAndCommit(t, p, r, fsm.EnqueueCommand(engine.EnqueueParams{Queue: "q", JobType: "t"}))
	if len(got) != 1 || got[0] != "first" {
		t.Fatalf("the entry carries reserves of %v, want [first]", got)
	}
	out := outcomeOf(t, first)
	if out.err != nil || out.res.Err != nil || len(out.res.Deliveries) != 1 || out.res.Deliveries[0].Job.ID != res.Enqueue.JobID {
		t.Fatalf("parked reserve: %+v, want the job just enqueued (%d)", out, res.Enqueue.JobID)
	}
	if got := p.parked.count.Load(); got != 2 {
		t.Fatalf("%d reserves parked, want 2", got)
	}
	if got := p.handedJobs.Load(); got != 1 {
		t.Fatalf("%d jobs counted handed over, want 1", got)
	}
	if !p.unpark(second) || !p.unpark(other) {
		t.Fatal("a reserve the entry did not take could not be withdrawn")
	}
	if p.unpark(first) {
		t.Fatal("a reserve an entry took was withdrawn")
	}
	if got := p.parked.count.Load(); got != 0 {
		t.Fatalf("%d reserves parked after withdrawing all, want 0", got)
	}
}

// TestHandoff_JobsCoverTheReservesTaken: reserves ride along until the
// jobs they ask for cover the jobs enqueued; a withdrawn one never does.
func TestHandoff_JobsCoverTheReservesTaken(t *testing.T) {
	p, r := newFakeProposer(t)
	gone := parkReserve(t, p, "q", "gone", 1)
	if !p.unpark(gone) {
		t.Fatal("withdraw refused")
	}
	two := parkReserve(t, p, "q", "two", 2)
	parkReserve(t, p, "q", "late", 1)

	_, got := enqueueAndCommit(t, p, r, fsm.EnqueueBatchCommand([]engine.EnqueueParams{{Queue: "q", JobType: "t"}, {Queue: "q", JobType: "t"}}))
	if len(got) != 1 || got[0] != "two" {
		t.Fatalf("the entry carries reserves of %v, want [two]", got)
	}
	out := outcomeOf(t, two)
	if out.err != nil || len(out.res.Deliveries) != 2 {
		t.Fatalf("the reserve of two got %+v, want both jobs", out)
	}
	if got := p.handedJobs.Load(); got != 2 {
		t.Fatalf("%d jobs counted handed over, want 2", got)
	}
}

// TestHandoff_StopAnswersParkedReserves: a proposer that stops answers
// what is parked with ErrShutdown (none of it reached raft) and parks
// nothing more.
func TestHandoff_StopAnswersParkedReserves(t *testing.T) {
	p, _ := newFakeProposer(t)
	pr := parkReserve(t, p, "q", "w", 1)
	p.stopTaking()
	if out := outcomeOf(t, pr); !errors.Is(out.err, ErrShutdown) {
		t.Fatalf("parked reserve at stop: %v, want ErrShutdown", out.err)
	}
	if _, ok := p.park(fsm.ReserveCommand(engine.ReserveParams{Queue: "q", N: 1})); ok {
		t.Fatal("a stopped proposer parked a reserve")
	}
}
