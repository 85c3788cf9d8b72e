package cluster

import (
	"errors"
	"time"

	"github.com/hashicorp/raft"

	"github.com/sepp-io/sepp/engine"
)

// A restart replays every command applied since the node's newest snapshot.
// raft takes a snapshot after SnapshotThreshold entries, but an entry may
// carry hundreds of enqueues: a fast fill of 10M jobs fits in some 41,000
// entries, under the default threshold of 65,536, and a node restarted
// after it replayed every one of the 10M jobs (38.8 s). Counting the
// commands themselves bounds the replay whatever the entries held.

// watchReplayLength takes a snapshot once the state machine has applied
// SnapshotCommandThreshold commands since its last one, checking every
// SnapshotInterval.
func (n *Node) watchReplayLength() {
	defer n.wg.Done()
	tick := time.NewTicker(n.cfg.SnapshotInterval)
	defer tick.Stop()
	for {
		select {
		case <-tick.C:
		case <-n.shutdownCh:
			return
		}
		since := n.fsm.CommandsSinceSnapshot()
		if since < n.cfg.SnapshotCommandThreshold {
			continue
		}
		// A node replaying over its kept payload store cannot snapshot
		// until it has caught up with the store (fsm.ErrCatchingUp, which
		// raft's error would not carry): wait for the next tick.
		if err := n.fsm.Read(func(*engine.Engine) error { return nil }); err != nil {
			continue
		}
		start := time.Now()
		err := n.raft.Snapshot().Error()
		switch {
		case err == nil:
			n.log.Info("snapshot taken: commands applied since the last one passed cluster.snapshot_command_threshold",
				"commands", since, "threshold", n.cfg.SnapshotCommandThreshold, "took", time.Since(start).Round(time.Millisecond))
		case errors.Is(err, raft.ErrNothingNewToSnapshot), errors.Is(err, raft.ErrRaftShutdown):
		default:
			// raft's own threshold and the next tick try again.
			n.log.Warn("snapshot for the replay length failed", "commands", since, "error", err)
		}
	}
}
