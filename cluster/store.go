package cluster

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
	wal "github.com/hashicorp/raft-wal"
	"github.com/hashicorp/raft-wal/metadb"
	"go.etcd.io/bbolt"
)

// The log stores a node can keep its raft log and stable state in.
//
// LogStoreWAL (github.com/hashicorp/raft-wal) appends each batch of entries
// to a preallocated segment file and fsyncs once: one disk write per raft
// write. LogStoreBolt (raft-boltdb) commits a B+tree transaction per write:
// two fsyncs plus page copies that grow with the entry. On this project's
// machines the WAL doubles throughput and halves commit latency, so new data
// directories use it; a directory keeps the store it was created with.
const (
	LogStoreWAL  = "wal"
	LogStoreBolt = "bolt"
)

const (
	boltFileName = "raft.db"
	walDirName   = "wal"
	lockFileName = "sepp.lock"
)

// raftStores are the opened log and stable stores of a data directory.
type raftStores struct {
	kind   string
	path   string // what error messages name: raft.db or the wal folder
	log    raft.LogStore
	stable raft.StableStore
	closer func() error
	unlock func()
}

func (s *raftStores) Close() error {
	err := s.closer()
	s.unlock()
	return err
}

// existingLogStore reports which store the data directory already holds:
// "" for a directory without raft state.
func existingLogStore(dir string) (string, error) {
	var found []string
	if _, err := os.Stat(filepath.Join(dir, walDirName)); err == nil {
		found = append(found, LogStoreWAL)
	} else if !errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("cluster: data dir: %w", err)
	}
	if _, err := os.Stat(filepath.Join(dir, boltFileName)); err == nil {
		found = append(found, LogStoreBolt)
	} else if !errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("cluster: data dir: %w", err)
	}
	switch len(found) {
	case 0:
		return "", nil
	case 1:
		return found[0], nil
	default:
		return "", fmt.Errorf("cluster: %w: %s holds both %s and %s/; which one is the log is ambiguous", ErrCorruptData, dir, boltFileName, walDirName)
	}
}

// chooseLogStore resolves the configured store against what the directory
// holds. Empty config means "what is there, or the WAL for a new directory";
// an explicit choice that contradicts the data on disk is refused, since
// opening the other store would start an empty log beside the real one.
func chooseLogStore(dir, configured string) (string, error) {
	existing, err := existingLogStore(dir)
	if err != nil {
		return "", err
	}
	switch {
	case existing == "" && configured == "":
		return LogStoreWAL, nil
	case existing == "":
		return configured, nil
	case configured == "" || configured == existing:
		return existing, nil
	default:
		return "", fmt.Errorf("cluster config: log_store: %q configured, but data dir %s holds a %q log; set log_store = %q (or leave it empty) or use an empty data dir", configured, dir, existing, existing)
	}
}

// openStores locks the data directory and opens its log and stable store.
func openStores(dir, configured string, segmentSize int, logger hclog.Logger) (*raftStores, error) {
	kind, err := chooseLogStore(dir, configured)
	if err != nil {
		return nil, err
	}
	unlock, err := lockDataDir(dir)
	if err != nil {
		return nil, err
	}
	s := &raftStores{kind: kind, unlock: unlock}
	switch kind {
	case LogStoreBolt:
		s.path = filepath.Join(dir, boltFileName)
		bolt, err := raftboltdb.New(raftboltdb.Options{
			Path: s.path,
			// fsync on every commit; NoFreelistSync only skips persisting
			// the freelist (rebuilt on open), not the data.
			BoltOptions: &bbolt.Options{Timeout: time.Second, NoFreelistSync: true, FreelistType: bbolt.FreelistMapType},
		})
		if err != nil {
			unlock()
			return nil, fmt.Errorf("cluster: open log store %s: %w", s.path, err)
		}
		s.log, s.stable, s.closer = bolt, bolt, bolt.Close
	case LogStoreWAL:
		s.path = filepath.Join(dir, walDirName)
		if err := os.MkdirAll(s.path, 0o750); err != nil {
			unlock()
			return nil, fmt.Errorf("cluster: log store: %w", err)
		}
		w, err := openWAL(s.path, segmentSize, logger)
		if err != nil {
			unlock()
			return nil, fmt.Errorf("cluster: open log store %s: %w", s.path, err)
		}
		s.log, s.stable, s.closer = w, w, w.Close
	default:
		unlock()
		return nil, fmt.Errorf("cluster config: log_store: %q is not %q or %q", kind, LogStoreWAL, LogStoreBolt)
	}
	injectDiskFaults(s, dir)                        // faultinject.go: a no-op outside a test build
	if err := plantRestartBug(s, dir); err != nil { // plantedbug.go: a no-op outside a test build
		s.Close()
		return nil, err
	}
	return s, nil
}

// lockDataDir takes an exclusive lock on the data directory for this
// process, so that a second node started on the same directory fails at
// once with a clear message instead of corrupting it or hanging on a store's
// own file lock.
func lockDataDir(dir string) (func(), error) {
	path := filepath.Join(dir, lockFileName)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("cluster: data dir lock: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("cluster: data dir %s is in use by another sepp process (lock %s held)", dir, path)
		}
		return nil, fmt.Errorf("cluster: data dir lock %s: %w", path, err)
	}
	return func() {
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}, nil
}

