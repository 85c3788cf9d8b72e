package cluster_test

import (
	"context"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/sepp-io/sepp/cluster"
	"github.com/sepp-io/sepp/cluster/clustertest"
	"github.com/sepp-io/sepp/engine"
)

// A fill in large batches: few entries, many jobs. raft's entry threshold
// never fires; the command threshold does, on every node, each counting
// the jobs of the batches, and restarts its count at the snapshot.
func TestCluster_SnapshotAfterManyCommandsInFewEntries(t *testing.T) {
	const threshold = 1000
	c := clustertest.New(t, 3, clustertest.WithConfig(func(_ int, cfg *cluster.Config) {
		cfg.SnapshotThreshold = 1 << 30 // raft's entry count alone never snapshots here
		cfg.SnapshotCommandThreshold = threshold
		cfg.SnapshotInterval = 20 * time.Millisecond
	}))
	li := c.WaitLeader()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for range 3 { // 3 entries of 500 jobs: past the threshold
		items := make([]engine.EnqueueParams, 500)
		for i := range items {
			items[i] = job("q", i)
		}
		if _, err := cluster.Do(ctx, c.Node(li), engine.EnqueueBatchOp{Items: items}); err != nil {
			t.Fatal(err)
		}
	}
	c.RequireSameDigest()
	for i := range 3 {
		clustertest.WaitFor(t, 5*time.Second, "a snapshot on every node", func() bool {
			idx, _ := strconv.ParseUint(c.Node(i).RaftStats()["last_snapshot_index"], 10, 64)
			return idx > 0
		})
		// Each member snapshots at its own place, so one may be up to a
		// threshold past its last snapshot; 1.5 thresholds is the bound.
		if n := c.Node(i).CommandsSinceSnapshot(); n >= threshold*3/2 {
			t.Errorf("node %d: %d commands since its snapshot, want fewer than %d", i, n, threshold*3/2)
		}
	}
}

// Three members fed one enqueue at a time by 100 jobs: each takes its
// snapshots at its own place in the work, a third of the threshold apart
// from the others' (member k, ranked by id, where the jobs pass a multiple
// of the threshold less k thirds of it), and a member keeps its places
// across a restart. The test runs a check after every entry on every
// member (the members' own checks, every 100 ms, see the same states), so
// the places are exact.
func TestCluster_MembersSnapshotApart(t *testing.T) {
	const (
		threshold = 3000
		perEntry  = 100
	)
	c := clustertest.New(t, 3, clustertest.WithConfig(func(_ int, cfg *cluster.Config) {
		cfg.SnapshotThreshold = 1 << 30 // raft's entry count alone never snapshots here
		cfg.SnapshotCommandThreshold = threshold
		cfg.SnapshotInterval = time.Hour // raft's own check never runs here
	}))
	// Member rank by id: the places' order.
	ids := make([]string, 3)
	for i := range ids {
		ids[i] = c.Node(i).Self().ID
	}
	rank := func(i int) int {
		r := 0
		for _, id := range ids {
			if id < ids[i] {
				r++
			}
		}
		return r
	}
	taken := make(map[int][]int) // node -> jobs enqueued at each of its snapshots
	last := make([]uint64, 3)    // node -> the work at its last snapshot seen
	jobs := 0
	fill := func(entries int) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		for range entries {
			li := c.WaitLeader()
			items := make([]engine.EnqueueParams, perEntry)
			for i := range items {
				items[i] = job("q", jobs+i)
			}
			if _, err := cluster.Do(ctx, c.Node(li), engine.EnqueueBatchOp{Items: items}); err != nil {
				t.Fatal(err)
			}
			jobs += perEntry
			applied := c.Node(li).FSM().AppliedIndex()
			for i := range 3 {
				clustertest.WaitFor(t, 5*time.Second, "the entry applied on every member", func() bool {
					return c.Node(i).FSM().AppliedIndex() >= applied
				})
				cluster.SnapshotIfDueForTest(c.Node(i))
				// The node's own watcher may have taken it first, at this
				// same state: read where its last snapshot stands.
				if w := c.Node(i).FSM().WorkAtSnapshot(); w != last[i] {
					taken[i] = append(taken[i], int(w))
					last[i] = w
				}
			}
		}
	}
	want := func(upTo int) map[int][]int {
		w := make(map[int][]int)
		for i := range 3 {
			for at := threshold - rank(i)*threshold/3; at <= upTo; at += threshold {
				w[i] = append(w[i], at)
			}
		}
		return w
	}
	fill(100) // 10,000 jobs
	for i := range 3 {
		if w := want(jobs)[i]; !slices.Equal(taken[i], w) {
			t.Errorf("member %d (rank %d) snapshotted at %v jobs, want %v", i, rank(i), taken[i], w)
		}
	}
	// A restarted member replays from its own snapshot and keeps its places.
	restarted := 0
	for i := range 3 {
		if rank(i) == 1 {
			restarted = i
		}
	}
	c.Stop(restarted)
	c.Restart(restarted)
	fill(50) // 15,000 jobs
	for i := range 3 {
		if w := want(jobs)[i]; !slices.Equal(taken[i], w) {
			t.Errorf("after member %d's restart: member %d (rank %d) snapshotted at %v jobs, want %v", restarted, i, rank(i), taken[i], w)
		}
	}
	c.RequireSameDigest()
}
