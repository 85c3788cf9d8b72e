package cluster_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sepp-io/sepp/cluster"
	"github.com/sepp-io/sepp/cluster/clustertest"
	"github.com/sepp-io/sepp/engine"
)

// startSingle starts a cluster of one on dir and enqueues a job carrying
// payload, retrying until the new leader is ready.
func startSingle(t *testing.T, dir string) *cluster.Node {
	t.Helper()
	return startSingleOn(t, dir, "")
}

// startSingleOn is startSingle with the given log store ("" = default).
func startSingleOn(t *testing.T, dir, logStore string) *cluster.Node {
	t.Helper()
	cfg := clustertest.TestConfig()
	cfg.LogStore = logStore
	cfg.NodeID = "solo"
	cfg.RaftBindAddr = "127.0.0.1:0"
	cfg.DataDir = dir
	cfg.SnapshotThreshold = 1 << 20 // only explicit snapshots
	n, err := cluster.NewNode(cfg)
	if err != nil {
		t.Fatalf("start: %v", err)
	}
	return n
}

func enqueueUntilReady(t *testing.T, n *cluster.Node, payload []byte) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for {
		_, err := cluster.Do(ctx, n, engine.EnqueueOp{Params: engine.EnqueueParams{Queue: "q", JobType: "t", Payload: payload}})
		if err == nil {
			return
		}
		if ctx.Err() != nil {
			t.Fatalf("enqueue: %v", err)
		}
		select {
		case <-ctx.Done():
		case <-time.After(10 * time.Millisecond):
		}
	}
}

func shutdown(t *testing.T, n *cluster.Node) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := n.Shutdown(ctx); err != nil {
		t.Logf("shutdown: %v", err)
	}
}

// flipAll flips one bit inside every occurrence of marker in the file and
// reports how many it found.
func flipAll(t *testing.T, path string, marker []byte) int {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for off := 0; ; {
		i := bytes.Index(data[off:], marker)
		if i < 0 {
			break
		}
		data[off+i+len(marker)/2] ^= 0x01
		off += i + len(marker)
		n++
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return n
}

// flipMarkerIn flips a bit in every occurrence of marker in the files of
// dir matching glob, and fails t when there is no such file or marker (why
// says what a missing marker would mean).
func flipMarkerIn(t *testing.T, dir, glob string, marker []byte, why string) {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, glob))
	if err != nil || len(files) == 0 {
		t.Fatalf("no %s in %s (%v)", glob, dir, err)
	}
	flipped := 0
	for _, f := range files {
		flipped += flipAll(t, f, marker)
	}
	if flipped == 0 {
		t.Fatalf("marker not found in %s%s", glob, why)
	}
}

func TestNewNode_RefusesCorruptLogEntry(t *testing.T) {
	for _, tc := range []struct {
		logStore string
		files    string // glob, relative to the data dir, of the files holding entries
		named    string // what the error must name
	}{
		{cluster.LogStoreWAL, "wal/*.wal", "wal"},
		{cluster.LogStoreBolt, "raft.db", "raft.db"},
	} {
		t.Run(tc.logStore, func(t *testing.T) {
			dir := t.TempDir()
			marker := []byte("LOG-ENTRY-MARKER-0123456789")
			n := startSingleOn(t, dir, tc.logStore)
			enqueueUntilReady(t, n, marker)
			// Another entry after the marker: raft-wal treats a bad checksum
			// in the very last batch as a torn write and drops it (it was
			// never acknowledged); corruption before it must be refused.
			enqueueUntilReady(t, n, []byte("after the marker"))
			shutdown(t, n)

			// The intact data dir restarts.
			n = startSingleOn(t, dir, tc.logStore)
			shutdown(t, n)

			flipMarkerIn(t, dir, tc.files, marker, "")
			_, err := cluster.NewNode(func() cluster.Config {
				cfg := clustertest.TestConfig()
				cfg.NodeID, cfg.RaftBindAddr, cfg.DataDir = "solo", "127.0.0.1:0", dir
				return cfg
			}())
			if err == nil {
				t.Fatal("node started over a corrupt log entry")
			}
			if !errors.Is(err, cluster.ErrCorruptData) || !strings.Contains(err.Error(), filepath.Join(dir, tc.named)) ||
				!strings.Contains(err.Error(), "checksum") || !strings.Contains(err.Error(), "log index") {
				t.Fatalf("error %q should be ErrCorruptData naming %s, the index and the checksum", err, tc.named)
			}
		})
	}
}

