package cluster

import (
	"context"
	"errors"
	"reflect"
	"slices"
	"time"

	"github.com/hashicorp/raft"

	"github.com/sepp-io/sepp/engine"
	"github.com/sepp-io/sepp/fsm"
	cmdpb "github.com/sepp-io/sepp/proto/seppcmd/v1"
)

// watchLeadership starts the leader's duties when this node is elected and
// stops them when it loses leadership or shuts down.
func (n *Node) watchLeadership() {
	defer n.wg.Done()
	stopDuties := func() {}
	defer func() { stopDuties() }()
	for {
		select {
		case isLeader := <-n.raft.LeaderCh():
			// LeaderCh keeps only the latest value: a "true" seen while duties
			// run means leadership was lost and regained in between, so the
			// duties restart for the new term either way.
			stopDuties()
			stopDuties = func() {}
			if !isLeader {
				n.log.Info("lost leadership")
				continue
			}
			stopDuties = n.startLeaderDuties()
		case <-n.shutdownCh:
			return
		}
	}
}

// startLeaderDuties runs leaderDuties in the background and returns the
// function that stops it and waits for it to end.
func (n *Node) startLeaderDuties() func() {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		n.leaderDuties(ctx)
	}()
	return func() {
		cancel()
		<-done
	}
}

// leaderDuties runs while this node leads: the barrier, the first commands
// of the term, then the ticker. Client commands wait until the first
// commands are applied (readiness), so no client sees a state older than
// every commit of the previous leader, and leases live through the election.
func (n *Node) leaderDuties(ctx context.Context) {
	term := n.raft.CurrentTerm()
	lr := &leaderReady{term: term, ch: make(chan struct{}), factsAsked: make(chan struct{})}
	n.ready.Store(lr)
	log := n.log.With("term", term)

	// A node whose clock is known to be off the others' hands the term
	// over before it stamps anything (clock.go).
	if n.handOverIfSkewed() {
		return
	}

	// The term's first entry: every live lease gains the grace (so the
	// election does not redeliver jobs whose workers could not reach a
	// leader), and this node's metadata (so followers can name it), in one
	// entry. Once it is applied, every entry of earlier terms is applied
	// too: it does the work of a raft Barrier without a separate round.
	if !n.retryDuty(ctx, "first entry of the term", func() error {
		results, err := n.proposeAllInternal(ctx,
			fsm.ExtendAllLeasesCommand(n.cfg.LeaseGrace),
			fsm.SetNodeCommand(metaFromNodeInfo(n.self)))
		for _, res := range results {
			if res.Err != nil {
				log.Error("leader command rejected by the engine", "error", res.Err)
			}
		}
		return err
	}) {
		return
	}

	// The node's configured engine config becomes the cluster's.
	if !n.setConfig(ctx) {
		return
	}

	// Static peers' metadata the state lacks (a joined member's metadata,
	// replicated by Join, is never overwritten by a stale config file).
	var missing []*cmdpb.Command
	for _, info := range n.cfg.Peers {
		if _, ok := n.fsm.Node(info.ID); !ok && (info.GRPCAddr != "" || info.HTTPAddr != "") {
			missing = append(missing, fsm.SetNodeCommand(metaFromNodeInfo(info)))
		}
	}
	if len(missing) > 0 && !n.retryDuty(ctx, "set peer metadata", func() error {
		_, err := n.proposeAllInternal(ctx, missing...)
		return err
	}) {
		return
	}

	// A leader that does not know yet whether every member applies its
	// binary's commands (a new cluster's first leader, or a rolling
	// upgrade's) holds back every version-gated setting of its config
	// (membersConfig) until it has asked them. Ready before that, it
	// would serve the config's queues without them for a moment: an ack
	// with a result refused as if the queue kept no completed jobs. So it
	// asks them once first, bounded as a request waiting on the answer
	// is (MemberQuestions.FirstRoundWait), and sets the config they allow.
	// Members that did not answer in that time leave the first round to
	// the background (learnMemberFacts), which requests needing a version
	// still wait for (membersApplyFor), as before this question.
	firstRound := lr.factsAsked
	if n.asksMemberFacts() && !n.membersApply(fsm.CommandVersion) {
		rctx, cancel := context.WithTimeout(ctx, n.questions.FirstRoundWait)
		allKnown := n.askMemberFacts(rctx)
		cancel()
		if !n.setConfig(ctx) {
			return
		}
		if allKnown {
			close(lr.factsAsked)
			firstRound = make(chan struct{}) // the background round's, waited on by no one
		}
	}

	close(lr.ch)
	log.Info("leader ready")
	learned := make(chan struct{})
	go func() {
		defer close(learned)
		n.learnMemberFacts(ctx, firstRound) // facts.go
	}()
	scheduled := make(chan struct{})
	go func() {
		defer close(scheduled)
		n.runScheduler(ctx) // scheduler.go
	}()
	redrove := make(chan struct{})
	go func() {
		defer close(redrove)
		n.runRedriver(ctx) // redrive.go
	}()
	n.runTicker(ctx)
	<-learned
	<-scheduled
	<-redrove
}

