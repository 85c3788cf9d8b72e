// Package sepptest helps test code that uses sepp's Go client, as
// net/http/httptest helps test HTTP code.
//
// Start runs a real single-node sepp server inside the test's process: a
// Raft node with its log and state on disk in a temporary folder, serving
// the gRPC API on a free loopback port, stopped and removed by t.Cleanup.
// Jobs go through the same state machine, leases, retries and dead-letter
// rules as in production, so a test of a producer or a Worker needs no
// server started beside it. NewServer does the same for code without a
// testing.T (an Example function, a TestMain), closed with Close.
//
// RunHandler runs a handler against a crafted delivery, without a server,
// and returns the answer a Worker would send for it (client.Outcome): ack,
// retry per the queue's policy, retry after a delay, or dead-letter, with
// the handler's error.
//
// Unlike package client, sepptest imports the server's packages, and so is
// a module of its own (github.com/sepp-io/sepp/client/sepptest) that
// requires the server's: import it from _test.go files only, so they stay
// out of a program's build and the client's go.mod stays free of them. Those
// packages build on sepp's patched hashicorp/raft and raft-wal
// (third_party/, through replace directives in sepp's go.mod), and Go
// applies a module's replace directives only when it is the main module: a
// module of yours that imports sepptest needs the same two replace
// directives, pointing at a checkout of sepp's third_party/hashicorp/raft
// and raft-wal (make check-packages builds such a module).
package sepptest
