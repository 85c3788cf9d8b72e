package cluster

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"

	"github.com/sepp-io/sepp/fsm"
)

// ErrCorruptData is returned by NewNode (through verifyDataDir) when a file
// of the data dir fails its checks: the node refuses to start rather than
// serve, or replicate, state it cannot trust. The error names the file.
var ErrCorruptData = errors.New("corrupt data on disk; the node will not start")

// ErrNewerData is returned by NewNode when the log holds a command of a
// version this binary does not apply: a newer sepp wrote it, and this one
// was started on its data (a downgrade past a command version). The node
// refuses to start, naming the log, the index and the versions.
var ErrNewerData = errors.New("the data dir was written by a newer sepp; this binary will not start on it")

// Before raft opens anything, NewNode checks what a start would restore and
// apply:
//
//   - verifySnapshots: the newest snapshot (raft restores it): its meta.json
//     parses and its state.bin has the size raft stored beside it, and every
//     other snapshot folder has a readable meta.json (raft silently skips one
//     that has not, and would then restore an older snapshot than the log
//     expects). Its content is checked as it is restored: the state
//     machine's format carries a CRC-32C over every byte, which FSM.Restore
//     checks before it swaps the state in (snapshotsCheckedAtRestore). A
//     start used to read the file four times (twice here, once for raft's
//     CRC-64, once to restore it); it now reads it once. NewNode then
//     requires that raft restored that snapshot (requireRestored): raft skips
//     one that fails its restore and restores an older one, which the log
//     may no longer follow;
//   - verifyLog: the command entries after the snapshot (which the node will
//     apply) pass fsm.CheckEntry (checksum, format, versions, known
//     operations, without decoding the bodies twice: apply decodes them).
//
// raft checksums no log entry, bolt none of its data pages, and raft-wal only
// the last batch it wrote (a torn tail write is dropped there, as it was never
// acknowledged), so a flipped bit would otherwise reach the state machine as a
// panic, or worse, as a different command.
//
// The entries at or before the snapshot (the trailing log raft keeps for a
// lagging follower) are not read at start: with large entries they are
// gigabytes (65,536 entries of 100 jobs of 1 KiB are 6 GiB, 39 s of a
// restart's reads in its own 512 MiB cgroup), and this node never applies
// them. verifiedReads checks each entry's checksum when raft reads it
// instead, and a corrupt one is reported as missing, so the leader sends
// the follower its snapshot rather than the entry.

func verifySnapshots(dir string) (snapshotOnDisk, error) {
	snapDir := filepath.Join(dir, "snapshots")
	ents, err := os.ReadDir(snapDir)
	if errors.Is(err, os.ErrNotExist) {
		return snapshotOnDisk{}, nil
	}
	if err != nil {
		return snapshotOnDisk{}, fmt.Errorf("cluster: read %s: %w", snapDir, err)
	}
	for _, e := range ents {
		if !e.IsDir() || strings.HasSuffix(e.Name(), ".tmp") {
			continue
		}
		metaPath := filepath.Join(snapDir, e.Name(), "meta.json")
		data, err := os.ReadFile(metaPath)
		if err != nil {
			return snapshotOnDisk{}, fmt.Errorf("cluster: %w: %s: %w", ErrCorruptData, metaPath, err)
		}
		var meta raft.SnapshotMeta
		if err := json.Unmarshal(data, &meta); err != nil {
			return snapshotOnDisk{}, fmt.Errorf("cluster: %w: %s does not parse: %w", ErrCorruptData, metaPath, err)
		}
	}
	store, err := raft.NewFileSnapshotStoreWithLogger(dir, 1, hclog.NewNullLogger())
	if err != nil {
		return snapshotOnDisk{}, fmt.Errorf("cluster: snapshot store in %s: %w", snapDir, err)
	}
	snaps, err := store.List()
	if err != nil {
		return snapshotOnDisk{}, fmt.Errorf("cluster: list snapshots in %s: %w", snapDir, err)
	}
	if len(snaps) == 0 {
		return snapshotOnDisk{}, nil
	}
	newest := snaps[0]
	statePath := filepath.Join(snapDir, newest.ID, "state.bin")
	fi, err := os.Stat(statePath)
	if err != nil {
		return snapshotOnDisk{}, fmt.Errorf("cluster: %w: snapshot %s: %w", ErrCorruptData, statePath, err)
	}
	if fi.Size() != newest.Size {
		return snapshotOnDisk{}, fmt.Errorf("cluster: %w: snapshot %s: %d bytes, its meta.json says %d", ErrCorruptData, statePath, fi.Size(), newest.Size)
	}
	return snapshotOnDisk{index: newest.Index, state: statePath}, nil
}

// snapshotOnDisk is the newest snapshot verifySnapshots found: its index (0:
// none) and its state file.
type snapshotOnDisk struct {
	index uint64
	state string
}

