package store

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	storepb "github.com/sepp-io/sepp/proto/seppstore/v1"
)

// TestLoad_EqualsBatches: a store filled by a Load holds what the same
// bodies committed in batches hold (the digest covers every record), in
// tables of the last level, and keeps them across a reopen.
func TestLoad_EqualsBatches(t *testing.T) {
	t.Parallel()
	const jobs = 3000
	dir := t.TempDir()
	loaded, err := Open(filepath.Join(dir, "loaded"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	batched, _ := openMem(t)
	load, err := loaded.NewLoad()
	if err != nil {
		t.Fatal(err)
	}
	load.tableBytes = 16 << 10 // several tables
	for id := uint64(2); id < 2*jobs; id += 2 {
		if err := load.PutJob(id, body("q", int(id))); err != nil {
			t.Fatal(err)
		}
	}
	commit(t, batched, 9, func(b *Batch) {
		for id := uint64(2); id < 2*jobs; id += 2 {
			b.PutJob(id, body("q", int(id)))
		}
	})
	if got, err := loaded.Job(2); !errors.Is(err, ErrNotFound) {
		t.Fatalf("before Finish the store holds job 2: %v, %v", got, err)
	}
	if err := load.Finish(t.Context()); err != nil {
		t.Fatal(err)
	}
	if tables := len(load.paths); tables < 3 {
		t.Fatalf("%d tables staged, want several", tables)
	}
	if _, err := os.Stat(filepath.Join(dir, "loaded", loadDir)); !os.IsNotExist(err) {
		t.Fatalf("the staging folder is still there: %v", err)
	}
	commit(t, loaded, 9, func(*Batch) {})

	if m := loaded.db.Metrics(); m.Levels[len(m.Levels)-1].TablesCount < 3 {
		t.Fatalf("the last level holds %d tables, want the load's", m.Levels[len(m.Levels)-1].TablesCount)
	}
	want, _, err := batched.Digest()
	if err != nil {
		t.Fatal(err)
	}
	requireDigest := func(s *Store) {
		t.Helper()
		got, idx, err := s.Digest()
		if err != nil {
			t.Fatal(err)
		}
		if got != want || idx != 9 {
			t.Fatalf("loaded digest %x@%d, batched %x@9", got, idx, want)
		}
	}
	requireDigest(loaded)
	// Written once, deleted once: a later SingleDelete removes a loaded body.
	commit(t, loaded, 10, func(b *Batch) { b.DeleteJob(4) })
	commit(t, batched, 10, func(b *Batch) { b.DeleteJob(4) })
	if err := loaded.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := loaded.Close(); err != nil {
		t.Fatal(err)
	}
	reopened, err := Open(filepath.Join(dir, "loaded"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer reopened.Close()
	want, _, _ = batched.Digest()
	got, idx, err := reopened.Digest()
	if err != nil {
		t.Fatal(err)
	}
	if got != want || idx != 10 {
		t.Fatalf("after a reopen: digest %x@%d, want %x@10", got, idx, want)
	}
	if _, err := reopened.Job(4); !errors.Is(err, ErrNotFound) {
		t.Fatalf("job 4 deleted after the load: %v", err)
	}
	if b, err := reopened.Job(6); err != nil || string(b.GetPayload()) != "payload 6" {
		t.Fatalf("job 6: %v, %v", b, err)
	}
}

// TestLoad_RefusesAndAborts: ids out of order are refused and stop the
// load; an aborted load adds nothing and leaves no staged file.
func TestLoad_RefusesAndAborts(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, tc := range []struct {
		name string
		ids  []uint64
		want error
	}{
		{"descending", []uint64{5, 4}, ErrInvalidArgument},
		{"repeated", []uint64{5, 5}, ErrInvalidArgument},
	} {
		load, err := s.NewLoad()
		if err != nil {
			t.Fatal(err)
		}
		var last error
		for _, id := range tc.ids {
			last = load.PutJob(id, &storepb.JobBody{Payload: []byte("x")})
		}
		if !errors.Is(last, tc.want) {
			t.Fatalf("%s: %v, want %v", tc.name, last, tc.want)
		}
		if err := load.Finish(t.Context()); !errors.Is(err, tc.want) {
			t.Fatalf("%s: Finish after a refusal: %v", tc.name, err)
		}
		if _, err := s.Job(5); !errors.Is(err, ErrNotFound) {
			t.Fatalf("%s: a refused load reached the store: %v", tc.name, err)
		}
	}
	load, err := s.NewLoad()
	if err != nil {
		t.Fatal(err)
	}
	if err := load.PutJob(1, &storepb.JobBody{Payload: []byte("x")}); err != nil {
		t.Fatal(err)
	}
	load.Abort()
	if _, err := s.Job(1); !errors.Is(err, ErrNotFound) {
		t.Fatalf("an aborted load reached the store: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, loadDir)); !os.IsNotExist(err) {
		t.Fatalf("an aborted load left its staging folder: %v", err)
	}
	if err := load.PutJob(2, &storepb.JobBody{}); err == nil {
		t.Fatal("an aborted load took another body")
	}
}
