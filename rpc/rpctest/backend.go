package rpctest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/sepp-io/sepp/cluster"
	"github.com/sepp-io/sepp/engine"
	"github.com/sepp-io/sepp/rpc"
	"github.com/sepp-io/sepp/schedspec"
)

// LocalBackend implements rpc.Backend over one in-memory engine: each write
// runs under a mutex, as the Raft state machine would apply it, stamped with
// the injected clock. There is no log: "applied" means the call returned.
//
// Time-driven transitions: before every operation the backend applies a tick
// if the engine's next deadline has passed, as the leader's ticker would
// have; Tick does so on demand (wake long-polls after moving a Clock).
//
// Fault hooks let tests see the cluster's answers end to end: SetLeader makes
// the node a follower (writes and consistent reads fail with
// *cluster.NotLeaderError), FailWith injects errors per operation, and Close
// shuts the node down (cluster.ErrShutdown, health NOT_SERVING).
type LocalBackend struct {
	now func() time.Time

	mu       sync.RWMutex
	eng      *engine.Engine
	self     cluster.NodeInfo
	leader   cluster.NodeInfo // == self while leading
	members  []cluster.Member
	applied  chan struct{}
	index    uint64
	shutdown bool
	failWith func(op string) error
	// What Status reports of the disk (SetDiskFigures).
	payloadStoreBytes, checkpointPinnedBytes uint64
	// scheduleMu serializes a schedule write's preparation and write, as
	// the leader's scheduleWriteMu does.
	scheduleMu sync.Mutex
}

var _ rpc.Backend = (*LocalBackend)(nil)

// NewLocalBackend returns a leading node named self over a fresh engine
// running cfg (which must pass Validate). now is the clock; nil is time.Now.
func NewLocalBackend(cfg engine.Config, self cluster.NodeInfo, now func() time.Time) (*LocalBackend, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("rpctest: engine config: %w", err)
	}
	if now == nil {
		now = time.Now
	}
	if self.ID == "" {
		self.ID = "local"
	}
	eng := engine.New(cfg)
	// A cluster of this binary alone turns recordFields on at its first
	// leadership (fsm.CommandVersionRecordFields); the local node starts so.
	eng.EnableRecordFields(now())
	return &LocalBackend{
		now:     now,
		eng:     eng,
		self:    self,
		leader:  self,
		members: []cluster.Member{{NodeInfo: self, Voter: true, Leader: true, Healthy: true}},
		applied: make(chan struct{}),
	}, nil
}

// SetLeader makes this node a follower of leader (or, with leader equal to
// Self(), the leader again; with a zero leader, a node that knows none).
func (b *LocalBackend) SetLeader(leader cluster.NodeInfo) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.leader = leader
}

// FailWith installs a hook consulted before every operation (op is the
// Backend method name, e.g. "Enqueue", "Read"); a non-nil error is returned
// instead of running it. nil removes the hook.
func (b *LocalBackend) FailWith(hook func(op string) error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.failWith = hook
}

// Close shuts the node down: every later call fails with cluster.ErrShutdown.
func (b *LocalBackend) Close() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.shutdown = true
	b.signalLocked()
}

// Tick applies every time-driven transition due at the clock's now and
// wakes long-polls; it returns what the engine did.
func (b *LocalBackend) Tick() engine.TickResult {
	b.mu.Lock()
	defer b.mu.Unlock()
	res := b.eng.Tick(b.now())
	b.signalLocked()
	return res
}

// Engine runs fn on the engine under the write lock (test setup and
// inspection beyond the Backend interface).
func (b *LocalBackend) Engine(fn func(e *engine.Engine)) {
	b.mu.Lock()
	defer b.mu.Unlock()
	fn(b.eng)
}

func (b *LocalBackend) signalLocked() {
	b.index++
	close(b.applied)
	b.applied = make(chan struct{})
}

// write runs one state change as an applied log entry would.
func (b *LocalBackend) write(ctx context.Context, op string, fn func(now time.Time) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.gateLocked(op, false); err != nil {
		return err
	}
	now := b.now()
	b.tickIfDueLocked(now)
	err := fn(now)
	b.signalLocked()
	return err
}

func (b *LocalBackend) gateLocked(op string, stale bool) error {
	if b.shutdown {
		return cluster.ErrShutdown
	}
	if b.failWith != nil {
		if err := b.failWith(op); err != nil {
			return err
		}
	}
	if !stale && b.leader != b.self {
		if b.leader.ID == "" {
			return cluster.ErrNoLeader
		}
		return &cluster.NotLeaderError{Leader: b.leader}
	}
	return nil
}

func (b *LocalBackend) tickIfDueLocked(now time.Time) {
	if next, ok := b.eng.NextDeadline(); ok && !next.After(now) {
		b.eng.Tick(now)
	}
}

// Propose applies op to the engine (engine.Apply) as the state machine
// applies its command, under the lock, at the injected clock's time, and
// answers as a cluster.Node would. A reserve with a request id keeps its
// leases for a retry, as cluster.Node.Reserve has it once every member
// applies that, as this one node does.
func (b *LocalBackend) Propose(ctx context.Context, op engine.Op) (res any, err error) {
	if o, ok := op.(engine.ReserveOp); ok {
		o.Params.RetryWindow = o.Params.RequestID != ""
		op = o
	}
	if schedspec.NeedsPrepare(op) {
		// Prepared as the leader prepares it: under a lock of its own, read
		// through consistent reads, before the write.
		b.scheduleMu.Lock()
		defer b.scheduleMu.Unlock()
		if op, err = schedspec.Prepare(func(name string) (s engine.Schedule, err error) {
			if rerr := b.Read(ctx, false, func(e engine.View) error { s, err = e.GetSchedule(name); return nil }); rerr != nil {
				return s, rerr
			}
			return s, err
		}, b.now(), op); err != nil {
			return engine.Done{}, err
		}
	}
	err = b.write(ctx, op.OpName(), func(now time.Time) error {
		var err error
		res, err = b.eng.Apply(now, op)
		return err
	})
	return res, err
}

