package fsm

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"
)

// joinStoreFilesMembers applies a member list of three, two of this
// binary's command version and the third of oldest.
func joinStoreFilesMembers(r *logRecorder, f *FSM, oldest uint32) {
	r.t.Helper()
	for i := range 3 {
		v := CommandVersion
		if i == 2 {
			v = oldest
		}
		r.apply(f, SetNodeCommand(NodeMeta{ID: fmt.Sprint("n", i), RaftAddr: fmt.Sprint("127.0.0.1:", 7000+i), MaxCommandVersion: v}))
	}
}

// storeDigest is the digest of f's payload store and its applied index.
func storeDigest(t *testing.T, f *FSM) ([32]byte, uint64) {
	t.Helper()
	f.mu.RLock()
	defer f.mu.RUnlock()
	d, applied, err := f.payloads.st.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return d, applied
}

// TestFSM_StoreFilesSnapshot (issue 35 item 3): once every member applies
// command version 29, a node with snapshot checkpoints writes format 5,
// whose last section is its payload store's checkpoint as files; with one
// member older it writes format 4. A follower installs format 5 by
// renaming the files into place, with no record loaded: its engine and its
// store (payloads and completed jobs' records) are then the log's at the
// snapshot's index, and replaying the log after it ends where a replica
// that applied the whole log ends. A node restarting over its kept store
// reads nothing past the first checksum. The opened snapshot's size is the
// stream's, stated before a byte is read.
func TestFSM_StoreFilesSnapshot(t *testing.T) {
	for _, tc := range []struct {
		name   string
		oldest uint32
		format uint32
	}{
		{"EveryMemberApplies30", CommandVersionSnapshotEngineStreamed, snapshotFormatEngineStreamed},
		{"EveryMemberApplies29", CommandVersionSnapshotStoreFiles, snapshotFormatStoreFiles},
		{"OneMemberBefore29", CommandVersionSnapshotStoreFiles - 1, snapshotFormatPayloadsLast},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base := t.TempDir()
			dir, root := filepath.Join(base, "payloads"), filepath.Join(base, "snapshot-checkpoints")
			rec := newResultsRecorder(t, 7)
			node := openCheckpointFSM(t, dir, root)
			rec.run(node, 2)
			joinStoreFilesMembers(rec, node, tc.oldest)
			rec.run(node, 200)
			if completedIn(t, node) == 0 {
				t.Fatal("no completed job kept at the snapshot: the test tests nothing")
			}
			at := node.AppliedIndex()
			// The store as a replica that applied the log up to the
			// snapshot holds it, its index recorded as a snapshot does.
			refStore := openStoreFSM(t, filepath.Join(base, "reference-store"))
			for _, l := range rec.entries[:at] {
				refStore.Apply(l)
			}
			snap, err := refStore.Snapshot()
			if err != nil {
				t.Fatal(err)
			}
			snap.Release()
			wantStore, _ := storeDigest(t, refStore)
			closeFSM(t, refStore)

			_, snaps := checkpointSnapshotStore(t, base, root)
			id := persistTo(t, node, snaps, func() { rec.run(node, 100) }) // the store moves on before Persist
			meta, data := openAll(t, snaps, id)
			if got := snapshotFormat(t, data); got != tc.format {
				t.Fatalf("format %d, want %d", got, tc.format)
			}
			if meta.Size != int64(len(data)) {
				t.Fatalf("opened: meta says %d bytes, the stream holds %d", meta.Size, len(data))
			}

			reference := newTestFSM(t)
			for _, l := range rec.entries[:at] {
				reference.Apply(l)
			}
			all := newTestFSM(t)
			rec.replay(t, all, 1, 3)

			// A follower with a store of its own, behind the snapshot.
			followerDir := filepath.Join(base, "follower")
			follower := openStoreFSM(t, followerDir)
			for _, l := range rec.entries[:10] {
				follower.Apply(l)
			}
			if err := follower.Restore(io.NopCloser(bytes.NewReader(data))); err != nil {
				t.Fatal(err)
			}
			if follower.Digest() != reference.Digest() {
				t.Fatal("installed: the state differs from the log's at the snapshot's index")
			}
			gotStore, applied := storeDigest(t, follower)
			if gotStore != wantStore || applied != at {
				t.Fatalf("installed store at index %d (digest equal: %t), want the leader's store at %d", applied, gotStore == wantStore, at)
			}
			completedIn(t, follower)
			if _, err := os.Stat(stagedDir(followerDir)); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("the staged files are still there after the install: %v", err)
			}
			rec.replay(t, follower, at+1, 3)
			if follower.Digest() != all.Digest() {
				t.Fatal("installed and replayed: the state differs from a replica that applied the whole log")
			}
			closeFSM(t, follower)

			// A byte sink (no checkpoint kept) gets the same sections.
			if got := snapshotBytes(t, node); snapshotFormat(t, got) != tc.format {
				t.Fatalf("a byte sink got format %d, want %d", snapshotFormat(t, got), tc.format)
			}

			// The node restarting over its kept store reads nothing past the
			// first checksum.
			closeFSM(t, node)
			kept := openStoreFSM(t, dir)
			defer closeFSM(t, kept)
			cut := payloadsLastCut(t, data)
			if err := kept.Restore(io.NopCloser(failingAfter{bytes.NewReader(data[:cut])})); err != nil {
				t.Fatalf("restored over the kept store: %v", err)
			}
			if kept.payloads.rebuilds != 0 {
				t.Fatal("the store kept from the last run was replaced")
			}
			rec.replay(t, kept, at+1, 3)
			if kept.Digest() != all.Digest() {
				t.Fatal("restored over the kept store and replayed: the state differs")
			}
		})
	}
}

