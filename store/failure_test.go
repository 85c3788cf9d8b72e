package store

import (
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"

	storepb "github.com/sepp-io/sepp/proto/seppstore/v1"
)

// A disk that starts failing the store's table writes: Pebble retries a
// failed flush at once, forever, and once its memtables are full every
// commit blocks, so an apply behind it would hang with its node still
// heartbeating. The store reports the first background error to
// Options.OnFailure instead, which the state machine turns into a stop.
func TestStore_BackgroundErrorReportsFailure(t *testing.T) {
	t.Parallel()
	var failing atomic.Bool
	fs := errorfs.Wrap(vfs.NewMem(), errorfs.InjectorFunc(func(op errorfs.Op) error {
		if failing.Load() && strings.HasSuffix(op.Path, ".sst") && op.Kind.ReadOrWrite() == errorfs.OpIsWrite {
			return errorfs.ErrInjected
		}
		return nil
	}))
	failed := make(chan error, 1)
	const memtable = 256 << 10
	o := Options{FS: fs, MemTableBytes: memtable, OnFailure: func(err error) {
		select {
		case failed <- err:
		default:
		}
	}}
	s, err := Open("db", o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	failing.Store(true)

	// Two memtables' worth: the first one full starts a flush, which
	// fails. Four full memtables would block the next commit for good,
	// which is the hang OnFailure exists for (and would hold Close up).
	payload := make([]byte, 4<<10)
	for i := uint64(1); i <= 2*memtable/uint64(len(payload)); i++ {
		b := s.NewBatch()
		b.PutJob(i, &storepb.JobBody{Payload: payload})
		if err := b.Commit(i, 1); err != nil {
			t.Fatalf("commit %d: %v", i, err)
		}
	}
	select {
	case err := <-failed:
		if !errors.Is(err, errorfs.ErrInjected) {
			t.Fatalf("OnFailure got %v, want the injected write error", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the store's table writes fail and nothing reported it within 30s")
	}
	if err := s.Failed(); !errors.Is(err, errorfs.ErrInjected) {
		t.Fatalf("Failed() = %v after the report, want the injected error", err)
	}
}
