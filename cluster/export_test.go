package cluster

import "time"

// Hooks for the external tests of crash detection (crashwatch_test.go).

// SetRaftTimeoutsForTest changes a running node's heartbeat and election
// timeouts, so a test can rule out raft's own failure detection.
func SetRaftTimeoutsForTest(n *Node, d time.Duration) error {
	rc := n.raft.ReloadableConfig()
	rc.HeartbeatTimeout, rc.ElectionTimeout = d, d
	return n.raft.ReloadConfig(rc)
}

// SignalConnectionEndedForTest behaves as if an inbound raft connection of
// n had ended.
func SignalConnectionEndedForTest(n *Node) { n.crash.connectionEnded() }

// CrashChecksFoundAliveForTest counts n's crash checks that found the
// leader alive.
func CrashChecksFoundAliveForTest(n *Node) uint64 { return n.crash.alive.Load() }

// StubCrashProbeForTest replaces how n decides that a leader is gone.
func StubCrashProbeForTest(n *Node, gone func(addr string) bool) { n.crash.probe.Store(&gone) }

// CurrentTermForTest is n's raft term.
func CurrentTermForTest(n *Node) uint64 { return n.raft.CurrentTerm() }

// ProcessGoneForTest is the crash probe with its production timeout.
func ProcessGoneForTest(addr string) bool { return processGone(addr, crashProbeTimeout) }

// VersionWaitsForTest counts n's client requests that waited for its first
// round of asking the members their facts (membersApplyFor).
func VersionWaitsForTest(n *Node) uint64 { return n.versionWaits.Load() }

// SnapshotIfDueForTest runs one of n's checks for the replay length
// (replaysnapshot.go), as its watcher does, and reports whether it took a
// snapshot.
func SnapshotIfDueForTest(n *Node) bool { return n.snapshotIfDue() }
