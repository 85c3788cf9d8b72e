package cluster

import (
	"context"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"google.golang.org/protobuf/proto"

	"github.com/sepp-io/sepp/engine"
	"github.com/sepp-io/sepp/fsm"
	cmdpb "github.com/sepp-io/sepp/proto/seppcmd/v1"
)

// fakeRaft hands every entry the proposer applies to the test, which
// decides when it commits; a committed entry is applied to a real FSM.
type fakeRaft struct {
	fsm     *fsm.FSM
	index   uint64
	applied chan *fakeFuture
}

type fakeFuture struct {
	data  []byte
	index uint64
	done  chan struct{}
	resp  any
}

func (f *fakeFuture) Error() error  { <-f.done; return nil }
func (f *fakeFuture) Index() uint64 { return f.index }
func (f *fakeFuture) Response() any { return f.resp }
func (r *fakeRaft) commit(f *fakeFuture) {
	f.resp = r.fsm.Apply(&raft.Log{Index: f.index, Term: 1, Type: raft.LogCommand, Data: f.data})
	close(f.done)
}

// Apply runs on the proposer's entry-forming goroutine only.
func (r *fakeRaft) Apply(data []byte, _ time.Duration) raft.ApplyFuture {
	r.index++
	f := &fakeFuture{data: data, index: r.index, done: make(chan struct{})}
	r.applied <- f
	return f
}

func newFakeProposer(t *testing.T) (*proposer, *fakeRaft) {
	t.Helper()
	cfg := DefaultConfig()
	cfg.NodeID = "self"
	cfg.MaxEntriesInFlight = 1
	r := &fakeRaft{
		fsm:     fsm.New(fsm.Config{Engine: engine.Config{Limits: engine.DefaultLimits()}, SnapshotTempDir: t.TempDir()}),
		applied: make(chan *fakeFuture, 16),
	}
	p := newProposer(r, &cfg, func() time.Time { return time.Unix(1e9, 0) }, func() error { return ErrNoLeader }, nil)
	t.Cleanup(func() {
		p.stopTaking()
		for drained := false; !drained; {
			select {
			case f := <-r.applied:
				r.commit(f)
			default:
				drained = true
			}
		}
		p.wait()
	})
	return p, r
}

func nextEntry(t *testing.T, r *fakeRaft) *fakeFuture {
	t.Helper()
	select {
	case f := <-r.applied:
		return f
	case <-time.After(10 * time.Second):
		t.Fatal("the proposer applied no entry within 10s")
		return nil
	}
}

