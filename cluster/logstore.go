package cluster

import (
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"
)

// ErrLogStoreStalled is returned by a log write that did not finish within
// the configured write timeout, and by every write attempted while that one
// is still stuck. On a leader raft answers it by stepping down.
var ErrLogStoreStalled = errors.New("log store write stalled")

// timeoutLogStore bounds writes to a log store. hashicorp/raft has no I/O
// timeout of its own: a leader whose disk hangs keeps leading, heartbeats
// flowing, while nothing commits. Failing the write makes raft step down, so
// another node takes over. The stuck write still holds the store; writes
// that come while it is stuck fail at once rather than pile up.
//
// A stuck write that finally succeeds after its caller was told it failed
// is taken back out (DeleteRange of its entries) before the next write may
// start: raft believes the log ends before them, and a log holding them
// would refuse raft's next append at the same index (found by
// TestDiskFault_StalledDiskOnTheLeader: the node exited once its disk
// answered again). Entries a node reported as not stored may be dropped,
// as a crash before their fsync drops them; the leader sends them again.
type timeoutLogStore struct {
	raft.LogStore
	timeout time.Duration
	busy    atomic.Bool
	// onRollbackFailure is told when a late write could not be taken back
	// out: the log then holds entries raft does not know of.
	onRollbackFailure func(error)
}

// A write's outcome, decided once between the write and its timeout.
const (
	writePending int32 = iota
	writeFinished
	writeAbandoned
)

func newTimeoutLogStore(s raft.LogStore, timeout time.Duration, onRollbackFailure func(error)) raft.LogStore {
	if timeout <= 0 {
		return s
	}
	return &timeoutLogStore{LogStore: s, timeout: timeout, onRollbackFailure: onRollbackFailure}
}

// IsMonotonic passes the wrapped store's answer on; see isMonotonic.
func (s *timeoutLogStore) IsMonotonic() bool { return isMonotonic(s.LogStore) }

// isMonotonic reports whether s refuses gaps between stored indexes
// (raft.MonotonicLogStore). Every wrapper of a log store must pass this on:
// raft asks it of the store it is given to decide whether installing a
// snapshot clears the whole log, and a WAL told "no" would later be handed
// an append with a gap, which it refuses.
func isMonotonic(s raft.LogStore) bool {
	m, ok := s.(raft.MonotonicLogStore)
	return ok && m.IsMonotonic()
}

func (s *timeoutLogStore) StoreLog(l *raft.Log) error {
	return s.StoreLogs([]*raft.Log{l})
}

func (s *timeoutLogStore) StoreLogs(logs []*raft.Log) error {
	if !s.busy.CompareAndSwap(false, true) {
		return fmt.Errorf("%w: an earlier write has not finished", ErrLogStoreStalled)
	}
	done := make(chan error, 1)
	var state atomic.Int32
	go func() {
		err := s.LogStore.StoreLogs(logs)
		if !state.CompareAndSwap(writePending, writeFinished) && err == nil && len(logs) > 0 {
			// Abandoned: the caller was told this write failed.
			if derr := s.LogStore.DeleteRange(logs[0].Index, logs[len(logs)-1].Index); derr != nil && s.onRollbackFailure != nil {
				s.onRollbackFailure(fmt.Errorf("take back entries %d-%d written after their write timed out: %w", logs[0].Index, logs[len(logs)-1].Index, derr))
			}
		}
		s.busy.Store(false) // before answering, so the next write finds it free
		done <- err
	}()
	timer := time.NewTimer(s.timeout)
	defer timer.Stop()
	select {
	case err := <-done:
		return err
	case <-timer.C:
		if !state.CompareAndSwap(writePending, writeAbandoned) {
			return <-done // it finished as the timer fired: its outcome stands
		}
		return fmt.Errorf("%w: no answer within %s", ErrLogStoreStalled, s.timeout)
	}
}
