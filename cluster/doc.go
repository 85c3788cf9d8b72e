// Package cluster runs one sepp Raft node: the TCP transport, the log and
// stable store (raft-wal, or raft-boltdb for data directories created with
// it), the file snapshot store, bootstrap, join
// and removal of members, leadership tracking, the proposer that stamps the
// leader's time into commands and merges concurrent callers' commands into
// few log entries (group commit), the leader's duties (barrier, lease grace,
// configuration, the tick loop) and leader-confirmed reads.
//
// Node implements the interface the gRPC layer needs (rpc.Backend); cluster
// imports fsm and engine, never rpc or the public API. It keeps no package
// level state, so one process may host several nodes (tests do; sharding may).
package cluster
