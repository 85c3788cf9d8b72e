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
type timeoutLogStore struct {
	raft.LogStore
	timeout time.Duration
	busy    atomic.Bool
}

func newTimeoutLogStore(s raft.LogStore, timeout time.Duration) raft.LogStore {
	if timeout <= 0 {
		return s
	}
	return &timeoutLogStore{LogStore: s, timeout: timeout}
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
	go func() {
		err := s.LogStore.StoreLogs(logs)
		s.busy.Store(false) // before answering, so the next write finds it free
		done <- err
	}()
	timer := time.NewTimer(s.timeout)
	defer timer.Stop()
	select {
	case err := <-done:
		return err
	case <-timer.C:
		return fmt.Errorf("%w: no answer within %s", ErrLogStoreStalled, s.timeout)
	}
}
