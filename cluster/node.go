package cluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"

	"github.com/sepp-io/sepp/engine"
	"github.com/sepp-io/sepp/fsm"
	cmdpb "github.com/sepp-io/sepp/proto/seppcmd/v1"
)

// logCacheEntries is how many recent log entries raft keeps in memory, so
// that replication to followers a few entries behind reads no disk. With 4
// entries in flight a live follower is rarely more than a handful behind,
// and one that is (a restarted node) reads from the WAL anyway. Entries are
// up to 512 KiB under load, so 512 of them (raft's usual choice) held tens
// of megabytes per node that nothing reads.
const logCacheEntries = 128

// Node is one running member of a sepp cluster. Its methods are safe for
// concurrent use. Writes are accepted only on the leader.
type Node struct {
	cfg Config
	log hclog.Logger
	// questions is cfg.MemberQuestions with its defaults filled in;
	// askFactsNow brings the next round of them forward (a member joined).
	questions   MemberQuestions
	askFactsNow chan struct{}
	clock       func() time.Time // the stamp clock (clock.go): what the leader stamps and ticks by
	wall        func() time.Time // the wall clock, as members compare it (clock.go)
	mono        func() time.Duration
	stamp       *stampClock
	self        NodeInfo
	// clocks is the state of this node's clock checks (clock.go).
	clocks clockWatch

	raft      *raft.Raft
	fsm       *fsm.FSM
	transport raft.Transport
	stores    *raftStores // store.go
	logStore  *diskFullLogStore
	prop      *proposer
	metrics   *nodeMetrics     // metrics.go
	snapTimes *snapshotMetrics // metrics_lag.go

	budgetMu     sync.Mutex  // guards budgetLogged
	budgetLogged memberLimit // the memory budget last logged (facts.go)
	disk         diskWatch   // diskfull.go: names a full disk in what clients see
	crash        *crashWatch // crashwatch.go; nil unless DetectLeaderCrash with TCP
	replay       replayCheck // replaysnapshot.go: what the last check saw

	// ready is the current leadership's readiness: closed once this node,
	// as leader of term, has run its barrier and its first commands.
	ready atomic.Pointer[leaderReady]
	// versionWaits counts client requests that waited for the first facts
	// round before a command-version check (membersApplyFor).
	versionWaits atomic.Uint64

	observer      *raft.Observer
	countObserver *raft.Observer // metrics.go: leader changes, elections
	observerCh    chan raft.Observation
	healthMu      sync.Mutex
	failing       map[raft.ServerID]time.Time // leader's view: peers missing heartbeats

	// scheduleWriteMu serializes each schedule write's check and
	// proposal (schedule_api.go).
	scheduleWriteMu sync.Mutex

	// storeFailOnce and storeFailure: the write the disk failed, which
	// stopped the node (failstop.go).
	storeFailOnce sync.Once
	storeFailure  atomic.Pointer[error]

	shutdownCh   chan struct{}
	shutdownOnce sync.Once
	shutdownErr  error
	wg           sync.WaitGroup
}

type leaderReady struct {
	term uint64
	ch   chan struct{}
	// factsAsked is closed once this term's first round of asking the
	// members for their facts is over (learnMemberFacts): what the leader
	// knows of their command versions is then as good as it gets for now.
	factsAsked chan struct{}
}

