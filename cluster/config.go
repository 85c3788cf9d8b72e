package cluster

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"

	"github.com/sepp-io/sepp/engine"
)

// Config configures a Node. Build it with DefaultConfig and override fields.
type Config struct {
	// NodeID names this node in the Raft configuration; stable across
	// restarts. Required.
	NodeID string
	// RaftBindAddr is the host:port the Raft transport listens on. Required
	// unless Transport is set.
	RaftBindAddr string
	// RaftAdvertiseAddr is the address peers dial; empty means the bound
	// address (which must then not be a wildcard).
	RaftAdvertiseAddr string
	// GRPCAddr and HTTPAddr are replicated as this node's metadata so that
	// any replica can name the leader's endpoints to clients.
	GRPCAddr string
	HTTPAddr string
	// DataDir holds the log and stable store (wal/ or raft.db) and
	// snapshots/. Required.
	DataDir string
	// LogStore picks the raft log and stable store of a new data directory:
	// LogStoreWAL or LogStoreBolt; empty means the WAL. A directory that
	// already holds a log keeps it, and naming the other store is an error.
	LogStore string
	// WALSegmentSize is the size of each preallocated WAL segment file.
	WALSegmentSize int

	// Bootstrap makes a node with no Raft state on disk bootstrap a cluster
	// of itself plus Peers. All static members may set it with the same
	// Peers: raft accepts identical bootstrap configurations. A node that has
	// state never bootstraps again, so restarting with the same config is
	// safe. A node meant to be added with Join leaves it false.
	Bootstrap bool
	// Peers are the other static members (their RaftAddr is required; GRPC
	// and HTTP addresses, when given, are replicated by the first leader).
	// Empty with Bootstrap means a cluster of one.
	Peers []NodeInfo

	// Raft timing, tuned for a LAN by default.
	HeartbeatTimeout   time.Duration
	ElectionTimeout    time.Duration
	LeaderLeaseTimeout time.Duration
	CommitTimeout      time.Duration
	// DetectLeaderCrash lets a follower that sees the leader's connections
	// end, and then finds the leader's raft address refusing connections,
	// call an election at once instead of waiting out HeartbeatTimeout
	// (crashwatch.go). It needs the TCP transport (plain or StreamLayer).
	DetectLeaderCrash bool
	// PeerFacts asks a member for its facts (its ClusterService
	// GetMemberFacts, facts.go), which the leader records in the member's
	// replicated metadata: the leader uses newer commands only once every
	// member applies them, and sizes the memory budget from the smallest
	// member. An error wrapping ErrFactsUnsupported (a binary older than
	// the call) makes the leader ask PeerCommandVersion instead.
	PeerFacts func(ctx context.Context, member NodeInfo) (MemberFacts, error)
	// PeerCommandVersion asks a member the highest command version its
	// binary applies the older way, by the health service names it serves
	// (versions.go): only for a member that serves no facts call, or when
	// PeerFacts is nil. To be removed after the next release. Both nil:
	// members' versions are known only from their own terms as leader.
	PeerCommandVersion func(ctx context.Context, member NodeInfo) (uint32, error)
	// Facts is this node's report of itself (binary version, memory limit,
	// GOMAXPROCS, start time); the command versions and id are filled in
	// (Node.SelfFacts).
	Facts MemberFacts
	// MemberQuestions times the leader's questions to its members about
	// their facts (facts.go); zero fields take DefaultMemberQuestions'.
	MemberQuestions MemberQuestions
	// MemoryShare, when above 0 and Engine.Limits.MaxMemoryBytes is 0 (no
	// explicit limits.max_memory_bytes), makes the leader propose a memory
	// budget of this share of the smallest memory limit among the members'
	// facts, and propose it again when the membership or the facts change
	// (facts.go). An explicit Engine.Limits.MaxMemoryBytes always wins.
	MemoryShare float64
	// PayloadsOffHeap: payloads count against the disk budget, not the
	// memory budget (config limits.payload_budget "disk"); the leader
	// proposes the switch once every member applies
	// fsm.CommandVersionPayloadsOffHeap. It is never undone.
	PayloadsOffHeap bool
	// SnapshotThreshold is how many log entries since the last snapshot make
	// raft take a new one (checked every SnapshotInterval); TrailingLogs is
	// how many entries stay in the log after it (so a slightly lagging
	// follower catches up from the log, not a snapshot).
	SnapshotThreshold uint64
	// SnapshotCommandThreshold is about how many commands (each job of a
	// batch counted) the node applies between two snapshots, however few
	// entries carried them, each member at a place of its own so that no
	// two snapshot at once; a restart replays at most 1.5 times it
	// (replaysnapshot.go). 0 leaves snapshots to SnapshotThreshold.
	SnapshotCommandThreshold uint64
	SnapshotInterval         time.Duration
	TrailingLogs             uint64
	SnapshotRetain           int
	// MaxAppendEntries bounds the entries per AppendEntries RPC and per
	// batch handed to the state machine.
	MaxAppendEntries int

	// Proposer: at most MaxCommandsPerEntry commands and about
	// MaxEntryBytes bytes merged into one log entry, at most
	// MaxEntriesInFlight entries proposed and not yet applied.
	// MaxEntryBytes is a target, not a limit on requests: a command larger
	// than it gets an entry of its own, and an EnqueueBatch larger than it
	// is split across entries (EnqueueBatch), so every request the gRPC
	// layer accepts fits. MaxCommandBytes is the hard bound on one command,
	// which keeps a runaway caller from writing an unbounded log entry; it
	// must hold the largest request (sepp serve sets it from
	// server.max_message_bytes).
	MaxCommandsPerEntry int
	MaxEntriesInFlight  int
	MaxEntryBytes       int
	MaxCommandBytes     int
	// ApplyEnqueueTimeout bounds the wait for room in raft's apply queue;
	// past it the command is not proposed (ErrNoLeader, safe to retry).
	ApplyEnqueueTimeout time.Duration

	// LeaseGrace is added to every live lease by a new leader's first
	// command. It must cover an election plus a client retry, so that a
	// failover does not redeliver jobs whose workers are still at them.
	LeaseGrace time.Duration
	// TickMinInterval is the least time between two tick commands (a bound
	// on the write rate of time-driven transitions); TickMaxWait is the
	// longest the ticker sleeps before rereading the engine's next deadline.
	TickMinInterval time.Duration
	TickMaxWait     time.Duration
	// SweepDelay is how long expired idempotency keys and reserve request
	// ids may stay before the ticker proposes a tick only to drop them
	// (engine.NextTickAt): every command drops them first anyway, so the
	// delay only holds their memory a little longer, and one tick drops
	// a SweepDelay's worth instead of one tick per key.
	SweepDelay time.Duration

	// LogStoreWriteTimeout bounds one write to the log store. A leader whose
	// disk stalls past it fails the write, and raft steps it down, instead of
	// the whole cluster hanging behind it. 0 disables the bound.
	LogStoreWriteTimeout time.Duration

	// Engine is the queue configuration this node wants. The engine of every
	// replica starts from engine defaults; a leader whose Engine differs from
	// the replicated one proposes it, so every replica always runs the same.
	Engine engine.Config

	// Logger; nil discards.
	Logger hclog.Logger
	// Clock stamps commands on the leader and drives the ticker; nil means
	// the system clock. Nothing else in the node reads time for the state
	// machine. Monotonic, with a Clock, is the monotonic clock the stamp
	// clock checks it against (clock.go); nil with a Clock set means no
	// jump guard (a test's clock that moves as the test says).
	Clock     func() time.Time
	Monotonic func() time.Duration
	// MaxClockSkew is how far this node's clock may be off the other
	// members' before it may not lead, and the largest jump of the wall
	// clock the stamp clock follows (clock.go); 0 means
	// DefaultMaxClockSkew.
	MaxClockSkew time.Duration

	// Transport replaces the TCP transport (tests use raft's in-memory one
	// for partitions). The node closes it on shutdown if it is an io.Closer.
	Transport raft.Transport
	// StreamLayer, when set (and Transport is not), carries the raft TCP
	// transport instead of a plain listener on RaftBindAddr: sepp serve's
	// mutual TLS. Crash detection works over it as over plain TCP.
	StreamLayer raft.StreamLayer
	// LogStoreWrapper, when set, wraps the on-disk log store before the
	// write timeout and cache are applied; fault-injection tests use it to
	// stall a disk.
	LogStoreWrapper func(raft.LogStore) raft.LogStore
	// OnStoreFailure, when set, is called once, on its own goroutine, when
	// the disk failed a write to the Raft log or stable store for another
	// reason than a lack of space (failstop.go); sepp serve exits. Unset,
	// the node closes.
	OnStoreFailure func(error)
}

