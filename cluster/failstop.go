package cluster

import (
	"errors"
	"fmt"

	"github.com/hashicorp/raft"
)

// ErrStoreFailed names a write to the node's Raft log or stable store that
// the disk failed (an I/O error, a failed fsync) for another reason than a
// lack of space, or a failed flush of its payload store (full disk
// included). The node stops: see failStop and stopForPayloadStore.
var ErrStoreFailed = errors.New("the disk failed a write to the node's Raft log, stable store or payload store; the node stops")

// A failed fsync does not say which of the writes since the last one
// reached the disk, and on Linux the next fsync of the same file can
// succeed while the failed pages are gone from the page cache
// (PostgreSQL's "fsyncgate", 2018). Raft's answer to a failed log write is
// to step down as leader, or to refuse the append as a follower, and to try
// again later: on such a disk the retry may report an entry durable that
// is not, and this node would then count toward a majority for a write it
// lost. So a write failure that is not a full disk (which diskfull.go
// handles, and which changes nothing on disk) stops the node instead, as
// PostgreSQL panics: the restart reads what the disk really holds, checks
// it (verify.go), and catches up from the leader.

// failStopLogStore reports every failed write of the log store it wraps
// (the innermost wrapper, so the error still carries its errno).
type failStopLogStore struct {
	raft.LogStore
	fail func(op string, err error)
}

func (s *failStopLogStore) IsMonotonic() bool { return isMonotonic(s.LogStore) }

func (s *failStopLogStore) StoreLog(l *raft.Log) error {
	return s.check("store log", s.LogStore.StoreLog(l))
}

func (s *failStopLogStore) StoreLogs(logs []*raft.Log) error {
	return s.check("store logs", s.LogStore.StoreLogs(logs))
}

func (s *failStopLogStore) DeleteRange(lo, hi uint64) error {
	return s.check("delete log range", s.LogStore.DeleteRange(lo, hi))
}

func (s *failStopLogStore) check(op string, err error) error {
	if err != nil {
		s.fail(op, err)
	}
	return err
}

// failStopStableStore does the same for the stable store (term, vote).
type failStopStableStore struct {
	raft.StableStore
	fail func(op string, err error)
}

func (s *failStopStableStore) Set(key, val []byte) error {
	err := s.StableStore.Set(key, val)
	if err != nil {
		s.fail("stable store set", err)
	}
	return err
}

func (s *failStopStableStore) SetUint64(key []byte, val uint64) error {
	err := s.StableStore.SetUint64(key, val)
	if err != nil {
		s.fail("stable store set", err)
	}
	return err
}

// failStop stops the node after a store write failed, once: a full disk
// and a node already shutting down (whose store is closed) are not disk
// failures. Config.OnStoreFailure decides how (the server exits), else the
// node closes.
func (n *Node) failStop(op string, err error) {
	if isNoSpace(err) {
		return
	}
	n.stop(op, err)
}

// stopForPayloadStore stops the node after its payload store failed a
// flush or compaction (fsm/payloads.go), a full disk included: Pebble
// retries the flush forever, and once its memtables are full the apply
// blocks, so a leader would go on heartbeating and commit nothing. The
// store keeps what it flushed, and the snapshot and the log hold the
// rest, so stopping loses nothing.
func (n *Node) stopForPayloadStore(err error) {
	n.stop("payload store flush or compaction", err)
}

// stop stops the node once for a failed write (failStop).
func (n *Node) stop(op string, err error) {
	select {
	case <-n.shutdownCh:
		return
	default:
	}
	n.storeFailOnce.Do(func() {
		failure := fmt.Errorf("%w: %s in %s: %w", ErrStoreFailed, op, n.cfg.DataDir, err)
		n.storeFailure.Store(&failure)
		n.log.Error("stopping: the disk failed a write; after a failed fsync a retry can report as durable a write the disk lost, so this node stops rather than retry; restart it to recover from what the disk holds",
			"op", op, "error", err, "data_dir", n.cfg.DataDir)
		go func() {
			if n.cfg.OnStoreFailure != nil {
				n.cfg.OnStoreFailure(failure)
				return
			}
			_ = n.Close()
		}()
	})
}

// StoreFailure is the store failure that stopped this node, or nil.
func (n *Node) StoreFailure() error {
	if p := n.storeFailure.Load(); p != nil {
		return *p
	}
	return nil
}
