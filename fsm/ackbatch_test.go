package fsm

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"google.golang.org/protobuf/proto"

	"github.com/sepp-io/sepp/engine"
	cmdpb "github.com/sepp-io/sepp/proto/seppcmd/v1"
)

// leasedFSM returns a state machine holding n reserved jobs of queue "q"
// (index 1 enqueues, 2.. reserve), and their lease refs in delivery order.
// Every call with the same n builds the same state.
func leasedFSM(tb testing.TB, n int) (*FSM, []engine.LeaseRef) {
	tb.Helper()
	f := New(Config{Engine: engine.Config{Limits: engine.DefaultLimits()}, SnapshotTempDir: tb.TempDir()})
	items := make([]engine.EnqueueParams, n)
	for i := range items {
		items[i] = engine.EnqueueParams{Queue: "q", JobType: "t", Payload: []byte("p")}
	}
	cmds := []*cmdpb.Command{EnqueueBatchCommand(items)}
	for left := n; left > 0; left -= 100 {
		cmds = append(cmds, ReserveCommand(engine.ReserveParams{Queue: "q", WorkerID: "w", N: min(left, 100), Lease: time.Minute}))
	}
	data, err := EncodeEntry(stamped(t0, cmds...))
	if err != nil {
		tb.Fatal(err)
	}
	results := f.Apply(&raft.Log{Index: 1, Term: 1, Type: raft.LogCommand, Data: data}).([]Result)
	var refs []engine.LeaseRef
	for _, res := range results[1:] {
		if res.Err != nil {
			tb.Fatalf("reserve: %v", res.Err)
		}
		for _, d := range res.Deliveries {
			refs = append(refs, engine.LeaseRef{JobID: d.Job.ID, LeaseToken: d.LeaseToken})
		}
	}
	if len(refs) != n {
		tb.Fatalf("reserved %d jobs, want %d", len(refs), n)
	}
	return f, refs
}

// TestAckBatch_EqualsAcksOneByOne applies the same refs as one JobAckBatch
// to one replica and as one JobAck per ref to another, in entries of the
// same shape, and requires the same per-ref errors (text and sentinel),
// the same digest and the same snapshot bytes.
func TestAckBatch_EqualsAcksOneByOne(t *testing.T) {
	tests := []struct {
		name string
		// refs picks the refs to ack from the leases of 8 reserved jobs.
		refs func(l []engine.LeaseRef) []engine.LeaseRef
		// around wraps the acks with other commands of the same entry.
		around bool
	}{
		{"AllValid", func(l []engine.LeaseRef) []engine.LeaseRef { return l }, false},
		// Among other commands, so that both entries advance the clock.
		{"Empty", func([]engine.LeaseRef) []engine.LeaseRef { return nil }, true},
		{"Mixed", func(l []engine.LeaseRef) []engine.LeaseRef {
			return []engine.LeaseRef{
				l[0],
				l[0],                                    // acked just before: lease lost
				{JobID: l[1].JobID, LeaseToken: 999999}, // stale token
				{JobID: 1 << 40, LeaseToken: 1},         // never enqueued: not found
				{JobID: 0, LeaseToken: 1},               // invalid argument
				{JobID: l[2].JobID},                     // invalid argument
				l[3],
				l[1], // the stale ack above left it leased
			}
		}, false},
		{"ReverseOrderAmongOtherCommands", func(l []engine.LeaseRef) []engine.LeaseRef {
			out := make([]engine.LeaseRef, len(l))
			for i := range l {
				out[i] = l[len(l)-1-i]
			}
			return out
		}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			batched, leases := leasedFSM(t, 8)
			single, _ := leasedFSM(t, 8)
			refs := tc.refs(leases)

			var before, after []*cmdpb.Command
			if tc.around {
				// An enqueue and a reserve in the same entry: the reserve
				// must see the same state after the acks.
				before = []*cmdpb.Command{EnqueueCommand(enqueueParams("q", 1))}
				after = []*cmdpb.Command{ReserveCommand(engine.ReserveParams{Queue: "q", WorkerID: "w2", N: 10, Lease: time.Minute})}
			}
			now := t0.Add(time.Second)
			batchCmds := append(append(cloneCmds(before), AckBatchCommand(refs)), cloneCmds(after)...)
			singleCmds := cloneCmds(before)
			for _, ref := range refs {
				singleCmds = append(singleCmds, AckCommand(ref))
			}
			singleCmds = append(singleCmds, cloneCmds(after)...)

			bres := applyEntry(t, batched, 2, stamped(now, batchCmds...))
			sres := applyEntry(t, single, 2, stamped(now, singleCmds...))

			acks := bres[len(before)]
			if acks.Err != nil {
				t.Fatalf("batch command error %v, want nil (errors are per ref)", acks.Err)
			}
			if len(acks.Acks) != len(refs) {
				t.Fatalf("batch answered %d acks for %d refs", len(acks.Acks), len(refs))
			}
			for i := range refs {
				want := sres[len(before)+i].Err
				if got := acks.Acks[i]; fmt.Sprint(got) != fmt.Sprint(want) || !sameSentinel(got, want) {
					t.Errorf("ref %d %+v: batch err %v, one by one %v", i, refs[i], got, want)
				}
			}
			if tc.around {
				b, s := bres[len(bres)-1].Deliveries, sres[len(sres)-1].Deliveries
				if len(b) != len(s) {
					t.Fatalf("reserve after the acks: %d deliveries batched, %d one by one", len(b), len(s))
				}
			}
			if batched.Digest() != single.Digest() {
				t.Fatal("digests differ between the batch and the acks one by one")
			}
			if !bytes.Equal(snapshotBytes(t, batched), snapshotBytes(t, single)) {
				t.Fatal("snapshots differ between the batch and the acks one by one")
			}
		})
	}
}

