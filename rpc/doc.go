// Package rpc is sepp's network surface: the gRPC services of the public API
// (sepp.v1 QueueService, AdminService, ClusterService), the standard health
// and reflection services, request validation, the one table that maps
// engine and cluster errors to gRPC status codes with typed details, the
// long-poll reserve, and the Prometheus metrics served at /metrics.
//
// APIServer (apiport.go) serves those services on one listener as gRPC and,
// through connectrpc.com/vanguard, as Connect (JSON and binary) and
// gRPC-Web: each connection is routed once, by its HTTP/2 preface or its
// ALPN, so gRPC keeps grpc-go's native transport.
//
// It talks to a node only through the Backend interface (cluster.Node in the
// server, rpctest.LocalBackend in tests), so the services can be tested end
// to end without Raft. It imports engine for its types and errors, cluster
// for its errors and node descriptions, and the generated proto; it must not
// import fsm, and nothing in engine, fsm or cluster may import it.
//
// A Server owns no goroutines: every wait (a long-poll reserve, a health
// watch, a call that found no leader waiting up to Options.LeaderWait for
// one to be elected so that it can name it) runs on the request's own
// goroutine and ends with its context.
package rpc
