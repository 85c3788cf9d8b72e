package cluster_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/sepp-io/sepp/cluster"
	"github.com/sepp-io/sepp/cluster/clustertest"
	"github.com/sepp-io/sepp/engine"
	"github.com/sepp-io/sepp/fsm"
)

// leaseJobs enqueues n jobs on the leader, perBatch per EnqueueBatch, and
// reserves them all, with leases long enough for a test, and returns the
// leases.
func leaseJobs(tb testing.TB, leader *cluster.Node, queue string, n, perBatch int) []engine.LeaseRef {
	tb.Helper()
	ctx := context.Background()
	for left := n; left > 0; left -= perBatch {
		items := make([]engine.EnqueueParams, min(left, perBatch))
		for i := range items {
			items[i] = engine.EnqueueParams{Queue: queue, JobType: "t", Payload: benchPayload}
		}
		res, err := cluster.Do(ctx, leader, engine.EnqueueBatchOp{Items: items})
		if err != nil {
			tb.Fatalf("enqueue: %v", err)
		}
		for _, r := range res {
			if r.Err != nil {
				tb.Fatalf("enqueue item: %v", r.Err)
			}
		}
	}
	// Reserve with a few callers, so that a large setup shares entries.
	var (
		mu   sync.Mutex
		refs []engine.LeaseRef
		wg   sync.WaitGroup
		errc = make(chan error, 8)
	)
	chunks := make(chan int, n/100+1)
	for left := n; left > 0; left -= 100 {
		chunks <- min(left, 100)
	}
	close(chunks)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := range chunks {
				ds, err := cluster.Do(ctx, leader, engine.ReserveOp{Params: engine.ReserveParams{Queue: queue, WorkerID: "w", N: k, Lease: time.Hour}})
				if err != nil {
					errc <- err
					return
				}
				mu.Lock()
				for _, d := range ds {
					refs = append(refs, engine.LeaseRef{JobID: d.Job.ID, LeaseToken: d.LeaseToken})
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	close(errc)
	if err := <-errc; err != nil {
		tb.Fatalf("reserve: %v", err)
	}
	if len(refs) != n {
		tb.Fatalf("reserved %d of %d jobs", len(refs), n)
	}
	return refs
}

// leadEach makes every node lead once, in turn, so that each writes its own
// metadata with the command version its binary applies (the first entry of
// its term), and returns the index of the last leader.
func leadEach(tb testing.TB, c *clustertest.Cluster) int {
	tb.Helper()
	for i := 0; i < c.Len(); i++ {
		id := fmt.Sprintf("n%d", i)
		clustertest.WaitFor(tb, 20*time.Second, id+" leading and ready", func() bool {
			n := c.Node(i)
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			if n.IsLeader() {
				return n.Read(ctx, false, func(engine.View) error { return nil }) == nil
			}
			for _, j := range c.Alive() {
				if l := c.Node(j); l != nil && l.IsLeader() {
					_ = l.TransferLeadership(ctx, id) // retried until it takes
				}
			}
			return false
		})
	}
	return c.WaitLeader()
}

// membersWithVersion counts the members whose replicated metadata, as the
// given node sees it, says they apply a JobAckBatch.
func membersWithVersion(n *cluster.Node) int {
	count := 0
	for _, m := range n.FSM().Nodes() {
		if m.AppliesCommandVersion(fsm.CommandVersionAckBatch) {
			count++
		}
	}
	return count
}

func proposedCommands(n *cluster.Node) uint64 {
	_, cmds := n.ProposerStats()
	return cmds
}

// checkAckErrs compares AckBatch's per-ref errors with the engine errors
// wanted (nil: acked).
func checkAckErrs(t *testing.T, errs []error, want []error) {
	t.Helper()
	if len(errs) != len(want) {
		t.Fatalf("%d errors for %d refs", len(errs), len(want))
	}
	for i, w := range want {
		if got := errs[i]; (w == nil) != (got == nil) || (w != nil && !errors.Is(got, w)) {
			t.Errorf("ref %d: err %v, want %v", i, got, w)
		}
	}
}

// TestAckBatch_PerAckUntilEveryMemberApplies: a leader proposes one
// JobAck per ref while any member has not said that it applies a
// JobAckBatch (a rolling upgrade), and one JobAckBatch once all have; the
// per-ref answers are the same either way.
func TestAckBatch_PerAckUntilEveryMemberApplies(t *testing.T) {
	c := clustertest.New(t, 3)
	leader := c.Node(c.WaitLeader())
	ctx := context.Background()
	// Only the first leader wrote its own metadata; the static peers'
	// metadata, written on their behalf, says nothing of their binary.
	if got := membersWithVersion(leader); got != 1 {
		t.Fatalf("%d members say they apply an ack batch, want 1 (the leader)", got)
	}
	refs := leaseJobs(t, leader, "acks", 24, 1000)

	batch := append(refs[:12:12], refs[0])
	before := proposedCommands(leader)
	errs, err := leader.AckBatch(ctx, batch)
	if err != nil {
		t.Fatal(err)
	}
	checkAckErrs(t, errs, append(make([]error, 12), engine.ErrLeaseLost))
	if d := proposedCommands(leader) - before; d < uint64(len(batch)) {
		t.Fatalf("%d commands proposed for %d acks with a member of unknown version, want one per ack", d, len(batch))
	}

	leader = c.Node(leadEach(t, c))
	if got := membersWithVersion(leader); got != 3 {
		t.Fatalf("%d members say they apply an ack batch after each led, want 3", got)
	}
	batch = append(refs[12:24:24], refs[12], engine.LeaseRef{JobID: 1 << 40, LeaseToken: 1}, engine.LeaseRef{JobID: refs[13].JobID})
	before = proposedCommands(leader)
	errs, err = leader.AckBatch(ctx, batch)
	if err != nil {
		t.Fatal(err)
	}
	checkAckErrs(t, errs, append(make([]error, 12), engine.ErrLeaseLost, engine.ErrNotFound, engine.ErrInvalidArgument))
	// One JobAckBatch; a tick of the leader may share the count.
	if d := proposedCommands(leader) - before; d > 3 {
		t.Fatalf("%d commands proposed for %d acks, want one ack batch", d, len(batch))
	}
	c.RequireSameDigest()
}

// TestAckBatch_ChunksToMaxEntryBytes: a single node knows its own binary,
// so it batches at once, in commands that fit max_entry_bytes.
func TestAckBatch_ChunksToMaxEntryBytes(t *testing.T) {
	c := clustertest.New(t, 1, clustertest.WithConfig(func(_ int, cfg *cluster.Config) {
		cfg.MaxEntryBytes = 4 << 10 // at most 168 refs per command
	}))
	leader := c.Node(c.WaitLeader())
	refs := leaseJobs(t, leader, "chunks", 400, 25)
	before := proposedCommands(leader)
	errs, err := leader.AckBatch(context.Background(), refs)
	if err != nil {
		t.Fatal(err)
	}
	checkAckErrs(t, errs, make([]error, len(refs)))
	if d := proposedCommands(leader) - before; d < 3 || d > 5 {
		t.Fatalf("%d commands proposed for 400 acks of at most 168 per command, want 3", d)
	}
	// An empty call proposes nothing and answers an empty list.
	if errs, err := leader.AckBatch(context.Background(), nil); err != nil || len(errs) != 0 {
		t.Fatalf("empty AckBatch: %v, %v", errs, err)
	}
}

// TestMemberAnnounce_SwitchesAckBatches: a member's own report of the
// command version it applies (Announce, as a follower's relayed call would
// make it) switches the leader between one JobAckBatch and one JobAck per
// ref; a report of an older version switches it back.
func TestMemberAnnounce_SwitchesAckBatches(t *testing.T) {
	c := clustertest.New(t, 3)
	li := c.WaitLeader()
	leader := c.Node(li)
	ctx := context.Background()
	refs := leaseJobs(t, leader, "announce", 30, 1000)
	ackCommands := func(refs []engine.LeaseRef) uint64 {
		t.Helper()
		before := proposedCommands(leader)
		errs, err := leader.AckBatch(ctx, refs)
		if err != nil {
			t.Fatal(err)
		}
		checkAckErrs(t, errs, make([]error, len(refs)))
		return proposedCommands(leader) - before
	}
	announce := func(i int, v uint32) {
		t.Helper()
		if err := leader.Announce(ctx, c.Node(i).Self(), v); err != nil {
			t.Fatalf("announce n%d: %v", i, err)
		}
	}
	var followers []int
	for i := 0; i < 3; i++ {
		if i != li {
			followers = append(followers, i)
		}
	}

	announce(followers[0], fsm.CommandVersion)
	if d := ackCommands(refs[0:10]); d < 10 {
		t.Fatalf("one member of unknown version: %d commands for 10 acks, want one per ack", d)
	}
	announce(followers[1], fsm.CommandVersion)
	if d := ackCommands(refs[10:20]); d > 3 {
		t.Fatalf("every member announced: %d commands for 10 acks, want one ack batch", d)
	}
	announce(followers[0], 1) // came back with an older binary
	if d := ackCommands(refs[20:30]); d < 10 {
		t.Fatalf("a member announced version 1: %d commands for 10 acks, want one per ack", d)
	}
	if m, _ := leader.FSM().Node(c.Node(followers[1]).Self().ID); m.GRPCAddr != c.Node(followers[1]).Self().GRPCAddr {
		t.Fatalf("announced metadata %+v lost the member's addresses", m)
	}
	if err := leader.Announce(ctx, cluster.NodeInfo{ID: "stranger", RaftAddr: "127.0.0.1:1"}, fsm.CommandVersion); err == nil {
		t.Fatal("announce of a non-member succeeded")
	}
	c.RequireSameDigest()
}
