package cluster_test

import (
	"errors"
	"fmt"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/sepp-io/sepp/cluster"
	"github.com/sepp-io/sepp/cluster/clustertest"
	"github.com/sepp-io/sepp/engine"
)

// failingStore fails every log write with err while it is set.
type failingStore struct {
	raft.LogStore
	err *atomic.Pointer[error]
}

func (s *failingStore) StoreLogs(logs []*raft.Log) error {
	if p := s.err.Load(); p != nil {
		return *p
	}
	return s.LogStore.StoreLogs(logs)
}

func (s *failingStore) StoreLog(l *raft.Log) error { return s.StoreLogs([]*raft.Log{l}) }

// A leader whose disk fails a log write (EIO, as a failed fsync reports)
// stops instead of stepping down and retrying, and the others elect a
// leader that serves; a full disk (ENOSPC) is not such a failure: the node
// keeps running and refuses writes (diskfull.go).
func TestCluster_FailedLogWriteStopsTheNode(t *testing.T) {
	for _, tc := range []struct {
		name  string
		err   error
		stops bool
	}{
		{name: "EIO stops the node", err: fmt.Errorf("write segment: sync: %w", syscall.EIO), stops: true},
		{name: "ENOSPC does not", err: fmt.Errorf("write segment: %w", syscall.ENOSPC), stops: false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var fail [3]atomic.Pointer[error]
			stopped := make(chan error, 3)
			c := clustertest.New(t, 3, clustertest.WithConfig(func(i int, cfg *cluster.Config) {
				cfg.LogStoreWrapper = func(s raft.LogStore) raft.LogStore { return &failingStore{LogStore: s, err: &fail[i]} }
				cfg.OnStoreFailure = func(err error) { stopped <- err }
			}))
			li := c.WaitLeader()
			if _, err := cluster.Do(ctxT(t, 5*time.Second), c.Node(li), engine.EnqueueOp{Params: job("q", 1)}); err != nil {
				t.Fatal(err)
			}
			fail[li].Store(&tc.err)
			if _, err := cluster.Do(ctxT(t, 5*time.Second), c.Node(li), engine.EnqueueOp{Params: job("q", 2)}); err == nil {
				t.Fatal("a leader whose disk failed the write reported a committed enqueue")
			}
			if !tc.stops {
				select {
				case err := <-stopped:
					t.Fatalf("a full disk stopped the node: %v", err)
				default:
				}
				if err := c.Node(li).StoreFailure(); err != nil {
					t.Fatalf("StoreFailure = %v after a full disk, want nil", err)
				}
				return
			}
			select {
			case err := <-stopped:
				if !errors.Is(err, cluster.ErrStoreFailed) || !errors.Is(err, syscall.EIO) {
					t.Fatalf("OnStoreFailure(%v): want ErrStoreFailed wrapping EIO", err)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("the node whose disk failed a write did not stop")
			}
			if err := c.Node(li).StoreFailure(); !errors.Is(err, syscall.EIO) {
				t.Fatalf("StoreFailure = %v, want the EIO", err)
			}
			c.Stop(li) // what sepp serve's exit does
			nl := c.WaitLeaderAmong(others(c, li))
			if _, err := cluster.Do(ctxT(t, 5*time.Second), c.Node(nl), engine.EnqueueOp{Params: job("q", 3)}); err != nil {
				t.Fatalf("new leader: %v", err)
			}
			select {
			case err := <-stopped:
				t.Fatalf("a second node stopped: %v", err)
			default:
			}
		})
	}
}
