package fsm

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"google.golang.org/protobuf/proto"

	"github.com/sepp-io/sepp/engine"
	cmdpb "github.com/sepp-io/sepp/proto/seppcmd/v1"
)

var t0 = time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)

func newTestFSM(t *testing.T) *FSM {
	t.Helper()
	return New(Config{Engine: engine.Config{Limits: engine.DefaultLimits()}, SnapshotTempDir: t.TempDir()})
}

// stamped sets now on each command, as the proposer does.
func stamped(now time.Time, cmds ...*cmdpb.Command) []*cmdpb.Command {
	for _, c := range cmds {
		c.NowUnixNano = now.UnixNano()
	}
	return cmds
}

// applyEntry applies one entry of cmds at index and returns its results.
func applyEntry(t testing.TB, f *FSM, index uint64, cmds []*cmdpb.Command) []Result {
	t.Helper()
	data, err := EncodeEntry(cmds)
	if err != nil {
		t.Fatalf("encode: %v", err)
	}
	resp := f.Apply(&raft.Log{Index: index, Term: 1, Type: raft.LogCommand, Data: data})
	results, ok := resp.([]Result)
	if !ok || len(results) != len(cmds) {
		t.Fatalf("apply index %d: response %T (%v), want %d results", index, resp, resp, len(cmds))
	}
	return results
}

func enqueueParams(queue string, i int) engine.EnqueueParams {
	return engine.EnqueueParams{Queue: queue, JobType: "t", Payload: []byte(fmt.Sprintf("job-%d", i))}
}

func TestFSM_ApplyReturnsOneResultPerCommand(t *testing.T) {
	f := newTestFSM(t)
	results := applyEntry(t, f, 1, stamped(t0,
		EnqueueCommand(enqueueParams("q", 1)),
		EnqueueCommand(enqueueParams("q", 2)),
		ReserveCommand(engine.ReserveParams{Queue: "q", WorkerID: "w", N: 10, Lease: time.Minute}),
		AckCommand(engine.LeaseRef{JobID: 999, LeaseToken: 1}),
	))
	if results[0].Err != nil || results[1].Err != nil {
		t.Fatalf("enqueue errors: %v, %v", results[0].Err, results[1].Err)
	}
	if results[0].Enqueue.JobID == results[1].Enqueue.JobID {
		t.Fatalf("two enqueues got the same id %d", results[0].Enqueue.JobID)
	}
	if got := len(results[2].Deliveries); got != 2 || results[2].Err != nil {
		t.Fatalf("reserve: %d deliveries, err %v; want 2, nil", got, results[2].Err)
	}
	if !errors.Is(results[3].Err, engine.ErrNotFound) && !errors.Is(results[3].Err, engine.ErrLeaseLost) {
		t.Fatalf("ack of an unknown job: err %v, want a not-found or lease-lost engine error value", results[3].Err)
	}
}

func TestFSM_TimeNeverRunsBackwards(t *testing.T) {
	f := newTestFSM(t)
	nows := []time.Time{t0, t0.Add(-time.Hour), t0.Add(time.Second), t0.Add(-time.Minute), {}}
	var last time.Time
	for i, now := range nows {
		cmd := EnqueueCommand(enqueueParams("q", i))
		if !now.IsZero() {
			cmd.NowUnixNano = now.UnixNano()
		}
		res := applyEntry(t, f, uint64(i+1), []*cmdpb.Command{cmd})
		if res[0].Err != nil {
			t.Fatalf("enqueue %d: %v", i, res[0].Err)
		}
		got := f.Now()
		if got.Before(last) {
			t.Fatalf("entry %d (now %s): state machine time went back from %s to %s", i, now, last, got)
		}
		want := last
		if now.After(last) {
			want = now
		}
		if !got.Equal(want) {
			t.Fatalf("entry %d: time %s, want max(last, now) = %s", i, got, want)
		}
		var enqueuedAt time.Time
		_ = f.Read(func(e *engine.Engine) error {
			j, err := e.GetJob(res[0].Enqueue.JobID)
			enqueuedAt = j.EnqueuedAt
			return err
		})
		if !enqueuedAt.Equal(want) {
			t.Fatalf("entry %d: job enqueued at %s, want the clamped time %s", i, enqueuedAt, want)
		}
		last = got
	}
}

