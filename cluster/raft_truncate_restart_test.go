package cluster

import (
	"bytes"
	"fmt"
	"io"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"

	"github.com/sepp-io/sepp/fsm"
	cmdpb "github.com/sepp-io/sepp/proto/seppcmd/v1"
)

// A raft follower that clears a conflicting log suffix and then restarts,
// twice, on the log store as sepp opens it (raft-wal on disk, behind raft's
// LogCache as NewNode puts it), with raft's in-memory transport. On
// raft-wal v0.4.0 the first restart after "clearing log suffix" is refused
// (hashicorp/raft-wal#31); here the node must start every time, take the
// leader's entries and, made leader, commit its own.

// countingFSM records the data of every applied command in order.
type countingFSM struct {
	mu      sync.Mutex
	applied [][]byte
}

func (f *countingFSM) Apply(l *raft.Log) any {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.applied = append(f.applied, bytes.Clone(l.Data))
	return nil
}

func (f *countingFSM) Snapshot() (raft.FSMSnapshot, error) {
	return nil, fmt.Errorf("the test takes no snapshots")
}

func (f *countingFSM) Restore(io.ReadCloser) error { return fmt.Errorf("the test takes no snapshots") }

func (f *countingFSM) data() [][]byte {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([][]byte(nil), f.applied...)
}

type testRaftNode struct {
	id     raft.ServerID
	dir    string
	trans  *raft.InmemTransport
	stores *raftStores
	fsm    *countingFSM
	raft   *raft.Raft
}

type testRaftCluster struct {
	t     *testing.T
	nodes map[raft.ServerID]*testRaftNode
	conf  raft.Configuration
}

func raftTestConfig(id raft.ServerID) *raft.Config {
	c := raft.DefaultConfig()
	c.LocalID = id
	c.HeartbeatTimeout = 100 * time.Millisecond
	c.ElectionTimeout = 100 * time.Millisecond
	c.LeaderLeaseTimeout = 100 * time.Millisecond
	c.CommitTimeout = 5 * time.Millisecond
	// Snapshots would let raft skip the log on restart; this test is about
	// the log.
	c.SnapshotThreshold = 1 << 30
	c.SnapshotInterval = time.Hour
	c.Logger = hclog.NewNullLogger()
	return c
}

// start opens n's stores from its data dir (a restart) and starts raft on a
// new in-memory transport connected to every other running node.
func (c *testRaftCluster) start(n *testRaftNode) {
	t := c.t
	t.Helper()
	stores, err := openStores(n.dir, LogStoreWAL, 1<<20, hclog.NewNullLogger())
	if err != nil {
		t.Fatalf("node %s: open stores: %v", n.id, err)
	}
	if err := verifyLog(stores.log, stores.path, 0); err != nil {
		stores.Close()
		t.Fatalf("node %s: start-up check: %v", n.id, err)
	}
	cache, err := raft.NewLogCache(logCacheEntries, stores.log)
	if err != nil {
		t.Fatal(err)
	}
	_, n.trans = raft.NewInmemTransport(raft.ServerAddress(n.id))
	for _, o := range c.nodes {
		if o == n || o.raft == nil {
			continue
		}
		n.trans.Connect(o.trans.LocalAddr(), o.trans)
		o.trans.Connect(n.trans.LocalAddr(), n.trans)
	}
	snaps := raft.NewInmemSnapshotStore()
	cfg := raftTestConfig(n.id)
	has, err := raft.HasExistingState(cache, stores.stable, snaps)
	if err != nil {
		t.Fatal(err)
	}
	if !has {
		if err := raft.BootstrapCluster(cfg, cache, stores.stable, snaps, n.trans, c.conf); err != nil {
			t.Fatalf("node %s: bootstrap: %v", n.id, err)
		}
	}
	n.fsm = &countingFSM{}
	r, err := raft.NewRaft(cfg, n.fsm, cache, stores.stable, snaps, n.trans)
	if err != nil {
		stores.Close()
		t.Fatalf("node %s: start raft: %v", n.id, err)
	}
	n.stores, n.raft = stores, r
}

// stop shuts n's raft down and closes its stores, as a node's Close does.
func (c *testRaftCluster) stop(n *testRaftNode) {
	c.t.Helper()
	if n.raft == nil {
		return
	}
	if err := n.raft.Shutdown().Error(); err != nil {
		c.t.Errorf("node %s: shutdown: %v", n.id, err)
	}
	for _, o := range c.nodes {
		if o != n && o.trans != nil {
			o.trans.Disconnect(n.trans.LocalAddr())
		}
	}
	n.trans.DisconnectAll()
	if err := n.trans.Close(); err != nil {
		c.t.Errorf("node %s: close transport: %v", n.id, err)
	}
	if err := n.stores.Close(); err != nil {
		c.t.Errorf("node %s: close stores: %v", n.id, err)
	}
	n.raft, n.stores = nil, nil
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); !cond(); {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond) // polling a condition with a deadline
	}
}

func (c *testRaftCluster) leader(exclude raft.ServerID) *testRaftNode {
	for _, n := range c.nodes {
		if n.id != exclude && n.raft != nil && n.raft.State() == raft.Leader {
			return n
		}
	}
	return nil
}