// TestFSM_StoreFilesSnapshotRefusesDamage: a format 5 or 6 stream cut
// short or with a flipped byte in its store files or in its engine's
// chunks is refused with ErrSnapshot before anything is swapped in: the
// follower's state and store are what they were, it goes on applying, and
// no staged file is left.
func TestFSM_StoreFilesSnapshotRefusesDamage(t *testing.T) {
	for _, format := range []uint32{snapshotFormatStoreFiles, snapshotFormatEngineStreamed} {
		t.Run(fmt.Sprint("Format", format), func(t *testing.T) {
			testStoreFilesSnapshotRefusesDamage(t, format)
		})
	}
}

func testStoreFilesSnapshotRefusesDamage(t *testing.T, format uint32) {
	t.Helper()
	base := t.TempDir()
	rec := newResultsRecorder(t, 11)
	node := openCheckpointFSM(t, filepath.Join(base, "payloads"), filepath.Join(base, "snapshot-checkpoints"))
	defer closeFSM(t, node)
	rec.run(node, 2)
	oldest := uint32(CommandVersionSnapshotStoreFiles)
	if format == snapshotFormatEngineStreamed {
		oldest = CommandVersionSnapshotEngineStreamed
	}
	joinStoreFilesMembers(rec, node, oldest)
	rec.run(node, 150)
	data := snapshotBytes(t, node)
	if snapshotFormat(t, data) != format {
		t.Fatalf("not a format %d snapshot: the test tests nothing", format)
	}
	engineAt := 16 + int(binary.BigEndian.Uint32(data[12:16])) // the engine's length, or its first chunk's
	cut := payloadsLastCut(t, data)
	flip := func(at int) []byte {
		d := bytes.Clone(data)
		d[at] ^= 0x40
		return d
	}
	for _, tc := range []struct {
		name   string
		stream []byte
	}{
		{"FlippedInAFile", flip(cut + 512 + 100)},          // the first file's bytes
		{"FlippedInAHeader", flip(cut + 130)},              // the first file's size field
		{"FlippedChecksum", flip(len(data) - 1)},           // the files' checksum
		{"CutInTheFiles", data[:cut+(len(data)-cut)/2]},    // half the files
		{"CutBeforeTheChecksum", data[:len(data)-2]},       // the checksum
		{"NoFiles", append(bytes.Clone(data[:cut]), 0, 0)}, // not an archive
		{"FlippedBeforeTheFiles", flip(cut - 5)},           // the first checksum's section
		{"FlippedInTheEnginePart", flip(engineAt + 40)},    // the engine's first bytes
		{"FlippedEngineLength", flip(engineAt + 1)},        // its length, or its first chunk's
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "payloads")
			follower := openStoreFSM(t, dir)
			defer closeFSM(t, follower)
			for _, l := range rec.entries[:20] {
				follower.Apply(l)
			}
			before := follower.Digest()
			beforeStore, beforeIndex := storeDigest(t, follower)
			err := follower.Restore(io.NopCloser(bytes.NewReader(tc.stream)))
			if !errors.Is(err, ErrSnapshot) {
				t.Fatalf("Restore = %v, want an error wrapping ErrSnapshot", err)
			}
			if follower.Digest() != before {
				t.Fatal("a refused snapshot changed the state")
			}
			if d, i := storeDigest(t, follower); d != beforeStore || i != beforeIndex {
				t.Fatal("a refused snapshot changed the store")
			}
			if _, err := os.Stat(stagedDir(dir)); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("a refused snapshot left its staged files: %v", err)
			}
			for _, l := range rec.entries[20:40] {
				follower.Apply(l)
			}
		})
	}

	// Another snapshot's files (another index) are refused too.
	other := openCheckpointFSM(t, filepath.Join(base, "other"), filepath.Join(base, "other-checkpoints"))
	defer closeFSM(t, other)
	for _, l := range rec.entries[:node.AppliedIndex()-5] {
		other.Apply(l)
	}
	otherData := snapshotBytes(t, other)
	spliced := append(bytes.Clone(data[:cut]), otherData[payloadsLastCut(t, otherData):]...)
	follower := openStoreFSM(t, filepath.Join(t.TempDir(), "payloads"))
	defer closeFSM(t, follower)
	before := follower.Digest()
	if err := follower.Restore(io.NopCloser(bytes.NewReader(spliced))); !errors.Is(err, ErrSnapshot) {
		t.Fatalf("Restore of another index's files = %v, want an error wrapping ErrSnapshot", err)
	}
	if follower.Digest() != before {
		t.Fatal("a refused snapshot changed the state")
	}
}

// TestFSM_StoreFilesInstallCrash: what a crash in the middle of an install
// leaves is cleaned up at the next start: staged files are removed, and a
// store moved aside but not replaced is put back.
func TestFSM_StoreFilesInstallCrash(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "payloads")
	rec := newLogRecorder(t, 3)
	f := openStoreFSM(t, dir)
	rec.run(f, 80)
	want, wantIndex := storeDigest(t, f)
	closeFSM(t, f)

	// The crash came between store.Install's two renames, with files
	// staged for the next install.
	if err := os.Rename(dir, dir+".old"); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(stagedDir(dir), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(stagedDir(dir), "000001.sst"), []byte("half a file"), 0o644); err != nil {
		t.Fatal(err)
	}
	f = openStoreFSM(t, dir)
	defer closeFSM(t, f)
	if got, index := storeDigest(t, f); got != want || index != wantIndex {
		t.Fatalf("after the crash: the store at %d (digest equal: %t), want the one moved aside at %d", index, got == want, wantIndex)
	}
	for _, p := range []string{stagedDir(dir), dir + ".old"} {
		if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("%s is still there: %v", p, err)
		}
	}
}
