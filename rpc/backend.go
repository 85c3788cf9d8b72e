package rpc

import (
	"context"

	"github.com/sepp-io/sepp/cluster"
	"github.com/sepp-io/sepp/engine"
)

// Backend is what the gRPC services need from a running node. cluster.Node
// implements it; tests use a fake or a single in-memory node.
//
// Every write is an engine.Op proposed through Propose: a Raft proposal
// that returns only after the command is committed and applied, with the
// engine's result, or with an error that wraps cluster.ErrNotLeader,
// cluster.ErrNoLeader, cluster.ErrUnknownOutcome, cluster.ErrShutdown, or
// one of the engine's sentinels. The package-level Propose gives a call
// site its result typed.
type Backend interface {
	// Propose carries out one write and returns its result, of the type
	// op's engine.OpOf names.
	Propose(ctx context.Context, op engine.Op) (any, error)
	// Read runs fn against the local engine under the state machine's read
	// lock. With stale false the node first confirms it leads (VerifyLeader)
	// and that its state includes every committed entry; a follower then
	// returns a *cluster.NotLeaderError. With stale true it reads whatever
	// this node has applied. fn gets the live engine as an engine.View,
	// which has only the read methods, so a read cannot change the state
	// (it would not compile); fn must not keep references past its return.
	Read(ctx context.Context, stale bool, fn func(e engine.View) error) error

	// Applied returns a channel that is closed the next time this node
	// applies a log entry; long-poll reserves wait on it.
	Applied() <-chan struct{}

	// Self and Leader describe this node and the current leader (zero
	// NodeInfo when none is known).
	Self() cluster.NodeInfo
	Leader() cluster.NodeInfo
	Status(ctx context.Context) (cluster.Status, error)
	// SelfFacts is this node's report of itself (binary version, command
	// versions, memory limit, GOMAXPROCS, start time), which the leader
	// asks every member for (ClusterService.GetMemberFacts).
	SelfFacts() cluster.MemberFacts
	// StateDigest is a hash of the whole replicated state and the index of
	// the last log entry it includes: replicas at the same index must have
	// the same digest. It encodes the whole state: not for hot paths.
	StateDigest() (digest [32]byte, appliedIndex uint64)
	Join(ctx context.Context, node cluster.NodeInfo) error
	Remove(ctx context.Context, id string) error
	TransferLeadership(ctx context.Context, toID string) error
}

// Propose proposes op through b and returns its result typed (see
// engine.ResultOf).
func Propose[R any](ctx context.Context, b Backend, op engine.OpOf[R]) (R, error) {
	v, err := b.Propose(ctx, op)
	return engine.ResultOf(op, v, err)
}