// DefaultMaxCommandBytes is the default MaxCommandBytes: the gRPC layer's
// default largest request (16 MiB) plus room for the command's own fields.
const DefaultMaxCommandBytes = 16<<20 + CommandOverheadBytes

// CommandOverheadBytes is what a command adds to the request it carries
// (version, leader time, field tags and lengths), with room to spare.
const CommandOverheadBytes = 64 << 10

// DefaultConfig returns LAN defaults: heartbeat, election and leader-lease
// timeouts of 500ms, group commit of up to 128 commands or 512 KiB per
// entry with 4 entries in flight (a single command of up to 16 MiB gets an
// entry of its own), and a lease grace of 5s. Engine takes the engine's
// default limits.
//
// The timeouts decide which stalls cost an election. raft sends heartbeats
// every tenth of HeartbeatTimeout (50ms: etcd's 10x ratio of election
// timeout to heartbeat); a follower that hears nothing for HeartbeatTimeout
// (checked at random intervals of one to two of it) runs a pre-vote, and a
// leader that hears from no
// quorum for LeaderLeaseTimeout, nor from any of the three heartbeat rounds
// it then sends (a quarter of the lease each), steps down (the patched raft tells a stall of the node's own process from
// a silent peer: third_party/hashicorp/raft/SEPP-PATCH.md, fifth change). At
// 100ms, three nodes beside `stress-ng --iomix 4 --cpu 8` on a 2-core host
// changed leader 60 times in 2 minutes: both followers' contact with the
// leader was 101-300ms old at once, the leader's whole process starved of
// CPU (an idle cluster too; at nice -5 it changed none), so the leader's
// lease ran out. At 500ms the same host saw 3-5 in 2 minutes (at a load
// average of 30-45) and 32 in 10 minutes at load 75-80, at 1000ms 2 in 2
// minutes (load 75, stalls to 1.8s): see DESIGN.md. 500ms keeps a frozen
// leader's replacement near 0.7-1.6s on a host at load 20-80 (DESIGN.md:
// the 1.5s we promise holds on a quiet host, not with margin on a starved one);
// a leader whose process died is still replaced in tens of milliseconds by
// crash detection (crashwatch.go), whatever the timeouts.
func DefaultConfig() Config {
	return Config{
		Bootstrap:            true,
		HeartbeatTimeout:     500 * time.Millisecond,
		ElectionTimeout:      500 * time.Millisecond,
		LeaderLeaseTimeout:   500 * time.Millisecond,
		CommitTimeout:        10 * time.Millisecond,
		DetectLeaderCrash:    true,
		SnapshotThreshold:    8192,
		SnapshotInterval:     30 * time.Second,
		TrailingLogs:         10240,
		SnapshotRetain:       2,
		MaxAppendEntries:     64,
		WALSegmentSize:       64 << 20,
		MaxCommandsPerEntry:  128,
		MaxEntriesInFlight:   4,
		MaxEntryBytes:        512 << 10,
		MaxCommandBytes:      DefaultMaxCommandBytes,
		ApplyEnqueueTimeout:  2 * time.Second,
		LeaseGrace:           5 * time.Second,
		TickMinInterval:      5 * time.Millisecond,
		TickMaxWait:          time.Second,
		SweepDelay:           time.Second,
		LogStoreWriteTimeout: 2 * time.Second,
		MemberQuestions:      DefaultMemberQuestions(),
		Engine:               engine.Config{Limits: engine.DefaultLimits()},
	}
}

