// Package clientcheck holds no code of its own: its tests check sepp's Go
// client (the module github.com/sepp-io/sepp/client) against real servers,
// single nodes and clusters run in the test's process (rpc/rpctest,
// cluster/clustertest), with failovers, lost answers and retries.
//
// They live in the server's module, not the client's, so that the client's
// go.mod requires only what a client needs: a module that imports the
// client pulls gRPC and protobuf, never Raft, Pebble or the admin UI's
// browser tests. The client's own tests (its decoders, the ones that need
// no server) and its runnable examples stay beside it in client/.
package clientcheck