// A corrupt entry of the trailing log (at or before the snapshot) does not
// stop a start: start reads only the entries it will apply, and the
// trailing log is checked as raft reads it (verifiedReads), so a restart
// does not read gigabytes of entries it never applies.
func TestNewNode_StartsOverCorruptEntryBeforeSnapshot(t *testing.T) {
	for _, tc := range []struct {
		logStore string
		files    string
	}{
		{cluster.LogStoreWAL, "wal/*.wal"},
		{cluster.LogStoreBolt, "raft.db"},
	} {
		t.Run(tc.logStore, func(t *testing.T) {
			dir := t.TempDir()
			marker := []byte("TRAILING-ENTRY-MARKER-0123456789")
			n := startSingleOn(t, dir, tc.logStore)
			enqueueUntilReady(t, n, marker)
			if err := n.Snapshot(); err != nil {
				t.Fatalf("snapshot: %v", err)
			}
			enqueueUntilReady(t, n, []byte("after the snapshot"))
			enqueueUntilReady(t, n, []byte("the last batch"))
			shutdown(t, n)

			flipMarkerIn(t, dir, tc.files, marker, ": the snapshot compacted the entry away")
			n = startSingleOn(t, dir, tc.logStore)
			defer shutdown(t, n)
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			var jobs []engine.Job
			var err error
			for {
				err = n.Read(ctx, false, func(e engine.View) error {
					var err error
					jobs, err = e.ListJobs("q", engine.StateReady, engine.Page{})
					return err
				})
				if err == nil && len(jobs) == 3 || ctx.Err() != nil {
					break
				}
				select {
				case <-ctx.Done():
				case <-time.After(10 * time.Millisecond):
				}
			}
			if len(jobs) != 3 || !bytes.Equal(jobs[0].Payload, marker) {
				t.Fatalf("after the restart: %d jobs (%v), want the 3 enqueued, the first with the intact marker", len(jobs), err)
			}
		})
	}
}

func TestNewNode_RefusesCorruptOrTruncatedSnapshot(t *testing.T) {
	for _, tc := range []struct {
		name    string
		corrupt func(t *testing.T, state string)
	}{
		{"flipped", func(t *testing.T, state string) {
			t.Helper()
			data, err := os.ReadFile(state)
			if err != nil {
				t.Fatal(err)
			}
			data[len(data)/2] ^= 0x10
			if err := os.WriteFile(state, data, 0o600); err != nil {
				t.Fatal(err)
			}
		}},
		{"truncated", func(t *testing.T, state string) {
			t.Helper()
			fi, err := os.Stat(state)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.Truncate(state, fi.Size()/2); err != nil {
				t.Fatal(err)
			}
		}},
		{"meta", func(t *testing.T, state string) {
			t.Helper()
			if err := os.WriteFile(filepath.Join(filepath.Dir(state), "meta.json"), []byte("{\"ID\":"), 0o600); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			n := startSingle(t, dir)
			enqueueUntilReady(t, n, []byte("snapshot me"))
			if err := n.Snapshot(); err != nil {
				t.Fatalf("snapshot: %v", err)
			}
			shutdown(t, n)
			states, _ := filepath.Glob(filepath.Join(dir, "snapshots", "*", "state.bin"))
			if len(states) != 1 {
				t.Fatalf("want one snapshot, found %v", states)
			}
			tc.corrupt(t, states[0])
			cfg := clustertest.TestConfig()
			cfg.NodeID, cfg.RaftBindAddr, cfg.DataDir = "solo", "127.0.0.1:0", dir
			_, err := cluster.NewNode(cfg)
			if err == nil {
				t.Fatal("node started over a corrupt snapshot")
			}
			if !errors.Is(err, cluster.ErrCorruptData) || !strings.Contains(err.Error(), filepath.Dir(states[0])) {
				t.Fatalf("error %q should be ErrCorruptData naming the snapshot's file", err)
			}
		})
	}
}

// With two snapshots kept, raft skips a newest one that fails its checksum
// and restores the older one, which the log may no longer follow: the node
// must refuse to start, naming the newest snapshot, as with one snapshot.
func TestNewNode_RefusesFallbackToAnOlderSnapshot(t *testing.T) {
	dir := t.TempDir()
	n := startSingle(t, dir)
	enqueueUntilReady(t, n, []byte("first snapshot"))
	if err := n.Snapshot(); err != nil {
		t.Fatalf("snapshot: %v", err)
	}
	enqueueUntilReady(t, n, []byte("second snapshot"))
	if err := n.Snapshot(); err != nil {
		t.Fatalf("snapshot: %v", err)
	}
	shutdown(t, n)
	states, _ := filepath.Glob(filepath.Join(dir, "snapshots", "*", "state.bin"))
	if len(states) != 2 {
		t.Fatalf("want two snapshots, found %v", states)
	}
	newest := states[len(states)-1] // folder names sort by term, index, time
	data, err := os.ReadFile(newest)
	if err != nil {
		t.Fatal(err)
	}
	data[len(data)/2] ^= 0x10
	if err := os.WriteFile(newest, data, 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := clustertest.TestConfig()
	cfg.NodeID, cfg.RaftBindAddr, cfg.DataDir = "solo", "127.0.0.1:0", dir
	n, err = cluster.NewNode(cfg)
	if err == nil {
		shutdown(t, n)
		t.Fatal("node started from the older snapshot")
	}
	if !errors.Is(err, cluster.ErrCorruptData) || !strings.Contains(err.Error(), filepath.Dir(newest)) {
		t.Fatalf("error %q should be ErrCorruptData naming the newest snapshot", err)
	}
}