// NewNode opens (or creates) the node's data directory, starts Raft and, for
// a node with no state and Bootstrap set, bootstraps the static cluster.
func NewNode(cfg Config) (*Node, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	logger := cfg.logger().Named("cluster").With("node", cfg.NodeID)
	if cfg.MaxClockSkew == 0 {
		cfg.MaxClockSkew = DefaultMaxClockSkew
	}
	started := time.Now()
	processMono := func() time.Duration { return time.Since(started) }
	wall, guardMono := cfg.Clock, cfg.Monotonic
	if wall == nil {
		// The system clock (or, in a build with the tag sepp_test_clock,
		// one a test shifts: testclock_on.go), guarded by this process's
		// monotonic clock.
		wall, guardMono = systemClock(cfg.NodeID), processMono
	}
	n := &Node{
		cfg:         cfg,
		questions:   cfg.MemberQuestions.withDefaults(),
		askFactsNow: make(chan struct{}, 1),
		log:         logger,
		wall:        wall,
		mono:        processMono,
		failing:     make(map[raft.ServerID]time.Time),
		shutdownCh:  make(chan struct{}),
	}
	n.metrics = newNodeMetrics(n.CrashElections)
	n.stamp = newStampClock(wall, guardMono, cfg.MaxClockSkew)
	n.stamp.onJump = func(d time.Duration) {
		n.metrics.clockJumps.Inc()
		n.log.Warn("clock jump: the wall clock moved away from the monotonic clock; stamped time goes on by the monotonic clock until the members confirm the wall clock",
			"jump", d.Round(time.Millisecond).String(), "max_clock_skew", cfg.MaxClockSkew)
	}
	n.clock = n.stamp.Now
	n.snapTimes = newSnapshotMetrics()
	n.disk.dir = cfg.DataDir
	if err := os.MkdirAll(cfg.DataDir, 0o750); err != nil {
		return nil, fmt.Errorf("cluster: data dir: %w", err)
	}
	snap, err := verifySnapshots(cfg.DataDir) // verify.go
	if err != nil {
		return nil, err
	}
	cleanup := func() {
		if n.transport != nil {
			if c, ok := n.transport.(io.Closer); ok {
				_ = c.Close()
			}
		}
		if n.stores != nil {
			_ = n.stores.Close()
		}
		if n.fsm != nil {
			_ = n.fsm.Close()
		}
	}

	// Transport.
	if cfg.Transport != nil {
		n.transport = cfg.Transport
	} else {
		var advertise net.Addr
		if cfg.RaftAdvertiseAddr != "" {
			a, err := net.ResolveTCPAddr("tcp", cfg.RaftAdvertiseAddr)
			if err != nil {
				return nil, fmt.Errorf("cluster: raft_advertise_addr %q: %w", cfg.RaftAdvertiseAddr, err)
			}
			advertise = a
		}
		stream := cfg.StreamLayer
		if stream == nil {
			tcp, err := newTCPStreamLayer(cfg.RaftBindAddr, advertise) // crashwatch.go
			if err != nil {
				return nil, fmt.Errorf("cluster: raft transport on %q: %w", cfg.RaftBindAddr, err)
			}
			stream = tcp
		}
		if cfg.DetectLeaderCrash {
			n.crash = newCrashWatch() // crashwatch.go
			stream = watchedAccepts{StreamLayer: stream, onEnd: n.crash.connectionEnded}
		}
		n.transport = guardedTransport{raft.NewNetworkTransportWithConfig(&raft.NetworkTransportConfig{
			Stream:  stream,
			MaxPool: 3,
			Timeout: 10 * time.Second,
			Logger:  logger.Named("transport"),
		})} // pipeline.go
	}
	n.self = NodeInfo{ID: cfg.NodeID, RaftAddr: string(n.transport.LocalAddr()), GRPCAddr: cfg.GRPCAddr, HTTPAddr: cfg.HTTPAddr}

	stores, err := openStores(cfg.DataDir, cfg.LogStore, cfg.WALSegmentSize, logger) // store.go
	if err != nil {
		cleanup()
		return nil, err
	}
	n.stores = stores
	if err := verifyLog(stores.log, stores.path, snap.index); err != nil {
		cleanup()
		return nil, err
	}
	logger.Info("opened log store", "kind", stores.kind, "path", stores.path)
	var logStore raft.LogStore = &verifiedReads{LogStore: stores.log, path: stores.path, logger: logger} // verify.go
	if cfg.LogStoreWrapper != nil {
		logStore = cfg.LogStoreWrapper(logStore)
	}
	logStore = &failStopLogStore{LogStore: logStore, fail: n.failStop}
	logStore = &timedLogStore{LogStore: logStore, observe: func(d time.Duration) { n.metrics.logWrite.Observe(d.Seconds()) }}
	logStore = newTimeoutLogStore(logStore, cfg.LogStoreWriteTimeout, func(err error) { n.stop("store logs", err) })
	cache, err := raft.NewLogCache(logCacheEntries, logStore)
	if err != nil {
		cleanup()
		return nil, fmt.Errorf("cluster: log cache: %w", err)
	}
	cached := &diskFullLogStore{LogStore: cache, w: &n.disk}
	n.logStore = cached
	stable := &diskFullStableStore{StableStore: &failStopStableStore{StableStore: stores.stable, fail: n.failStop}, w: &n.disk}
	snapDir := filepath.Join(cfg.DataDir, "snapshots")
	fileSnaps, err := raft.NewFileSnapshotStoreWithLogger(cfg.DataDir, cfg.SnapshotRetain, logger.Named("snapshots"))
	if err != nil {
		cleanup()
		return nil, fmt.Errorf("cluster: snapshot store in %q: %w", snapDir, err)
	}
	var snaps raft.SnapshotStore = &snapshotsCheckedAtRestore{FileSnapshotStore: fileSnaps, dir: snapDir} // verify.go
	snaps = injectSnapshotFaults(snaps, cfg.DataDir, cached)                                              // faultinject.go: a no-op outside a test build
	// A snapshot's payloads stay in a checkpoint of the payload store
	// (hard links, beside it on the data disk); the snapshot file holds
	// the rest, and opening it streams both (fsm/snapshot_checkpoint.go).
	checkpointDir := filepath.Join(cfg.DataDir, "snapshot-checkpoints")
	snaps, err = fsm.CheckpointSnapshots(snaps, checkpointDir, logger.Named("snapshots"))
	if err != nil {
		cleanup()
		return nil, fmt.Errorf("cluster: %w", err)
	}
	snaps = &timedSnapshots{SnapshotStore: snaps, logs: cached, receive: n.snapTimes.snapshot.WithLabelValues("receive")} // metrics_lag.go

	// The engine of every replica starts from the engine's defaults, never
	// from this node's configuration: entries applied before the leader's
	// ConfigSet must mean the same on every replica.
	// Payloads live in an on-disk store beside the log (fsm/payloads.go),
	// kept across restarts: raft's snapshot and log replay over it.
	// A failed flush of that store stops the node like a failed log write
	// (failstop.go): Pebble would retry it forever and block the apply.
	payloadStore := fsm.PayloadStoreOptions(cfg.Facts.MemoryLimitBytes)
	payloadStore.OnFailure = func(err error) { n.stopForPayloadStore(err) }
	machine, err := fsm.Open(fsm.Config{
		Engine:          engine.Config{Limits: engine.DefaultLimits()},
		SnapshotTempDir: cfg.DataDir,
		Logger:          logger.Named("fsm"),
		PayloadDir:      filepath.Join(cfg.DataDir, "payloads"),
		PayloadStore:    payloadStore,

		SnapshotCheckpointDir: checkpointDir,
	})
	if err != nil {
		cleanup()
		return nil, fmt.Errorf("cluster: %w", err)
	}
	n.fsm = machine
	// A payload store past everything the log and the snapshots hold is not
	// this log's (a restored backup beside a newer store): built again.
	if last, err := raftLastIndex(cached, snaps); err != nil {
		cleanup()
		return nil, err
	} else if _, err := machine.DropPayloadStoreAbove(last); err != nil {
		cleanup()
		return nil, fmt.Errorf("cluster: %w", err)
	}

	rc := raft.DefaultConfig()
	rc.LocalID = raft.ServerID(cfg.NodeID)
	rc.Logger = logger.Named("raft")
	rc.HeartbeatTimeout = cfg.HeartbeatTimeout
	rc.ElectionTimeout = cfg.ElectionTimeout
	rc.LeaderLeaseTimeout = cfg.LeaderLeaseTimeout
	rc.CommitTimeout = cfg.CommitTimeout
	rc.SnapshotThreshold = cfg.SnapshotThreshold
	rc.SnapshotInterval = cfg.SnapshotInterval
	rc.TrailingLogs = cfg.TrailingLogs
	rc.MaxAppendEntries = cfg.MaxAppendEntries
	rc.BatchApplyCh = true
	// A node without any configuration is one started empty to join (every
	// node that bootstraps writes its configuration first): it votes once
	// the leader's configuration reaches it. A voter whose disk was lost and
	// which restarts empty before it was removed could otherwise vote in a
	// leader that lacks jobs it had acknowledged (the raft fork's
	// SEPP-PATCH.md, eighth change).
	rc.SeppRefuseVotesWithoutConfiguration = true

	hasState, err := raft.HasExistingState(cached, stable, snaps)
	if err != nil {
		cleanup()
		return nil, fmt.Errorf("cluster: inspect raft state: %w", err)
	}
	if !hasState && cfg.Bootstrap {
		servers := []raft.Server{{Suffrage: raft.Voter, ID: raft.ServerID(cfg.NodeID), Address: n.transport.LocalAddr()}}
		for _, p := range cfg.Peers {
			servers = append(servers, raft.Server{Suffrage: raft.Voter, ID: raft.ServerID(p.ID), Address: raft.ServerAddress(p.RaftAddr)})
		}
		if err := raft.BootstrapCluster(rc, cached, stable, snaps, n.transport, raft.Configuration{Servers: servers}); err != nil {
			cleanup()
			return nil, fmt.Errorf("cluster: bootstrap: %w", err)
		}
		logger.Info("bootstrapped cluster", "members", len(servers))
	}

	r, err := raft.NewRaft(rc, timedFSM{FSM: n.fsm, m: n.snapTimes}, cached, stable, snaps, n.transport)
	var lastSnapshot string
	if err == nil {
		lastSnapshot = r.Stats()["last_snapshot_index"]
	}
	if err := requireRestored(snap, err, lastSnapshot); err != nil { // verify.go
		if r != nil {
			_ = r.Shutdown().Error()
		}
		cleanup()
		if errors.Is(err, ErrCorruptData) {
			return nil, err
		}
		return nil, fmt.Errorf("cluster: start raft: %w", err)
	}
	n.raft = r
	// Raft's "not the leader" for a command taken just as the leader stepped
	// down (as it does when a log write fails) also names a full disk.
	n.prop = newProposer(r, &n.cfg, n.clock, func() error { return n.disk.explain(n.notLeaderError()) },
		func(d time.Duration) { n.metrics.commit.Observe(d.Seconds()) })

	n.observerCh = make(chan raft.Observation, 64)
	n.observer = raft.NewObserver(n.observerCh, false, func(o *raft.Observation) bool {
		switch o.Data.(type) {
		case raft.FailedHeartbeatObservation, raft.ResumedHeartbeatObservation:
			return true
		}
		return false
	})
	r.RegisterObserver(n.observer)
	// The counting observer's filter does the counting (and tells the crash
	// detector which term it learned of each leader in) and passes nothing
	// on; its channel is never written.
	n.countObserver = raft.NewObserver(make(chan raft.Observation), false, func(o *raft.Observation) bool {
		n.metrics.observe(o)
		if l, ok := o.Data.(raft.LeaderObservation); ok {
			n.crash.sawLeader(l.LeaderID, o.Raft.CurrentTerm()) // crashwatch.go
		}
		return false
	})
	r.RegisterObserver(n.countObserver)

	n.wg.Add(3)
	go n.watchLeadership()
	go n.watchHealth()
	go n.watchClocks() // clock.go
	if n.crash != nil {
		n.wg.Add(1)
		go n.watchLeaderCrash()
	}
	if cfg.SnapshotCommandThreshold > 0 {
		n.wg.Add(1)
		go n.watchReplayLength() // replaysnapshot.go
	}
	return n, nil
}

