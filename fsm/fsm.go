package fsm

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"

	"github.com/sepp-io/sepp/apiconv"
	"github.com/sepp-io/sepp/engine"
	cmdpb "github.com/sepp-io/sepp/proto/seppcmd/v1"
	"github.com/sepp-io/sepp/store"
)

// NodeMeta is one cluster member's identity and addresses, replicated so that
// every replica can name the leader's gRPC endpoint to a client.
type NodeMeta struct {
	ID       string
	RaftAddr string
	GRPCAddr string
	HTTPAddr string
	// MaxCommandVersion is the highest command version the member's binary
	// applies, as the member itself said when it last registered; 0 (a
	// binary older than the field, or metadata registered on the member's
	// behalf) means version 1 only. See AppliesCommandVersion.
	MaxCommandVersion uint32
	// Facts are what the member last reported of itself to a leader
	// (cluster/facts.go); the zero value, Reported false, until then.
	Facts NodeFacts
}

// NodeFacts is a member's report of itself: its binary and the resources
// it runs in. It steers only what a leader proposes (the memory budget, from
// the smallest member's limit) and what status shows; nothing applies
// differently for it, so it is left out of the digest.
type NodeFacts struct {
	Reported          bool
	Legacy            bool // the member serves no facts call: only MaxCommandVersion is known
	BinaryVersion     string
	MinCommandVersion uint32
	MemoryLimitBytes  int64
	MemoryLimitFrom   string
	GOMAXPROCS        uint32
	StartUnixNano     int64
}

// AppliesCommandVersion reports whether the member is known to apply
// commands of version v.
func (n NodeMeta) AppliesCommandVersion(v uint32) bool {
	return v <= max(n.MaxCommandVersion, commandV1)
}

// Result is the outcome of one command. Exactly the field that matches the
// command's operation is set, or Err: a domain rejection of the engine
// (errors.Is an engine sentinel), a deterministic value that every replica
// computes alike, never a reason to stop.
type Result struct {
	Enqueue    engine.EnqueueResult      // JobEnqueue
	Batch      []engine.BatchItemResult  // JobEnqueueBatch
	Deliveries []engine.Delivery         // JobReserve
	Nack       engine.NackResult         // JobNack
	Deadline   time.Time                 // LeaseExtend
	Extended   int                       // LeaseExtendAll: leases extended
	Records    []engine.DeadLetterRecord // DeadLetterDrain
	Items      []engine.ItemResult       // DeadLetterRequeue, DeadLetterDelete, JobDeadLetter, JobsAct
	Tick       engine.TickResult         // Tick
	Acks       []error                   // JobAckBatch: one per ref, in order, nil when acked
	FollowUps  []engine.EnqueueResult    // JobAck with follow-ups: one per follow-up, in order
	Removed    engine.QueueRemoval       // QueueDelete, QueuePurge
	Fire       engine.FireResult         // ScheduleFire
	Redrive    engine.RedriveTask        // RedriveStart, RedriveStep, RedriveSetState
	Err        error
}

// Config configures a state machine.
type Config struct {
	// Engine is the configuration a fresh engine starts with, before the
	// leader replicates the running one with a ConfigSet.
	Engine engine.Config
	// SnapshotTempDir holds the engine's snapshot between Snapshot and
	// Persist; it should be on the data disk. Empty means os.TempDir.
	SnapshotTempDir string
	// Logger; nil discards.
	Logger hclog.Logger
	// PayloadDir, when set, is the directory of the on-disk store that
	// keeps job payloads off the heap (payloads.go), kept across restarts.
	// Empty: payloads stay in the engine's heap (tests, tools).
	PayloadDir string
	// PayloadStore tunes that store (tests pass an in-memory file system).
	PayloadStore store.Options
	// SnapshotCheckpointDir, when set with PayloadDir, keeps a snapshot's
	// payloads in a checkpoint of the store there instead of copying them
	// into the snapshot (snapshot_checkpoint.go); raft's snapshot store
	// must then be wrapped by CheckpointSnapshots on the same folder. It
	// must be on the payload store's file system (hard links).
	SnapshotCheckpointDir string
}