// runDuty proposes one leader command, retrying an unknown outcome (every
// duty command is idempotent in effect) until it applies or leadership ends.
// A command the engine rejects is logged and counts as done.
func (n *Node) runDuty(ctx context.Context, what string, cmd *cmdpb.Command) bool {
	return n.retryDuty(ctx, what, func() error {
		res, err := n.proposeInternal(ctx, cmd)
		if err == nil && res.Err != nil {
			n.log.Error("leader command rejected by the engine", "command", what, "error", res.Err)
		}
		return err
	})
}

// retryDuty runs fn until it succeeds (true) or leadership or the node ends
// (false), backing off between attempts.
func (n *Node) retryDuty(ctx context.Context, what string, fn func() error) bool {
	backoff := 10 * time.Millisecond
	for {
		err := fn()
		if err == nil {
			return true
		}
		if ctx.Err() != nil || n.raft.State() != raft.Leader || errors.Is(err, ErrShutdown) {
			n.log.Debug("leader duty abandoned", "duty", what, "error", err)
			return false
		}
		n.log.Warn("leader duty failed; retrying", "duty", what, "error", err, "backoff", backoff)
		t := time.NewTimer(backoff)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return false
		}
		if backoff < time.Second {
			backoff *= 2
		}
	}
}

// runTicker proposes a Tick whenever the engine's next deadline has passed
// by the leader's clock (expired idempotency keys and reserve request ids
// count SweepDelay late: engine.NextTickAt), and otherwise sleeps until that
// deadline, an applied entry (which may move it) or TickMaxWait. An idle
// cluster with nothing pending proposes nothing.
func (n *Node) runTicker(ctx context.Context) {
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	var lastTick time.Time
	for {
		// Take the applied channel before reading the deadline, so an entry
		// applied in between wakes the loop instead of being missed.
		applied := n.fsm.Applied()
		var (
			deadline time.Time
			pending  bool
		)
		_ = n.fsm.Read(func(e *engine.Engine) error {
			deadline, pending = e.NextTickAt(n.cfg.SweepDelay)
			return nil
		})
		now := n.clock()
		wait := n.cfg.TickMaxWait
		if pending {
			due := deadline
			if earliest := lastTick.Add(n.cfg.TickMinInterval); !lastTick.IsZero() && due.Before(earliest) {
				due = earliest
			}
			if !now.Before(due) {
				lastTick = now
				if _, err := n.proposeInternal(ctx, fsm.TickCommand()); err != nil {
					if ctx.Err() != nil || n.raft.State() != raft.Leader {
						return
					}
					n.log.Warn("tick failed", "error", err)
				}
				continue
			}
			if d := due.Sub(now); d < wait {
				wait = d
			}
		}
		timer.Reset(wait)
		select {
		case <-applied:
		case <-timer.C:
		case <-ctx.Done():
			return
		}
		if !timer.Stop() {
			select {
			case <-timer.C:
			default:
			}
		}
	}
}

// membersConfig is the node's configured engine config as every member can
// apply it: without limits.idempotency_min_window until every member is
// known to apply CommandVersionKeyMinWindow (a member of an older binary
// would drop it and keep refusing the keys the others forget early).
// learnMemberFacts sets the config again once the members are known.
//
// Without an explicit limits.max_memory_bytes (Engine.Limits.MaxMemoryBytes
// 0) and with a Config.MemoryShare, the memory budget is that share of the
// smallest memory limit among the members (memberMemoryBudget): a leader
// in 8 GiB must not set a budget a follower in 512 MiB cannot hold.
func (n *Node) membersConfig() engine.Config {
	cfg := n.cfg.Engine
	if cfg.Limits.MaxMemoryBytes == 0 && n.cfg.MemoryShare > 0 {
		cfg.Limits.MaxMemoryBytes = n.memberMemoryBudget()
	}
	if cfg.Limits.IdempotencyMinWindow != 0 && !n.membersApply(fsm.CommandVersionKeyMinWindow) {
		cfg.Limits.IdempotencyMinWindow = 0
	}
	if fsm.HasMemoryBudget(cfg) && !n.membersApply(fsm.CommandVersionMemoryBudget) {
		// An older member would drop the budget and accept what the
		// others refuse: no budget until every member applies it.
		cfg.Limits.MaxMemoryBytes = 0
		cfg.Queues = slices.Clone(cfg.Queues)
		for i := range cfg.Queues {
			cfg.Queues[i].MaxMemoryBytes = nil
		}
	}
	if cfg.Limits.MaxDiskBytes != 0 && !n.membersApply(fsm.CommandVersionPayloadsOffHeap) {
		// An older member would drop the budget (and count payloads as
		// memory): no disk budget until every member applies it.
		cfg.Limits.MaxDiskBytes = 0
	}
	if engine.HasReserveLimits(cfg) && !n.membersApply(fsm.CommandVersionReserveLimits) {
		// An older member would drop the limits and hand out the jobs
		// the others hold back: none until every member applies them.
		cfg = engine.StripReserveLimits(cfg)
	}
	if engine.HasExpiryFairness(cfg) && !n.membersApply(fsm.CommandVersionExpiryFairness) {
		// An older member would drop max_wait and fairness_key, keeping
		// the jobs the others expire and reserving in another order.
		cfg = engine.StripExpiryFairness(cfg)
	}
	if engine.HasTags(cfg) && !n.membersApply(fsm.CommandVersionQueueTags) {
		// An older member would drop the tags, and its state and answers
		// would differ from the others': none until every member applies
		// them.
		cfg = engine.StripTags(cfg)
	}
	if engine.HasCompletedRetention(cfg) && !n.membersApply(fsm.CommandVersionResults) {
		// An older member would drop the setting and keep no completed
		// job: none kept until every member applies it.
		cfg = engine.StripCompletedRetention(cfg)
	}
	return cfg
}