// Self describes this node.
func (n *Node) Self() NodeInfo { return n.self }

// Leader describes the current leader as this node knows it, with the
// addresses from the replicated metadata; zero when no leader is known.
func (n *Node) Leader() NodeInfo {
	addr, id := n.raft.LeaderWithID()
	if id == "" || n.crash.hides(id, n.raft.CurrentTerm()) {
		return NodeInfo{}
	}
	if m, ok := n.fsm.Node(string(id)); ok {
		return nodeInfoFromMeta(m)
	}
	return NodeInfo{ID: string(id), RaftAddr: string(addr)}
}

// notLeaderError is what a non-leader answers: *NotLeaderError naming the
// leader, or ErrNoLeader while none is known.
func (n *Node) notLeaderError() error {
	leader := n.Leader()
	if leader.ID == "" {
		return ErrNoLeader
	}
	return &NotLeaderError{Leader: leader}
}

// IsLeader reports whether this node currently leads.
func (n *Node) IsLeader() bool { return n.raft.State() == raft.Leader }

// StateDigest hashes the replicated state with the index it includes.
func (n *Node) StateDigest() ([32]byte, uint64) { return n.fsm.DigestAt() }

// Applied returns a channel closed the next time this node applies a log
// entry (or restores a snapshot).
func (n *Node) Applied() <-chan struct{} { return n.fsm.Applied() }

