package cluster

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

// blockingStore holds every write until unblock closes, then stores it.
type blockingStore struct {
	raft.LogStore
	unblock chan struct{}
}

func (s *blockingStore) StoreLogs(logs []*raft.Log) error {
	<-s.unblock
	return s.LogStore.StoreLogs(logs)
}

func (s *blockingStore) StoreLog(l *raft.Log) error { return s.StoreLogs([]*raft.Log{l}) }

// A write that stalls past the timeout fails; writes behind it fail at
// once; when the stalled write finally lands, it is taken back out (its
// caller was told it failed, and raft appends at the same index next), so
// that the next write at that index succeeds.
func TestTimeoutLogStore_FailsStalledWrites(t *testing.T) {
	mem := raft.NewInmemStore()
	if err := mem.StoreLog(&raft.Log{Index: 1, Term: 1}); err != nil {
		t.Fatal(err)
	}
	inner := &blockingStore{LogStore: mem, unblock: make(chan struct{})}
	var rollbackErr error
	s := newTimeoutLogStore(inner, 20*time.Millisecond, func(err error) { rollbackErr = err })
	if err := s.StoreLogs([]*raft.Log{{Index: 2, Term: 1}, {Index: 3, Term: 1}}); !errors.Is(err, ErrLogStoreStalled) {
		t.Fatalf("stalled write: err %v, want ErrLogStoreStalled", err)
	}
	// While the first write is stuck, later ones fail at once instead of
	// piling up behind it.
	if err := s.StoreLog(&raft.Log{Index: 2, Term: 2}); !errors.Is(err, ErrLogStoreStalled) {
		t.Fatalf("write behind a stalled one: err %v, want ErrLogStoreStalled", err)
	}
	close(inner.unblock)
	ok := false
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); {
		if err := s.StoreLog(&raft.Log{Index: 2, Term: 2}); err == nil {
			ok = true
			break
		}
		time.Sleep(time.Millisecond) // polling for the background write to drain
	}
	if !ok {
		t.Fatal("the store never recovered after the stall ended")
	}
	if rollbackErr != nil {
		t.Fatal(rollbackErr)
	}
	var l raft.Log
	if err := mem.GetLog(2, &l); err != nil || l.Term != 2 {
		t.Fatalf("entry 2: term %d (%v), want the term-2 write made after the stall", l.Term, err)
	}
	if last, _ := mem.LastIndex(); last != 2 {
		t.Fatalf("last index %d, want 2: the late write's entries were not taken back", last)
	}
}

func TestTimeoutLogStore_PassesWritesThrough(t *testing.T) {
	inner := raft.NewInmemStore()
	s := newTimeoutLogStore(inner, time.Second, nil)
	if err := s.StoreLogs([]*raft.Log{{Index: 1, Data: []byte("a")}, {Index: 2}}); err != nil {
		t.Fatal(err)
	}
	if last, _ := inner.LastIndex(); last != 2 {
		t.Fatalf("inner store last index %d, want 2", last)
	}
	if newTimeoutLogStore(inner, 0, nil) != raft.LogStore(inner) {
		t.Fatal("a zero timeout should not wrap the store")
	}
}

func TestProposer_ClassifiesRaftErrors(t *testing.T) {
	p := &proposer{notLeader: func() error { return &NotLeaderError{Leader: NodeInfo{ID: "n2"}} }}
	tests := []struct {
		err  error
		want error
	}{
		{raft.ErrNotLeader, ErrNotLeader},
		{raft.ErrLeadershipTransferInProgress, ErrNoLeader},
		{raft.ErrEnqueueTimeout, ErrNoLeader},
		{raft.ErrLeadershipLost, ErrUnknownOutcome},
		{raft.ErrRaftShutdown, ErrUnknownOutcome},
		{raft.ErrAbortedByRestore, ErrUnknownOutcome},
		{fmt.Errorf("disk: %w", errors.New("io")), ErrUnknownOutcome},
		{&DiskFullError{Dir: "/d", Cause: errors.New("no space")}, ErrDiskFull},
	}
	for _, tc := range tests {
		t.Run(tc.err.Error(), func(t *testing.T) {
			if got := p.classify(tc.err); !errors.Is(got, tc.want) {
				t.Fatalf("classify(%v) = %v, want %v", tc.err, got, tc.want)
			}
		})
	}
}

// A leader whose own append fails after replication began cannot say that
// nothing was applied, even when the cause is a full disk: the followers may
// hold the entry. The caller must see an unknown outcome, never the definite
// refusal a *DiskFullError stands for.
func TestProposer_LocalAppendFailedAfterReplicationIsUnknown(t *testing.T) {
	p := &proposer{notLeader: func() error { return ErrNotLeader }}
	diskFull := &DiskFullError{Dir: "/d", Cause: errors.New("no space left on device")}
	err := fmt.Errorf("%w: %w", raft.ErrSentBeforeLocalAppendFailed, diskFull)
	got := p.classify(err)
	if !errors.Is(got, ErrUnknownOutcome) {
		t.Fatalf("classify(%v) = %v, want ErrUnknownOutcome", err, got)
	}
	var df *DiskFullError
	if errors.Is(got, ErrDiskFull) || errors.As(got, &df) {
		t.Fatalf("classify(%v) = %v still reads as a full disk (nothing applied)", err, got)
	}
	if !strings.Contains(got.Error(), "no space left on device") {
		t.Fatalf("classify(%v) = %v lost the cause", err, got)
	}
}
