package store

import (
	"context"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// Stats follow what the store does: a flush writes a table to level 0
// with the deletes' tombstones, and a compaction rewrites the tables and
// drops the tombstones with what they deleted.
func TestStats_FollowFlushesAndCompactions(t *testing.T) {
	t.Parallel()
	s, err := Open("db", Options{FS: vfs.NewMem(), noAutoCompactions: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	if st := s.Stats(); st.Flushes != 0 || st.Compactions != 0 || st.Tombstones != 0 || st.L0Files != 0 {
		t.Fatalf("a new store's stats: %+v", st)
	}
	const n = 2000
	commit(t, s, 1, func(b *Batch) {
		for id := uint64(1); id <= n; id++ {
			b.PutJob(id, body("q", int(id)))
		}
	})
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	commit(t, s, 2, func(b *Batch) {
		for id := uint64(1); id <= n; id++ {
			b.DeleteJob(id)
		}
	})
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	// Pebble counts a table's tombstones once it has loaded the table's
	// properties, in the background.
	var flushed Stats
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if flushed = s.Stats(); flushed.Tombstones >= n || time.Now().After(deadline) {
			break
		}
	}
	if flushed.Tombstones < n {
		t.Fatalf("after the deletes' flush: %d tombstones, want at least %d (%+v)", flushed.Tombstones, n, flushed)
	}
	if flushed.Flushes < 2 || flushed.L0Files != 2 || flushed.L0Sublevels != 2 || flushed.DiskBytes == 0 || flushed.ReadAmplification != 2 || flushed.Compactions != 0 {
		t.Fatalf("after two flushes, no compaction: %+v", flushed)
	}
	if err := s.db.Compact(context.Background(), []byte{0}, []byte{0xff, 0xff}, false); err != nil {
		t.Fatal(err)
	}
	compacted := s.Stats()
	if compacted.Compactions <= flushed.Compactions || compacted.CompactionSeconds <= 0 {
		t.Fatalf("after a compaction: %+v (before %+v)", compacted, flushed)
	}
	if compacted.Tombstones >= flushed.Tombstones || compacted.L0Files != 0 {
		t.Fatalf("the compaction kept the tombstones or level 0: %+v", compacted)
	}
}

// The write stall counter counts each stall and still calls the listener
// the store's options had.
func TestCountWriteStalls(t *testing.T) {
	t.Parallel()
	logged := 0
	po := &pebble.Options{EventListener: &pebble.EventListener{WriteStallBegin: func(pebble.WriteStallBeginInfo) { logged++ }}}
	n := countWriteStalls(po)
	for range 3 {
		po.EventListener.WriteStallBegin(pebble.WriteStallBeginInfo{Reason: "memtable count limit reached"})
	}
	if n.Load() != 3 || logged != 3 {
		t.Fatalf("counted %d, logged %d; want 3 and 3", n.Load(), logged)
	}
	if n := countWriteStalls(&pebble.Options{}); n.Load() != 0 {
		t.Fatalf("a listener-less options counts %d", n.Load())
	}
}
