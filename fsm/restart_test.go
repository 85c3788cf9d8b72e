package fsm

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/hashicorp/raft"

	"github.com/sepp-io/sepp/engine"
	cmdpb "github.com/sepp-io/sepp/proto/seppcmd/v1"
	storepb "github.com/sepp-io/sepp/proto/seppstore/v1"
	"github.com/sepp-io/sepp/store"
)

// logRecorder applies generated entries to a state machine and keeps them,
// so that another state machine can replay the same log.
type logRecorder struct {
	t       *testing.T
	rng     *rand.Rand
	now     time.Time
	leases  []engine.LeaseRef
	leaseQ  []string // the queue of each lease
	entries []*raft.Log
	// results adds queue "kept", which keeps completed jobs a minute, whose
	// acks carry results (completed_test.go).
	results bool
}

func newLogRecorder(t *testing.T, seed uint64) *logRecorder {
	t.Helper()
	return &logRecorder{t: t, rng: rand.New(rand.NewPCG(seed, seed)), now: t0}
}

// run applies n generated entries to f (which must be at the recorder's
// last index): enqueues (some scheduled), reserves, acks, nacks (jobs of
// queue "a" forward to "dlq" once out of attempts, a copy of their
// payload), drains of dead letters and ticks.
func (r *logRecorder) run(f *FSM, n int) {
	r.t.Helper()
	queues := []string{"a", "b", "dlq"}
	if len(r.entries) == 0 {
		cmds := []*cmdpb.Command{CreateQueueCommand(engine.QueueConfig{Name: "dlq"}, false),
			CreateQueueCommand(engine.QueueConfig{Name: "a", DeadLetterQueue: "dlq"}, false)}
		if r.results {
			cmds = append(cmds, CreateQueueCommand(engine.QueueConfig{Name: "kept", CompletedRetention: time.Minute}, false))
		}
		r.apply(f, cmds...)
		n--
	}
	if r.results {
		queues = append(queues, "kept", "kept")
	}
	for range n {
		r.now = r.now.Add(time.Duration(r.rng.IntN(2000)) * time.Millisecond)
		var cmds []*cmdpb.Command
		for k := 0; k < 1+r.rng.IntN(6); k++ {
			q := queues[r.rng.IntN(len(queues))]
			switch x := r.rng.IntN(12); {
			case x < 5:
				p := enqueueParams(q, len(r.entries)*100+k)
				p.Payload = append(p.Payload, make([]byte, r.rng.IntN(300))...)
				if r.rng.IntN(4) == 0 {
					p.ScheduledAt = r.now.Add(time.Duration(r.rng.IntN(10)) * time.Second)
				}
				cmds = append(cmds, EnqueueCommand(p))
			case x < 7:
				cmds = append(cmds, ReserveCommand(engine.ReserveParams{Queue: q, WorkerID: "w", N: 1 + r.rng.IntN(3), Lease: time.Duration(1+r.rng.IntN(5)) * time.Second}))
			case x < 10 && len(r.leases) > 0:
				i := r.rng.IntN(len(r.leases))
				if r.results && r.rng.IntN(2) == 0 {
					i = len(r.leases) - 1 // the newest: its lease likely holds
				}
				ref, lq := r.leases[i], r.leaseQ[i]
				r.leases = append(r.leases[:i], r.leases[i+1:]...)
				r.leaseQ = append(r.leaseQ[:i], r.leaseQ[i+1:]...)
				if r.results && (lq == "kept" && r.rng.IntN(4) > 0 || r.rng.IntN(8) == 0) {
					// An ack on "kept" keeps its job, with or without a
					// result; elsewhere a result is refused.
					var result []byte
					if r.rng.IntN(2) == 0 {
						result = fmt.Appendf(nil, "result of %d at %d", ref.JobID, len(r.entries))
					}
					cmds = append(cmds, AckWithResultCommand(ref, result))
				} else if r.rng.IntN(3) == 0 {
					cmds = append(cmds, AckCommand(ref))
				} else {
					cmds = append(cmds, NackCommand(engine.NackParams{LeaseRef: ref, Reason: "boom"}))
				}
			case x < 11:
				cmds = append(cmds, DrainCommand(engine.DrainParams{Queue: queues[r.rng.IntN(len(queues))], Max: 1 + r.rng.IntN(2)}))
			default:
				cmds = append(cmds, TickCommand())
			}
		}
		r.apply(f, cmds...)
	}
}

