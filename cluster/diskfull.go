package cluster

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/hashicorp/raft"
)

// ErrDiskFull: a write to the node's data directory failed for lack of
// space (ENOSPC, or EDQUOT for a quota). The write that failed changed
// nothing: bolt commits atomically, so the entry is in no log and the
// command was not applied. Errors wrapping it are *DiskFullError, naming
// the directory. (A leader with followers has sent the entry before its own
// append fails, so there the caller gets ErrUnknownOutcome instead; see
// proposer.classify.)
var ErrDiskFull = errors.New("disk full")

// DiskFullError is a command refused because the node's disk is full.
// Nothing was applied; the same command succeeds once space is freed (or,
// in a multi-node cluster, once a leader with space takes over).
type DiskFullError struct {
	// Dir is the node's data directory.
	Dir string
	// Cause is the write that failed for lack of space.
	Cause error
	// Err is what the caller's operation ran into while the disk is full
	// (no leader, because raft stepped the leader down after the failed
	// write); nil when the caller's own write is the one that failed.
	Err error
}

func (e *DiskFullError) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("disk full on %s: %v (last write: %v)", e.Dir, e.Err, e.Cause)
	}
	return fmt.Sprintf("disk full on %s: %v", e.Dir, e.Cause)
}

// Unwrap lets errors.Is find ErrDiskFull, the caller's error and the cause.
func (e *DiskFullError) Unwrap() []error {
	errs := []error{ErrDiskFull}
	if e.Err != nil {
		errs = append(errs, e.Err)
	}
	return append(errs, e.Cause)
}

// isNoSpace reports whether err is a write failing for lack of space. The
// text is checked too, not only the chain: bolt reports a failed file grow
// with %s and raft's LogCache wraps store errors with %q, both of which
// drop the errno.
func isNoSpace(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) || errors.Is(err, ErrDiskFull) {
		return true
	}
	msg := err.Error()
	return strings.Contains(msg, syscall.ENOSPC.Error()) || strings.Contains(msg, syscall.EDQUOT.Error())
}

// diskWatch remembers that a write to the node's data directory failed for
// lack of space, so that what a client sees next ("no leader", because raft
// steps a leader down when its log write fails) can say why.
//
// When is the disk no longer full? Small writes can still succeed in bolt's
// free pages while every larger append fails (raft's leader no-op and
// term writes do, between elections that each end at the next failed
// append), so one successful write proves nothing. The state clears once
// the log has taken, since the failure, at least as many bytes as the write
// that failed.
type diskWatch struct {
	dir  string
	full atomic.Pointer[DiskFullError] // nil while no shortage is known

	mu          sync.Mutex
	failedBytes int64 // size of the write that failed
	sinceBytes  int64 // log bytes written since
}

// observe records the outcome of one write of size bytes; logWrite is true
// for log appends, the only writes that can clear the state. A failure for
// lack of space comes back as a *DiskFullError.
func (w *diskWatch) observe(op string, err error, size int64, logWrite bool) error {
	if err == nil {
		if logWrite && w.full.Load() != nil {
			w.mu.Lock()
			w.sinceBytes += size
			if w.sinceBytes >= w.failedBytes {
				w.full.Store(nil)
			}
			w.mu.Unlock()
		}
		return nil
	}
	if !isNoSpace(err) {
		return err
	}
	var df *DiskFullError
	if !errors.As(err, &df) {
		df = &DiskFullError{Dir: w.dir, Cause: fmt.Errorf("%s: %w", op, err)}
	}
	w.mu.Lock()
	w.failedBytes, w.sinceBytes = max(size, 1), 0
	w.full.Store(df)
	w.mu.Unlock()
	return df
}

// logBytes is the payload size of a log append.
func logBytes(logs ...*raft.Log) int64 {
	var n int64
	for _, l := range logs {
		n += int64(len(l.Data) + len(l.Extensions))
	}
	return n
}

// explain wraps err, an operation refused before it was proposed, with the
// disk-full state when the disk is known to be full. A NotLeaderError that
// names a leader is left alone: the client should follow it, and that
// leader may well have space. Shutdown is left alone too.
func (w *diskWatch) explain(err error) error {
	df := w.full.Load()
	if err == nil || df == nil || errors.Is(err, ErrDiskFull) || errors.Is(err, ErrShutdown) {
		return err
	}
	var nl *NotLeaderError
	if errors.As(err, &nl) && nl.Leader.ID != "" {
		return err
	}
	return &DiskFullError{Dir: df.Dir, Cause: df.Cause, Err: err}
}

// diskFullLogStore is the outermost log store wrapper (around the cache and
// the write timeout): raft hands its error straight to the futures of the
// entries it could not write, so the proposer can tell "not written, disk
// full" from an unknown outcome.
type diskFullLogStore struct {
	raft.LogStore
	w *diskWatch
	// writes counts log writes (each one fsync'd batch of entries), for
	// Node.LogWrites.
	writes atomic.Uint64
}

func (s *diskFullLogStore) StoreLog(l *raft.Log) error {
	s.writes.Add(1)
	return s.w.observe("store log", s.LogStore.StoreLog(l), logBytes(l), true)
}

func (s *diskFullLogStore) StoreLogs(logs []*raft.Log) error {
	s.writes.Add(1)
	return s.w.observe("store logs", s.LogStore.StoreLogs(logs), logBytes(logs...), true)
}

func (s *diskFullLogStore) DeleteRange(min, max uint64) error {
	return s.w.observe("delete log range", s.LogStore.DeleteRange(min, max), 0, false)
}

func (s *diskFullLogStore) IsMonotonic() bool { return isMonotonic(s.LogStore) }

// diskFullStableStore records stable-store writes (current term, vote)
// that fail for lack of space. Raft panics when it cannot persist a new
// term; nothing here can prevent that, but the state names the cause for
// the operator in the meantime.
type diskFullStableStore struct {
	raft.StableStore
	w *diskWatch
}

func (s *diskFullStableStore) Set(key, val []byte) error {
	return s.w.observe("stable store set", s.StableStore.Set(key, val), int64(len(key)+len(val)), false)
}

func (s *diskFullStableStore) SetUint64(key []byte, val uint64) error {
	return s.w.observe("stable store set", s.StableStore.SetUint64(key, val), int64(len(key)+8), false)
}