// FSM is the Raft state machine. It implements raft.FSM and raft.BatchingFSM.
// Raft calls Apply, ApplyBatch, Snapshot and Restore from one goroutine; the
// read side (Read, Nodes, Digest) may run concurrently from any goroutine.
type FSM struct {
	cfg Config
	log hclog.Logger

	mu      sync.RWMutex // guards everything below and the engine's state
	eng     *engine.Engine
	lastNow time.Time // the latest now applied; time never runs backwards
	nodes   map[string]NodeMeta

	appliedIndex atomic.Uint64
	// commandsSinceSnapshot counts the commands applied since the state was
	// last captured for a snapshot or restored from one, an enqueue batch's
	// jobs one by one: what a restart from that snapshot replays.
	commandsSinceSnapshot atomic.Uint64
	// workAtSnapshot is the engine's Work when the state was last captured
	// or restored: where the node's last snapshot stands in the log's work.
	workAtSnapshot atomic.Uint64

	appliedMu sync.Mutex
	appliedCh chan struct{} // closed and replaced after each applied batch

	// decodeFunc decodes an entry for ApplyBatch: decodeEntryForApply,
	// but for tests comparing it with decodeEntryGeneral.
	decodeFunc func(data []byte) ([]entryCommand, error)

	// answering: the reserve request ids this node's callers wait on
	// (answering.go).
	answering answering

	// payloads is the engine's on-disk payload store; nil when payloads
	// stay in the heap (Config.PayloadDir empty).
	payloads *payloadStore
	// closed: Close ran; reads are refused (the store is gone).
	closed bool
}

// ErrClosed is a read of a state machine after Close.
var ErrClosed = errors.New("fsm: closed")

var (
	_ raft.FSM         = (*FSM)(nil)
	_ raft.BatchingFSM = (*FSM)(nil)
)

// New returns a state machine over a fresh engine running cfg.Engine. It
// panics where Open would return an error.
func New(cfg Config) *FSM {
	f, err := Open(cfg)
	if err != nil {
		panic(err)
	}
	return f
}

// Open returns a state machine over a fresh engine running cfg.Engine,
// with its payload store opened as the last run left it when
// cfg.PayloadDir is set. Close releases the store.
func Open(cfg Config) (*FSM, error) {
	logger := cfg.Logger
	if logger == nil {
		logger = hclog.NewNullLogger()
	}
	f := &FSM{
		cfg:        cfg,
		log:        logger,
		eng:        engine.New(cfg.Engine),
		nodes:      make(map[string]NodeMeta),
		appliedCh:  make(chan struct{}),
		decodeFunc: decodeEntryForApply,
	}
	if cfg.PayloadDir != "" {
		if cfg.PayloadStore.Logger == nil {
			cfg.PayloadStore.Logger = storeLogger{log: logger.Named("payloads"), dir: cfg.PayloadDir}
		}
		if cfg.PayloadStore.OnFailure == nil {
			cfg.PayloadStore.OnFailure = stopOnStoreFailure
		}
		p, err := openPayloadStore(cfg.PayloadDir, cfg.PayloadStore, logger)
		if err != nil {
			return nil, err
		}
		f.payloads = p
		f.eng.UsePayloadStore(p)
	}
	return f, nil
}

// Close releases the payload store. Nothing may be applied after it.
func (f *FSM) Close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.payloads == nil || f.closed {
		return nil
	}
	f.closed = true
	return f.payloads.close()
}

// PayloadDiskBytes is the space the payload store's files take on disk
// (0 without one), for the node's metrics.
func (f *FSM) PayloadDiskBytes() uint64 {
	st, _ := f.PayloadStoreStats()
	return st.DiskBytes
}

// PayloadStoreStats are the payload store's figures (store.Stats) for
// the node's metrics; false without a payload store.
func (f *FSM) PayloadStoreStats() (store.Stats, bool) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	if f.payloads == nil || f.closed {
		return store.Stats{}, false
	}
	return f.payloads.st.Stats(), true
}