func (r *logRecorder) apply(f *FSM, cmds ...*cmdpb.Command) {
	r.t.Helper()
	data, err := EncodeEntry(stamped(r.now, cmds...))
	if err != nil {
		r.t.Fatalf("encode: %v", err)
	}
	l := &raft.Log{Index: uint64(len(r.entries)) + 1, Term: 1 + uint64(len(r.entries))/100, Type: raft.LogCommand, Data: data}
	r.entries = append(r.entries, l)
	results, ok := f.Apply(l).([]Result)
	if !ok {
		r.t.Fatalf("apply index %d: no results", l.Index)
	}
	for _, res := range results {
		for _, d := range res.Deliveries {
			r.leases = append(r.leases, engine.LeaseRef{JobID: d.Job.ID, LeaseToken: d.LeaseToken})
			r.leaseQ = append(r.leaseQ, d.Job.Queue)
		}
	}
}

// replay applies the recorded entries from index from (1-based) to the
// end, in batches of random sizes as raft hands them over.
func (r *logRecorder) replay(t *testing.T, f *FSM, from uint64, seed uint64) {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 7))
	rest := r.entries[from-1:]
	for len(rest) > 0 {
		n := min(1+rng.IntN(40), len(rest))
		f.ApplyBatch(rest[:n])
		rest = rest[n:]
	}
}