// repairingWAL is the raft-wal store as raft sees it: log store and
// stable store, with two corrections written against raft-wal v0.4.0 (kept
// on v0.4.2: see cluster/DESIGN.md).
//
// A failed write wedges raft-wal: its segment writer keeps the half-appended
// batch in its index (and after a failed rotation stays sealed), so every
// later write fails until the process restarts. raft answers a failed write
// on a leader by stepping down and then retries, so a node whose disk filled
// up would never lead or follow again once space is freed. After a failed
// write this wrapper therefore reopens the WAL from disk, which recovers the
// state of the last durable batch, and removes anything past the index
// before the failed batch that reopening still finds (a batch whose fsync
// failed may be readable and yet not durable; raft considers it unwritten).
//
// GetLog hides entries below FirstIndex: raft-wal truncates the head of its
// tail segment only logically and still returns those entries, so a leader
// would keep replaying compacted entries to a lagging follower instead of
// sending it the snapshot, and the log's first index would say one thing
// while reads say another.
type repairingWAL struct {
	dir         string
	segmentSize int
	logger      hclog.Logger

	mu     sync.RWMutex
	w      *wal.WAL
	meta   *metadb.BoltMetaDB
	broken error // set when a reopen failed: every call returns it
}

func openWAL(dir string, segmentSize int, logger hclog.Logger) (*repairingWAL, error) {
	r := &repairingWAL{dir: dir, segmentSize: segmentSize, logger: logger}
	if err := r.open(); err != nil {
		return nil, err
	}
	return r, nil
}

func (r *repairingWAL) open() error {
	// Our own meta store, so that it is closed: WAL.Close leaves the one it
	// would create open, and reopening the directory in the same process
	// would then wait forever on bolt's file lock.
	meta := &metadb.BoltMetaDB{}
	w, err := wal.Open(r.dir, wal.WithMetaStore(meta), wal.WithSegmentSize(r.segmentSize), wal.WithLogger(r.logger.Named("wal")))
	if err != nil {
		_ = meta.Close()
		return err
	}
	r.w, r.meta = w, meta
	return nil
}

func (r *repairingWAL) closeLocked() error {
	if r.w == nil {
		return nil
	}
	err := errors.Join(r.w.Close(), r.meta.Close())
	r.w, r.meta = nil, nil
	return err
}

// Close closes the WAL and its meta store.
func (r *repairingWAL) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.broken == nil {
		r.broken = errors.New("log store closed")
	}
	return r.closeLocked()
}

// read runs fn on the current WAL under the read lock.
func (r *repairingWAL) read(fn func(w *wal.WAL) error) error {
	r.mu.RLock()
	defer r.mu.RUnlock()
	if r.broken != nil {
		return r.broken
	}
	return fn(r.w)
}

// write runs fn; if it fails, the WAL is reopened before the error returns.
// lastBefore is the index the log must end at after a failed write.
func (r *repairingWAL) write(fn func(w *wal.WAL) error) error {
	var lastBefore uint64
	err := r.read(func(w *wal.WAL) error {
		var err error
		if lastBefore, err = w.LastIndex(); err != nil {
			return err
		}
		return fn(w)
	})
	if err == nil {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.broken != nil {
		return err
	}
	if rerr := r.repairLocked(lastBefore); rerr != nil {
		r.broken = fmt.Errorf("log store %s unusable after a failed write (%v); restart the node: %w", r.dir, err, rerr)
		r.logger.Error("log store could not be reopened after a failed write", "dir", r.dir, "write_error", err, "reopen_error", rerr)
		return r.broken
	}
	return err
}

func (r *repairingWAL) repairLocked(lastBefore uint64) error {
	if err := r.closeLocked(); err != nil {
		r.logger.Warn("closing the log store after a failed write", "error", err)
	}
	if err := r.open(); err != nil {
		return err
	}
	last, err := r.w.LastIndex()
	if err != nil {
		return err
	}
	if last > lastBefore {
		if err := r.w.DeleteRange(lastBefore+1, last); err != nil {
			return err
		}
	}
	r.logger.Warn("reopened the log store after a failed write", "dir", r.dir, "last_index", min(last, lastBefore))
	return nil
}

func (r *repairingWAL) FirstIndex() (first uint64, err error) {
	err = r.read(func(w *wal.WAL) error { first, err = w.FirstIndex(); return err })
	return first, err
}

func (r *repairingWAL) LastIndex() (last uint64, err error) {
	err = r.read(func(w *wal.WAL) error { last, err = w.LastIndex(); return err })
	return last, err
}

func (r *repairingWAL) GetLog(index uint64, l *raft.Log) error {
	return r.read(func(w *wal.WAL) error {
		first, err := w.FirstIndex()
		if err != nil {
			return err
		}
		if first == 0 || index < first {
			return raft.ErrLogNotFound
		}
		return w.GetLog(index, l)
	})
}

func (r *repairingWAL) StoreLog(l *raft.Log) error { return r.StoreLogs([]*raft.Log{l}) }

func (r *repairingWAL) StoreLogs(logs []*raft.Log) error {
	return r.write(func(w *wal.WAL) error { return w.StoreLogs(logs) })
}

func (r *repairingWAL) DeleteRange(min, max uint64) error {
	return r.write(func(w *wal.WAL) error { return w.DeleteRange(min, max) })
}

// IsMonotonic: raft-wal refuses gaps, so raft must clear the whole log
// when it installs a snapshot (raft.MonotonicLogStore).
func (r *repairingWAL) IsMonotonic() bool { return true }

func (r *repairingWAL) Set(key, val []byte) error {
	return r.read(func(w *wal.WAL) error { return w.Set(key, val) })
}

func (r *repairingWAL) Get(key []byte) (val []byte, err error) {
	err = r.read(func(w *wal.WAL) error { val, err = w.Get(key); return err })
	return val, err
}

func (r *repairingWAL) SetUint64(key []byte, val uint64) error {
	return r.read(func(w *wal.WAL) error { return w.SetUint64(key, val) })
}

func (r *repairingWAL) GetUint64(key []byte) (val uint64, err error) {
	err = r.read(func(w *wal.WAL) error { val, err = w.GetUint64(key); return err })
	return val, err
}