// Apply applies one log entry. It is ApplyBatch of one.
func (f *FSM) Apply(l *raft.Log) any {
	return f.ApplyBatch([]*raft.Log{l})[0]
}

// ApplyBatch applies committed entries in order. Each command entry's
// response is a []Result with one Result per command of the entry, in order;
// other entry types respond nil.
//
// An entry that cannot be decoded, or that names a format, version or
// operation this binary does not know, panics with its log index: a replica
// that cannot apply an entry must stop rather than silently diverge.
func (f *FSM) ApplyBatch(logs []*raft.Log) []any {
	defer f.markOnDamage()
	responses := make([]any, len(logs))
	f.mu.Lock()
	if f.payloads != nil && len(logs) > 0 {
		f.payloads.begin()
	}
	for i, l := range logs {
		if f.payloads != nil { // every entry: the store's index may be any entry's
			ahead, err := f.payloads.replaying(l.Index, l.Term)
			if err != nil {
				f.mu.Unlock()
				panic(err.Error())
			}
			f.eng.SetPayloadsAhead(ahead)
		}
		if l.Type != raft.LogCommand {
			continue
		}
		cmds, err := f.decodeFunc(l.Data)
		if err != nil {
			f.mu.Unlock()
			panic(fmt.Sprintf("fsm: cannot apply log index %d (term %d): %v", l.Index, l.Term, err))
		}
		results := make([]Result, len(cmds))
		var weight uint64
		for j := range cmds {
			if c := &cmds[j]; c.pb != nil {
				results[j] = f.applyCommand(l.Index, c.pb)
				weight += commandWeight(c.pb)
			} else {
				results[j] = f.applyEnqueueItems(f.commandNow(c.nowUnixNano), c.enqueue)
				weight += uint64(len(c.enqueue))
			}
		}
		f.commandsSinceSnapshot.Add(weight)
		responses[i] = results
	}
	// Stored under the lock so DigestAt reads a state and its index as one.
	var storeErr error
	if n := len(logs); n > 0 {
		if f.payloads != nil {
			storeErr = f.payloads.commit(logs[n-1].Index, logs[n-1].Term)
			if logs[n-1].Index >= f.payloads.ahead { // the replay over the kept store is done
				f.payloads.ahead, f.payloads.aheadTerm = 0, 0
				f.eng.SetPayloadsAhead(false)
			}
		}
		f.appliedIndex.Store(logs[n-1].Index)
	}
	f.mu.Unlock()
	if storeErr != nil {
		panic(storeErr.Error()) // fail-stop: the payloads of these entries are not stored
	}
	f.notifyApplied()
	return responses
}

// commandWeight is how many commands cmd counts for in
// CommandsSinceSnapshot: a batch its items, anything else one.
func commandWeight(cmd *cmdpb.Command) uint64 {
	switch op := cmd.GetOp().(type) {
	case *cmdpb.Command_JobEnqueueBatch:
		return uint64(max(1, len(op.JobEnqueueBatch.GetItems())))
	case *cmdpb.Command_JobAckBatch:
		return uint64(max(1, len(op.JobAckBatch.GetJobIds())))
	}
	return 1
}

// CommandsSinceSnapshot is how many commands were applied since the state
// was last captured for a snapshot or restored from one, each job of an
// enqueue or ack batch counted: about what a restart from the newest
// snapshot replays. The node takes a snapshot about every
// cluster.snapshot_command_threshold of them, however few entries carried
// them, and at 1.5 times it at the latest (cluster/replaysnapshot.go).
func (f *FSM) CommandsSinceSnapshot() uint64 { return f.commandsSinceSnapshot.Load() }

// WorkAtSnapshot is engine.Work at the state last captured for a snapshot
// or restored from one: with Work now, how far the log's work has moved
// since this node's last snapshot, a measure every replica shares.
func (f *FSM) WorkAtSnapshot() uint64 { return f.workAtSnapshot.Load() }