func TestFSM_UndecodableEntryPanicsNamingIndex(t *testing.T) {
	tests := []struct {
		name string
		data []byte
	}{
		{"Garbage", []byte{0xff, 0xff, 0xff}},
		{"UnknownFormat", mustMarshal(t, &cmdpb.Entry{FormatVersion: 99})},
		{"UnknownCommandVersion", mustMarshal(t, &cmdpb.Entry{FormatVersion: 1, Commands: []*cmdpb.Command{{Version: CommandVersion + 1, Op: &cmdpb.Command_Tick{Tick: &cmdpb.Tick{}}}}})},
		{"OperationNewerThanCommandVersion", mustMarshal(t, &cmdpb.Entry{FormatVersion: 1, Commands: []*cmdpb.Command{{Version: 1, Op: &cmdpb.Command_JobAckBatch{JobAckBatch: &cmdpb.JobAckBatch{}}}}})},
		{"NoOperation", mustMarshal(t, &cmdpb.Entry{FormatVersion: 1, Commands: []*cmdpb.Command{{Version: 1}}})},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newTestFSM(t)
			defer func() {
				r := recover()
				if r == nil {
					t.Fatal("Apply did not panic")
				}
				if msg := fmt.Sprint(r); !strings.Contains(msg, "log index 42") {
					t.Fatalf("panic %q does not name the log index", msg)
				}
				// The lock must be free: a test harness or a crash handler may
				// still read the state.
				_ = f.Nodes()
			}()
			f.Apply(&raft.Log{Index: 42, Term: 1, Type: raft.LogCommand, Data: tc.data})
		})
	}
}