func openStoreFSM(t *testing.T, dir string) *FSM {
	t.Helper()
	f, err := Open(Config{Engine: engine.Config{Limits: engine.DefaultLimits()}, SnapshotTempDir: t.TempDir(), PayloadDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func closeFSM(t *testing.T, f *FSM) {
	t.Helper()
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

func copyDir(t *testing.T, from, to string) {
	t.Helper()
	if err := os.CopyFS(to, os.DirFS(from)); err != nil {
		t.Fatal(err)
	}
}

// TestFSM_StoreKeptAcrossRestart restarts a node over the payload store it
// kept, in each relation between the store's applied index and raft's last
// snapshot, replays the log after the snapshot as raft does, and requires
// the state (whose digest covers every payload) to equal that of a replica
// that never restarted, before and after more entries. A store at or past
// the snapshot is kept (no payload is written again); one behind it, or a
// restart without a snapshot, ... is rebuilt or replayed into.
func TestFSM_StoreKeptAcrossRestart(t *testing.T) {
	const total, more = 300, 100
	cases := []struct {
		name      string
		snapAt    uint64 // 0: no snapshot, the log replays from its start
		storeAt   uint64 // the index the kept store was closed at
		wantKept  bool
		wantLoads int
	}{
		{"store past the snapshot", 120, total, true, 0},
		{"store at the snapshot", total, total, true, 0},
		{"no snapshot", 0, total, true, 0},
		{"store behind the snapshot", 200, 90, false, 1},
	}
	for _, tc := range cases {
		for _, seed := range []uint64{1, 2} {
			t.Run(fmt.Sprintf("%s/Seed%d", tc.name, seed), func(t *testing.T) {
				dir := filepath.Join(t.TempDir(), "payloads")
				reference := newTestFSM(t)
				rec := newLogRecorder(t, seed)
				node := openStoreFSM(t, dir)
				var snap []byte
				kept := filepath.Join(t.TempDir(), "kept")
				for _, stop := range []uint64{tc.storeAt, tc.snapAt, total} {
					if stop == 0 || uint64(len(rec.entries)) >= stop {
						continue
					}
					before := uint64(len(rec.entries))
					rec.run(node, int(stop-before))
					if stop == tc.snapAt {
						snap = snapshotBytes(t, node)
					}
					if stop == tc.storeAt && tc.storeAt < total {
						closeFSM(t, node) // a clean stop flushes: the store is at storeAt
						copyDir(t, dir, kept)
						node = openStoreFSM(t, dir)
						rec.replay(t, node, 1, seed) // catch up again, over the store
					}
				}
				if tc.snapAt == total {
					snap = snapshotBytes(t, node)
				}
				rec.replay(t, reference, 1, seed)
				closeFSM(t, node)
				if tc.storeAt < total {
					if err := os.RemoveAll(dir); err != nil {
						t.Fatal(err)
					}
					copyDir(t, kept, dir)
				}

				restarted := openStoreFSM(t, dir)
				defer closeFSM(t, restarted)
				if got := restarted.payloads.st.AppliedIndex(); got != tc.storeAt {
					t.Fatalf("the kept store is at index %d, want %d (a clean stop records the last applied index)", got, tc.storeAt)
				}
				from := uint64(1)
				if snap != nil {
					if err := restarted.Restore(io.NopCloser(bytes.NewReader(snap))); err != nil {
						t.Fatal(err)
					}
					from = tc.snapAt + 1
				}
				if tc.storeAt > from-1 {
					if !errors.Is(restarted.Read(func(*engine.Engine) error { return nil }), ErrCatchingUp) {
						t.Fatal("a read of a node behind its store is not refused")
					}
					if _, err := restarted.Snapshot(); !errors.Is(err, ErrCatchingUp) {
						t.Fatalf("a snapshot of a node behind its store: %v, want ErrCatchingUp", err)
					}
				}
				rec.replay(t, restarted, from, seed+10)
				if got := restarted.payloads.rebuilds; got != tc.wantLoads {
					t.Fatalf("the store was refilled from the snapshot %d times, want %d", got, tc.wantLoads)
				}
				if restarted.AppliedIndex() != reference.AppliedIndex() || restarted.Digest() != reference.Digest() {
					t.Fatalf("the restarted node's state differs from the replica's at index %d", reference.AppliedIndex())
				}
				rec.run(restarted, more)
				rec.replay(t, reference, total+1, seed)
				if restarted.Digest() != reference.Digest() {
					t.Fatal("the restarted node diverged after more entries")
				}
				if tc.wantKept && snap != nil {
					// The store was not rewritten: its payloads of the
					// snapshot's jobs came from the first run.
					t.Logf("kept the store at %d over the snapshot at %d", tc.storeAt, tc.snapAt)
				}
			})
		}
	}
}

// TestFSM_StoreOfAnotherLogStopsTheNode: a kept store whose entry at its
// applied index has another term than the log's belongs to another log;
// the replay stops the node with a message saying what to do.
func TestFSM_StoreOfAnotherLogStopsTheNode(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "payloads")
	rec := newLogRecorder(t, 3)
	node := openStoreFSM(t, dir)
	rec.run(node, 50)
	closeFSM(t, node)
	other := &logRecorder{t: t, rng: rec.rng, now: rec.now, entries: make([]*raft.Log, len(rec.entries))}
	for i, l := range rec.entries {
		c := *l
		c.Term += 5 // the same indexes, written in other terms
		other.entries[i] = &c
	}
	restarted := openStoreFSM(t, dir)
	defer closeFSM(t, restarted)
	defer func() {
		r := recover()
		if r == nil || !strings.Contains(fmt.Sprint(r), "belongs to another log") {
			t.Fatalf("replaying another log over the store: %v, want a stop naming the mismatch", r)
		}
	}()
	other.replay(t, restarted, 1, 1)
}

// TestFSM_DamagedStoreIsRebuilt damages the kept store between two runs (a
// lost table file; a store marked by a failed read) and requires the node
// to end in the right state, the store refilled from the snapshot and the
// log: a store that cannot be opened is emptied, and so is a marked one.
func TestFSM_DamagedStoreIsRebuilt(t *testing.T) {
	damages := map[string]func(t *testing.T, sst string){
		"lost table": func(t *testing.T, sst string) {
			t.Helper()
			if err := os.Remove(sst); err != nil {
				t.Fatal(err)
			}
		},
		// A read that failed (a damaged block, found by a read or by a
		// background compaction: the node stops, from whichever goroutine
		// met it) leaves the marker; what the next start does with it is
		// checked here, in one process, without racing Pebble's
		// compactions to the damaged block.
		"marked after a failed read": func(t *testing.T, sst string) {
			t.Helper()
			markForRebuild(filepath.Dir(sst))
		},
		// A record that reads back fine but holds another payload than
		// the one put (a bug, or a damage no checksum caught): the engine
		// stops the node when it meets it, and the store must be rebuilt
		// at the next start, not met again.
		"a payload of another length": func(t *testing.T, sst string) {
			t.Helper()
			st, err := store.Open(filepath.Dir(sst), store.Options{})
			if err != nil {
				t.Fatal(err)
			}
			var live uint64
			if err := st.JobRange(0, ^uint64(0), func(id uint64, body *storepb.JobBody) bool {
				live = id
				return len(body.GetPayload()) == 0 // the first job with a payload
			}); err != nil || live == 0 {
				t.Fatalf("no job with a payload in the store (%v)", err)
			}
			b := st.NewBatch()
			b.PutJob(live, &storepb.JobBody{Payload: []byte("another payload of another length")})
			if err := b.CommitUnindexed(); err != nil {
				t.Fatal(err)
			}
			if err := st.Flush(); err != nil {
				t.Fatal(err)
			}
			if err := st.Close(); err != nil {
				t.Fatal(err)
			}
		},
	}
	for name, damage := range damages {
		t.Run(name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "payloads")
			reference := newTestFSM(t)
			rec := newLogRecorder(t, 5)
			node := openStoreFSM(t, dir)
			rec.run(node, 100)
			snap := snapshotBytes(t, node)
			rec.run(node, 100)
			closeFSM(t, node)
			rec.replay(t, reference, 1, 1)
			ssts, _ := filepath.Glob(filepath.Join(dir, "*.sst"))
			if len(ssts) == 0 {
				t.Fatal("the closed store has no table file to damage")
			}
			slices.Sort(ssts)
			damage(t, ssts[len(ssts)-1])

			// A run that stops at the damage (a panic, as the node's
			// apply or read goroutine would) is followed by another.
			stops := 0
			for run := 0; ; run++ {
				if run == 3 {
					t.Fatalf("the node stopped %d times in a row", stops)
				}
				f := openStoreFSM(t, dir)
				digest, stopped := func() (d [32]byte, stopped any) {
					defer func() { stopped = recover() }()
					if err := f.Restore(io.NopCloser(bytes.NewReader(snap))); err != nil {
						t.Fatal(err)
					}
					rec.replay(t, f, 101, 2)
					return f.Digest(), nil
				}()
				if stopped != nil {
					stops++
					t.Logf("run %d stopped: %v", run, stopped)
					_ = f.Close()
					continue
				}
				if digest != reference.Digest() {
					t.Fatal("the node serves another state over its damaged store")
				}
				if f.payloads.rebuilds != 1 {
					t.Fatalf("the damaged store was refilled %d times, want 1", f.payloads.rebuilds)
				}
				t.Logf("run %d: the right state after %d stops, the store refilled once", run, stops)
				closeFSM(t, f)
				break
			}
		})
	}
}

// TestFSM_CrashAfterSnapshotKeepsTheStore crashes a node (Pebble's
// crashable in-memory file system, a random share of unsynced writes kept)
// at random points after raft persisted a snapshot, and requires the store
// it comes back with to be at or past that snapshot (so it is kept, not
// rebuilt) and the state after replaying the log to equal a replica's.
// A crash before any snapshot replays the whole log over whatever the
// store kept.
func TestFSM_CrashAfterSnapshotKeepsTheStore(t *testing.T) {
	for _, seed := range []uint64{1, 2, 3} {
		t.Run(fmt.Sprint("Seed", seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 11))
			fs := vfs.NewCrashableMem()
			opts := store.Options{FS: fs, MemTableBytes: 16 << 10, CacheBytes: 1 << 20}
			open := func(fs vfs.FS) *FSM {
				o := opts
				o.FS = fs
				f, err := Open(Config{Engine: engine.Config{Limits: engine.DefaultLimits()}, SnapshotTempDir: t.TempDir(), PayloadDir: "payloads", PayloadStore: o})
				if err != nil {
					t.Fatal(err)
				}
				return f
			}
			rec := newLogRecorder(t, seed)
			node := open(fs)
			defer closeFSM(t, node)
			var (
				snap    []byte
				snapAt  uint64
				reached int
			)
			for round := range 12 {
				rec.run(node, 40+rng.IntN(80))
				if round%3 == 1 { // a crash right after raft kept a snapshot
					snap, snapAt = snapshotBytes(t, node), node.AppliedIndex()
				}
				img := fs.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: rng.IntN(50), RNG: rng})
				restarted := open(img)
				storeAt := restarted.payloads.st.AppliedIndex()
				from := uint64(1)
				if snap != nil {
					if storeAt < snapAt {
						t.Fatalf("after a crash the store is at %d, behind the snapshot at %d that raft kept", storeAt, snapAt)
					}
					if err := restarted.Restore(io.NopCloser(bytes.NewReader(snap))); err != nil {
						t.Fatal(err)
					}
					from = snapAt + 1
				}
				rec.replay(t, restarted, from, seed+uint64(round))
				if restarted.payloads.rebuilds != 0 {
					t.Fatalf("round %d: the store was refilled from the snapshot", round)
				}
				reference := newTestFSM(t)
				rec.replay(t, reference, 1, seed)
				if restarted.Digest() != reference.Digest() {
					t.Fatalf("round %d: after a crash (store at %d, snapshot at %d) the state differs at index %d", round, storeAt, snapAt, reference.AppliedIndex())
				}
				if storeAt > snapAt {
					reached++
				}
				closeFSM(t, restarted)
			}
			if reached == 0 {
				t.Fatal("no crash image had the store past the snapshot: the replay over a kept store went untested")
			}
			t.Logf("12 crash images; %d with the store past the snapshot", reached)
		})
	}
}