// TestAckBatch_MixedErrorsAreTyped checks the kinds of the per-ref errors,
// so that the comparison above is not only between two wrong answers.
func TestAckBatch_MixedErrorsAreTyped(t *testing.T) {
	f, l := leasedFSM(t, 2)
	refs := []engine.LeaseRef{l[0], l[0], {JobID: 1 << 40, LeaseToken: 1}, {JobID: l[1].JobID}, l[1]}
	want := []error{nil, engine.ErrLeaseLost, engine.ErrNotFound, engine.ErrInvalidArgument, nil}
	res := applyEntry(t, f, 2, stamped(t0, AckBatchCommand(refs)))[0]
	for i, w := range want {
		if got := res.Acks[i]; (w == nil) != (got == nil) || (w != nil && !errors.Is(got, w)) {
			t.Errorf("ref %d: err %v, want %v", i, got, w)
		}
	}
}

func sameSentinel(a, b error) bool {
	for _, s := range []error{engine.ErrNotFound, engine.ErrLeaseLost, engine.ErrInvalidArgument} {
		if errors.Is(a, s) != errors.Is(b, s) {
			return false
		}
	}
	return (a == nil) == (b == nil)
}

func cloneCmds(cmds []*cmdpb.Command) []*cmdpb.Command {
	out := make([]*cmdpb.Command, len(cmds))
	for i, c := range cmds {
		out[i] = proto.Clone(c).(*cmdpb.Command)
	}
	return out
}