func (c *testRaftCluster) waitLeader(exclude raft.ServerID) *testRaftNode {
	c.t.Helper()
	var l *testRaftNode
	waitFor(c.t, "a leader", func() bool { l = c.leader(exclude); return l != nil })
	return l
}

// entryData is a real sepp log entry (the start-up check decodes every
// command entry), one PauseQueue of a queue named after the step, so each
// entry's bytes tell which step wrote it.
func entryData(t *testing.T, name string) []byte {
	t.Helper()
	data, err := fsm.EncodeEntry([]*cmdpb.Command{fsm.PauseQueueCommand(name)})
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func apply(t *testing.T, n *testRaftNode, name string) {
	t.Helper()
	if err := n.raft.Apply(entryData(t, name), 5*time.Second).Error(); err != nil {
		t.Fatalf("apply %q on %s: %v", name, n.id, err)
	}
}

func TestRaft_FollowerTruncatesConflictingSuffixThenRestartsTwice(t *testing.T) {
	c := &testRaftCluster{t: t, nodes: map[raft.ServerID]*testRaftNode{}}
	for _, id := range []raft.ServerID{"a", "b", "c"} {
		c.nodes[id] = &testRaftNode{id: id, dir: t.TempDir()}
		c.conf.Servers = append(c.conf.Servers, raft.Server{Suffrage: raft.Voter, ID: id, Address: raft.ServerAddress(id)})
	}
	defer func() {
		for _, n := range c.nodes {
			c.stop(n)
		}
	}()
	for _, n := range c.nodes {
		c.start(n)
	}

	old := c.waitLeader("")
	for i := range 5 {
		apply(t, old, fmt.Sprintf("committed-%d", i))
	}
	committedLast := old.raft.LastIndex()

	// Cut the leader off and have it append entries it cannot commit.
	for _, o := range c.nodes {
		if o != old {
			o.trans.Disconnect(old.trans.LocalAddr())
		}
	}
	old.trans.DisconnectAll()
	uncommitted := map[string]bool{}
	for i := range 3 {
		data := entryData(t, fmt.Sprintf("uncommitted-%d", i))
		uncommitted[string(data)] = true
		_ = old.raft.Apply(data, 0) // never commits: the old leader is alone
	}
	waitFor(t, "the cut-off leader to append its uncommitted entries", func() bool {
		last, err := old.stores.log.LastIndex()
		return err == nil && last >= committedLast+3
	})
	oldTerm := old.raft.CurrentTerm()
	c.stop(old) // a crash would do the same to the log: the entries are on disk

	// The others elect a new leader, whose no-op and entries take the same
	// indexes in a newer term.
	newLeader := c.waitLeader(old.id)
	for i := range 6 {
		apply(t, newLeader, fmt.Sprintf("new-term-%d", i))
	}

	// The old leader rejoins as a follower and clears its conflicting suffix.
	c.start(old)
	want := newLeader.fsm.data()
	caughtUp := func(n *testRaftNode) func() bool {
		return func() bool {
			got := n.fsm.data()
			if len(got) < len(want) {
				return false
			}
			for i := range want {
				if !bytes.Equal(got[i], want[i]) {
					t.Fatalf("node %s applied %q at %d, the leader %q", n.id, got[i], i, want[i])
				}
			}
			return true
		}
	}
	waitFor(t, "the old leader to take the new leader's log", caughtUp(old))
	var l raft.Log
	if err := old.stores.log.GetLog(committedLast+1, &l); err != nil || l.Term <= oldTerm || uncommitted[string(l.Data)] {
		t.Fatalf("index %d after rejoining: %q in term %d (%v); want the new leader's entry of a term after %d", committedLast+1, l.Data, l.Term, err, oldTerm)
	}

	// Restart it twice: each start must open the log, pass the start-up
	// check and replay it, and the node must keep following.
	for r := 1; r <= 2; r++ {
		c.stop(old)
		apply(t, newLeader, fmt.Sprintf("while-down-%d", r))
		c.start(old)
		want = newLeader.fsm.data()
		waitFor(t, fmt.Sprintf("the old leader to catch up after restart %d", r), caughtUp(old))
	}

	// And it serves: made leader, it commits new entries that every node
	// applies.
	// A transfer times out when its target does not win the election it
	// starts within an election timeout, as on a loaded machine under
	// -race; what is tested is that the restarted node can lead, so the
	// leader of the moment asks again until it does (or the deadline).
	var transferErr error
	waitFor(t, "the restarted node to lead", func() bool {
		if old.raft.State() == raft.Leader {
			return true
		}
		if cur := c.leader(""); cur != nil && cur != old {
			transferErr = cur.raft.LeadershipTransferToServer(old.id, raft.ServerAddress(old.id)).Error()
		}
		return old.raft.State() == raft.Leader
	})
	if transferErr != nil {
		t.Logf("a transfer to the restarted node failed before one took: %v", transferErr)
	}
	apply(t, old, "after-the-restarts")
	want = old.fsm.data()
	for _, n := range c.nodes {
		waitFor(t, fmt.Sprintf("node %s to apply the restarted leader's entry", n.id), caughtUp(n))
	}
}