// FSM exposes the state machine, for tests and offline tools.
func (n *Node) FSM() *fsm.FSM { return n.fsm }

// Read runs fn against the local engine under the state machine's read
// lock. With stale false the node must lead, have finished its leadership
// barrier, and confirm with a quorum that it still leads (VerifyLeader)
// before fn runs; otherwise it returns *NotLeaderError or ErrNoLeader. With
// stale true fn sees whatever this node has applied.
func (n *Node) Read(ctx context.Context, stale bool, fn func(e engine.View) error) error {
	// The state machine's own readers (this package) get the engine; a
	// caller through Read gets only its read methods.
	read := func(e *engine.Engine) error { return fn(e) }
	if stale {
		return n.fsm.Read(read)
	}
	if err := n.waitReady(ctx); err != nil {
		return err
	}
	if err := n.raft.VerifyLeader().Error(); err != nil {
		if errors.Is(err, raft.ErrRaftShutdown) {
			return ErrShutdown
		}
		return n.notLeaderError()
	}
	return n.fsm.Read(read)
}

// waitReady returns nil once this node leads and has run its leadership
// barrier and first commands for the current term. While the disk is known
// to be full, its refusals say so (*DiskFullError).
func (n *Node) waitReady(ctx context.Context) error {
	return n.disk.explain(n.awaitReady(ctx))
}

