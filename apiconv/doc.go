// Package apiconv converts the public API's messages (proto/sepp/v1) into
// the engine's values, once, for both paths that need it: rpc, which
// checks a request before it proposes anything, and fsm, which applies a
// command holding the same public message (command version 21 onward: the
// log carries the client's request where it is the same thing, as etcd's
// raft_internal.proto carries its PutRequest).
//
// Because fsm applies with it, every function here is deterministic: no
// clock, no randomness, no map-order dependence in what it returns. A
// rejected value is an *engine.FieldError wrapping
// engine.ErrInvalidArgument, naming the request's field and its limit, so
// the rpc layer's one status table maps it whichever path found it.
//
// apiconv imports engine and the public proto only: it sits below rpc and
// fsm, and knows nothing of gRPC, Raft or the log's own messages.
package apiconv
