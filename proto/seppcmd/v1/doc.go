// Package seppcmdv1 holds the internal Raft log commands of sepp, generated
// from command.proto by ../generate.sh. Only fsm and cluster use it; the
// public gRPC API lives in proto/sepp/v1 and never shares these messages.
package seppcmdv1