func (n *Node) awaitReady(ctx context.Context) error {
	select {
	case <-n.shutdownCh:
		return ErrShutdown
	default:
	}
	if n.raft.State() != raft.Leader {
		return n.notLeaderError()
	}
	lr := n.ready.Load()
	if lr == nil || lr.term != n.raft.CurrentTerm() {
		// Elected a moment ago; the leadership loop has not started yet.
		return fmt.Errorf("%w: leader elected, not yet serving", ErrNoLeader)
	}
	select {
	case <-lr.ch:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("cluster: not proposed: waiting for the new leader to be ready: %w", ctx.Err())
	case <-n.shutdownCh:
		return ErrShutdown
	}
}

// propose runs one command through the log on behalf of a client, after the
// leader is ready.
func (n *Node) propose(ctx context.Context, cmd *cmdpb.Command) (fsm.Result, error) {
	if err := n.waitReady(ctx); err != nil {
		return fsm.Result{}, err
	}
	return n.prop.propose(ctx, cmd)
}

// proposeInternal runs a leader duty's command; it does not wait for
// readiness (it is how the leader becomes ready).
func (n *Node) proposeInternal(ctx context.Context, cmd *cmdpb.Command) (fsm.Result, error) {
	if n.raft.State() != raft.Leader {
		return fsm.Result{}, n.notLeaderError()
	}
	return n.prop.propose(ctx, cmd)
}

// proposeAllInternal is proposeInternal for several commands sharing an
// entry.
func (n *Node) proposeAllInternal(ctx context.Context, cmds ...*cmdpb.Command) ([]fsm.Result, error) {
	if n.raft.State() != raft.Leader {
		return nil, n.notLeaderError()
	}
	return n.prop.proposeAll(ctx, cmds...)
}

// Shutdown stops the node. A leader of a multi-node cluster first hands
// leadership to another voter, so a planned restart costs milliseconds of
// unavailability rather than an election timeout. Commands in flight end
// with ErrUnknownOutcome; queued ones with ErrShutdown.
func (n *Node) Shutdown(ctx context.Context) error {
	if n.raft.State() == raft.Leader && n.voterCount() > 1 {
		done := make(chan error, 1)
		go func() { done <- n.raft.LeadershipTransfer().Error() }()
		select {
		case err := <-done:
			if err != nil {
				n.log.Warn("leadership transfer before shutdown failed", "error", err)
			}
		case <-ctx.Done():
			n.log.Warn("leadership transfer before shutdown abandoned", "error", ctx.Err())
		}
	}
	return n.Close()
}