// requireRestored checks what raft.NewRaft did with the newest snapshot:
// started (err nil) having restored it, or failed to restore any. raft
// skips a snapshot whose restore fails (its checksum included) and goes on to an
// older one, or fails when none is left; either way the node must not run:
// the error is ErrCorruptData naming the snapshot's file. lastSnapshot is
// raft's own (Stats' last_snapshot_index) when it started.
func requireRestored(snap snapshotOnDisk, err error, lastSnapshot string) error {
	if snap.index == 0 {
		return err
	}
	if err != nil {
		if strings.Contains(err.Error(), "failed to load any existing snapshots") {
			return fmt.Errorf("cluster: %w: snapshot %s: its restore failed (a checksum or the content; the node's log says which): %w", ErrCorruptData, snap.state, err)
		}
		return err
	}
	if lastSnapshot != strconv.FormatUint(snap.index, 10) {
		return fmt.Errorf("cluster: %w: snapshot %s (index %d): its restore failed (a checksum or the content), and raft restored the snapshot at index %s instead (the node's log says why)", ErrCorruptData, snap.state, snap.index, lastSnapshot)
	}
	return nil
}

func verifyLog(store raft.LogStore, path string, snapIndex uint64) error {
	first, err := store.FirstIndex()
	if err != nil {
		return fmt.Errorf("cluster: %w: %s: first index: %w", ErrCorruptData, path, err)
	}
	last, err := store.LastIndex()
	if err != nil {
		return fmt.Errorf("cluster: %w: %s: last index: %w", ErrCorruptData, path, err)
	}
	if first == 0 {
		return nil
	}
	var l raft.Log
	for i := max(first, snapIndex+1); i <= last; i++ {
		if err := store.GetLog(i, &l); err != nil {
			return fmt.Errorf("cluster: %w: %s: log index %d unreadable: %w", ErrCorruptData, path, i, err)
		}
		if l.Type != raft.LogCommand {
			continue
		}
		err = fsm.CheckEntry(l.Data)
		if errors.Is(err, fsm.ErrNewerVersion) {
			return fmt.Errorf("cluster: %w: %s: log index %d (term %d): %w", ErrNewerData, path, i, l.Term, err)
		}
		if err != nil {
			return fmt.Errorf("cluster: %w: %s: log index %d (term %d): %w", ErrCorruptData, path, i, l.Term, err)
		}
	}
	return nil
}

// verifiedReads checks the checksum of every command entry raft reads from
// the log store (fsm.VerifyEntry: a CRC-32C, far cheaper than the read) and
// reports a corrupt one as raft.ErrLogNotFound, after logging it with its
// index and the store's path. For an entry of the trailing log, which start
// does not check (verifyLog), that makes a leader send a lagging follower
// its snapshot instead of the entry (raft's replication falls back to a
// snapshot on ErrLogNotFound). An entry this node must still apply was
// checked at start; one damaged since stops the node at apply, as raft
// stops on any log it cannot read.
type verifiedReads struct {
	raft.LogStore
	path   string
	logger hclog.Logger
}

// IsMonotonic passes the wrapped store's answer on; see isMonotonic.
func (s *verifiedReads) IsMonotonic() bool { return isMonotonic(s.LogStore) }

func (s *verifiedReads) GetLog(index uint64, l *raft.Log) error {
	if err := s.LogStore.GetLog(index, l); err != nil {
		return err
	}
	if l.Type != raft.LogCommand {
		return nil
	}
	if err := fsm.VerifyEntry(l.Data); err != nil {
		s.logger.Error("log entry fails its checksum: treated as missing (a follower that needs it is sent the snapshot)",
			"path", s.path, "index", index, "term", l.Term, "error", err)
		return raft.ErrLogNotFound
	}
	return nil
}

// snapshotsCheckedAtRestore is raft's file snapshot store with Open reading
// the state file once, as the state machine consumes it, instead of twice.
// raft's FileSnapshotStore.Open reads the whole file to check its CRC-64
// before it hands it out; at 5M jobs of 1 KiB that is 5 GiB read once more
// at every start and every install. The state machine's snapshot format
// carries its own CRC-32C over every byte, which FSM.Restore checks before
// it swaps the restored state in (fsm/snapshot.go, readSnapshot), so a
// flipped bit still fails the restore; raft then tries an older snapshot or
// fails to start, and requireRestored refuses both. The files are the ones
// raft writes (Create, List and reaping are raft's own), so a data directory
// moves between releases unchanged.
type snapshotsCheckedAtRestore struct {
	*raft.FileSnapshotStore
	dir string // the snapshots folder
}

// Open returns the snapshot's metadata and its state file.
func (s *snapshotsCheckedAtRestore) Open(id string) (*raft.SnapshotMeta, io.ReadCloser, error) {
	if id != filepath.Base(id) || strings.HasPrefix(id, ".") {
		return nil, nil, fmt.Errorf("cluster: snapshot id %q is not a folder name", id)
	}
	data, err := os.ReadFile(filepath.Join(s.dir, id, "meta.json"))
	if err != nil {
		return nil, nil, fmt.Errorf("cluster: snapshot %s: %w", id, err)
	}
	var meta raft.SnapshotMeta // meta.json also holds the CRC, which is not read
	if err := json.Unmarshal(data, &meta); err != nil {
		return nil, nil, fmt.Errorf("cluster: snapshot %s: meta.json: %w", id, err)
	}
	f, err := os.Open(filepath.Join(s.dir, id, "state.bin"))
	if err != nil {
		return nil, nil, fmt.Errorf("cluster: snapshot %s: %w", id, err)
	}
	return &meta, &bufferedState{Reader: bufio.NewReaderSize(f, 1<<20), f: f}, nil
}

// bufferedState reads a snapshot's state file through a buffer.
type bufferedState struct {
	*bufio.Reader
	f *os.File
}

func (b *bufferedState) Close() error { return b.f.Close() }
