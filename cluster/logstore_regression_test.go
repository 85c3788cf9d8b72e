package cluster

import (
	"bytes"
	"errors"
	"fmt"
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
)

// Regression tests of the log store as sepp opens it (openStores, then the
// start-up check verifyLog), for the way raft uses it around a restart:
// raft clears a conflicting suffix with DeleteRange(first conflict, last),
// compacts with DeleteRange(first, snapshot-trailing), and, installing a
// snapshot into a monotonic store (the WAL), clears the whole log and goes on
// from the snapshot's index.
//
// raft-wal v0.4.0 marked a tail segment it had truncated as sealed without
// writing that segment's index block (hashicorp/raft-wal#31): every later
// open then refused the log ("log index 1 unreadable: sealed segment has no
// index block") and the node never started again. Each case here closes and
// reopens the store after the truncation, twice, and reads every index; on
// v0.4.0 the WAL cases fail at the first reopen.

// storeEntry is the entry at index i written in term: a no-op entry (the
// start-up check reads it but, not being a command, does not decode it)
// whose data names both, so a read of the wrong entry is seen.
func storeEntry(i, term uint64, size int) *raft.Log {
	data := fmt.Appendf(nil, "index %d term %d ", i, term)
	data = append(data, bytes.Repeat([]byte{byte(i)}, max(0, size-len(data)))...)
	return &raft.Log{Index: i, Term: term, Type: raft.LogNoop, Data: data}
}

// wantEntry is what the log must hold at index i once a step has run.
type wantEntry struct {
	term uint64
	size int
}

// logModel is what a test expects the store to hold: first..last, each
// index's term and size.
type logModel struct {
	first, last uint64
	entries     map[uint64]wantEntry
}

func (m *logModel) append(t *testing.T, s raft.LogStore, from, to, term uint64, size int) {
	t.Helper()
	var logs []*raft.Log
	for i := from; i <= to; i++ {
		logs = append(logs, storeEntry(i, term, size))
		m.entries[i] = wantEntry{term: term, size: size}
	}
	// A few entries per call, as raft hands them over.
	for len(logs) > 0 {
		n := min(len(logs), 7)
		if err := s.StoreLogs(logs[:n]); err != nil {
			t.Fatalf("StoreLogs %d..%d: %v", logs[0].Index, logs[n-1].Index, err)
		}
		logs = logs[n:]
	}
	if m.first == 0 {
		m.first = from
	}
	m.last = to
}

func (m *logModel) deleteRange(t *testing.T, s raft.LogStore, lo, hi uint64) {
	t.Helper()
	if err := s.DeleteRange(lo, hi); err != nil {
		t.Fatalf("DeleteRange(%d, %d): %v", lo, hi, err)
	}
	for i := lo; i <= hi; i++ {
		delete(m.entries, i)
	}
	switch {
	case lo <= m.first && hi >= m.last:
		m.first, m.last = 0, 0
	case lo <= m.first:
		m.first = hi + 1
	default:
		m.last = lo - 1
	}
}

// check reads the whole log back and compares it with the model.
func (m *logModel) check(t *testing.T, s raft.LogStore, when string) {
	t.Helper()
	first, err := s.FirstIndex()
	if err != nil {
		t.Fatalf("%s: FirstIndex: %v", when, err)
	}
	last, err := s.LastIndex()
	if err != nil {
		t.Fatalf("%s: LastIndex: %v", when, err)
	}
	if first != m.first || last != m.last {
		t.Fatalf("%s: log holds %d..%d, want %d..%d", when, first, last, m.first, m.last)
	}
	var l raft.Log
	for i := m.first; m.first != 0 && i <= m.last; i++ {
		if err := s.GetLog(i, &l); err != nil {
			t.Fatalf("%s: GetLog(%d): %v", when, i, err)
		}
		w := m.entries[i]
		want := storeEntry(i, w.term, w.size)
		if l.Index != i || l.Term != w.term || l.Type != raft.LogNoop || !bytes.Equal(l.Data, want.Data) {
			t.Fatalf("%s: index %d holds index %d term %d (%d bytes), want term %d (%d bytes)", when, i, l.Index, l.Term, len(l.Data), w.term, len(want.Data))
		}
	}
	// Nothing is readable outside first..last.
	for _, i := range []uint64{m.first - 1, m.last + 1, m.last + 2} {
		if i == 0 || (m.first != 0 && i >= m.first && i <= m.last) {
			continue
		}
		if err := s.GetLog(i, &l); !errors.Is(err, raft.ErrLogNotFound) {
			t.Fatalf("%s: GetLog(%d) outside %d..%d: err %v, want ErrLogNotFound", when, i, m.first, m.last, err)
		}
	}
}

// openCheckedStores opens dir's stores as NewNode does: openStores, then
// verifyLog (the check that refused v0.4.0's truncated tails at start).
func openCheckedStores(t *testing.T, dir, kind string, segmentSize int) *raftStores {
	t.Helper()
	s, err := openStores(dir, kind, segmentSize, hclog.NewNullLogger())
	if err != nil {
		t.Fatalf("open %s store: %v", kind, err)
	}
	if err := verifyLog(s.log, s.path, 0); err != nil {
		s.Close()
		t.Fatalf("start-up check of the reopened %s store: %v", kind, err)
	}
	return s
}

