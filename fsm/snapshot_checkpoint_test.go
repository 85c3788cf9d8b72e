package fsm

import (
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"

	"github.com/sepp-io/sepp/engine"
)

func openCheckpointFSM(t *testing.T, dir, checkpoints string) *FSM {
	t.Helper()
	f, err := Open(Config{Engine: engine.Config{Limits: engine.DefaultLimits()}, SnapshotTempDir: t.TempDir(), PayloadDir: dir, SnapshotCheckpointDir: checkpoints})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// joinPayloadsLastMembers applies a member list whose binaries all write
// snapshot format 4.
func joinPayloadsLastMembers(r *logRecorder, f *FSM) {
	r.t.Helper()
	for i := range 3 {
		r.apply(f, SetNodeCommand(NodeMeta{ID: fmt.Sprint("n", i), RaftAddr: fmt.Sprint("127.0.0.1:", 7000+i), MaxCommandVersion: CommandVersionSnapshotPayloadsLast}))
	}
}

// checkpointSnapshotStore is raft's file snapshot store in base, keeping
// two snapshots, and CheckpointSnapshots over it with its checkpoints in
// root.
func checkpointSnapshotStore(t *testing.T, base, root string) (raft.SnapshotStore, raft.SnapshotStore) {
	t.Helper()
	inner, err := raft.NewFileSnapshotStoreWithLogger(base, 2, hclog.NewNullLogger())
	if err != nil {
		t.Fatal(err)
	}
	snaps, err := CheckpointSnapshots(inner, root, nil)
	if err != nil {
		t.Fatal(err)
	}
	return inner, snaps
}

// persistTo takes a snapshot of f and persists it into a new snapshot of
// snaps at f's applied index; it returns the snapshot's id.
func persistTo(t *testing.T, f *FSM, snaps raft.SnapshotStore, afterSnapshot func()) string {
	t.Helper()
	snap, err := f.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	defer snap.Release()
	if afterSnapshot != nil {
		afterSnapshot()
	}
	sink, err := snaps.Create(raft.SnapshotVersionMax, f.AppliedIndex(), 1, raft.Configuration{}, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := snap.Persist(sink); err != nil {
		t.Fatal(err)
	}
	return sink.ID()
}

func openAll(t *testing.T, snaps raft.SnapshotStore, id string) (*raft.SnapshotMeta, []byte) {
	t.Helper()
	meta, rc, err := snaps.Open(id)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	data, err := io.ReadAll(rc)
	if err != nil {
		t.Fatalf("read snapshot %s: %v", id, err)
	}
	return meta, data
}

func checkpointNames(t *testing.T, root string) []string {
	t.Helper()
	ents, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	slices.Sort(names)
	return names
}

// TestFSM_CheckpointSnapshot (issue 35 item 3): with a checkpoint folder, a
// snapshot kept on disk holds no payload (it ends at the first checksum),
// its payloads stay in a checkpoint of the store taken at its index, and
// opening it gives the format 4 stream byte for byte as a state machine
// without checkpoints writes it at the same index, though the store has
// moved on since; a sink that keeps bytes only gets the same whole stream.
// The stream installs over a fresh store and restores over the kept one.
func TestFSM_CheckpointSnapshot(t *testing.T) {
	for _, seed := range []uint64{1, 2} {
		t.Run(fmt.Sprint("Seed", seed), func(t *testing.T) {
			base := t.TempDir()
			dir, root := filepath.Join(base, "payloads"), filepath.Join(base, "snapshot-checkpoints")
			rec := newLogRecorder(t, seed)
			node := openCheckpointFSM(t, dir, root)
			rec.run(node, 2)
			joinPayloadsLastMembers(rec, node)
			rec.run(node, 200)
			at := node.AppliedIndex()

			// The same state without checkpoints: the stream to match.
			plain := openStoreFSM(t, filepath.Join(base, "plain"))
			for _, l := range rec.entries[:at] {
				plain.Apply(l)
			}
			want := snapshotBytes(t, plain)
			closeFSM(t, plain)
			cut := payloadsLastCut(t, want)
			if len(want)-cut < 1000 {
				t.Fatalf("a payload section of %d bytes: the test tests nothing", len(want)-cut)
			}

			// A sink that keeps bytes only: the section from the checkpoint.
			if got := snapshotBytes(t, node); !bytes.Equal(got, want) {
				t.Fatalf("persisted into a byte sink: %d bytes differ from the %d a state machine without checkpoints writes", len(got), len(want))
			}
			if names := checkpointNames(t, root); len(names) != 0 {
				t.Fatalf("a released snapshot left %v", names)
			}

			_, snaps := checkpointSnapshotStore(t, base, root)
			id := persistTo(t, node, snaps, func() { rec.run(node, 100) }) // the store moves on before Persist
			state, err := os.Stat(filepath.Join(base, "snapshots", id, "state.bin"))
			if err != nil {
				t.Fatal(err)
			}
			if state.Size() != int64(cut) {
				t.Fatalf("the kept snapshot holds %d bytes, want %d: everything up to the payload section", state.Size(), cut)
			}
			meta, got := openAll(t, snaps, id)
			if !bytes.Equal(got, want) {
				t.Fatalf("opened: %d bytes differ from the %d a state machine without checkpoints writes", len(got), len(want))
			}
			if meta.Size != int64(len(want)) {
				t.Fatalf("opened: meta says %d bytes, the stream holds %d", meta.Size, len(want))
			}
			if listed, err := snaps.List(); err != nil || len(listed) != 1 || listed[0].Size != int64(len(want)) {
				t.Fatalf("listed: %v, %v; want the one snapshot of %d bytes", listed, err, len(want))
			}

			// Installed over a fresh store, and restored over the kept one
			// reading only up to the payload section.
			reference := newTestFSM(t)
			for _, l := range rec.entries[:at] {
				reference.Apply(l)
			}
			fresh := openStoreFSM(t, filepath.Join(base, "fresh"))
			_, rc, err := snaps.Open(id)
			if err != nil {
				t.Fatal(err)
			}
			if err := fresh.Restore(rc); err != nil {
				t.Fatal(err)
			}
			if fresh.Digest() != reference.Digest() {
				t.Fatal("installed over a fresh store: the state differs from the log's at the snapshot's index")
			}
			closeFSM(t, fresh)
			closeFSM(t, node)
			kept := openStoreFSM(t, dir)
			_, rc, err = snaps.Open(id)
			if err != nil {
				t.Fatal(err)
			}
			if err := kept.Restore(rc); err != nil {
				t.Fatal(err)
			}
			if kept.payloads.rebuilds != 0 {
				t.Fatal("the store kept from the last run was refilled")
			}
			rec.replay(t, kept, at+1, seed)
			all := newTestFSM(t)
			rec.replay(t, all, 1, seed)
			if kept.Digest() != all.Digest() {
				t.Fatal("restored over the kept store and replayed: the state differs")
			}
			closeFSM(t, kept)
		})
	}
}

// TestCheckpointSnapshots_Lifecycle: a checkpoint lives as long as raft
// lists its snapshot; what a crash leaves (a pending checkpoint, one whose
// snapshot raft never finalised) is removed at the next start; a
// checkpoint that went missing fails Open, naming it; a reader that stops
// early stops the stream.
func TestCheckpointSnapshots_Lifecycle(t *testing.T) {
	base := t.TempDir()
	dir, root := filepath.Join(base, "payloads"), filepath.Join(base, "snapshot-checkpoints")
	rec := newLogRecorder(t, 7)
	node := openCheckpointFSM(t, dir, root)
	defer closeFSM(t, node)
	rec.run(node, 2)
	joinPayloadsLastMembers(rec, node)
	inner, snaps := checkpointSnapshotStore(t, base, root)
	// Payloads larger than the stream's buffers (1 MiB), so that a reader
	// holds the checkpoint open while it streams.
	big := make([]engine.EnqueueParams, 48)
	for i := range big {
		big[i] = engine.EnqueueParams{Queue: "big", JobType: "big", Payload: bytes.Repeat([]byte{byte(i)}, 64<<10)}
	}
	rec.apply(node, EnqueueBatchCommand(big))
	var ids []string
	for range 3 {
		rec.run(node, 60)
		ids = append(ids, persistTo(t, node, snaps, nil))
	}
	kept := []string{ids[1], ids[1] + checkpointInfoSuffix, ids[2], ids[2] + checkpointInfoSuffix}
	slices.Sort(kept)
	if got := checkpointNames(t, root); !slices.Equal(got, kept) {
		t.Fatalf("with two snapshots retained the checkpoints are %v, want %v", got, kept)
	}

	// What a crash can leave: a pending checkpoint, and a checkpoint with
	// its size for a snapshot raft never finalised.
	for _, name := range []string{checkpointPendingPrefix + "999", "1-999-1"} {
		if err := os.MkdirAll(filepath.Join(root, name), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(root, "1-999-1"+checkpointInfoSuffix), []byte(`{"payload_section_bytes":8}`), 0o600); err != nil {
		t.Fatal(err)
	}
	snaps, err := CheckpointSnapshots(inner, root, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := checkpointNames(t, root); !slices.Equal(got, kept) {
		t.Fatalf("after a restart the checkpoints are %v, want %v", got, kept)
	}

	// Two readers at once (two followers sent the same snapshot): Pebble
	// locks a directory it opens, so they share one handle.
	_, first := openAll(t, snaps, ids[2])
	m1, r1, err := snaps.Open(ids[2])
	if err != nil {
		t.Fatal(err)
	}
	m2, r2, err := snaps.Open(ids[2])
	if err != nil {
		t.Fatal(err)
	}
	if m1.Size < 2<<20 {
		t.Fatalf("a snapshot of %d bytes: the readers would not hold the checkpoint open while they stream", m1.Size)
	}
	head := make([]byte, m1.Size/2) // the first stops mid-section, the checkpoint open
	if _, err := io.ReadFull(r1, head); err != nil {
		t.Fatal(err)
	}
	second, err := io.ReadAll(r2)
	if err != nil || int64(len(second)) != m2.Size || !bytes.Equal(second, first) {
		t.Fatalf("a second reader while the first streams the payloads: %d bytes of %d, %v", len(second), m2.Size, err)
	}
	rest, err := io.ReadAll(r1)
	if err != nil || !bytes.Equal(append(head, rest...), first) {
		t.Fatalf("the first reader, after the second: %v", err)
	}
	_ = r1.Close()
	_ = r2.Close()

	// A reader that stops in the payload section.
	meta, rc, err := snaps.Open(ids[2])
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadFull(rc, make([]byte, meta.Size-5)); err != nil {
		t.Fatal(err)
	}
	if err := rc.Close(); err != nil {
		t.Fatal(err)
	}

	if err := os.RemoveAll(filepath.Join(root, ids[2])); err != nil {
		t.Fatal(err)
	}
	if _, _, err := snaps.Open(ids[2]); err == nil || !strings.Contains(err.Error(), filepath.Join(root, ids[2])) {
		t.Fatalf("Open of a snapshot whose checkpoint is missing: %v, want an error naming it", err)
	}
}

// TestFSM_CheckpointPinnedBytes: a checkpoint's files linked to the live
// store cost nothing; once the store no longer has them, the checkpoint
// holds them alone, and they are counted once.
func TestFSM_CheckpointPinnedBytes(t *testing.T) {
	base := t.TempDir()
	dir, root := filepath.Join(base, "payloads"), filepath.Join(base, "snapshot-checkpoints")
	rec := newLogRecorder(t, 3)
	node := openCheckpointFSM(t, dir, root)
	rec.run(node, 2)
	joinPayloadsLastMembers(rec, node)
	rng := rand.New(rand.NewPCG(3, 3))
	big := make([]engine.EnqueueParams, 16)
	for i := range big {
		payload := make([]byte, 60<<10) // random: it does not compress
		for j := range payload {
			payload[j] = byte(rng.Uint32())
		}
		big[i] = engine.EnqueueParams{Queue: "big", JobType: "big", Payload: payload}
	}
	rec.apply(node, EnqueueBatchCommand(big))
	_, snaps := checkpointSnapshotStore(t, base, root)
	persistTo(t, node, snaps, nil)
	persistTo(t, node, snaps, nil) // a second checkpoint linking the same files
	linked := node.CheckpointPinnedBytes()
	if linked > 256<<10 {
		t.Fatalf("checkpoints of a store that keeps their files pin %d bytes, want only their small copied files", linked)
	}
	closeFSM(t, node)
	if err := os.RemoveAll(dir); err != nil { // the store gone: every file is the checkpoints' alone
		t.Fatal(err)
	}
	var oneCheckpoint int64
	ents, _ := os.ReadDir(root)
	for _, e := range ents {
		if e.IsDir() {
			files, _ := os.ReadDir(filepath.Join(root, e.Name()))
			for _, f := range files {
				if info, err := f.Info(); err == nil {
					oneCheckpoint += info.Size()
				}
			}
			break
		}
	}
	pinned := node.CheckpointPinnedBytes()
	if oneCheckpoint < 100<<10 || pinned < uint64(oneCheckpoint) || pinned > uint64(oneCheckpoint)+linked+64<<10 {
		t.Fatalf("with the store gone the checkpoints pin %d bytes; one checkpoint's files take %d: the linked files must count once", pinned, oneCheckpoint)
	}
}

// TestFSM_CheckpointFailureFailsTheSnapshot: the store's checkpoint runs
// beside the engine's part of the capture; when it fails, the snapshot
// fails with its error (raft tries again at its next interval), leaves no
// temporary file behind, and the next snapshot, with the checkpoint
// folder back, succeeds.
func TestFSM_CheckpointFailureFailsTheSnapshot(t *testing.T) {
	base := t.TempDir()
	dir, root := filepath.Join(base, "payloads"), filepath.Join(base, "snapshot-checkpoints")
	rec := newLogRecorder(t, 3)
	node := openCheckpointFSM(t, dir, root)
	defer closeFSM(t, node)
	rec.run(node, 2)
	joinPayloadsLastMembers(rec, node)
	rec.run(node, 100)

	// A file where the checkpoints' folder was: the checkpoint cannot be made.
	if err := os.RemoveAll(root); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(root, []byte("not a folder"), 0o600); err != nil {
		t.Fatal(err)
	}
	if snap, err := node.Snapshot(); err == nil {
		snap.Release()
		t.Fatal("a snapshot whose checkpoint cannot be made succeeded")
	} else if !strings.Contains(err.Error(), "checkpoint") {
		t.Fatalf("the snapshot failed with %v, want the checkpoint's error", err)
	}
	if left, err := os.ReadDir(node.cfg.SnapshotTempDir); err != nil || len(left) != 0 {
		t.Fatalf("the failed snapshot left %d temporary files (%v)", len(left), err)
	}

	if err := os.Remove(root); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(root, 0o700); err != nil {
		t.Fatal(err)
	}
	rec.run(node, 10)
	_, snaps := checkpointSnapshotStore(t, filepath.Join(base, "raft"), root)
	id := persistTo(t, node, snaps, nil)
	if _, data := openAll(t, snaps, id); len(data) == 0 {
		t.Fatal("the snapshot after the folder came back is empty")
	}
}