// TestCommandVersions pins the version each builder writes: every
// operation an older binary knows must keep version 1, or a new leader's
// commands would stop the old followers of a rolling upgrade.
func TestCommandVersions(t *testing.T) {
	ref := engine.LeaseRef{JobID: 1, LeaseToken: 1}
	noMinWindow := engine.Config{Limits: engine.DefaultLimits()}
	noMinWindow.Limits.IdempotencyMinWindow = 0
	tests := []struct {
		name string
		cmd  *cmdpb.Command
		want uint32
		// wantOp is the operation's own version when the command's
		// version depends on its content (0: the same as want).
		wantOp uint32
	}{
		{name: "Enqueue", cmd: EnqueueCommand(enqueueParams("q", 1)), want: 1},
		{name: "EnqueueBatch", cmd: EnqueueBatchCommand(nil), want: 1},
		{name: "Reserve", cmd: ReserveCommand(engine.ReserveParams{Queue: "q"}), want: 1},
		{name: "Ack", cmd: AckCommand(ref), want: 1},
		{name: "Nack", cmd: NackCommand(engine.NackParams{LeaseRef: ref}), want: 1},
		{name: "Release", cmd: ReleaseCommand(ref), want: 1},
		{name: "Extend", cmd: ExtendLeaseCommand(engine.ExtendParams{LeaseRef: ref}), want: 1},
		{name: "ExtendAll", cmd: ExtendAllLeasesCommand(time.Second), want: 1},
		{name: "Drain", cmd: DrainCommand(engine.DrainParams{}), want: 1},
		{name: "Requeue", cmd: RequeueDeadLettersCommand(nil), want: 1},
		{name: "Delete", cmd: DeleteDeadLettersCommand(nil), want: 1},
		{name: "DeadLetter", cmd: DeadLetterJobsCommand(nil, ""), want: 1},
		{name: "Pause", cmd: PauseQueueCommand("q"), want: 1},
		{name: "Resume", cmd: ResumeQueueCommand("q"), want: 1},
		{name: "Tick", cmd: TickCommand(), want: 1},
		{name: "Config", cmd: SetConfigCommand(noMinWindow), want: 1},
		{name: "ConfigWithMinWindow", cmd: SetConfigCommand(engine.Config{Limits: engine.DefaultLimits()}), want: CommandVersionKeyMinWindow, wantOp: 1},
		{name: "ConfigWithMemoryBudget", cmd: SetConfigCommand(engine.Config{Limits: engine.DefaultLimits(), Queues: []engine.QueueConfig{{Name: "q", MaxMemoryBytes: new(int64)}}}), want: CommandVersionMemoryBudget, wantOp: 1},
		{name: "SetNode", cmd: SetNodeCommand(NodeMeta{ID: "n", MaxCommandVersion: CommandVersion}), want: 1},
		{name: "DeleteNode", cmd: DeleteNodeCommand("n"), want: 1},
		{name: "AckBatch", cmd: AckBatchCommand([]engine.LeaseRef{ref}), want: CommandVersionAckBatch},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.cmd.GetVersion(); got != tc.want {
				t.Fatalf("version %d, want %d", got, tc.want)
			}
			wantOp := tc.want
			if tc.wantOp != 0 {
				wantOp = tc.wantOp
			}
			if got := opVersion(tc.cmd.GetOp()); got != wantOp {
				t.Fatalf("opVersion %d, want %d", got, wantOp)
			}
		})
	}
	if CommandVersion < CommandVersionAckBatch || CommandVersion < CommandVersionKeyMinWindow || CommandVersion < CommandVersionMemoryBudget {
		t.Fatalf("CommandVersion %d does not cover JobAckBatch (%d) and the minimum key window (%d)", CommandVersion, CommandVersionAckBatch, CommandVersionKeyMinWindow)
	}
}

func TestAckBatch_RejectedInVersion1Command(t *testing.T) {
	cmd := AckBatchCommand([]engine.LeaseRef{{JobID: 1, LeaseToken: 1}})
	cmd.Version = 1
	data, err := EncodeEntry([]*cmdpb.Command{cmd})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := DecodeEntry(data); !errors.Is(err, ErrDecode) {
		t.Fatalf("DecodeEntry: err %v, want ErrDecode", err)
	}
	if err := CheckEntry(data); !errors.Is(err, ErrDecode) {
		t.Fatalf("CheckEntry: err %v, want ErrDecode", err)
	}
}

// TestAckBatch_UnequalListsRejected: a JobAckBatch whose job ids and lease
// tokens differ in number is a decode error naming both counts, from
// DecodeEntry and CheckEntry alike, and Apply stops on it (with the log
// index) rather than acking a guess.
func TestAckBatch_UnequalListsRejected(t *testing.T) {
	tests := []struct {
		name        string
		ids, tokens []uint64
	}{
		{"MoreJobIDs", []uint64{1, 2, 3}, []uint64{1, 1}},
		{"MoreLeaseTokens", []uint64{1}, []uint64{1, 1}},
		{"JobIDsOnly", []uint64{1}, nil},
		{"LeaseTokensOnly", nil, []uint64{1}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cmd := &cmdpb.Command{Version: CommandVersionAckBatch, Op: &cmdpb.Command_JobAckBatch{
				JobAckBatch: &cmdpb.JobAckBatch{JobIds: tc.ids, LeaseTokens: tc.tokens},
			}}
			data, err := EncodeEntry(stamped(t0, TickCommand(), cmd))
			if err != nil {
				t.Fatal(err)
			}
			want := fmt.Sprintf("command 1: job ack batch has %d job ids but %d lease tokens", len(tc.ids), len(tc.tokens))
			_, derr := DecodeEntry(data)
			cerr := CheckEntry(data)
			for name, err := range map[string]error{"DecodeEntry": derr, "CheckEntry": cerr} {
				if !errors.Is(err, ErrDecode) || !strings.Contains(fmt.Sprint(err), want) {
					t.Errorf("%s: err %v, want ErrDecode saying %q", name, err, want)
				}
			}
			f, _ := leasedFSM(t, 1)
			before := f.Digest()
			func() {
				defer func() {
					if r := recover(); r == nil || !strings.Contains(fmt.Sprint(r), "log index 7") {
						t.Errorf("Apply: recovered %v, want a panic naming log index 7", r)
					}
				}()
				f.Apply(&raft.Log{Index: 7, Term: 1, Type: raft.LogCommand, Data: data})
			}()
			if f.Digest() != before {
				t.Error("a rejected entry changed the state")
			}
		})
	}
}