// Close stops the node at once, without handing over leadership: to the
// rest of the cluster it looks like a crash. Tests use it to kill a leader.
func (n *Node) Close() error {
	n.shutdownOnce.Do(func() {
		close(n.shutdownCh)
		n.prop.stopTaking()
		n.raft.DeregisterObserver(n.observer)
		n.raft.DeregisterObserver(n.countObserver)
		err := n.raft.Shutdown().Error()
		n.prop.wait()
		n.wg.Wait()
		// Close pooled outbound connections too: raft's Close leaves them
		// open, and the peers' handlers reading them would never end.
		if nt, ok := n.transport.(interface{ CloseStreams() }); ok {
			nt.CloseStreams()
		}
		if c, ok := n.transport.(io.Closer); ok {
			if cerr := c.Close(); err == nil {
				err = cerr
			}
		}
		if cerr := n.stores.Close(); err == nil {
			err = cerr
		}
		if cerr := n.fsm.Close(); err == nil {
			err = cerr
		}
		n.shutdownErr = err
	})
	return n.shutdownErr
}

func (n *Node) voterCount() int {
	f := n.raft.GetConfiguration()
	if f.Error() != nil {
		return 0
	}
	count := 0
	for _, s := range f.Configuration().Servers {
		if s.Suffrage == raft.Voter {
			count++
		}
	}
	return count
}

// watchHealth keeps the leader's view of which peers miss heartbeats.
func (n *Node) watchHealth() {
	defer n.wg.Done()
	for {
		select {
		case o := <-n.observerCh:
			n.healthMu.Lock()
			switch d := o.Data.(type) {
			case raft.FailedHeartbeatObservation:
				n.failing[d.PeerID] = d.LastContact
			case raft.ResumedHeartbeatObservation:
				delete(n.failing, d.PeerID)
			}
			n.healthMu.Unlock()
		case <-n.shutdownCh:
			return
		}
	}
}

func nodeInfoFromMeta(m fsm.NodeMeta) NodeInfo {
	return NodeInfo{ID: m.ID, RaftAddr: m.RaftAddr, GRPCAddr: m.GRPCAddr, HTTPAddr: m.HTTPAddr}
}

func metaFromNodeInfo(i NodeInfo) fsm.NodeMeta {
	return fsm.NodeMeta{ID: i.ID, RaftAddr: i.RaftAddr, GRPCAddr: i.GRPCAddr, HTTPAddr: i.HTTPAddr}
}

// Snapshot makes raft take a snapshot now and compact the log behind it.
func (n *Node) Snapshot() error {
	if err := n.raft.Snapshot().Error(); err != nil {
		return fmt.Errorf("cluster: snapshot: %w", err)
	}
	return nil
}

// CommandsSinceSnapshot is how many commands the state machine applied
// since its last snapshot (each job of a batch counted): about what a
// restart would replay.
func (n *Node) CommandsSinceSnapshot() uint64 { return n.fsm.CommandsSinceSnapshot() }

// RaftStats are raft's own counters (last_snapshot_index, fsm_pending...).
func (n *Node) RaftStats() map[string]string { return n.raft.Stats() }

// LogWrites counts this node's writes to its log store: each is one batch
// of entries and one fsync.
func (n *Node) LogWrites() uint64 { return n.logStore.writes.Load() }

// ProposerStats counts the log entries this node's proposer submitted and
// the commands they carried; commands/entries is the group-commit factor.
func (n *Node) ProposerStats() (entries, commands uint64) {
	return n.prop.entries.Load(), n.prop.commands.Load()
}

// HandedOverJobs counts the jobs this node's proposer handed to waiting
// reserves in the entry that enqueued into their queue (handoff.go).
func (n *Node) HandedOverJobs() uint64 {
	if n.prop == nil {
		return 0
	}
	return n.prop.handedJobs.Load()
}

// ParkedReserves is how many waiting reserves this node's proposer holds
// for the next entry that enqueues into their queue.
func (n *Node) ParkedReserves() int {
	if n.prop == nil {
		return 0
	}
	return int(n.prop.parked.count.Load())
}

// raftLastIndex is the last index the node's Raft state holds: its log's
// last entry or its newest snapshot's, whichever is later.
func raftLastIndex(logs raft.LogStore, snaps raft.SnapshotStore) (uint64, error) {
	last, err := logs.LastIndex()
	if err != nil {
		return 0, fmt.Errorf("cluster: read the log's last index: %w", err)
	}
	metas, err := snaps.List()
	if err != nil {
		return 0, fmt.Errorf("cluster: list snapshots: %w", err)
	}
	for _, m := range metas {
		last = max(last, m.Index)
	}
	return last, nil
}
