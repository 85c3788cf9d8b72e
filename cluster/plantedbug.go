//go:build !sepp_planted_restart_bug

package cluster

// plantRestartBug is a no-op in every real build. A binary built with the
// tag sepp_planted_restart_bug (plantedbug_on.go) refuses to start once its
// log tail has been truncated, as raft-wal v0.4.0 did (hashicorp/raft-wal#31):
// the integration campaign's proof that it reports a node that fails to
// restart.
func plantRestartBug(*raftStores, string) error { return nil }
