// Package client is the Go SDK of sepp: a Client that talks to a cluster
// over gRPC, a Producer that batches enqueues for throughput, and a Worker
// that reserves jobs and runs handlers.
//
// The Client is given several node addresses. It finds the leader, follows a
// follower's NotLeader hint, and rides through a failover by retrying calls
// that certainly did not apply (Unavailable, NotLeader) and calls whose
// outcome is unknown but whose retry is safe: every enqueue carries an
// idempotency key and every reserve a request id, reused on each retry of
// the same call, so a retry never adds a second job or a second delivery.
// DrainDeadLetters is destructive and is never retried once it may have
// reached the server: a lost drain response is reported, not repeated.
//
// A Producer keeps the order of the jobs handed to it (see Producer).
//
// To test code that uses the client, package sepptest (client/sepptest)
// runs a real single-node server inside a test (sepptest.Start) and runs a
// handler against a crafted delivery, returning the Outcome a Worker would
// send (sepptest.RunHandler, built on RunHandler here).
//
// A job carries its producer's W3C trace context (EnqueueRequest.TraceContext,
// Job.TraceContext). WithTracing gives the client a Tracing, which starts a
// span around each enqueue and each Worker's handler run; the module
// github.com/sepp-io/sepp/client/otelsepp implements it with OpenTelemetry,
// so this module needs no tracing dependency (docs/tracing.md).
//
// Errors are typed: test them with errors.Is against the sentinels
// (ErrNotFound, ErrLeaseLost, ErrInvalidArgument, ErrUnknownOutcome, ...)
// and with errors.As for the details (*FieldError, *ScheduledTooFarError,
// *NotLeaderError).
//
// The package is a module of its own (github.com/sepp-io/sepp/client): its
// go.mod requires the public API (github.com/sepp-io/sepp/proto), the
// buffers and wire helpers it shares with the server
// (github.com/sepp-io/sepp/internal), gRPC and protobuf, and nothing of the
// server, so a program that imports it pulls in no Raft, storage or admin
// UI. Its tests against real servers and clusters live in the server's
// module (clientcheck); its examples run against a `sepp serve`.
package client