// Read runs fn under the lock. A due tick is applied first (taking the
// write lock for it), so reads see what the leader's ticker would have done.
func (b *LocalBackend) Read(ctx context.Context, stale bool, fn func(e engine.View) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.gateLocked("Read", stale); err != nil {
		return err
	}
	if next, ok := b.eng.NextDeadline(); ok && !next.After(b.now()) && b.leader == b.self {
		b.eng.Tick(b.now())
		b.signalLocked()
	}
	return fn(b.eng)
}

func (b *LocalBackend) Applied() <-chan struct{} {
	b.mu.RLock()
	defer b.mu.RUnlock()
	return b.applied
}

func (b *LocalBackend) Self() cluster.NodeInfo { return b.self }

// SelfFacts is a fixed report: binary "test", this binary's command
// versions, no memory limit known.
func (b *LocalBackend) SelfFacts() cluster.MemberFacts {
	lo, hi := cluster.BinaryCommandVersions()
	return cluster.MemberFacts{NodeID: b.self.ID, BinaryVersion: "test", MinCommandVersion: lo, MaxCommandVersion: hi, GOMAXPROCS: 1}
}

// StateDigest is the engine's digest at the backend's operation count.
func (b *LocalBackend) StateDigest() ([32]byte, uint64) {
	b.mu.RLock()
	defer b.mu.RUnlock()
	return b.eng.Digest(), b.index
}

func (b *LocalBackend) Leader() cluster.NodeInfo {
	b.mu.RLock()
	defer b.mu.RUnlock()
	return b.leader
}

// SetDiskFigures sets what Status reports of this node's payload store
// and of its snapshots' checkpoints: a real node reads them off its disk,
// and this backend has neither.
func (b *LocalBackend) SetDiskFigures(payloadStoreBytes, checkpointPinnedBytes uint64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.payloadStoreBytes, b.checkpointPinnedBytes = payloadStoreBytes, checkpointPinnedBytes
}

func (b *LocalBackend) Status(ctx context.Context) (cluster.Status, error) {
	if err := ctx.Err(); err != nil {
		return cluster.Status{}, err
	}
	b.mu.RLock()
	defer b.mu.RUnlock()
	st := cluster.Status{
		Self:         b.self,
		Leader:       b.leader,
		State:        "Leader",
		Term:         1,
		CommitIndex:  b.index,
		AppliedIndex: b.index,
		LastLogIndex: b.index,
		Members:      append([]cluster.Member(nil), b.members...),

		PayloadStoreBytes:             b.payloadStoreBytes,
		SnapshotCheckpointPinnedBytes: b.checkpointPinnedBytes,
	}
	for i, m := range st.Members {
		if m.ID == b.self.ID && m.Facts == nil {
			f := b.SelfFacts() // what a leader records of itself
			st.Members[i].Facts = &f
		}
	}
	switch {
	case b.shutdown:
		st.State = "Shutdown"
	case b.leader != b.self:
		st.State = "Follower"
	}
	return st, nil
}

func (b *LocalBackend) Join(ctx context.Context, node cluster.NodeInfo) error {
	return b.membership(ctx, "Join", func() error {
		for _, m := range b.members {
			if m.ID == node.ID {
				return nil // joining twice is a no-op, as in raft
			}
		}
		b.members = append(b.members, cluster.Member{NodeInfo: node, Voter: true})
		return nil
	})
}

func (b *LocalBackend) Remove(ctx context.Context, id string) error {
	return b.membership(ctx, "Remove", func() error {
		for i, m := range b.members {
			if m.ID == id {
				b.members = append(b.members[:i:i], b.members[i+1:]...)
				return nil
			}
		}
		return fmt.Errorf("rpctest: remove %q: %w", id, engine.ErrNotFound)
	})
}

// ErrSingleNode is returned by TransferLeadership: a LocalBackend has no
// other node to hand leadership to.
var ErrSingleNode = errors.New("rpctest: a local backend has no other node to transfer leadership to")

func (b *LocalBackend) TransferLeadership(ctx context.Context, toID string) error {
	return b.membership(ctx, "TransferLeadership", func() error {
		if toID == "" {
			return ErrSingleNode
		}
		for _, m := range b.members {
			if m.ID == toID {
				return ErrSingleNode
			}
		}
		return fmt.Errorf("rpctest: transfer leadership: %q is not a voter of the configuration: %w", toID, cluster.ErrUnknownMember)
	})
}

func (b *LocalBackend) membership(ctx context.Context, op string, fn func() error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.gateLocked(op, false); err != nil {
		return err
	}
	return fn()
}

// RedriveStep moves up to max of task id's records, as the leader's paced
// step does in a cluster; LocalBackend has no leader loop.
func (b *LocalBackend) RedriveStep(ctx context.Context, id uint64, maxMoves int) (engine.RedriveTask, error) {
	var res engine.RedriveTask
	err := b.write(ctx, "RedriveStep", func(now time.Time) error {
		var err error
		res, err = b.eng.RedriveStep(now, id, maxMoves)
		return err
	})
	return res, err
}
