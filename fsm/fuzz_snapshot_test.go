package fsm

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/hashicorp/raft"

	"github.com/sepp-io/sepp/engine"
)

// bufferSink is a raft.SnapshotSink over memory.
type bufferSink struct{ bytes.Buffer }

func (s *bufferSink) ID() string    { return "fuzz" }
func (s *bufferSink) Cancel() error { return nil }
func (s *bufferSink) Close() error  { return nil }

// seedSnapshot is a valid snapshot stream of a state with jobs in several
// states and a member list.
func seedSnapshot(tb testing.TB) []byte {
	tb.Helper()
	f := New(Config{Engine: engine.Config{Limits: engine.DefaultLimits()}, SnapshotTempDir: tb.TempDir()})
	prio := uint32(5)
	cmds := stamped(t0,
		SetNodeCommand(NodeMeta{ID: "n1", RaftAddr: "127.0.0.1:1", GRPCAddr: "127.0.0.1:2"}),
		EnqueueCommand(engine.EnqueueParams{Queue: "q", JobType: "t", Payload: []byte("one"), Priority: &prio, IdempotencyKey: "k1"}),
		EnqueueCommand(engine.EnqueueParams{Queue: "q", JobType: "t", Payload: []byte("two")}),
		ReserveCommand(engine.ReserveParams{Queue: "q", WorkerID: "w", N: 1, RequestID: "r"}),
	)
	data, err := EncodeEntry(cmds)
	if err != nil {
		tb.Fatal(err)
	}
	f.Apply(&raft.Log{Index: 1, Type: raft.LogCommand, Data: data})
	snap, err := f.Snapshot()
	if err != nil {
		tb.Fatal(err)
	}
	defer snap.Release()
	var sink bufferSink
	if err := snap.Persist(&sink); err != nil {
		tb.Fatal(err)
	}
	return sink.Bytes()
}

// seedPayloadSectionSnapshot is a valid format 2 stream: a node with a
// payload store whose members all restore format 2.
func seedPayloadSectionSnapshot(tb testing.TB) []byte {
	tb.Helper()
	return seedStoreSnapshot(tb, CommandVersionSnapshotPayloads, snapshotFormatPayloadSection)
}

// seedStoreSnapshot is a valid stream of a node with a payload store whose
// members all apply version v, written in format want.
func seedStoreSnapshot(tb testing.TB, v uint32, want byte) []byte {
	tb.Helper()
	cfg := Config{Engine: engine.Config{Limits: engine.DefaultLimits()}, SnapshotTempDir: tb.TempDir(), PayloadDir: filepath.Join(tb.TempDir(), "payloads")}
	if v >= CommandVersionSnapshotStoreFiles {
		cfg.SnapshotCheckpointDir = tb.TempDir() // format 5 is written with checkpoints only
	}
	f, err := Open(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	cmds := stamped(t0,
		SetNodeCommand(NodeMeta{ID: "n1", RaftAddr: "127.0.0.1:1", MaxCommandVersion: v}),
		EnqueueCommand(engine.EnqueueParams{Queue: "q", JobType: "t", Payload: []byte("one")}),
		EnqueueCommand(engine.EnqueueParams{Queue: "q", JobType: "t", Payload: []byte("two")}),
		EnqueueCommand(engine.EnqueueParams{Queue: "q", JobType: "t"}),
	)
	data, err := EncodeEntry(cmds)
	if err != nil {
		tb.Fatal(err)
	}
	f.Apply(&raft.Log{Index: 1, Type: raft.LogCommand, Data: data})
	snap, err := f.Snapshot()
	if err != nil {
		tb.Fatal(err)
	}
	defer snap.Release()
	var sink bufferSink
	if err := snap.Persist(&sink); err != nil {
		tb.Fatal(err)
	}
	if got := sink.Bytes()[11]; got != want {
		tb.Fatalf("seed written in format %d, want %d", got, want)
	}
	return sink.Bytes()
}

// TestSnapshotSeedCorpus writes (with -update-corpus) and checks the
// committed seed of FuzzRestoreSnapshot.
func TestSnapshotSeedCorpus(t *testing.T) {
	dir := filepath.Join("testdata", "fuzz", "FuzzRestoreSnapshot")
	if *updateCorpus {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		body := fmt.Sprintf("go test fuzz v1\n[]byte(%q)\n", seedSnapshot(t))
		if err := os.WriteFile(filepath.Join(dir, "seed_state"), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "seed_state")); err != nil {
		t.Fatalf("seed corpus missing (go test ./fsm -run TestSnapshotSeedCorpus -update-corpus): %v", err)
	}
}

// FuzzRestoreSnapshot: Restore never panics; it refuses what it cannot
// trust with an error wrapping ErrSnapshot and leaves the state it had, and
// a stream it accepts restores a state that keeps the engine's invariants.
func FuzzRestoreSnapshot(f *testing.F) {
	seed := seedSnapshot(f)
	f.Add(seed)
	v2 := seedPayloadSectionSnapshot(f)
	f.Add(v2)
	f.Add(v2[:len(v2)-20]) // cut in the payload section
	v4 := seedStoreSnapshot(f, CommandVersionSnapshotPayloadsLast, snapshotFormatPayloadsLast)
	f.Add(v4)
	f.Add(v4[:len(v4)-10]) // cut in the payload section, which comes last
	// The engine's part in protobuf (every member applies 28).
	f.Add(seedStoreSnapshot(f, CommandVersionSnapshotProtobuf, snapshotFormatPayloadsLast))
	// The store's files last (every member applies 29): refused by a
	// state machine that keeps its payloads in memory.
	f.Add(seedStoreSnapshot(f, CommandVersionSnapshotStoreFiles, snapshotFormatStoreFiles))
	// The engine's part in chunks as well (every member applies 30).
	f.Add(seedStoreSnapshot(f, CommandVersionSnapshotEngineStreamed, snapshotFormatEngineStreamed))
	f.Add(seed[:len(seed)/2])
	f.Add([]byte("SEPPSNAP"))
	f.Fuzz(func(t *testing.T, data []byte) {
		fsm := New(Config{Engine: engine.Config{Limits: engine.DefaultLimits()}, SnapshotTempDir: t.TempDir()})
		before := fsm.Digest()
		err := fsm.Restore(io.NopCloser(bytes.NewReader(data)))
		if err != nil {
			if !errors.Is(err, ErrSnapshot) {
				t.Fatalf("restore error %v does not wrap ErrSnapshot", err)
			}
			if fsm.Digest() != before {
				t.Fatal("a refused snapshot changed the state")
			}
			return
		}
		if err := fsm.Read(func(e *engine.Engine) error { return e.CheckInvariants() }); err != nil {
			t.Fatalf("restored state breaks an invariant: %v", err)
		}
	})
}
