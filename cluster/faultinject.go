//go:build !sepp_fault_inject

package cluster

// injectDiskFaults is a no-op in every real build. A binary built with the
// tag sepp_fault_inject (faultinject_on.go) fails its log writes with EIO
// while its data dir holds the file injectEIOFile: the integration tests'
// way to make a real process meet a failed fsync.
func injectDiskFaults(*raftStores, string) {}