// applyCommand runs one command at max(last now, command now). Called with
// f.mu held for writing.
func (f *FSM) applyCommand(index uint64, cmd *cmdpb.Command) Result {
	now := f.commandNow(cmd.GetNowUnixNano())
	switch op := cmd.GetOp().(type) {
	case *cmdpb.Command_JobEnqueue:
		return f.applyJobEnqueue(now, op.JobEnqueue)
	case *cmdpb.Command_JobEnqueueBatch:
		return f.applyJobEnqueueBatch(now, op.JobEnqueueBatch)
	case *cmdpb.Command_JobReserve:
		return f.applyJobReserve(now, op.JobReserve, cmd.GetVersion() >= CommandVersionReserveRetry)
	case *cmdpb.Command_JobAck:
		return f.applyJobAck(now, op.JobAck)
	case *cmdpb.Command_JobAckBatch:
		return f.applyJobAckBatch(now, op.JobAckBatch)
	case *cmdpb.Command_JobNack:
		return f.applyJobNack(now, op.JobNack)
	case *cmdpb.Command_JobRelease:
		return f.applyJobRelease(now, op.JobRelease)
	case *cmdpb.Command_LeaseExtend:
		return f.applyLeaseExtend(now, op.LeaseExtend)
	case *cmdpb.Command_LeaseExtendAll:
		return f.applyLeaseExtendAll(now, op.LeaseExtendAll)
	case *cmdpb.Command_DeadLetterDrain:
		return f.applyDeadLetterDrain(now, op.DeadLetterDrain)
	case *cmdpb.Command_DeadLetterRequeue:
		return f.applyDeadLetterRequeue(now, op.DeadLetterRequeue)
	case *cmdpb.Command_DeadLetterDelete:
		return f.applyDeadLetterDelete(now, op.DeadLetterDelete)
	case *cmdpb.Command_JobDeadLetter:
		return f.applyJobDeadLetter(now, op.JobDeadLetter)
	case *cmdpb.Command_QueuePause:
		return f.applyQueuePause(now, op.QueuePause)
	case *cmdpb.Command_QueueResume:
		return f.applyQueueResume(now, op.QueueResume)
	case *cmdpb.Command_Tick:
		return f.applyTick(now, op.Tick)
	case *cmdpb.Command_ConfigSet:
		return f.applyConfigSet(now, cmd.GetVersion(), op.ConfigSet)
	case *cmdpb.Command_NodeMetadataSet:
		return f.applyNodeMetadataSet(now, op.NodeMetadataSet)
	case *cmdpb.Command_NodeMetadataDelete:
		return f.applyNodeMetadataDelete(now, op.NodeMetadataDelete)
	case *cmdpb.Command_QueueCreate:
		return f.applyQueueCreate(now, cmd.GetVersion(), op.QueueCreate)
	case *cmdpb.Command_QueueUpdate:
		return f.applyQueueUpdate(now, cmd.GetVersion(), op.QueueUpdate)
	case *cmdpb.Command_QueueDelete:
		return f.applyQueueDelete(now, op.QueueDelete)
	case *cmdpb.Command_QueuePurge:
		return f.applyQueuePurge(now, op.QueuePurge)
	case *cmdpb.Command_JobsAct:
		return f.applyJobsAct(now, op.JobsAct)
	case *cmdpb.Command_ScheduleUpsert:
		return f.applyScheduleUpsert(now, op.ScheduleUpsert)
	case *cmdpb.Command_ScheduleDelete:
		return f.applyScheduleDelete(now, op.ScheduleDelete)
	case *cmdpb.Command_SchedulePauseSet:
		return f.applySchedulePauseSet(now, op.SchedulePauseSet)
	case *cmdpb.Command_ScheduleFire:
		return f.applyScheduleFire(now, op.ScheduleFire)
	case *cmdpb.Command_RedriveStart:
		return f.applyRedriveStart(now, cmd.GetVersion(), op.RedriveStart)
	case *cmdpb.Command_RedriveStep:
		return f.applyRedriveStep(now, op.RedriveStep)
	case *cmdpb.Command_RedriveSetState:
		return f.applyRedriveSetState(now, op.RedriveSetState)
	default:
		// DecodeEntry rejects unknown operations, so this is a programming
		// error: a oneof case added without its applier.
		f.mu.Unlock()
		panic(fmt.Sprintf("fsm: log index %d: no applier for operation %T", index, op))
	}
}

