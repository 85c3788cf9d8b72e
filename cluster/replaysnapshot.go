package cluster

import (
	"errors"
	"slices"
	"sync"
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
//
// Every replica applies the same commands, so a count alone makes every
// member cross the threshold at the same entry and snapshot at the same
// moment: with 10M jobs, three snapshots of 8 s each took the cores a
// mixed load needed (0.48× its rate at an empty queue). So a member
// snapshots at places of its own in the log's work instead (engine.Work:
// jobs enqueued plus deliveries made, the same on every replica at the
// same index and kept by restarts and installs): member k of n where the
// work passes a multiple of the threshold less k/n of it. Each member's
// places are a threshold of work apart and the members' places
// threshold/n apart, whatever brought the members together before (a
// cluster's first start, an install of the leader's snapshot, raft's own
// entry threshold). A job's life (enqueue, delivery, ack) is about as
// many commands as work, so a member snapshots about once per threshold
// of commands; where commands outrun the work (a worker reserving one
// job at a time: three commands per job, two of work), half a threshold
// more commands than the threshold makes the snapshot due at any place.

// replayCheckEvery is how often a node looks at how far it has come since
// its last snapshot: often enough that members a third of a threshold
// apart do not meet at one check (a check a second let three members at
// a 30,000-command threshold, filled at 22k jobs/s, pass each other's
// places between two checks and snapshot together), and cheap (a read
// lock for two counters and raft's configuration).
func replayCheckEvery(snapshotInterval time.Duration) time.Duration {
	return min(snapshotInterval, 100*time.Millisecond)
}

// replayPlace is where a node stands since its last snapshot.
type replayPlace struct {
	commands   uint64 // applied since the last snapshot (fsm.CommandsSinceSnapshot)
	work       uint64 // engine.Work now
	workBefore uint64 // engine.Work at the last check, or at the last snapshot if that came later
	threshold  uint64 // cluster.snapshot_command_threshold
	slot       int    // this member's rank among the members, by id
	slots      int    // how many members there are
}

// earliest is the fewest commands after which a snapshot at the member's
// place is taken: a place sooner after the last snapshot is passed over,
// so that work outrunning the commands cannot make snapshots more
// frequent than one per threshold/n commands.
func (p replayPlace) earliest() uint64 {
	return p.threshold / uint64(max(p.slots, 1))
}

// latest is the most commands after the last snapshot before one is due
// wherever the member stands: the bound of a restart's replay.
func (p replayPlace) latest() uint64 {
	return p.threshold + p.threshold/2
}

// due says whether to snapshot now, and why: "place" when the work passed
// this member's place since the last check, "threshold" once the commands
// since the last snapshot reach latest.
func (p replayPlace) due() (bool, string) {
	switch {
	case p.threshold == 0 || p.commands < p.earliest():
		return false, ""
	case p.commands >= p.latest():
		return true, "threshold"
	case p.slot < 0 || p.slot >= max(p.slots, 1):
		return false, ""
	}
	offset := p.threshold / uint64(max(p.slots, 1)) * uint64(p.slot)
	if (p.work+offset)/p.threshold > (p.workBefore+offset)/p.threshold {
		return true, "place"
	}
	return false, ""
}

// snapshotSlot is this node's rank among the configuration's servers by
// id, and their number; (0, 1) when the configuration is not known or
// does not hold this node.
func (n *Node) snapshotSlot() (slot, slots int) {
	cf := n.raft.GetConfiguration()
	if cf.Error() != nil {
		return 0, 1
	}
	ids := make([]string, 0, len(cf.Configuration().Servers))
	for _, s := range cf.Configuration().Servers {
		ids = append(ids, string(s.ID))
	}
	slices.Sort(ids)
	i := slices.Index(ids, n.self.ID)
	if i < 0 {
		return 0, 1
	}
	return i, len(ids)
}

// watchReplayLength checks every replayCheckEvery whether a snapshot is
// due for the replay length (replayPlace.due), and takes it.
func (n *Node) watchReplayLength() {
	defer n.wg.Done()
	tick := time.NewTicker(replayCheckEvery(n.cfg.SnapshotInterval))
	defer tick.Stop()
	for {
		select {
		case <-tick.C:
		case <-n.shutdownCh:
			return
		}
		n.snapshotIfDue()
	}
}

// replayCheck is what one check leaves for the next: the work it saw (0
// before the first, which then counts from the last snapshot).
type replayCheck struct {
	mu   sync.Mutex // one check at a time
	work uint64
}

// snapshotIfDue takes a snapshot when one is due for the replay length,
// and reports whether it took one.
func (n *Node) snapshotIfDue() bool {
	check := &n.replay
	check.mu.Lock()
	defer check.mu.Unlock()
	p := replayPlace{commands: n.fsm.CommandsSinceSnapshot(), threshold: n.cfg.SnapshotCommandThreshold}
	if p.threshold == 0 {
		return false
	}
	p.slot, p.slots = n.snapshotSlot()
	// A node replaying over its kept payload store cannot snapshot until
	// it has caught up with the store (fsm.ErrCatchingUp, which raft's
	// error would not carry): wait for the next check.
	if err := n.fsm.Read(func(e *engine.Engine) error { p.work = e.Work(); return nil }); err != nil {
		return false
	}
	// Places passed since the last snapshot or the last check, the later:
	// a check short of the earliest records the work too, so a place it
	// passed over is not taken at a later check.
	p.workBefore = max(n.fsm.WorkAtSnapshot(), check.work)
	check.work = p.work
	due, reason := p.due()
	if !due {
		return false
	}
	start := time.Now()
	err := n.raft.Snapshot().Error()
	switch {
	case err == nil:
		n.log.Info("snapshot taken for the replay length",
			"reason", reason, "commands", p.commands, "threshold", p.threshold,
			"work", p.work, "member", p.slot, "members", p.slots,
			"took", time.Since(start).Round(time.Millisecond))
		return true
	case errors.Is(err, raft.ErrNothingNewToSnapshot), errors.Is(err, raft.ErrRaftShutdown):
	default:
		// raft's own threshold and the next check try again.
		n.log.Warn("snapshot for the replay length failed", "reason", reason, "commands", p.commands, "error", err)
	}
	return false
}
