// Copyright (c) HashiCorp, Inc.
// SPDX-License-Identifier: MPL-2.0

// Tests of sepp's patch to hashicorp/raft v1.7.3; see SEPP-PATCH.md.

package raft

import (
	"errors"
	"sync"
	"testing"
	"time"
)

// gatedLogStore holds (and may fail) the next StoreLogs call once hold is
// called, so that a test can look at the cluster while a leader's own
// append is in progress.
type gatedLogStore struct {
	LogStore
	mu      sync.Mutex
	release chan error // nil: appends pass straight through
	entered chan struct{}
}

// hold makes the next StoreLogs wait; it proceeds when nil is sent on the
// returned channel and fails with any error sent instead. entered is closed
// once that call is waiting.
func (s *gatedLogStore) hold() (release chan<- error, entered <-chan struct{}) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.release = make(chan error, 1)
	s.entered = make(chan struct{})
	return s.release, s.entered
}

func (s *gatedLogStore) StoreLogs(logs []*Log) error {
	s.mu.Lock()
	release, entered := s.release, s.entered
	s.release, s.entered = nil, nil
	s.mu.Unlock()
	if release != nil {
		close(entered)
		if err := <-release; err != nil {
			return err
		}
	}
	return s.LogStore.StoreLogs(logs)
}

func (s *gatedLogStore) StoreLog(l *Log) error { return s.StoreLogs([]*Log{l}) }

func makeGatedCluster(t *testing.T) (*cluster, []*gatedLogStore) {
	t.Helper()
	gates := make([]*gatedLogStore, 3)
	c := MakeClusterCustom(t, &MakeClusterOpts{
		Peers:     3,
		Bootstrap: true,
		Conf:      inmemConfig(t),
		WrapLogStore: func(i int, s LogStore) LogStore {
			gates[i] = &gatedLogStore{LogStore: s}
			return gates[i]
		},
	})
	t.Cleanup(c.Close)
	return c, gates
}