// commandNow is the time a command stamped nowUnixNano runs at, max(last
// now, its now), and the state machine's clock from then on. Called with
// f.mu held for writing.
func (f *FSM) commandNow(nowUnixNano int64) time.Time {
	now := fromUnixNano(nowUnixNano)
	if now.Before(f.lastNow) {
		now = f.lastNow
	}
	f.lastNow = now
	return now
}

func (f *FSM) applyJobEnqueue(now time.Time, c *cmdpb.JobEnqueue) Result {
	var p engine.EnqueueParams
	switch r := c.GetRequest(); {
	case r == nil:
		p = enqueueParamsFromProto(c.GetParams())
	case c.GetParams() != nil:
		return Result{Err: errBothForms}
	default: // the public form (enqueue_public.go)
		if err := apiconv.FillEnqueueParams(&p, "", r); err != nil {
			return Result{Err: err}
		}
	}
	res, err := f.eng.Enqueue(now, p)
	return Result{Enqueue: res, Err: err}
}

func (f *FSM) applyJobEnqueueBatch(now time.Time, c *cmdpb.JobEnqueueBatch) Result {
	if reqs := c.GetRequests(); len(reqs) > 0 {
		if len(c.GetItems()) > 0 {
			return Result{Err: errBothForms}
		}
		// The public form (enqueue_public.go).
		items, err := apiconv.EnqueueBatchParams(reqs)
		if err != nil {
			return Result{Err: err}
		}
		return f.applyEnqueueItems(now, items)
	}
	items := make([]engine.EnqueueParams, len(c.GetItems()))
	for i, it := range c.GetItems() {
		items[i] = enqueueParamsFromProto(it)
	}
	return f.applyEnqueueItems(now, items)
}

// applyEnqueueItems is a JobEnqueueBatch's application, whichever decoder
// made its items.
func (f *FSM) applyEnqueueItems(now time.Time, items []engine.EnqueueParams) Result {
	res, err := f.eng.EnqueueBatch(now, items)
	return Result{Batch: res, Err: err}
}

func (f *FSM) applyJobReserve(now time.Time, c *cmdpb.JobReserve, retryWindow bool) Result {
	res, err := f.eng.Reserve(now, engine.ReserveParams{
		Queue:       c.GetQueue(),
		WorkerID:    c.GetWorkerId(),
		N:           int(c.GetN()),
		Lease:       time.Duration(c.GetLeaseNanos()),
		RequestID:   c.GetRequestId(),
		RetryWindow: retryWindow && c.GetRequestId() != "",
		// A replica answering nobody leaves the payloads unread.
		WithoutPayloads: !f.answers(c.GetRequestId()),
	})
	return Result{Deliveries: res, Err: err}
}

func (f *FSM) applyJobAck(now time.Time, c *cmdpb.JobAck) Result {
	if len(c.GetFollowUps()) == 0 {
		return Result{Err: f.eng.AckWithResult(now, leaseRefFromProto(c.GetRef()), c.GetResult())}
	}
	// The follow-ups are the API's EnqueueRequests: apiconv converts them
	// as the API's validation did, deterministically, and a conversion the
	// API would have refused is the engine's refusal here, alike on every
	// replica: the ack is refused and nothing is enqueued.
	items := make([]engine.EnqueueParams, len(c.GetFollowUps()))
	for i, r := range c.GetFollowUps() {
		if err := apiconv.FillEnqueueParams(&items[i], "follow_ups["+strconv.Itoa(i)+"].", r); err != nil {
			return Result{Err: err}
		}
	}
	res, err := f.eng.AckWithFollowUps(now, leaseRefFromProto(c.GetRef()), c.GetResult(), items)
	return Result{FollowUps: res, Err: err}
}

