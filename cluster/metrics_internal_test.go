package cluster

import (
	"errors"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	dto "github.com/prometheus/client_model/go"
)

// monotonicStore is a log store that refuses gaps, as raft-wal does.
type monotonicStore struct {
	raft.LogStore
	err    error
	stored int
}

func (s *monotonicStore) IsMonotonic() bool { return true }

func (s *monotonicStore) StoreLogs(logs []*raft.Log) error {
	s.stored += len(logs)
	return s.err
}

// The timing wrapper passes IsMonotonic and the store's error on, and
// observes failed writes too: a disk that fails slowly is still slow.
func TestTimedLogStore(t *testing.T) {
	for _, storeErr := range []error{nil, errors.New("disk full")} {
		inner := &monotonicStore{LogStore: raft.NewInmemStore(), err: storeErr}
		var observed []time.Duration
		s := &timedLogStore{LogStore: inner, observe: func(d time.Duration) { observed = append(observed, d) }}
		if !isMonotonic(s) {
			t.Fatalf("IsMonotonic not passed on")
		}
		if err := s.StoreLog(&raft.Log{Index: 1}); !errors.Is(err, storeErr) {
			t.Fatalf("StoreLog: %v, want %v", err, storeErr)
		}
		if err := s.StoreLogs([]*raft.Log{{Index: 2}, {Index: 3}}); !errors.Is(err, storeErr) {
			t.Fatalf("StoreLogs: %v, want %v", err, storeErr)
		}
		if inner.stored != 3 || len(observed) != 2 {
			t.Fatalf("with error %v: stored %d entries, observed %d writes; want 3 and 2", storeErr, inner.stored, len(observed))
		}
	}
}

// A leader learned of again in a term already counted (raft blanks the
// leader on a heartbeat timeout and names it again) is no change; a later
// term is one, however many terms it skipped.
func TestNodeMetrics_CountLeadershipOncePerTerm(t *testing.T) {
	m := newNodeMetrics(func() uint64 { return 0 })
	for _, term := range []uint64{3, 3, 2, 4, 4, 9, 9, 1} {
		m.countLeadership(term)
	}
	var got dto.Metric
	if err := m.leaderChanges.Write(&got); err != nil {
		t.Fatal(err)
	}
	if got := got.GetCounter().GetValue(); got != 3 {
		t.Fatalf("leader changes %g, want 3 (terms 3, 4, 9)", got)
	}
}