func indexOf(c *cluster, r *Raft) int {
	for i, x := range c.rafts {
		if x == r {
			return i
		}
	}
	return -1
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// The followers receive and store an entry while the leader's own append of
// it has not returned, and the entry resolves once that append does.
func TestSeppLeaderAppendsInParallelWithReplication(t *testing.T) {
	c, gates := makeGatedCluster(t)
	leader := c.Leader()
	release, entered := gates[indexOf(c, leader)].hold()

	future := leader.Apply([]byte("parallel"), 0)
	<-entered
	index := leader.LastIndex()
	for _, f := range c.Followers() {
		f := f
		waitFor(t, "a follower to store the entry the leader is still appending", func() bool {
			return f.LastIndex() >= index
		})
	}
	resolved := make(chan error, 1)
	go func() { resolved <- future.Error() }()
	select {
	case err := <-resolved:
		t.Fatalf("the entry resolved (%v) while the leader's loop was still in its append", err)
	default:
	}

	release <- nil
	if err := <-resolved; err != nil {
		t.Fatalf("apply: %v", err)
	}
	if got := future.Index(); got != index {
		t.Fatalf("applied at index %d, want %d", got, index)
	}
	c.WaitForReplication(1)
	c.EnsureSame(t)
}

// When the leader's own append fails after the followers hold the entry,
// the caller is told the outcome is unknown (not that nothing happened),
// the old leader steps down with its last index back at what its store
// holds, and a new leader commits the entry from the followers' logs.
func TestSeppLocalAppendFailureAfterReplicationIsUnknownOutcome(t *testing.T) {
	c, gates := makeGatedCluster(t)
	leader := c.Leader()
	release, entered := gates[indexOf(c, leader)].hold()
	before := leader.LastIndex()

	future := leader.Apply([]byte("maybe"), 0)
	<-entered
	index := leader.LastIndex()
	for _, f := range c.Followers() {
		f := f
		waitFor(t, "a follower to store the entry", func() bool { return f.LastIndex() >= index })
	}

	// Cut the old leader off first, so that no new leader can append to
	// it before its last index is checked.
	c.Disconnect(leader.localAddr)
	cause := errors.New("no space left on device")
	release <- cause
	err := future.Error()
	if !errors.Is(err, ErrSentBeforeLocalAppendFailed) || !errors.Is(err, cause) {
		t.Fatalf("apply error = %v, want ErrSentBeforeLocalAppendFailed wrapping the cause", err)
	}
	waitFor(t, "the old leader to step down", func() bool { return leader.State() != Leader })
	if got := leader.LastIndex(); got != before {
		t.Fatalf("old leader's last index = %d after the failed append, want %d (what its store holds)", got, before)
	}

	// The followers hold the entry, so one of them wins and commits it;
	// the old leader's store works again and catches up.
	c.FullyConnect()
	c.WaitForReplication(1)
	c.EnsureSame(t)
	if c.Leader() == leader {
		t.Log("the old leader won again after catching up")
	}
}

// With BatchApplyCh an applied future can sit in applyCh's buffer, not yet
// taken by the leader loop, when raft shuts down. Its Error must return
// then (ErrRaftShutdown), not block forever: nothing else will answer it.
func TestSeppQueuedApplyReturnsOnShutdown(t *testing.T) {
	conf := inmemConfig(t)
	conf.BatchApplyCh = true
	gates := make([]*gatedLogStore, 3)
	c := MakeClusterCustom(t, &MakeClusterOpts{
		Peers: 3, Bootstrap: true, Conf: conf,
		WrapLogStore: func(i int, s LogStore) LogStore {
			gates[i] = &gatedLogStore{LogStore: s}
			return gates[i]
		},
	})
	t.Cleanup(c.Close)
	leader := c.Leader()
	release, entered := gates[indexOf(c, leader)].hold()
	held := leader.Apply([]byte("held"), 0)
	<-entered // the leader loop is inside its own append now
	queued := leader.Apply([]byte("queued"), 0)

	shutdown := leader.Shutdown()
	got := make(chan error, 1)
	go func() { got <- queued.Error() }()
	select {
	case err := <-got:
		if !errors.Is(err, ErrRaftShutdown) {
			t.Fatalf("queued apply: %v, want ErrRaftShutdown", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a queued apply did not return after Shutdown")
	}
	release <- nil
	_ = held.Error()
	if err := shutdown.Error(); err != nil {
		t.Fatalf("shutdown: %v", err)
	}
}

// gatedStable holds the next SetUint64 once hold is called.
type gatedStable struct {
	*InmemStore
	mu      sync.Mutex
	release chan struct{}
	entered chan struct{}
}

func (s *gatedStable) hold() (release chan<- struct{}, entered <-chan struct{}) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.release, s.entered = make(chan struct{}), make(chan struct{})
	return s.release, s.entered
}

func (s *gatedStable) SetUint64(key []byte, val uint64) error {
	s.mu.Lock()
	release, entered := s.release, s.entered
	s.release, s.entered = nil, nil
	s.mu.Unlock()
	if release != nil {
		close(entered)
		<-release
	}
	return s.InmemStore.SetUint64(key, val)
}

// A heartbeat that the transport hands straight to processHeartbeat runs on
// the transport's goroutine, which raft's own shutdown does not wait for.
// Shutdown's future must still not return while such a heartbeat is setting
// a new term: its owner closes the stores right after, and the heartbeat's
// write to a closed store panics.
func TestSeppShutdownWaitsForFastPathHeartbeat(t *testing.T) {
	conf := inmemConfig(t)
	conf.LocalID = "a"
	store := NewInmemStore()
	stable := &gatedStable{InmemStore: store}
	snaps := NewInmemSnapshotStore()
	addr, trans := NewInmemTransport("")
	peers := Configuration{Servers: []Server{
		{Suffrage: Voter, ID: "a", Address: addr},
		{Suffrage: Voter, ID: "b", Address: "b"}, // never answers: a stays a follower
	}}
	if err := BootstrapCluster(conf, store, stable, snaps, trans, peers); err != nil {
		t.Fatal(err)
	}
	r, err := NewRaft(conf, &MockFSM{}, store, stable, snaps, trans)
	if err != nil {
		t.Fatal(err)
	}
	release, entered := stable.hold()
	beat := RPC{
		Command: &AppendEntriesRequest{
			RPCHeader: RPCHeader{ProtocolVersion: ProtocolVersionMax, ID: []byte("b"), Addr: []byte("b")},
			Term:      r.getCurrentTerm() + 5, // a newer term: the heartbeat stores it
		},
		RespChan: make(chan RPCResponse, 1),
	}
	beatDone := make(chan struct{})
	go func() {
		r.processHeartbeat(beat)
		close(beatDone)
	}()
	<-entered // the heartbeat is writing the new term

	shut := make(chan struct{})
	go func() {
		_ = r.Shutdown().Error()
		close(shut)
	}()
	select {
	case <-shut:
		t.Fatal("Shutdown returned while a heartbeat was still writing to the stable store")
	case <-time.After(200 * time.Millisecond):
	}
	close(release)
	<-beatDone
	<-shut
}