// applyJobAckBatch acks each ref (job_ids[i], lease_tokens[i]) as
// applyJobAck would, in order, all at the command's now: exactly what a run
// of JobAck commands in one entry (which share the leader's stamp) does.
// The lists are of equal length: DecodeEntry refuses an entry where not.
func (f *FSM) applyJobAckBatch(now time.Time, c *cmdpb.JobAckBatch) Result {
	ids, tokens := c.GetJobIds(), c.GetLeaseTokens()
	errs := make([]error, len(ids))
	for i, id := range ids {
		errs[i] = f.eng.Ack(now, engine.LeaseRef{JobID: engine.JobID(id), LeaseToken: engine.LeaseToken(tokens[i])})
	}
	return Result{Acks: errs}
}

func (f *FSM) applyJobNack(now time.Time, c *cmdpb.JobNack) Result {
	res, err := f.eng.Nack(now, engine.NackParams{
		LeaseRef:  leaseRefFromProto(c.GetRef()),
		Directive: engine.Directive(c.GetDirective()),
		After:     time.Duration(c.GetAfterNanos()),
		Reason:    c.GetReason(),
	})
	return Result{Nack: res, Err: err}
}

func (f *FSM) applyJobRelease(now time.Time, c *cmdpb.JobRelease) Result {
	return Result{Err: f.eng.Release(now, leaseRefFromProto(c.GetRef()))}
}

func (f *FSM) applyLeaseExtend(now time.Time, c *cmdpb.LeaseExtend) Result {
	p := engine.ExtendParams{
		LeaseRef: leaseRefFromProto(c.GetRef()),
		Lease:    time.Duration(c.GetLeaseNanos()),
	}
	if pr := c.GetProgress(); pr != nil {
		// Not apiconv.Progress: the engine checks the bounds itself, and
		// a report out of them is its refusal, the same on every replica.
		p.Progress = &engine.Progress{Percent: pr.GetPercent(), Message: pr.GetMessage()}
	}
	deadline, err := f.eng.ExtendLease(now, p)
	return Result{Deadline: deadline, Err: err}
}

func (f *FSM) applyLeaseExtendAll(now time.Time, c *cmdpb.LeaseExtendAll) Result {
	return Result{Extended: f.eng.ExtendAllLeases(now, time.Duration(c.GetGraceNanos()))}
}

func (f *FSM) applyDeadLetterDrain(now time.Time, c *cmdpb.DeadLetterDrain) Result {
	res, err := f.eng.DrainDeadLetters(now, engine.DrainParams{Queue: c.GetQueue(), Max: int(c.GetMax())})
	return Result{Records: res, Err: err}
}

func (f *FSM) applyDeadLetterRequeue(now time.Time, c *cmdpb.DeadLetterRequeue) Result {
	return Result{Items: f.eng.RequeueDeadLetters(now, jobIDsFromProto(c.GetJobIds()))}
}

func (f *FSM) applyDeadLetterDelete(now time.Time, c *cmdpb.DeadLetterDelete) Result {
	return Result{Items: f.eng.DeleteDeadLetters(now, jobIDsFromProto(c.GetJobIds()))}
}

func (f *FSM) applyJobDeadLetter(now time.Time, c *cmdpb.JobDeadLetter) Result {
	return Result{Items: f.eng.DeadLetterJobs(now, jobIDsFromProto(c.GetJobIds()), c.GetReason())}
}

func (f *FSM) applyQueuePause(now time.Time, c *cmdpb.QueuePause) Result {
	return Result{Err: f.eng.PauseQueue(now, c.GetQueue())}
}

func (f *FSM) applyQueueResume(now time.Time, c *cmdpb.QueueResume) Result {
	return Result{Err: f.eng.ResumeQueue(now, c.GetQueue())}
}

func (f *FSM) applyTick(now time.Time, _ *cmdpb.Tick) Result {
	return Result{Tick: f.eng.Tick(now)}
}