func mustMarshal(t *testing.T, e *cmdpb.Entry) []byte {
	t.Helper()
	data, err := proto.Marshal(e)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func TestFSM_NonCommandLogsRespondNil(t *testing.T) {
	f := newTestFSM(t)
	if resp := f.Apply(&raft.Log{Index: 1, Type: raft.LogConfiguration}); resp != nil {
		t.Fatalf("configuration entry: response %v, want nil", resp)
	}
}

func TestFSM_NodeMetadata(t *testing.T) {
	f := newTestFSM(t)
	n1 := NodeMeta{ID: "n1", RaftAddr: "r1", GRPCAddr: "g1", HTTPAddr: "h1"}
	n2 := NodeMeta{ID: "n2", RaftAddr: "r2", GRPCAddr: "g2"}
	res := applyEntry(t, f, 1, stamped(t0, SetNodeCommand(n2), SetNodeCommand(n1), SetNodeCommand(NodeMeta{})))
	if res[2].Err == nil || !errors.Is(res[2].Err, engine.ErrInvalidArgument) {
		t.Fatalf("metadata without id: err %v, want invalid argument", res[2].Err)
	}
	if got := f.Nodes(); len(got) != 2 || got[0] != n1 || got[1] != n2 {
		t.Fatalf("nodes %+v, want [n1 n2] sorted", got)
	}
	applyEntry(t, f, 2, stamped(t0, DeleteNodeCommand("n1")))
	if _, ok := f.Node("n1"); ok {
		t.Fatal("n1 still present after delete")
	}
}

func TestFSM_AppliedChannelClosesOnApply(t *testing.T) {
	f := newTestFSM(t)
	ch := f.Applied()
	select {
	case <-ch:
		t.Fatal("applied channel closed before any apply")
	default:
	}
	applyEntry(t, f, 7, stamped(t0, TickCommand()))
	select {
	case <-ch:
	default:
		t.Fatal("applied channel still open after an apply")
	}
	if f.AppliedIndex() != 7 {
		t.Fatalf("applied index %d, want 7", f.AppliedIndex())
	}
}

// randomWorkload applies n random entries with advancing time.
func randomWorkload(t *testing.T, f *FSM, seed uint64, entries int) {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, seed))
	now := t0
	var leases []engine.LeaseRef
	queues := []string{"a", "b", "c"}
	for i := 0; i < entries; i++ {
		now = now.Add(time.Duration(rng.IntN(2000)) * time.Millisecond)
		var cmds []*cmdpb.Command
		for k := 0; k < 1+rng.IntN(8); k++ {
			q := queues[rng.IntN(len(queues))]
			switch r := rng.IntN(10); {
			case r < 4:
				p := enqueueParams(q, i*100+k)
				if rng.IntN(4) == 0 {
					p.ScheduledAt = now.Add(time.Duration(rng.IntN(10)) * time.Second)
				}
				cmds = append(cmds, EnqueueCommand(p))
			case r < 6:
				cmds = append(cmds, ReserveCommand(engine.ReserveParams{Queue: q, WorkerID: "w", N: 1 + rng.IntN(3), Lease: time.Duration(1+rng.IntN(5)) * time.Second}))
			case r < 8 && len(leases) > 0:
				ref := leases[rng.IntN(len(leases))]
				if rng.IntN(2) == 0 {
					cmds = append(cmds, AckCommand(ref))
				} else {
					cmds = append(cmds, NackCommand(engine.NackParams{LeaseRef: ref, Reason: "boom"}))
				}
			case r < 9:
				cmds = append(cmds, TickCommand())
			default:
				cmds = append(cmds, SetNodeCommand(NodeMeta{ID: fmt.Sprintf("n%d", rng.IntN(3)), RaftAddr: fmt.Sprint(i)}))
			}
		}
		for _, res := range applyEntry(t, f, f.AppliedIndex()+1, stamped(now, cmds...)) {
			for _, d := range res.Deliveries {
				leases = append(leases, engine.LeaseRef{JobID: d.Job.ID, LeaseToken: d.LeaseToken})
			}
		}
	}
}

// memSink is an in-memory raft.SnapshotSink.
type memSink struct {
	bytes.Buffer
	closed, cancelled bool
}

func (s *memSink) ID() string    { return "mem" }
func (s *memSink) Close() error  { s.closed = true; return nil }
func (s *memSink) Cancel() error { s.cancelled = true; return nil }

func snapshotBytes(t testing.TB, f *FSM) []byte {
	t.Helper()
	snap, err := f.Snapshot()
	if err != nil {
		t.Fatalf("snapshot: %v", err)
	}
	defer snap.Release()
	var sink memSink
	if err := snap.Persist(&sink); err != nil {
		t.Fatalf("persist: %v", err)
	}
	if !sink.closed || sink.cancelled {
		t.Fatalf("sink closed=%v cancelled=%v, want closed only", sink.closed, sink.cancelled)
	}
	return sink.Bytes()
}

func TestFSM_SnapshotRestoreGivesEqualDigest(t *testing.T) {
	for _, seed := range []uint64{1, 2, 3} {
		t.Run(fmt.Sprint("Seed", seed), func(t *testing.T) {
			src := newTestFSM(t)
			randomWorkload(t, src, seed, 300)
			data := snapshotBytes(t, src)

			dst := newTestFSM(t)
			randomWorkload(t, dst, seed+100, 20) // state to be replaced
			if err := dst.Restore(io.NopCloser(bytes.NewReader(data))); err != nil {
				t.Fatalf("restore: %v", err)
			}
			if src.Digest() != dst.Digest() {
				t.Fatalf("digest after restore %x, original %x", dst.Digest(), src.Digest())
			}
			if got, want := dst.AppliedIndex(), src.AppliedIndex(); got != want {
				t.Fatalf("applied index after restore %d, the snapshot's %d", got, want)
			}
			if !src.Now().Equal(dst.Now()) {
				t.Fatalf("time after restore %s, original %s", dst.Now(), src.Now())
			}
			if again := snapshotBytes(t, dst); !bytes.Equal(again, data) {
				t.Fatal("a snapshot of the restored state differs from the original snapshot")
			}
			// Both continue identically.
			randomWorkload(t, src, seed+7, 50)
			randomWorkload(t, dst, seed+7, 50)
			if src.Digest() != dst.Digest() {
				t.Fatal("restored replica diverged when fed the same entries")
			}
		})
	}
}

