// Package fsm is sepp's Raft state machine: it decodes log entries (package
// proto/seppcmd/v1), applies each command to the queue engine with the time
// stamped by the leader, returns each command's result to the proposer, and
// writes and restores snapshots.
//
// Like the engine, this package is deterministic: it never reads a clock, a
// random source or the environment, and never lets a map's iteration order
// reach the state. It imports engine, the command protobufs and
// hashicorp/raft; it must not import cluster, rpc or anything network-facing.
package fsm
