package fsm

import (
	"bytes"
	"io"
	"testing"
)

// A member's facts survive the log and a snapshot, and the digest ignores
// them (a binary older than the fields drops them, and replicas must still
// compare equal during a rolling upgrade).
func TestFSM_NodeFactsSurviveSnapshotOutsideDigest(t *testing.T) {
	f := newTestFSM(t)
	withFacts := NodeMeta{ID: "n1", RaftAddr: "r1", GRPCAddr: "g1", MaxCommandVersion: CommandVersion,
		Facts: NodeFacts{Reported: true, BinaryVersion: "v1.2.3", MinCommandVersion: 1, MemoryLimitBytes: 512 << 20,
			MemoryLimitFrom: "cgroup memory limit", GOMAXPROCS: 2, StartUnixNano: 1_700_000_000_000_000_000}}
	legacy := NodeMeta{ID: "n2", RaftAddr: "r2", MaxCommandVersion: 2, Facts: NodeFacts{Reported: true, Legacy: true}}
	applyEntry(t, f, 1, stamped(t0, SetNodeCommand(withFacts), SetNodeCommand(legacy)))
	for _, want := range []NodeMeta{withFacts, legacy} {
		if got, _ := f.Node(want.ID); got != want {
			t.Fatalf("applied %+v, want %+v", got, want)
		}
	}
	dst := newTestFSM(t)
	if err := dst.Restore(io.NopCloser(bytes.NewReader(snapshotBytes(t, f)))); err != nil {
		t.Fatal(err)
	}
	for _, want := range []NodeMeta{withFacts, legacy} {
		if got, _ := dst.Node(want.ID); got != want {
			t.Fatalf("restored %+v, want %+v", got, want)
		}
	}
	older := newTestFSM(t) // as a binary older than the fields applies the entry
	plain1, plain2 := withFacts, legacy
	plain1.Facts, plain2.Facts = NodeFacts{}, NodeFacts{}
	applyEntry(t, older, 1, stamped(t0, SetNodeCommand(plain1), SetNodeCommand(plain2)))
	if older.Digest() != f.Digest() {
		t.Fatal("the digest depends on a member's facts")
	}
}