func (f *FSM) applyConfigSet(now time.Time, version uint32, c *cmdpb.ConfigSet) Result {
	cfg, err := configOf(version, c.GetConfig()) // ops_operator.go
	switch {
	case err != nil:
	case c.GetDeclarative() && c.GetDeclaredReserveLimits():
		err = f.eng.ApplyDeclaredReserveLimits(now, cfg) // ops_operator.go
	case c.GetDeclarative():
		err = f.eng.ApplyDeclared(now, cfg)
	default:
		err = f.eng.SetConfig(now, cfg)
	}
	if err == nil && c.GetRecordFields() {
		f.eng.EnableRecordFields(now) // ops_attempts.go
	}
	if err == nil && c.GetForwardKeepsPriority() {
		f.eng.EnableForwardKeepsPriority(now) // edges.go
	}
	if err == nil && c.GetPayloadsOffHeap() {
		f.eng.EnablePayloadsOffHeap(now) // payloads.go
	}
	if err == nil && c.GetCompactCharge() {
		f.eng.EnableCompactCharge(now) // compact_charge.go
	}
	return Result{Err: err}
}

func (f *FSM) applyNodeMetadataSet(_ time.Time, c *cmdpb.NodeMetadataSet) Result {
	n := nodeMetaFromProto(c.GetNode())
	if n.ID == "" {
		return Result{Err: &engine.FieldError{Field: "node.id", Reason: "must not be empty", Err: engine.ErrInvalidArgument}}
	}
	f.nodes[n.ID] = n
	return Result{}
}

func (f *FSM) applyNodeMetadataDelete(_ time.Time, c *cmdpb.NodeMetadataDelete) Result {
	delete(f.nodes, c.GetId())
	return Result{}
}

func (f *FSM) notifyApplied() {
	f.appliedMu.Lock()
	close(f.appliedCh)
	f.appliedCh = make(chan struct{})
	f.appliedMu.Unlock()
}

// Applied returns a channel closed the next time an entry is applied (or a
// snapshot restored).
func (f *FSM) Applied() <-chan struct{} {
	f.appliedMu.Lock()
	defer f.appliedMu.Unlock()
	return f.appliedCh
}

// AppliedIndex is the index of the last log entry applied by this FSM (not
// advanced by a snapshot restore; raft's own AppliedIndex is).
func (f *FSM) AppliedIndex() uint64 { return f.appliedIndex.Load() }

// Read runs fn against the engine under the read lock. fn must call only the
// engine's read methods and keep no reference past its return. While the
// node replays entries its payload store already holds (after a restart),
// it returns ErrCatchingUp: the state is older than the store's payloads.
func (f *FSM) Read(fn func(e *engine.Engine) error) error {
	defer f.markOnDamage()
	f.mu.RLock()
	defer f.mu.RUnlock()
	if f.closed {
		return ErrClosed
	}
	if f.behindStoreLocked() {
		return ErrCatchingUp
	}
	return fn(f.eng)
}

// ErrCatchingUp is a read of a node that replays, after a restart, the
// entries its payload store already holds: it answers once it has.
var ErrCatchingUp = errors.New("fsm: this node is replaying its log after a restart; retry, or read from another node")

// behindStoreLocked reports whether the engine is behind its payload store
// (payloadStore.ahead): its state is not the store's yet.
func (f *FSM) behindStoreLocked() bool {
	return f.payloads != nil && f.payloads.ahead > f.appliedIndex.Load()
}

// Now is the state machine's clock: the latest now applied (zero before the
// first command).
func (f *FSM) Now() time.Time {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.lastNow
}

// Node returns the replicated metadata of one member.
func (f *FSM) Node(id string) (NodeMeta, bool) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	n, ok := f.nodes[id]
	return n, ok
}

// Nodes returns every member's metadata, sorted by id.
func (f *FSM) Nodes() []NodeMeta {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.sortedNodesLocked()
}

func (f *FSM) sortedNodesLocked() []NodeMeta {
	out := make([]NodeMeta, 0, len(f.nodes))
	for _, n := range f.nodes {
		out = append(out, n)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}
