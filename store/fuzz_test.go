package store

import (
	"bytes"
	"errors"
	"testing"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	"google.golang.org/protobuf/proto"

	storepb "github.com/sepp-io/sepp/proto/seppstore/v1"
)

// FuzzDecodeRecords feeds arbitrary bytes to the store as the value of a
// job body, a progress record, a dead letter and the meta record. Reading
// them returns a record or ErrCorrupt, never panics; a record that decodes
// marshals back to bytes that decode to the same record, deterministically.
func FuzzDecodeRecords(f *testing.F) {
	for _, g := range goldenRecords() {
		v, _ := marshal.Marshal(g.rec)
		f.Add(v)
	}
	f.Add([]byte{0xff, 0xff, 0xff})
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := Open("db", Options{FS: vfs.NewMem()})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		dk, _ := deadKey("q", 1)
		b := s.db.NewBatch()
		for _, k := range [][]byte{bodyKey(1), progressKey(1), dk} {
			_ = b.Set(k, data, nil)
		}
		if err := b.Commit(pebble.NoSync); err != nil {
			t.Fatal(err)
		}
		check := func(what string, m proto.Message, err error) {
			if err != nil {
				if !errors.Is(err, ErrCorrupt) {
					t.Fatalf("%s: error %v does not wrap ErrCorrupt", what, err)
				}
				return
			}
			v1, err := marshal.Marshal(m)
			if err != nil {
				t.Fatalf("%s: re-marshal: %v", what, err)
			}
			back := m.ProtoReflect().New().Interface()
			if err := proto.Unmarshal(v1, back); err != nil || !proto.Equal(back, m) {
				t.Fatalf("%s: re-marshalled bytes do not decode to the record: %v", what, err)
			}
			if v2, _ := marshal.Marshal(back); !bytes.Equal(v1, v2) {
				t.Fatalf("%s: marshalling is not deterministic", what)
			}
		}
		jb, err := s.Job(1)
		check("job body", jb, err)
		jp, err := s.Progress(1)
		check("progress", jp, err)
		dl, err := s.DeadLetter("q", 1)
		check("dead letter", dl, err)
		err = s.JobRange(0, 10, func(uint64, *storepb.JobBody) bool { return true })
		if err != nil && !errors.Is(err, ErrCorrupt) {
			t.Fatalf("JobRange: %v", err)
		}
		meta := &storepb.StoreMeta{}
		if proto.Unmarshal(data, meta) == nil {
			check("meta", meta, nil)
		}
	})
}