func TestFSM_RestoreRejectsCorruptSnapshot(t *testing.T) {
	src := newTestFSM(t)
	randomWorkload(t, src, 9, 100)
	good := snapshotBytes(t, src)

	flip := func(i int) []byte {
		b := bytes.Clone(good)
		b[i] ^= 0x40
		return b
	}
	tests := []struct {
		name string
		data []byte
	}{
		{"Empty", nil},
		{"BadMagic", flip(0)},
		{"BadVersion", flip(11)},
		{"FlippedBodyByte", flip(len(good) / 2)},
		{"FlippedChecksum", flip(len(good) - 1)},
		{"Truncated", good[:len(good)-10]},
		{"TruncatedChecksum", good[:len(good)-2]},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dst := newTestFSM(t)
			randomWorkload(t, dst, 5, 10)
			before := dst.Digest()
			err := dst.Restore(io.NopCloser(bytes.NewReader(tc.data)))
			if !errors.Is(err, ErrSnapshot) {
				t.Fatalf("restore: err %v, want ErrSnapshot", err)
			}
			if dst.Digest() != before {
				t.Fatal("a rejected snapshot changed the state")
			}
		})
	}
}

func TestDecodeEntry_RoundTripsEveryCommand(t *testing.T) {
	prio := uint32(7)
	maxLen := 10
	delay := time.Second
	backoff := engine.BackoffExponential
	cfg := engine.Config{Limits: engine.DefaultLimits(), Queues: []engine.QueueConfig{{
		Name: "q", DefaultPriority: &prio, MaxLength: &maxLen, RetryDelay: &delay, RetryBackoff: &backoff, DeadLetterQueue: "dlq",
	}}}
	cmds := []*cmdpb.Command{
		EnqueueCommand(engine.EnqueueParams{Queue: "q", JobType: "t", Payload: []byte("p"), Priority: &prio, ScheduledAt: t0, MaxAttempts: 3, Custom: map[string]string{"k": "v"}, IdempotencyKey: "idem"}),
		EnqueueBatchCommand([]engine.EnqueueParams{enqueueParams("q", 1), enqueueParams("q", 2)}),
		ReserveCommand(engine.ReserveParams{Queue: "q", WorkerID: "w", N: 3, Lease: time.Minute, RequestID: "r"}),
		AckCommand(engine.LeaseRef{JobID: 1, LeaseToken: 2}),
		AckBatchCommand([]engine.LeaseRef{{JobID: 5, LeaseToken: 6}, {JobID: 1 << 62, LeaseToken: 1<<64 - 1}}),
		NackCommand(engine.NackParams{LeaseRef: engine.LeaseRef{JobID: 1, LeaseToken: 2}, Directive: engine.DirectiveAfter, After: time.Second, Reason: "x"}),
		ReleaseCommand(engine.LeaseRef{JobID: 3, LeaseToken: 4}),
		ExtendLeaseCommand(engine.ExtendParams{LeaseRef: engine.LeaseRef{JobID: 3, LeaseToken: 4}, Lease: time.Hour}),
		ExtendAllLeasesCommand(5 * time.Second),
		DrainCommand(engine.DrainParams{Queue: "q", Max: 4}),
		RequeueDeadLettersCommand([]engine.JobID{1, 2}),
		DeleteDeadLettersCommand([]engine.JobID{3}),
		DeadLetterJobsCommand([]engine.JobID{4}, "why"),
		PauseQueueCommand("q"),
		ResumeQueueCommand("q"),
		TickCommand(),
		SetConfigCommand(cfg),
		SetNodeCommand(NodeMeta{ID: "n", RaftAddr: "r"}),
		DeleteNodeCommand("n"),
	}
	data, err := EncodeEntry(stamped(t0, cmds...))
	if err != nil {
		t.Fatal(err)
	}
	entry, err := DecodeEntry(data)
	if err != nil {
		t.Fatalf("decode: %v", err)
	}
	if len(entry.GetCommands()) != len(cmds) {
		t.Fatalf("decoded %d commands, want %d", len(entry.GetCommands()), len(cmds))
	}
	got := enqueueParamsFromProto(entry.GetCommands()[0].GetJobEnqueue().GetParams())
	if *got.Priority != prio || !got.ScheduledAt.Equal(t0) || got.Custom["k"] != "v" || got.IdempotencyKey != "idem" {
		t.Fatalf("enqueue params did not round-trip: %+v", got)
	}
	if b := entry.GetCommands()[4].GetJobAckBatch(); !slices.Equal(b.GetJobIds(), []uint64{5, 1 << 62}) ||
		!slices.Equal(b.GetLeaseTokens(), []uint64{6, 1<<64 - 1}) {
		t.Fatalf("ack batch refs did not round-trip: job ids %v, lease tokens %v", b.GetJobIds(), b.GetLeaseTokens())
	}
	gotCfg := engine.ConfigFromProto(entry.GetCommands()[16].GetConfigSet().GetConfig())
	if gotCfg.Limits != cfg.Limits || *gotCfg.Queues[0].DefaultPriority != prio || *gotCfg.Queues[0].MaxLength != maxLen ||
		*gotCfg.Queues[0].RetryDelay != delay || *gotCfg.Queues[0].RetryBackoff != backoff || gotCfg.Queues[0].DeadLetterQueue != "dlq" ||
		gotCfg.Queues[0].DefaultMaxAttempts != nil {
		t.Fatalf("engine config did not round-trip: %+v", gotCfg)
	}
}