func TestFSM_NodeMetadataCommandVersion(t *testing.T) {
	f := newTestFSM(t)
	plain := NodeMeta{ID: "n1", RaftAddr: "r1"}
	versioned := NodeMeta{ID: "n2", RaftAddr: "r2", MaxCommandVersion: CommandVersion}
	applyEntry(t, f, 1, stamped(t0, SetNodeCommand(plain), SetNodeCommand(versioned)))
	if got, _ := f.Node("n2"); got != versioned {
		t.Fatalf("n2 %+v, want %+v", got, versioned)
	}
	tests := []struct {
		meta NodeMeta
		v    uint32
		want bool
	}{
		{plain, 1, true},
		{plain, CommandVersionAckBatch, false},
		{versioned, 1, true},
		{versioned, CommandVersionAckBatch, true},
		{versioned, CommandVersion + 1, false},
	}
	for _, tc := range tests {
		if got := tc.meta.AppliesCommandVersion(tc.v); got != tc.want {
			t.Errorf("%+v applies %d: %v, want %v", tc.meta, tc.v, got, tc.want)
		}
	}

	// The version survives a snapshot, and the digest ignores it (a binary
	// older than the field drops it, and replicas must still compare equal).
	dst := newTestFSM(t)
	if err := dst.Restore(io.NopCloser(bytes.NewReader(snapshotBytes(t, f)))); err != nil {
		t.Fatal(err)
	}
	if got, _ := dst.Node("n2"); got != versioned {
		t.Fatalf("restored n2 %+v, want %+v", got, versioned)
	}
	other := newTestFSM(t)
	versioned.MaxCommandVersion = 0
	applyEntry(t, other, 1, stamped(t0, SetNodeCommand(plain), SetNodeCommand(versioned)))
	if other.Digest() != f.Digest() {
		t.Fatal("the digest depends on a member's command version")
	}
}

// BenchmarkApplyAcks compares 256 acks applied as one JobAckBatch with 256
// JobAck commands in one entry: encoding (the leader), then decoding and
// applying (every replica).
//
//	go test -run '^$' -bench ApplyAcks -benchmem ./fsm/
func BenchmarkApplyAcks(b *testing.B) {
	const n = 256
	for _, mode := range []string{"batch", "single"} {
		b.Run(fmt.Sprintf("%s-%d", mode, n), func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				f, refs := leasedFSM(b, n)
				b.StartTimer()
				var cmds []*cmdpb.Command
				if mode == "batch" {
					cmds = []*cmdpb.Command{AckBatchCommand(refs)}
				} else {
					cmds = make([]*cmdpb.Command, n)
					for j, ref := range refs {
						cmds[j] = AckCommand(ref)
					}
				}
				data, err := EncodeEntry(stamped(t0.Add(time.Second), cmds...))
				if err != nil {
					b.Fatal(err)
				}
				res := f.Apply(&raft.Log{Index: 2, Term: 1, Type: raft.LogCommand, Data: data}).([]Result)
				if mode == "batch" && res[0].Acks[n-1] != nil || mode == "single" && res[n-1].Err != nil {
					b.Fatal("last ack failed")
				}
			}
			b.ReportMetric(float64(b.N*n)/b.Elapsed().Seconds(), "acks/s")
		})
	}
}
