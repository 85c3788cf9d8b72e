package cluster

import (
	"errors"
	"fmt"
	"time"

	"github.com/sepp-io/sepp/fsm"
)

// Errors of a running node. The gRPC layer maps them in its one status table.
var (
	// ErrNotLeader: this node does not lead; the *NotLeaderError wrapping it
	// names the leader when one is known. Nothing was proposed: safe to retry
	// on the leader.
	ErrNotLeader = errors.New("not the leader")
	// ErrNoLeader: no leader is known right now (an election is running).
	// Nothing was proposed: retry after a short wait.
	ErrNoLeader = errors.New("no leader")
	// ErrHandingOver: this node is handing leadership to another in a
	// planned transfer. Nothing was proposed; a new leader is moments away.
	// It wraps ErrNoLeader.
	ErrHandingOver = fmt.Errorf("%w: leadership transfer in progress", ErrNoLeader)
	// ErrUnknownOutcome: the command may or may not have been applied
	// (leadership lost after the entry was appended, shutdown, or the
	// deadline passed while waiting). Retry with the same idempotency key or
	// request id; never report it as success or as a plain failure.
	ErrUnknownOutcome = errors.New("outcome unknown")
	// ErrShutdown: the node is shutting down; nothing was proposed.
	ErrShutdown = errors.New("node shutting down")
	// ErrUnknownMember: the node id names no voter of the configuration
	// (a leadership transfer to it cannot start). Nothing changed.
	ErrUnknownMember = errors.New("no such member")
	// ErrCatchingUp: a read of a node that replays, after a restart, the
	// entries its payload store already holds; it answers once it has (a
	// moment). Nothing was read; retry, or read from another node.
	ErrCatchingUp = fsm.ErrCatchingUp
)

// NotLeaderError carries the leader's addresses for the client to follow.
type NotLeaderError struct {
	Leader NodeInfo // zero when unknown
}

func (e *NotLeaderError) Error() string {
	if e.Leader.ID == "" {
		return "not the leader; leader unknown"
	}
	return fmt.Sprintf("not the leader; leader is %s at %s", e.Leader.ID, e.Leader.GRPCAddr)
}

func (e *NotLeaderError) Unwrap() error { return ErrNotLeader }

// NodeInfo is one member's identity and addresses.
type NodeInfo struct {
	ID       string
	RaftAddr string
	GRPCAddr string
	HTTPAddr string
}

// Status is a node's view of the cluster.
type Status struct {
	Self         NodeInfo
	Leader       NodeInfo
	State        string // "Leader", "Follower", "Candidate", "Shutdown"
	Term         uint64
	CommitIndex  uint64
	AppliedIndex uint64
	LastLogIndex uint64
	Members      []Member
	// MaxClockSkew is the bound on members' clocks; ClockSkew says why this
	// node's clock is off the members' ("" when it is not: clock.go).
	MaxClockSkew time.Duration
	ClockSkew    string
	// PayloadStoreBytes is the space this node's payload store takes on
	// disk (fsm/payloads.go): the node's own figure, unlike the replicated
	// count of payload bytes.
	PayloadStoreBytes uint64
	// SnapshotCheckpointPinnedBytes is the space the snapshots'
	// checkpoints of that store hold beyond its own files
	// (fsm.FSM.CheckpointPinnedBytes).
	SnapshotCheckpointPinnedBytes uint64
}

// Member is one voter or non-voter of the configuration.
type Member struct {
	NodeInfo
	Voter  bool
	Leader bool
	// Healthy is the leader's view: contacted within the last few
	// heartbeats. A follower reports only itself and the leader (by the
	// leader's last contact); the other followers read false from it, so
	// ask the leader (client.ClusterStatus does) for everyone's.
	Healthy     bool
	LastContact string // duration since the leader last heard from it
	// Facts are what the member last reported of itself, as the
	// replicated state records them (this node's own: its own report);
	// nil until a leader has heard from it (facts.go).
	Facts *MemberFacts
	// Clock is the member's clock as this node last measured it; nil for
	// this node and for members not measured recently (clock.go).
	Clock *ClockOffset
}
