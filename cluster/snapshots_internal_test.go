package cluster

import (
	"bytes"
	"io"
	"path/filepath"
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
)

// snapshotsCheckedAtRestore hands out what raft's own store wrote, with
// the same metadata, and reads nothing outside the snapshots folder.
func TestSnapshotsCheckedAtRestore_OpensWhatRaftWrote(t *testing.T) {
	dir := t.TempDir()
	fileSnaps, err := raft.NewFileSnapshotStoreWithLogger(dir, 2, hclog.NewNullLogger())
	if err != nil {
		t.Fatal(err)
	}
	s := &snapshotsCheckedAtRestore{FileSnapshotStore: fileSnaps, dir: filepath.Join(dir, "snapshots")}
	sink, err := s.Create(raft.SnapshotVersionMax, 42, 3, raft.Configuration{}, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	state := bytes.Repeat([]byte("state "), 1000)
	if _, err := sink.Write(state); err != nil {
		t.Fatal(err)
	}
	if err := sink.Close(); err != nil {
		t.Fatal(err)
	}
	meta, rc, err := s.Open(sink.ID())
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(rc)
	if err != nil {
		t.Fatal(err)
	}
	if err := rc.Close(); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, state) || meta.ID != sink.ID() || meta.Index != 42 || meta.Term != 3 || meta.Size != int64(len(state)) {
		t.Fatalf("opened %d bytes with meta %+v, want the %d written at index 42, term 3", len(got), meta, len(state))
	}
	for _, id := range []string{"../snapshots", "a/b", ".", "..", "missing"} {
		if _, _, err := s.Open(id); err == nil {
			t.Errorf("Open(%q) succeeded", id)
		}
	}
}