// setConfig proposes membersConfig when the cluster runs another config,
// and reports false when leadership or the node ended first.
//
// Once every member applies fsm.CommandVersionQueues the config goes out
// declaratively (engine.ApplyDeclared): the limits follow the file, each
// [[queues]] definition is applied once, and queues managed at runtime
// stay. Before that the config replaces the running one whole, as older
// binaries apply it, unless the cluster already holds declarations (a
// member of an older binary joined later): replacing the config then
// would drop the queues managed at runtime, so it is left alone.
func (n *Node) setConfig(ctx context.Context) bool {
	want := n.membersConfig()
	// Attempt detail and forwarded origins in their own fields wait for
	// every member to apply them (fsm.CommandVersionRecordFields).
	recordFields := n.membersApply(fsm.CommandVersionRecordFields)
	// Likewise forwarded jobs keeping their priority
	// (fsm.CommandVersionDeadLetterEdges).
	keepPriority := n.membersApply(fsm.CommandVersionDeadLetterEdges)
	// And a file definition's reserve limits being part of it
	// (fsm.CommandVersionQueueReserveLimits).
	declaredLimits := n.membersApply(fsm.CommandVersionQueueReserveLimits)
	// Likewise payloads charged to the disk count instead of the memory
	// budget (fsm.CommandVersionPayloadsOffHeap), when the config asks.
	payloadsOff := n.cfg.PayloadsOffHeap && n.membersApply(fsm.CommandVersionPayloadsOffHeap)
	// And plain waiting jobs charged as the compact entries they are held
	// as (fsm.CommandVersionCompactCharge): always, once every member can.
	compactCharge := n.membersApply(fsm.CommandVersionCompactCharge)
	var running engine.Config
	var pending, declared bool
	_ = n.fsm.Read(func(e *engine.Engine) error {
		running = e.Config()
		pending = e.DeclaredPending(want) || (recordFields && !e.RecordFields()) || (keepPriority && !e.ForwardKeepsPriority()) ||
			(declaredLimits && !e.DeclaredReserveLimits()) || (payloadsOff && !e.PayloadsOffHeap()) ||
			(compactCharge && !e.CompactCharge())
		declared = len(e.Declarations()) > 0
		return nil
	})
	if n.membersApply(fsm.CommandVersionQueues) {
		if !pending {
			return true
		}
		var cmd *cmdpb.Command
		switch {
		case keepPriority:
			cmd = fsm.ForwardKeepsPriorityConfigCommand(fsm.RecordFieldsConfigCommand(want))
		case recordFields:
			cmd = fsm.RecordFieldsConfigCommand(want)
		default:
			cmd = fsm.DeclaredConfigCommand(want)
		}
		if declaredLimits {
			cmd = fsm.DeclaredReserveLimitsConfigCommand(cmd)
		}
		if payloadsOff {
			cmd = fsm.PayloadsOffHeapConfigCommand(cmd)
		}
		if compactCharge {
			cmd = fsm.CompactChargeConfigCommand(cmd)
		}
		// Last: the wrappers above stamp their own versions.
		cmd = fsm.TaggedConfigCommand(cmd)
		if n.membersApply(fsm.CommandVersionPublicQueueSettings) {
			// The queues in the public form, once every member reads it.
			cmd = fsm.PublicQueueSettingsConfigCommand(cmd, want)
		}
		return n.runDuty(ctx, "set config", cmd)
	}
	if reflect.DeepEqual(running, want) {
		return true
	}
	if declared {
		n.log.Warn("a member does not apply the declarative config yet; the file's config waits for it, not to drop the queues managed at runtime")
		return true
	}
	return n.runDuty(ctx, "set config", fsm.SetConfigCommand(want))
}