// TestFSM_StoreAheadOfTheLogIsDropped: a store past the last index of the
// node's log (a backup of the log restored beside a newer store) is
// emptied before raft starts, and the snapshot and the log rebuild it; a
// store within the log is kept.
func TestFSM_StoreAheadOfTheLogIsDropped(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "payloads")
	rec := newLogRecorder(t, 9)
	node := openStoreFSM(t, dir)
	rec.run(node, 120)
	snap := snapshotBytes(t, node)
	rec.run(node, 80)
	closeFSM(t, node)

	kept := openStoreFSM(t, dir)
	if dropped, err := kept.DropPayloadStoreAbove(200); err != nil || dropped {
		t.Fatalf("a store within the log: dropped %v, %v; want kept", dropped, err)
	}
	closeFSM(t, kept)

	restarted := openStoreFSM(t, dir)
	defer closeFSM(t, restarted)
	if dropped, err := restarted.DropPayloadStoreAbove(150); err != nil || !dropped {
		t.Fatalf("a store past the log's last index 150: dropped %v, %v; want dropped", dropped, err)
	}
	// The log as the backup has it ends at 150; the cluster goes on with
	// other entries from there.
	other := &logRecorder{t: t, rng: rand.New(rand.NewPCG(99, 99)), now: rec.now, entries: slices.Clone(rec.entries[:150])}
	if err := restarted.Restore(io.NopCloser(bytes.NewReader(snap))); err != nil {
		t.Fatal(err)
	}
	other.replay(t, restarted, 121, 3)
	other.run(restarted, 60)
	reference := newTestFSM(t)
	other.replay(t, reference, 1, 4)
	if restarted.Digest() != reference.Digest() {
		t.Fatal("after dropping the store ahead of the log, the state differs from a replica's")
	}
}
