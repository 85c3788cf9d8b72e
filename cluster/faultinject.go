//go:build !sepp_fault_inject

package cluster

import "github.com/hashicorp/raft"

// injectDiskFaults is a no-op in every real build. A binary built with the
// tag sepp_fault_inject (faultinject_on.go) fails its log writes with EIO
// while its data dir holds the file injectEIOFile: the integration tests'
// way to make a real process meet a failed fsync.
func injectDiskFaults(*raftStores, string) {}

// injectSnapshotFaults returns snaps in every real build. A test build
// (faultinject_on.go) kills its own process in the middle of writing a
// snapshot, one it takes or one it is sent, on demand.
func injectSnapshotFaults(snaps raft.SnapshotStore, _ string, _ raft.LogStore) raft.SnapshotStore {
	return snaps
}
