// Package rpctest runs sepp's gRPC services in-process for tests, without
// Raft: LocalBackend implements rpc.Backend over a real engine behind a mutex
// with an injectable clock (every write is one engine.Op, applied by
// engine.Apply: nothing of the writes is written again here), and Start serves it on a loopback port with a
// connected client, everything cleaned up through t.Cleanup; ServeCluster
// serves the API of every node of an in-process Raft cluster
// (cluster/clustertest), as `sepp serve` would. Package rpc's own tests and
// the Go client's tests use it.
package rpctest