func TestLogStore_TruncatedTailSurvivesRestarts(t *testing.T) {
	// segment sizes: the default (everything in one tail segment) and a
	// small one, so the log spans sealed segments and a truncation can
	// reach back into one of them.
	const small = 64 << 10
	type step func(t *testing.T, s raft.LogStore, m *logModel)
	appendRange := func(from, to, term uint64, size int) step {
		return func(t *testing.T, s raft.LogStore, m *logModel) {
			t.Helper()
			m.append(t, s, from, to, term, size)
		}
	}
	deleteRange := func(lo, hi uint64) step {
		return func(t *testing.T, s raft.LogStore, m *logModel) {
			t.Helper()
			m.deleteRange(t, s, lo, hi)
		}
	}
	for _, tc := range []struct {
		name        string
		segmentSize int
		wal         bool // the case applies to the WAL
		bolt        bool // and to bolt
		steps       []step
	}{
		{
			// A follower that clears an uncommitted suffix (raft's
			// "clearing log suffix") and then gets the new leader's entries.
			name: "tail truncated in the tail segment", segmentSize: 64 << 20, wal: true, bolt: true,
			steps: []step{appendRange(1, 20, 1, 200), deleteRange(15, 20), appendRange(15, 18, 2, 300)},
		},
		{
			name: "whole tail of one entry truncated", segmentSize: 64 << 20, wal: true, bolt: true,
			steps: []step{appendRange(1, 2, 1, 100), deleteRange(2, 2)},
		},
		{
			// ~4 KiB entries in 64 KiB segments: about 15 entries a segment,
			// so 1..100 spans seven segments; the suffix cut stays in the tail.
			name: "tail truncated after segment rotations", segmentSize: small, wal: true,
			steps: []step{appendRange(1, 100, 1, 4000), deleteRange(95, 100), appendRange(95, 99, 2, 4000)},
		},
		{
			// The cut reaches back across whole segments into a sealed one.
			name: "tail truncated back into a sealed segment", segmentSize: small, wal: true,
			steps: []step{appendRange(1, 100, 1, 4000), deleteRange(40, 100), appendRange(40, 60, 3, 4000)},
		},
		{
			// The third call of seven 4 KiB entries fills the first 64 KiB
			// segment and the next step's close comes at once, usually
			// before the WAL's background rotation records the seal and
			// creates the next segment. raft-wal v0.4.2 then reopened a
			// sealed tail it never rotated, and every later append failed
			// with "segment is sealed" (sepp's patch, SEPP-PATCH.md).
			name: "a batch fills the segment just before close", segmentSize: small, wal: true,
			steps: []step{appendRange(1, 21, 1, 4000), appendRange(22, 30, 1, 4000)},
		},
		{
			// Compaction (after a snapshot, raft drops the head but the
			// trailing logs), then a suffix cut.
			name: "head truncated, then tail truncated", segmentSize: small, wal: true, bolt: true,
			steps: []step{appendRange(1, 100, 1, 4000), deleteRange(1, 50), deleteRange(90, 100), appendRange(90, 95, 2, 4000)},
		},
		{
			// Installing a snapshot at 500 into a monotonic store: raft
			// clears the whole log, the follower goes on from 501, and then
			// a conflicting suffix of that is cleared.
			// 501..510 fit in one segment: the cut stays in the unsealed tail.
			name: "snapshot installed, then tail truncated", segmentSize: small, wal: true,
			steps: []step{appendRange(1, 60, 1, 4000), deleteRange(1, 60), appendRange(501, 510, 4, 4000), deleteRange(506, 510), appendRange(506, 508, 5, 4000)},
		},
		{
			// The same with bolt, which is not monotonic: raft keeps the
			// trailing logs there and compacts the head.
			name: "snapshot installed on bolt, then tail truncated", segmentSize: small, bolt: true,
			steps: []step{appendRange(1, 60, 1, 4000), deleteRange(1, 60), appendRange(501, 510, 4, 4000), deleteRange(506, 510), appendRange(506, 508, 5, 4000)},
		},
	} {
		for _, kind := range []string{LogStoreWAL, LogStoreBolt} {
			if (kind == LogStoreWAL && !tc.wal) || (kind == LogStoreBolt && !tc.bolt) {
				continue
			}
			t.Run(kind+"/"+tc.name, func(t *testing.T) {
				dir := t.TempDir()
				m := &logModel{entries: map[uint64]wantEntry{}}
				s := openCheckedStores(t, dir, kind, tc.segmentSize)
				for i, st := range tc.steps {
					st(t, s.log, m)
					m.check(t, s.log, fmt.Sprintf("after step %d", i+1))
					// Close after every step, as a restart would, and reopen
					// twice: the store must open, pass the start-up check and
					// hold exactly the model.
					for r := 1; r <= 2; r++ {
						if err := s.Close(); err != nil {
							t.Fatalf("close after step %d: %v", i+1, err)
						}
						s = openCheckedStores(t, dir, kind, tc.segmentSize)
						m.check(t, s.log, fmt.Sprintf("after step %d, reopen %d", i+1, r))
					}
				}
				// The reopened store still takes the next entry.
				next := m.last + 1
				if m.last == 0 {
					next = 1000
				}
				m.append(t, s.log, next, next, 9, 10)
				m.check(t, s.log, "after a last append")
				if err := s.Close(); err != nil {
					t.Fatal(err)
				}
				s = openCheckedStores(t, dir, kind, tc.segmentSize)
				m.check(t, s.log, "after a last reopen")
				if err := s.Close(); err != nil {
					t.Fatal(err)
				}
			})
		}
	}
}
