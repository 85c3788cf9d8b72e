package fsm

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"path/filepath"
	"testing"
)

// joinMembers applies a member list whose binaries restore format 2
// (v2) or one member's binary that does not (v1).
func joinMembers(r *logRecorder, f *FSM, v2 bool) {
	r.t.Helper()
	version := uint32(CommandVersionSnapshotPayloads)
	for i := range 3 {
		v := version
		if !v2 && i == 2 {
			v = CommandVersionSnapshotPayloads - 1
		}
		r.apply(f, SetNodeCommand(NodeMeta{ID: fmt.Sprint("n", i), RaftAddr: fmt.Sprint("127.0.0.1:", 7000+i), MaxCommandVersion: v}))
	}
}

func snapshotFormat(t *testing.T, snap []byte) uint32 {
	t.Helper()
	if len(snap) < 12 {
		t.Fatalf("snapshot of %d bytes", len(snap))
	}
	return binary.BigEndian.Uint32(snap[8:12])
}

// TestFSM_PayloadSectionSnapshotIsItsIndex: a format 2 snapshot holds
// exactly the state at the index it was taken at, payloads included,
// though entries that add, deliver and delete jobs are applied between
// Snapshot and Persist; it restores over a fresh store (refilled from the
// section), over the store kept from the node's own run (the section only
// checked), and into a state machine without a store.
func TestFSM_PayloadSectionSnapshotIsItsIndex(t *testing.T) {
	for _, seed := range []uint64{1, 2, 3} {
		t.Run(fmt.Sprint("Seed", seed), func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "payloads")
			rec := newLogRecorder(t, seed)
			node := openStoreFSM(t, dir)
			rec.run(node, 2)
			joinMembers(rec, node, true)
			rec.run(node, 150)
			at := node.AppliedIndex()
			snap, err := node.Snapshot()
			if err != nil {
				t.Fatal(err)
			}
			rec.run(node, 150) // applies go on before Persist reads the store
			var sink memSink
			if err := snap.Persist(&sink); err != nil {
				t.Fatal(err)
			}
			snap.Release() // before the store closes: Close waits for its view
			data := sink.Bytes()
			if got := snapshotFormat(t, data); got != snapshotFormatPayloadSection {
				t.Fatalf("format %d, want %d", got, snapshotFormatPayloadSection)
			}

			reference := newTestFSM(t)
			rec.replay(t, reference, 1, seed)
			refAll := reference.Digest()
			reference = newTestFSM(t)
			for _, l := range rec.entries[:at] {
				reference.Apply(l)
			}
			want := reference.Digest()
			if want == refAll {
				t.Fatal("the entries after the snapshot changed nothing: the test tests nothing")
			}

			heap := newTestFSM(t)
			if err := heap.Restore(io.NopCloser(bytes.NewReader(data))); err != nil {
				t.Fatal(err)
			}
			if heap.Digest() != want || heap.AppliedIndex() != at {
				t.Fatalf("restored without a store: state at index %d differs from the log's at %d", heap.AppliedIndex(), at)
			}

			fresh := openStoreFSM(t, filepath.Join(t.TempDir(), "other"))
			defer closeFSM(t, fresh)
			if err := fresh.Restore(io.NopCloser(bytes.NewReader(data))); err != nil {
				t.Fatal(err)
			}
			if fresh.payloads.rebuilds != 1 {
				t.Fatalf("a fresh store was refilled %d times, want 1", fresh.payloads.rebuilds)
			}
			if fresh.Digest() != want {
				t.Fatal("restored over a fresh store: the state differs from the log's at the snapshot's index")
			}
			rec.replay(t, fresh, at+1, seed)
			if fresh.Digest() != refAll {
				t.Fatal("restored over a fresh store and replayed: the state differs")
			}

			closeFSM(t, node)
			kept := openStoreFSM(t, dir)
			defer closeFSM(t, kept)
			if err := kept.Restore(io.NopCloser(bytes.NewReader(data))); err != nil {
				t.Fatal(err)
			}
			if kept.payloads.rebuilds != 0 {
				t.Fatal("the store kept from the last run was refilled")
			}
			rec.replay(t, kept, at+1, seed)
			if kept.Digest() != refAll {
				t.Fatal("restored over the kept store and replayed: the state differs")
			}
		})
	}
}