// TestAckBatch_ProposerCoalescesBatchWithOtherCommands: a JobAckBatch is one
// proposal like any other, merged with the commands queued beside it into
// one log entry.
func TestAckBatch_ProposerCoalescesBatchWithOtherCommands(t *testing.T) {
	p, r := newFakeProposer(t)
	ctx := context.Background()

	// The first entry takes the only in-flight slot until it commits, so
	// the next commands queue up behind it.
	first, err := p.enqueue(ctx, fsm.EnqueueBatchCommand([]engine.EnqueueParams{
		{Queue: "q", JobType: "t"}, {Queue: "q", JobType: "t"}, {Queue: "q", JobType: "t"},
	}))
	if err != nil {
		t.Fatal(err)
	}
	reserve, err := p.enqueue(ctx, fsm.ReserveCommand(engine.ReserveParams{Queue: "q", WorkerID: "w", N: 3, Lease: time.Minute}))
	if err != nil {
		t.Fatal(err)
	}
	e1 := nextEntry(t, r)
	r.commit(e1)
	if _, err := p.await(ctx, first); err != nil {
		t.Fatal(err)
	}
	// The reserve went into the first entry or is alone in the second.
	var leases []engine.LeaseRef
	if len(decodeCommands(t, e1.data)) == 1 {
		r.commit(nextEntry(t, r))
	}
	res, err := p.await(ctx, reserve)
	if err != nil || res.Err != nil {
		t.Fatalf("reserve: %v, %v", err, res.Err)
	}
	for _, d := range res.Deliveries {
		leases = append(leases, engine.LeaseRef{JobID: d.Job.ID, LeaseToken: d.LeaseToken})
	}

	// Hold the slot with a tick, then queue an enqueue, the ack batch and
	// another enqueue behind it.
	tick, err := p.enqueue(ctx, fsm.TickCommand())
	if err != nil {
		t.Fatal(err)
	}
	held := nextEntry(t, r)
	refs := append(leases, engine.LeaseRef{JobID: leases[0].JobID, LeaseToken: leases[0].LeaseToken})
	cmds := []*cmdpb.Command{
		fsm.EnqueueCommand(engine.EnqueueParams{Queue: "q", JobType: "t"}),
		fsm.AckBatchCommand(refs),
		fsm.EnqueueCommand(engine.EnqueueParams{Queue: "q", JobType: "t"}),
	}
	prs := make([]*proposal, len(cmds))
	for i, c := range cmds {
		if prs[i], err = p.enqueue(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	r.commit(held)
	if _, err := p.await(ctx, tick); err != nil {
		t.Fatal(err)
	}
	shared := nextEntry(t, r)
	got := decodeCommands(t, shared.data)
	if len(got) != 3 || got[0].GetJobEnqueue() == nil || got[1].GetJobAckBatch() == nil || got[2].GetJobEnqueue() == nil {
		t.Fatalf("entry after the held one: %v, want [enqueue, ack batch, enqueue]", got)
	}
	if v := got[1].GetVersion(); v != fsm.CommandVersionAckBatch {
		t.Fatalf("ack batch has version %d, want %d", v, fsm.CommandVersionAckBatch)
	}
	r.commit(shared)
	ack, err := p.await(ctx, prs[1])
	if err != nil {
		t.Fatal(err)
	}
	if len(ack.Acks) != len(refs) {
		t.Fatalf("%d acks for %d refs", len(ack.Acks), len(refs))
	}
	for i, err := range ack.Acks[:len(leases)] {
		if err != nil {
			t.Errorf("ack %d: %v", i, err)
		}
	}
	if last := ack.Acks[len(refs)-1]; last == nil {
		t.Error("second ack of the same lease succeeded")
	}
	for _, i := range []int{0, 2} {
		if res, err := p.await(ctx, prs[i]); err != nil || res.Err != nil {
			t.Errorf("enqueue %d: %v, %v", i, err, res.Err)
		}
	}
}

func decodeCommands(t *testing.T, data []byte) []*cmdpb.Command {
	t.Helper()
	e, err := fsm.DecodeEntry(data)
	if err != nil {
		t.Fatal(err)
	}
	return e.GetCommands()
}

// TestAckBatch_VouchOnlyForSelfMetadata: the proposer stamps the command
// version this binary applies into this node's own metadata only.
func TestAckBatch_VouchOnlyForSelfMetadata(t *testing.T) {
	p := &proposer{selfID: "self"}
	tests := []struct {
		name string
		cmd  *cmdpb.Command
		want uint32
	}{
		{"Self", fsm.SetNodeCommand(fsm.NodeMeta{ID: "self", RaftAddr: "a"}), fsm.CommandVersion},
		{"SelfClaimingMore", fsm.SetNodeCommand(fsm.NodeMeta{ID: "self", MaxCommandVersion: 99}), fsm.CommandVersion},
		{"OtherMember", fsm.SetNodeCommand(fsm.NodeMeta{ID: "other", RaftAddr: "b"}), 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p.vouch(tc.cmd)
			if got := tc.cmd.GetNodeMetadataSet().GetNode().GetMaxCommandVersion(); got != tc.want {
				t.Fatalf("max_command_version %d, want %d", got, tc.want)
			}
		})
	}
	for _, cmd := range []*cmdpb.Command{fsm.DeleteNodeCommand("self"), fsm.TickCommand(), {}} {
		before := proto.Clone(cmd)
		p.vouch(cmd)
		if !proto.Equal(before, cmd) {
			t.Fatalf("vouch changed %v", cmd)
		}
	}
}

// TestAckBatch_ChunkFitsEntry: the largest possible refs, as many as
// ackRefsPerCommand allows, still make a command the proposer takes.
func TestAckBatch_ChunkFitsEntry(t *testing.T) {
	for _, maxBytes := range []int{4 << 10, 64 << 10, DefaultConfig().MaxEntryBytes} {
		per := ackRefsPerCommand(maxBytes)
		refs := make([]engine.LeaseRef, per)
		for i := range refs {
			refs[i] = engine.LeaseRef{JobID: 1<<64 - 1, LeaseToken: 1<<64 - 1}
		}
		cmd := fsm.AckBatchCommand(refs)
		cmd.NowUnixNano = -1 // the longest varint
		if size := proto.Size(cmd); size > maxBytes {
			t.Errorf("max_entry_bytes %d: %d refs make %d bytes", maxBytes, per, size)
		}
		if per < maxBytes/32 {
			t.Errorf("max_entry_bytes %d: only %d refs per command", maxBytes, per)
		}
	}
}
