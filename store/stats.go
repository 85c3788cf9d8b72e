package store

import (
	"sync/atomic"

	"github.com/cockroachdb/pebble/v2"
)

// Stats are the figures of the store an operator watches under a backlog:
// whether compaction keeps up with the deletes a consumed queue leaves
// (its debt, what is in flight, the tombstones not yet compacted away),
// what a read has to step over (read amplification, level 0), and how
// often applies waited on a write stall. The counts run from the store's
// opening; a node reopens it at its start and at an install.
type Stats struct {
	// DiskBytes is the space the store's files take on disk (Store.DiskBytes).
	DiskBytes uint64
	// Compactions and CompactionSeconds are the compactions completed and
	// the time they took together (they run in the background).
	Compactions       int64
	CompactionSeconds float64
	// CompactionsInProgress are running now.
	CompactionsInProgress int64
	// CompactionDebtBytes is Pebble's estimate of the bytes compactions
	// must still rewrite to bring the levels to their target shape.
	CompactionDebtBytes uint64
	// Flushes are the memtables written to level 0.
	Flushes int64
	// ReadAmplification is the number of places a read may have to look:
	// level 0's sublevels plus the other non-empty levels.
	ReadAmplification int
	// L0Files and L0Sublevels are level 0's tables and sublevels; writes
	// stall when either grows too far.
	L0Files     int64
	L0Sublevels int32
	// MemTableBytes is what the memtables hold, including those waiting
	// to be flushed.
	MemTableBytes uint64
	// Tombstones is Pebble's approximate count of deletion markers in the
	// tables: the acks and deletes not yet compacted away.
	Tombstones uint64
	// WriteStalls are the write stalls Pebble began (each one holds the
	// apply of every entry behind it).
	WriteStalls int64
}

// Stats reads the store's figures. It is as cheap as DiskBytes: Pebble
// sums its levels under a short lock.
func (s *Store) Stats() Stats {
	m := s.db.Metrics()
	return Stats{
		DiskBytes:             m.DiskSpaceUsage(),
		Compactions:           m.Compact.Count,
		CompactionSeconds:     m.Compact.Duration.Seconds(),
		CompactionsInProgress: m.Compact.NumInProgress,
		CompactionDebtBytes:   m.Compact.EstimatedDebt,
		Flushes:               m.Flush.Count,
		ReadAmplification:     m.ReadAmp(),
		L0Files:               m.Levels[0].TablesCount,
		L0Sublevels:           m.Levels[0].Sublevels,
		MemTableBytes:         m.MemTable.Size,
		Tombstones:            m.Keys.TombstoneCount,
		WriteStalls:           s.writeStalls.Load(),
	}
}

// countWriteStalls makes po's listener count the write stalls it sees.
func countWriteStalls(po *pebble.Options) *atomic.Int64 {
	n := new(atomic.Int64)
	if po.EventListener == nil {
		po.EventListener = &pebble.EventListener{}
	}
	begin := po.EventListener.WriteStallBegin
	po.EventListener.WriteStallBegin = func(i pebble.WriteStallBeginInfo) {
		n.Add(1)
		if begin != nil {
			begin(i)
		}
	}
	return n
}