// TestFSM_PayloadSectionWaitsForEveryMember: while a member's binary does
// not restore format 2, a node writes format 1, which every binary
// restores; a state machine without a store writes format 1 too.
func TestFSM_PayloadSectionWaitsForEveryMember(t *testing.T) {
	rec := newLogRecorder(t, 5)
	node := openStoreFSM(t, filepath.Join(t.TempDir(), "payloads"))
	defer closeFSM(t, node)
	rec.run(node, 2)
	joinMembers(rec, node, false)
	rec.run(node, 60)
	data := snapshotBytes(t, node)
	if got := snapshotFormat(t, data); got != snapshotFormatInline {
		t.Fatalf("format %d with a member of an older binary, want %d", got, snapshotFormatInline)
	}
	restored := newTestFSM(t)
	if err := restored.Restore(io.NopCloser(bytes.NewReader(data))); err != nil {
		t.Fatal(err)
	}
	if restored.Digest() != node.Digest() {
		t.Fatal("format 1 restore differs")
	}

	heap := newTestFSM(t)
	rec2 := newLogRecorder(t, 5)
	rec2.run(heap, 2)
	joinMembers(rec2, heap, true)
	rec2.run(heap, 20)
	if got := snapshotFormat(t, snapshotBytes(t, heap)); got != snapshotFormatInline {
		t.Fatalf("format %d without a store, want %d", got, snapshotFormatInline)
	}
}

// TestFSM_PayloadSectionRejectsCorruption: a payload section that names an
// unknown job, repeats or reorders ids, misstates a length, misses a
// payload or is cut short is refused with ErrSnapshot (even with the
// checksum recomputed), and the state is left as it was.
func TestFSM_PayloadSectionRejectsCorruption(t *testing.T) {
	rec := newLogRecorder(t, 8)
	node := openStoreFSM(t, filepath.Join(t.TempDir(), "payloads"))
	defer closeFSM(t, node)
	rec.run(node, 2)
	joinMembers(rec, node, true)
	rec.run(node, 60)
	data := snapshotBytes(t, node)
	start, end := payloadSectionBounds(t, data)
	section := data[start:end]
	type rec12 struct {
		id   uint64
		body []byte
	}
	var recs []rec12
	for p := section; binary.BigEndian.Uint64(p) != 0; {
		n := binary.BigEndian.Uint32(p[8:12])
		recs = append(recs, rec12{binary.BigEndian.Uint64(p), p[12 : 12+n]})
		p = p[12+n:]
	}
	if len(recs) < 3 {
		t.Fatalf("only %d payloads", len(recs))
	}
	build := func(rs []rec12, lenDelta int) []byte {
		var out []byte
		for i, r := range rs {
			out = binary.BigEndian.AppendUint64(out, r.id)
			n := len(r.body)
			if i == 0 {
				n += lenDelta
			}
			out = binary.BigEndian.AppendUint32(out, uint32(n))
			out = append(out, r.body...)
			if i == 0 && lenDelta > 0 {
				out = append(out, make([]byte, lenDelta)...)
			}
		}
		return binary.BigEndian.AppendUint64(out, 0)
	}
	cases := map[string][]byte{
		"missing":   build(recs[1:], 0),
		"repeated":  build(append([]rec12{recs[0]}, recs...), 0),
		"reordered": build(append([]rec12{recs[1], recs[0]}, recs[2:]...), 0),
		"unknown":   build(append(append([]rec12{}, recs...), rec12{1 << 50, []byte("x")}), 0),
		"longer":    build(recs, 1),
		"huge":      append(binary.BigEndian.AppendUint32(binary.BigEndian.AppendUint64(nil, recs[0].id), 1<<31), 1),
		"cut":       section[:len(section)-9],
	}
	for name, sec := range cases {
		t.Run(name, func(t *testing.T) {
			bad := append(append([]byte{}, data[:start]...), sec...)
			bad = binary.BigEndian.AppendUint32(bad, crcOf(bad))
			f := newTestFSM(t)
			before := f.Digest()
			err := f.Restore(io.NopCloser(bytes.NewReader(bad)))
			if !errors.Is(err, ErrSnapshot) {
				t.Fatalf("restore: %v, want ErrSnapshot", err)
			}
			if f.Digest() != before {
				t.Fatal("a refused snapshot changed the state")
			}
		})
	}
	good := binary.BigEndian.AppendUint32(append([]byte{}, data[:end]...), crcOf(data[:end]))
	if err := newTestFSM(t).Restore(io.NopCloser(bytes.NewReader(good))); err != nil {
		t.Fatalf("the rebuilt original: %v", err)
	}
}

// payloadSectionBounds is where a format 2 stream's payload section
// starts and ends (the checksum after it).
func payloadSectionBounds(t *testing.T, data []byte) (start, end int) {
	t.Helper()
	metaLen := int(binary.BigEndian.Uint32(data[12:16]))
	p := 16 + metaLen
	engineLen := int(binary.BigEndian.Uint64(data[p:]))
	return p + 8 + engineLen, len(data) - 4
}

func crcOf(b []byte) uint32 { return crc32.Checksum(b, castagnoli) }
