package fsm

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"testing"
)

// payloadsLastCut is the offset of the payload section of a format 4
// snapshot: just past the checksum of everything before it.
func payloadsLastCut(t *testing.T, data []byte) int {
	t.Helper()
	off := 16 + int(binary.BigEndian.Uint32(data[12:16])) // header, meta
	if binary.BigEndian.Uint32(data[8:12]) >= snapshotFormatEngineStreamed {
		for { // the engine's chunks, to the empty one
			n := int(binary.BigEndian.Uint32(data[off : off+4]))
			off += 4 + n
			if n == 0 {
				break
			}
		}
	} else {
		off += 8 + int(binary.BigEndian.Uint64(data[off:off+8]))
	}
	for { // the completed section
		id := binary.BigEndian.Uint64(data[off : off+8])
		off += 8
		if id == 0 {
			break
		}
		off += 4 + int(binary.BigEndian.Uint32(data[off:off+4]))
	}
	return off + 4
}

// failingAfter reads data, then fails: a restore that needs no byte past
// data never sees the error.
type failingAfter struct{ r *bytes.Reader }

var errReadPastCut = errors.New("read past the payload section's start")

func (f failingAfter) Read(p []byte) (int, error) {
	if f.r.Len() == 0 {
		return 0, errReadPastCut
	}
	return f.r.Read(p)
}

// TestFSM_PayloadsLastSnapshot: once every member applies command version
// 24 a snapshot is format 4, its payload section last with a checksum of
// its own. A node restoring over its kept payload store reads nothing of
// that section, so a flipped bit there does not concern it; a node
// installing it over a fresh store reads both sections and refuses the
// flipped bit; a flipped bit before the payloads is refused by both.
func TestFSM_PayloadsLastSnapshot(t *testing.T) {
	for _, seed := range []uint64{1, 2} {
		t.Run(fmt.Sprint("Seed", seed), func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "payloads")
			rec := newLogRecorder(t, seed)
			node := openStoreFSM(t, dir)
			rec.run(node, 2)
			for i := range 3 {
				rec.apply(node, SetNodeCommand(NodeMeta{ID: fmt.Sprint("n", i), RaftAddr: fmt.Sprint("127.0.0.1:", 7000+i), MaxCommandVersion: CommandVersionSnapshotPayloadsLast}))
			}
			rec.run(node, 150)
			at := node.AppliedIndex()
			snap, err := node.Snapshot()
			if err != nil {
				t.Fatal(err)
			}
			var sink memSink
			if err := snap.Persist(&sink); err != nil {
				t.Fatal(err)
			}
			snap.Release()
			data := sink.Bytes()
			if got := snapshotFormat(t, data); got != snapshotFormatPayloadsLast {
				t.Fatalf("format %d, want %d", got, snapshotFormatPayloadsLast)
			}
			cut := payloadsLastCut(t, data)
			if len(data)-cut < 100 {
				t.Fatalf("a payload section of %d bytes: the test tests nothing", len(data)-cut)
			}
			reference := newTestFSM(t)
			for _, l := range rec.entries[:at] {
				reference.Apply(l)
			}
			want := reference.Digest()
			closeFSM(t, node)

			flip := func(off int) []byte {
				d := bytes.Clone(data)
				d[off] ^= 0x04
				return d
			}
			// Over the kept store: the stream up to the cut is all it reads.
			kept := openStoreFSM(t, dir)
			if err := kept.Restore(io.NopCloser(failingAfter{bytes.NewReader(data[:cut])})); err != nil {
				t.Fatalf("restore over the kept store read past the payload section's start: %v", err)
			}
			rec.replay(t, kept, at+1, 9)
			all := newTestFSM(t)
			rec.replay(t, all, 1, 9)
			if kept.Digest() != all.Digest() {
				t.Fatal("restored over the kept store and replayed: the state differs")
			}
			closeFSM(t, kept)

			for _, tc := range []struct {
				name      string
				data      []byte
				freshOK   bool
				keptOK    bool
				wantState bool
			}{
				{"intact", data, true, true, true},
				{"flipped payload", flip(cut + (len(data)-cut)/2), false, true, true},
				{"flipped payload checksum", flip(len(data) - 1), false, true, true},
				{"flipped engine part", flip(cut / 2), false, false, false},
				{"truncated payloads", data[:len(data)-10], false, true, true},
			} {
				// Read whole, as an install reads it: into a state machine
				// without a store, which reports a bad stream (one with a
				// store being refilled stops the node instead, as for every
				// format).
				whole := newTestFSM(t)
				err := whole.Restore(io.NopCloser(bytes.NewReader(tc.data)))
				if (err == nil) != tc.freshOK || err != nil && !errors.Is(err, ErrSnapshot) {
					t.Errorf("%s: restore read whole: %v, want success %v (or ErrSnapshot)", tc.name, err, tc.freshOK)
				}
				if err == nil && whole.Digest() != want {
					t.Errorf("%s: restored whole: the state differs from the log's at the snapshot's index", tc.name)
				}
				if tc.freshOK {
					fresh := openStoreFSM(t, filepath.Join(t.TempDir(), "fresh"))
					if err := fresh.Restore(io.NopCloser(bytes.NewReader(tc.data))); err != nil {
						t.Errorf("%s: restore over a fresh store: %v", tc.name, err)
					} else if fresh.Digest() != want {
						t.Errorf("%s: restored over a fresh store: the state differs from the log's at the snapshot's index", tc.name)
					}
					closeFSM(t, fresh)
				}
				// A store kept at the end of the log (a node's own, ahead of
				// the snapshot) again, reopened for each case.
				kept := openStoreFSM(t, dir)
				err = kept.Restore(io.NopCloser(bytes.NewReader(tc.data)))
				if (err == nil) != tc.keptOK {
					t.Errorf("%s: restore over the kept store: %v, want success %v", tc.name, err, tc.keptOK)
				}
				if err == nil && tc.wantState {
					rec.replay(t, kept, at+1, 9)
					if kept.Digest() != all.Digest() {
						t.Errorf("%s: restored over the kept store and replayed: the state differs", tc.name)
					}
				}
				closeFSM(t, kept)
			}
		})
	}
}
