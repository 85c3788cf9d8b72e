package cluster_test

import (
	"context"
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
		if n := c.Node(i).CommandsSinceSnapshot(); n >= threshold {
			t.Errorf("node %d: %d commands since its snapshot, want fewer than %d", i, n, threshold)
		}
	}
}
