package wal

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/hashicorp/raft-wal/metadb"
	"github.com/hashicorp/raft-wal/segment"
	"github.com/hashicorp/raft-wal/types"
)

// SEPP PATCH tests (SEPP-PATCH.md).

func seppEntry(i uint64) *raft.Log {
	data := bytes.Repeat([]byte{byte(i)}, 4000)
	copy(data, fmt.Sprintf("entry %d", i))
	return &raft.Log{Index: i, Term: 1, Type: raft.LogCommand, Data: data}
}

func seppReadAll(t *testing.T, w *WAL, last uint64) {
	t.Helper()
	got, err := w.LastIndex()
	if err != nil || got != last {
		t.Fatalf("LastIndex = %d, %v; want %d", got, err, last)
	}
	var l raft.Log
	for i := uint64(1); i <= last; i++ {
		if err := w.GetLog(i, &l); err != nil {
			t.Fatalf("GetLog(%d): %v", i, err)
		}
		if want := seppEntry(i); l.Index != i || !bytes.Equal(l.Data, want.Data) {
			t.Fatalf("GetLog(%d) returned index %d with other data", i, l.Index)
		}
	}
}

// TestSeppOpenCompletesInterruptedRotation builds, on disk, the state a
// crash (or Close) leaves between an append that fills the tail segment and
// the background rotation: the segment file holds its index block, the meta
// store still records it as the unsealed tail, and no next segment exists.
// Open must finish the rotation; unpatched, every later append fails with
// ErrSealed and the log can never grow again.
func TestSeppOpenCompletesInterruptedRotation(t *testing.T) {
	dir := t.TempDir()
	open := func() *WAL {
		t.Helper()
		w, err := Open(dir, WithSegmentSize(64<<10))
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		return w
	}

	// Append one entry at a time until one fills the first segment and the
	// rotation that follows has run.
	w := open()
	var last uint64
	for w.loadState().segments.Len() < 2 {
		last++
		if last > 100 {
			t.Fatal("the first 64 KiB segment never filled")
		}
		if err := w.StoreLogs([]*raft.Log{seppEntry(last)}); err != nil {
			t.Fatalf("StoreLogs(%d): %v", last, err)
		}
		w.writeMu.Lock()
		w.awaitRotationLocked()
		w.writeMu.Unlock()
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}

	// Undo the rotation's meta commit: the filled segment is the unsealed
	// tail again and the new, empty segment was never recorded.
	meta := &metadb.BoltMetaDB{}
	ps, err := meta.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(ps.Segments) != 2 || ps.Segments[1].BaseIndex != last+1 {
		t.Fatalf("after the rotation: segments %+v, want two, the second from %d", ps.Segments, last+1)
	}
	newest := ps.Segments[1]
	ps.Segments = ps.Segments[:1]
	ps.Segments[0].SealTime, ps.Segments[0].IndexStart, ps.Segments[0].MaxIndex = time.Time{}, 0, 0
	ps.NextSegmentID = newest.ID
	if err := meta.CommitState(ps); err != nil {
		t.Fatal(err)
	}
	if err := meta.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(dir, segment.FileName(newest))); err != nil {
		t.Fatal(err)
	}

	// Reopened, the log holds every entry and takes the next one, and
	// after another restart it still holds them all.
	w = open()
	seppReadAll(t, w, last)
	last++
	if err := w.StoreLogs([]*raft.Log{seppEntry(last)}); err != nil {
		if errors.Is(err, types.ErrSealed) {
			t.Fatalf("append after reopening a filled tail: %v (the interrupted rotation was not completed)", err)
		}
		t.Fatalf("append after reopening a filled tail: %v", err)
	}
	seppReadAll(t, w, last)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	w = open()
	defer w.Close()
	seppReadAll(t, w, last)
	last++
	if err := w.StoreLogs([]*raft.Log{seppEntry(last)}); err != nil {
		t.Fatalf("append after the second reopen: %v", err)
	}
	seppReadAll(t, w, last)
}