func newStoreFSM(t *testing.T) *FSM {
	t.Helper()
	f, err := Open(Config{Engine: engine.Config{Limits: engine.DefaultLimits()}, SnapshotTempDir: t.TempDir(), PayloadDir: filepath.Join(t.TempDir(), "payloads")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := f.Close(); err != nil {
			t.Error(err)
		}
	})
	return f
}

// TestFSM_PayloadStoreIsInvisible runs the same entries on a replica that
// keeps payloads in its heap and one that keeps them in its on-disk store
// (payloads.go), and requires equal digests (which cover every payload),
// equal snapshot bytes, and a restore into the store (emptied first, then
// refilled from the snapshot) that continues identically.
func TestFSM_PayloadStoreIsInvisible(t *testing.T) {
	for _, seed := range []uint64{1, 2, 3} {
		t.Run(fmt.Sprint("Seed", seed), func(t *testing.T) {
			heap, disk := newTestFSM(t), newStoreFSM(t)
			randomWorkload(t, heap, seed, 300)
			randomWorkload(t, disk, seed, 300)
			if heap.Digest() != disk.Digest() {
				t.Fatal("the replica with a payload store digests another state")
			}
			data := snapshotBytes(t, heap)
			if !bytes.Equal(snapshotBytes(t, disk), data) {
				t.Fatal("the replica with a payload store writes another snapshot")
			}
			restored := newStoreFSM(t)
			randomWorkload(t, restored, seed+100, 50) // state to be replaced
			if err := restored.Restore(io.NopCloser(bytes.NewReader(data))); err != nil {
				t.Fatal(err)
			}
			for _, f := range []*FSM{heap, disk, restored} {
				randomWorkload(t, f, seed+7, 100)
			}
			if heap.Digest() != disk.Digest() || heap.Digest() != restored.Digest() {
				t.Fatal("replicas diverged after the same entries")
			}
			if disk.PayloadDiskBytes() == 0 {
				t.Fatal("the payload store holds no file")
			}
		})
	}
}