// Validate reports the first missing or contradictory setting, naming it.
func (c *Config) Validate() error {
	bad := func(field, format string, args ...any) error {
		return fmt.Errorf("cluster config: %s: %s", field, fmt.Sprintf(format, args...))
	}
	switch {
	case c.NodeID == "":
		return bad("node_id", "required")
	case c.DataDir == "":
		return bad("data_dir", "required")
	case c.Transport == nil && c.StreamLayer == nil && c.RaftBindAddr == "":
		return bad("raft_bind_addr", "required")
	case c.HeartbeatTimeout < 5*time.Millisecond:
		return bad("heartbeat_timeout", "must be at least 5ms, got %s", c.HeartbeatTimeout)
	case c.ElectionTimeout < c.HeartbeatTimeout:
		return bad("election_timeout", "must be at least heartbeat_timeout (%s), got %s", c.HeartbeatTimeout, c.ElectionTimeout)
	case c.LeaderLeaseTimeout < 5*time.Millisecond || c.LeaderLeaseTimeout > c.HeartbeatTimeout:
		return bad("leader_lease_timeout", "must be 5ms..heartbeat_timeout (%s), got %s", c.HeartbeatTimeout, c.LeaderLeaseTimeout)
	case c.CommitTimeout < time.Millisecond:
		return bad("commit_timeout", "must be at least 1ms, got %s", c.CommitTimeout)
	case c.SnapshotInterval < 5*time.Millisecond:
		return bad("snapshot_interval", "must be at least 5ms, got %s", c.SnapshotInterval)
	case c.SnapshotThreshold < 1:
		return bad("snapshot_threshold", "must be at least 1")
	case c.SnapshotRetain < 1:
		return bad("snapshot_retain", "must be at least 1, got %d", c.SnapshotRetain)
	case c.LogStore != "" && c.LogStore != LogStoreWAL && c.LogStore != LogStoreBolt:
		return bad("log_store", "must be %q or %q, got %q", LogStoreWAL, LogStoreBolt, c.LogStore)
	case c.WALSegmentSize < 1<<20 || c.WALSegmentSize > 1<<30:
		return bad("wal_segment_size", "must be 1 MiB..1 GiB, got %d bytes", c.WALSegmentSize)
	case c.MaxAppendEntries < 1 || c.MaxAppendEntries > 1024:
		return bad("max_append_entries", "must be 1..1024, got %d", c.MaxAppendEntries)
	case c.MaxCommandsPerEntry < 1 || c.MaxCommandsPerEntry > 4096:
		return bad("max_commands_per_entry", "must be 1..4096, got %d", c.MaxCommandsPerEntry)
	case c.MaxEntriesInFlight < 1 || c.MaxEntriesInFlight > 1024:
		return bad("max_entries_in_flight", "must be 1..1024, got %d", c.MaxEntriesInFlight)
	case c.MaxEntryBytes < 4<<10:
		return bad("max_entry_bytes", "must be at least 4096, got %d", c.MaxEntryBytes)
	case c.MaxCommandBytes < c.MaxEntryBytes:
		return bad("max_command_bytes", "must be at least max_entry_bytes (%d), got %d", c.MaxEntryBytes, c.MaxCommandBytes)
	case c.ApplyEnqueueTimeout <= 0:
		return bad("apply_enqueue_timeout", "must be positive, got %s", c.ApplyEnqueueTimeout)
	case c.LeaseGrace < c.ElectionTimeout:
		return bad("lease_grace", "must cover an election (at least election_timeout %s), got %s", c.ElectionTimeout, c.LeaseGrace)
	case c.TickMinInterval <= 0:
		return bad("tick_min_interval", "must be positive, got %s", c.TickMinInterval)
	case c.TickMaxWait < c.TickMinInterval:
		return bad("tick_max_wait", "must be at least tick_min_interval (%s), got %s", c.TickMinInterval, c.TickMaxWait)
	case c.SweepDelay < 0:
		return bad("sweep_delay", "must not be negative, got %s", c.SweepDelay)
	case c.MaxClockSkew < 0:
		return bad("max_clock_skew", "must not be negative, got %s", c.MaxClockSkew)
	case c.LogStoreWriteTimeout < 0:
		return bad("log_store_write_timeout", "must not be negative, got %s", c.LogStoreWriteTimeout)
	}
	for i, p := range c.Peers {
		if p.ID == "" || p.RaftAddr == "" {
			return bad(fmt.Sprintf("peers[%d]", i), "id and raft_addr are required")
		}
		if p.ID == c.NodeID {
			return bad(fmt.Sprintf("peers[%d]", i), "id %q is this node's own id", p.ID)
		}
	}
	if err := c.Engine.Validate(); err != nil {
		return fmt.Errorf("cluster config: engine: %w", err)
	}
	return nil
}

func (c *Config) logger() hclog.Logger {
	if c.Logger == nil {
		return hclog.New(&hclog.LoggerOptions{Output: io.Discard})
	}
	return c.Logger
}
