package fsm

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"

	"github.com/hashicorp/go-hclog"

	"github.com/sepp-io/sepp/engine"
	cmdpb "github.com/sepp-io/sepp/proto/seppcmd/v1"
	storepb "github.com/sepp-io/sepp/proto/seppstore/v1"
	"github.com/sepp-io/sepp/store"
)

// PayloadsOffHeapConfigCommand builds the declarative ConfigSet of cmd (a
// DeclaredConfigCommand, possibly with the newer switches set) that also
// turns payloadsOffHeap on: payloads are charged to the disk count, not the
// memory budget (engine.EnablePayloadsOffHeap).
func PayloadsOffHeapConfigCommand(cmd *cmdpb.Command) *cmdpb.Command {
	cmd.Version = CommandVersionPayloadsOffHeap
	cmd.GetConfigSet().PayloadsOffHeap = true
	return cmd
}

// loadBatchBytes cuts the load of a snapshot's payloads into store batches
// of about this size, so that a restore never holds a whole backlog's
// payloads in one batch in memory.
const loadBatchBytes = 4 << 20

// payloadStore is the engine's PayloadStore over the node's on-disk store
// (package store, issue 35): job payloads live in Pebble, not in the Go
// heap of the replica.
//
// The store is kept across restarts. It holds the records of every entry
// up to its own applied index (store.Store.AppliedIndex: written in the
// same batch as the records, so a crash keeps both or neither; Pebble's WAL
// is off, the Raft log is the durable copy). At a start raft restores its
// last snapshot S and replays the log after it: if the store is at or past
// S, the restore loads no payload and the entries up to the store's index
// are replayed with the engine told that its store is ahead
// (engine.SetPayloadsAhead); otherwise (an older store, a snapshot
// installed from the leader, a snapshot of a release that did not record
// its index) the store is emptied and refilled from the snapshot, as every
// start did before.
//
// Writes go into one indexed batch per ApplyBatch, committed at its end
// with the last entry's index (without fsync); reads during the apply see
// the batch's own writes. Everything runs under the FSM's lock: writes on
// the apply goroutine with the lock held, reads under the read lock, when
// no batch is open.
//
// A store that fails to write or read stops the node (a panic on the
// apply goroutine): a replica that answers without a payload, or with
// another one, would be worse than one that stops.
type payloadStore struct {
	dir  string
	opts store.Options
	st   *store.Store

	batch   *store.Batch // open during an apply or a load
	loading bool         // filling the store from a snapshot

	// ahead is the store's applied index while the engine replays entries
	// at or below it (0: the engine is not behind the store); aheadTerm is
	// that entry's term as the store recorded it (0: unknown, after a
	// load), checked against the log's entry when the replay reaches it.
	ahead, aheadTerm uint64
	// applied and appliedTerm are the last entry applied (or the restored
	// snapshot's index, term 0): the store's content is that state's even
	// where the store's own index is lower, its later entries having
	// written nothing (markApplied).
	applied, appliedTerm uint64
	// rebuilds counts the loads from a snapshot since the store was opened.
	rebuilds int
}

var _ engine.PayloadWalker = (*payloadStore)(nil)

// The payload store's memory when the caller does not size it
// (PayloadStoreOptions): memtables of 32 MiB (up to 4 while flushes lag)
// and a 16 MiB block cache, whatever the backlog.
const (
	payloadMemTableBytes = 32 << 20
	payloadCacheBytes    = 16 << 20
)

// PayloadStoreOptions sizes the payload store for a node whose memory
// limit is memoryLimit bytes (0: unknown, the defaults above): memtables
// and block cache of 1/64 of it each, between 4 and 64 MiB. With up to 4
// memtables while flushes lag, the store then takes at most about 8% of
// the node's memory (20 MiB of a 256 MiB cgroup), which the memory
// budget's share (limits.max_memory_share) leaves room for. What a crash
// loses of the store is at most its unflushed memtables, whose entries the
// restart replays from the log (the log keeps every entry after the last
// snapshot, and a snapshot flushes the store).
func PayloadStoreOptions(memoryLimit int64) store.Options {
	if memoryLimit <= 0 {
		return store.Options{}
	}
	n := min(max(memoryLimit/64, 4<<20), 64<<20)
	return store.Options{MemTableBytes: uint64(n), CacheBytes: n}
}

// storeLogger passes the store's messages to the state machine's log. A
// fatal one (Pebble found a damaged table) stops the node and marks the
// store in dir for a rebuild at the next start (markForRebuild).
type storeLogger struct {
	log hclog.Logger
	dir string
}

func (l storeLogger) Infof(format string, args ...any)  { l.log.Info(fmt.Sprintf(format, args...)) }
func (l storeLogger) Errorf(format string, args ...any) { l.log.Error(fmt.Sprintf(format, args...)) }
func (l storeLogger) Fatalf(format string, args ...any) {
	markForRebuild(l.dir)
	panic(fmt.Sprintf(format, args...) + " (the payload store is rebuilt from the snapshot and the log at the next start)")
}

// openPayloadStore opens the store in dir as a previous run left it (or a
// new one), the engine behind it up to its applied index until a snapshot
// restore decides otherwise. A store that cannot be opened (a lost or
// damaged file, a newer format) or that a failed read marked is emptied:
// it holds a copy of what the snapshot and the log hold, which rebuild it.
func openPayloadStore(dir string, opts store.Options, log hclog.Logger) (*payloadStore, error) {
	if opts.MemTableBytes == 0 {
		opts.MemTableBytes = payloadMemTableBytes
	}
	if opts.CacheBytes == 0 {
		opts.CacheBytes = payloadCacheBytes
	}
	var (
		st  *store.Store
		err error
	)
	// What an install a crash interrupted left: its staged files, or the
	// store it moved aside (store.Install).
	if err := os.RemoveAll(stagedDir(dir)); err != nil {
		return nil, fmt.Errorf("fsm: remove an interrupted install's files: %w", err)
	}
	if err := store.Recover(dir, opts); err != nil {
		return nil, fmt.Errorf("fsm: open the payload store: %w", err)
	}
	if _, serr := os.Stat(filepath.Join(dir, rebuildMarker)); serr == nil {
		log.Warn("payload store marked for a rebuild after a failed read or write: emptying it; the snapshot and the log rebuild it", "dir", dir)
		st, err = openEmptyStore(dir, opts)
	} else if st, err = store.Open(dir, opts); err != nil {
		// A lost or damaged file, a newer format: the store is a copy of
		// what the snapshot and the log hold, so it is built again.
		log.Warn("payload store cannot be opened: emptying it; the snapshot and the log rebuild it", "dir", dir, "error", err)
		st, err = openEmptyStore(dir, opts)
	}
	if err != nil {
		return nil, fmt.Errorf("fsm: open the payload store: %w", err)
	}
	return &payloadStore{dir: dir, opts: opts, st: st, ahead: st.AppliedIndex(), aheadTerm: st.AppliedTerm()}, nil
}

// openEmptyStore empties dir and opens a new store in it.
func openEmptyStore(dir string, opts store.Options) (*store.Store, error) {
	if err := os.RemoveAll(dir); err != nil {
		return nil, fmt.Errorf("fsm: empty the payload store: %w", err)
	}
	return store.Open(dir, opts)
}

// stopOnStoreFailure stops the node at the payload store's first failed
// flush or compaction (store.Options.OnFailure): Pebble would retry it
// forever and, its memtables full, block the apply with the node still
// heartbeating, a leader that commits nothing. Stopping loses nothing: the
// store keeps what it flushed, the snapshot and the log the rest, and
// the others go on without this node meanwhile (as PostgreSQL learned of
// fsync, a write the disk refused is not retried in place).
func stopOnStoreFailure(err error) {
	panic(fmt.Sprintf("fsm: payload store failed, stopping the node (it rebuilds the store from its snapshot and log at the next start): %v", err))
}

// fail stops the node at a failed read or write. The store is marked to be
// emptied at the next start (rebuildMarker): a read that failed may fail
// again at the same place after a restart (a damaged table), and the
// snapshot and the log rebuild the whole store.
func (p *payloadStore) fail(what string, err error) {
	markForRebuild(p.dir)
	panic(fmt.Sprintf("fsm: payload store: %s: %v (the store is rebuilt from the snapshot and the log at the next start)", what, err))
}

// markOnDamage, deferred around what reads payloads through the engine (an
// apply, a read, a digest), leaves the rebuild marker when the engine stops
// the node over a payload its store mangled (engine.PayloadDamageError),
// then lets the panic go on: without the marker the node would meet the
// same record after every restart.
func (f *FSM) markOnDamage() {
	r := recover()
	if r == nil {
		return
	}
	if _, ok := r.(*engine.PayloadDamageError); ok && f.payloads != nil {
		markForRebuild(f.payloads.dir)
	}
	panic(r)
}

// rebuildMarker, in the store's directory, makes the next openPayloadStore
// empty the store instead of keeping it.
const rebuildMarker = "SEPP-REBUILD"

// markForRebuild leaves rebuildMarker in dir, best effort: a node that
// cannot even write it fails again at the same read after its restart, and
// says so each time.
func markForRebuild(dir string) {
	if f, err := os.Create(filepath.Join(dir, rebuildMarker)); err == nil {
		_ = f.Sync()
		_ = f.Close()
	}
}

func (p *payloadStore) PutPayload(id engine.JobID, payload []byte) {
	if p.batch == nil {
		panic("fsm: payload written outside an apply or a load")
	}
	p.batch.PutJob(uint64(id), &storepb.JobBody{Payload: payload})
	if p.loading && p.batch.Len() >= loadBatchBytes {
		if err := p.batch.CommitUnindexed(); err != nil {
			p.fail("load", err)
		}
		p.batch = p.st.NewBatch()
	}
}

func (p *payloadStore) Payload(id engine.JobID) []byte {
	if p.batch != nil {
		return p.payloadFrom(id, p.batch.Job)
	}
	return p.payloadFrom(id, p.st.Job)
}

// payloadFrom reads id's payload with read: nil when the store has none
// (the engine reports the missing payload with the job's id); a failed
// read stops the node.
func (p *payloadStore) payloadFrom(id engine.JobID, read func(uint64) (*storepb.JobBody, error)) []byte {
	body, err := read(uint64(id))
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	if err != nil {
		p.fail(fmt.Sprintf("read job %d", id), err)
	}
	return body.GetPayload()
}

func (p *payloadStore) DeletePayload(id engine.JobID) {
	if p.batch == nil {
		panic("fsm: payload deleted outside an apply")
	}
	p.batch.DeleteJob(uint64(id))
}

// NewPayloadReader serves several reads through one iterator: a walk over
// the whole state (engine.Snapshot, engine.Digest, under the FSM's read
// lock, no batch open), which reads jobs in id order, or a reserve's
// deliveries during an apply, read through the apply's batch (nothing is
// written to it until done).
func (p *payloadStore) NewPayloadReader() (read func(engine.JobID) []byte, done func()) {
	var (
		r   *store.JobReader
		err error
	)
	if p.batch != nil {
		r, err = p.batch.NewJobReader()
	} else {
		r, err = p.st.NewJobReader()
	}
	if err != nil {
		p.fail("open a reader", err)
	}
	read = func(id engine.JobID) []byte { return p.payloadFrom(id, r.Job) }
	return read, func() { _ = r.Close() }
}

// begin opens the batch of an ApplyBatch.
func (p *payloadStore) begin() { p.batch = p.st.NewIndexedBatch() }

// commit writes the batch of an ApplyBatch whose last entry is index. An
// error must stop the node (the caller panics once it released its lock).
func (p *payloadStore) commit(index, term uint64) error {
	b := p.batch
	p.batch = nil
	p.applied, p.appliedTerm = index, term
	if b.Empty() {
		b.Close()
		return nil
	}
	if err := b.Commit(index, term); err != nil {
		return fmt.Errorf("fsm: payload store: commit index %d: %w", index, err)
	}
	return nil
}

// DropPayloadStoreAbove empties the payload store when it holds entries
// past lastIndex, the last index of the node's Raft log and snapshots: such
// a store comes from a future this node's log does not have (a data
// directory restored from a backup beside a newer store), and the entries
// the log will hold at those indexes are other ones. It must run before
// raft starts. It reports whether it emptied the store.
func (f *FSM) DropPayloadStoreAbove(lastIndex uint64) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	p := f.payloads
	if p == nil || p.st.AppliedIndex() <= lastIndex {
		return false, nil
	}
	f.log.Warn("payload store is ahead of the Raft log: emptying it; the snapshot and the log rebuild it",
		"store_index", p.st.AppliedIndex(), "log_last_index", lastIndex)
	if err := p.st.Close(); err != nil {
		return false, err
	}
	st, err := openEmptyStore(p.dir, p.opts)
	if err != nil {
		return false, fmt.Errorf("fsm: empty the payload store: %w", err)
	}
	p.st, p.ahead, p.aheadTerm = st, 0, 0
	return true, nil
}

// markApplied records the last applied entry as the store's index when
// the entries after the store's own index wrote nothing, so that a restart
// from a snapshot taken now, or after a clean stop, finds the store at or
// past it and keeps it. A small write: the meta record alone.
func (p *payloadStore) markApplied() error {
	if p.applied <= p.st.AppliedIndex() {
		return nil
	}
	if err := p.st.NewBatch().Commit(p.applied, p.appliedTerm); err != nil {
		return fmt.Errorf("fsm: payload store: record index %d: %w", p.applied, err)
	}
	return nil
}

// keeps reports whether a snapshot of applied index snapIndex can be
// restored over the store as it is: the store holds the records of every
// entry up to an index at or past it. A snapshot that does not say its
// index (older releases wrote 0) cannot.
func (p *payloadStore) keeps(snapIndex uint64) bool {
	return snapIndex != 0 && snapIndex <= p.st.AppliedIndex()
}

// keep restores a snapshot over the store as it is: the engine replays the
// entries up to the store's applied index without touching it.
func (p *payloadStore) keep(snapIndex uint64) {
	p.ahead, p.aheadTerm = p.st.AppliedIndex(), p.st.AppliedTerm()
	p.applied, p.appliedTerm = snapIndex, 0
}

// reset empties the store for a snapshot's payloads and opens a load.
func (p *payloadStore) reset() error {
	if p.batch != nil {
		p.batch.Close()
		p.batch = nil
	}
	if err := p.st.Close(); err != nil {
		return err
	}
	st, err := openEmptyStore(p.dir, p.opts)
	if err != nil {
		return err
	}
	p.st = st
	p.batch = p.st.NewBatch() // a load reads nothing back: no index needed
	p.loading = true
	p.ahead, p.aheadTerm = 0, 0
	p.rebuilds++
	return nil
}

// stagedDir is where a format 5 snapshot's store files are written before
// they replace the store in dir: beside it, on the same file system, so
// that a rename puts them in place.
func stagedDir(dir string) string { return dir + ".install" }

// stage writes a format 5 snapshot's store files (store.WriteCheckpoint's
// archive) into stagedDir, each file synced. The store is not touched.
func (p *payloadStore) stage(r io.Reader) error {
	staged := stagedDir(p.dir)
	if err := os.RemoveAll(staged); err != nil {
		return err
	}
	return store.ReadCheckpoint(r, staged, p.opts)
}

// checkStaged opens the staged files read only and requires their applied
// index to be the snapshot's: the checkpoint of that snapshot, not of
// another state.
func (p *payloadStore) checkStaged(snapIndex uint64) error {
	// Without the store's logger and failure hook: staged files Pebble
	// finds damaged are a refused snapshot, not a reason to stop the node
	// and mark its store for a rebuild.
	o := p.opts
	o.Logger, o.OnFailure = nil, nil
	st, err := store.OpenCheckpoint(stagedDir(p.dir), o)
	if err != nil {
		return fmt.Errorf("%w: store files: %w", ErrSnapshot, err)
	}
	index := st.AppliedIndex()
	if err := st.Close(); err != nil {
		return fmt.Errorf("%w: store files: %w", ErrSnapshot, err)
	}
	if snapIndex == 0 || index != snapIndex {
		return fmt.Errorf("%w: store files at applied index %d, the snapshot's is %d", ErrSnapshot, index, snapIndex)
	}
	return nil
}

// dropStaged removes what stage wrote, best effort (the next start
// removes it too).
func (p *payloadStore) dropStaged() { _ = os.RemoveAll(stagedDir(p.dir)) }

// installStaged replaces the store by the staged files (store.Install: a
// crash between the renames leaves the old store, which the next start
// puts back) and opens them. The store then holds the snapshot's state at
// snapIndex, and the engine is not behind it. A failure stops the node:
// the old store is closed, and the next start rebuilds it.
func (p *payloadStore) installStaged(snapIndex uint64) {
	if p.batch != nil {
		p.batch.Close()
		p.batch = nil
	}
	if err := p.st.Close(); err != nil {
		p.fail("close the store for an install", err)
	}
	st, err := store.Install(stagedDir(p.dir), p.dir, p.opts)
	if err != nil {
		p.fail("install the snapshot's files", err)
	}
	p.st = st
	p.ahead, p.aheadTerm = 0, 0
	p.applied, p.appliedTerm = snapIndex, st.AppliedTerm()
	p.rebuilds++
}

// endLoad commits what a load left in its last batch, with the snapshot's
// applied index when it has one: a restart right after keeps the store.
// The term is not known here (0: not checked).
func (p *payloadStore) endLoad(snapIndex uint64) {
	b := p.batch
	p.batch, p.loading = nil, false
	p.applied, p.appliedTerm = snapIndex, 0
	var err error
	if snapIndex != 0 {
		err = b.Commit(snapIndex, 0)
	} else {
		err = b.CommitUnindexed()
	}
	if err != nil {
		p.fail("load", err)
	}
}

// replaying reports whether the entry at index is one whose writes the
// store already holds. An error (the node must stop) says that the store's
// entry at its applied index has another term than the log's: the store
// then belongs to another log (a data directory put together from two
// nodes), and nothing it holds can be trusted.
func (p *payloadStore) replaying(index, term uint64) (bool, error) {
	if index > p.ahead {
		return false, nil
	}
	if index == p.ahead && p.aheadTerm != 0 && term != p.aheadTerm {
		return false, fmt.Errorf("fsm: payload store %s holds entry %d of term %d, but the log's entry %d has term %d: the store belongs to another log; remove the directory and restart (the snapshot and the log rebuild it)",
			p.dir, index, p.aheadTerm, index, term)
	}
	return true, nil
}

// close flushes what is applied (so a restart replays no more than the
// entries after it) and releases the store.
func (p *payloadStore) close() error {
	if p.batch != nil {
		p.batch.Close()
		p.batch = nil
	}
	var ferr error
	if p.st.Failed() == nil && p.ahead == 0 { // a failed store writes nothing more; one ahead keeps its index
		ferr = p.markApplied()
		if ferr == nil {
			ferr = p.st.Flush()
		}
	}
	if err := p.st.Close(); err != nil {
		return err
	}
	return ferr
}

var _ engine.CompletedStore = (*payloadStore)(nil)

// PutCompleted writes a completed job's record (engine/completed.go): at
// the ack's apply, or in a load from a snapshot.
func (p *payloadStore) PutCompleted(r *engine.CompletedRecord) {
	if p.batch == nil {
		panic("fsm: completed job written outside an apply or a load")
	}
	p.batch.PutCompleted(uint64(r.ID), completedToStore(r))
	if p.loading && p.batch.Len() >= loadBatchBytes {
		if err := p.batch.CommitUnindexed(); err != nil {
			p.fail("load", err)
		}
		p.batch = p.st.NewBatch()
	}
}

// DeleteCompleted deletes a completed job's record (its retention ended,
// or its queue was deleted).
func (p *payloadStore) DeleteCompleted(id engine.JobID) {
	if p.batch == nil {
		panic("fsm: completed job deleted outside an apply")
	}
	p.batch.DeleteCompleted(uint64(id))
}

// Completed reads a completed job's record for a view (a read, under the
// read lock, no batch open; or a snapshot's walk). A failed read stops
// the node, as a failed payload read does.
func (p *payloadStore) Completed(id engine.JobID) (engine.CompletedRecord, bool) {
	c, err := p.st.Completed(uint64(id))
	if errors.Is(err, store.ErrNotFound) {
		return engine.CompletedRecord{}, false
	}
	if err != nil {
		p.fail(fmt.Sprintf("read completed job %d", id), err)
	}
	return completedFromStore(id, c), true
}

// completedToStore is the store's record of r.
func completedToStore(r *engine.CompletedRecord) *storepb.CompletedJob {
	c := &storepb.CompletedJob{
		Queue:               r.Queue,
		JobType:             r.JobType,
		Result:              r.Result,
		CompletedAtUnixNano: unixNano(r.CompletedAt),
		StartedAtUnixNano:   unixNano(r.StartedAt),
		EnqueuedAtUnixNano:  unixNano(r.EnqueuedAt),
		Attempt:             r.Attempt,
		MaxAttempts:         r.MaxAttempts,
		Priority:            r.Priority,
		Worker:              r.WorkerID,
	}
	for _, h := range r.History {
		c.History = append(c.History, &storepb.Attempt{
			Attempt:           h.Attempt,
			Outcome:           outcomeToStore(h.Outcome),
			AtUnixNano:        unixNano(h.At),
			Worker:            h.WorkerID,
			Reason:            h.Reason,
			StartedAtUnixNano: unixNano(h.StartedAt),
			Lease:             uint64(h.LeaseToken),
			Directive:         directiveToStore(h.Directive),
		})
	}
	return c
}

// completedFromStore is the engine's record of job id from the store's.
func completedFromStore(id engine.JobID, c *storepb.CompletedJob) engine.CompletedRecord {
	r := engine.CompletedRecord{
		ID:          id,
		Queue:       c.GetQueue(),
		JobType:     c.GetJobType(),
		Result:      c.GetResult(),
		CompletedAt: fromUnixNano(c.GetCompletedAtUnixNano()),
		StartedAt:   fromUnixNano(c.GetStartedAtUnixNano()),
		EnqueuedAt:  fromUnixNano(c.GetEnqueuedAtUnixNano()),
		Attempt:     c.GetAttempt(),
		MaxAttempts: c.GetMaxAttempts(),
		Priority:    c.GetPriority(),
		WorkerID:    c.GetWorker(),
	}
	for _, h := range c.GetHistory() {
		a := engine.Attempt{
			Attempt:    h.GetAttempt(),
			WorkerID:   h.GetWorker(),
			At:         fromUnixNano(h.GetAtUnixNano()),
			Outcome:    outcomeFromStore(h.GetOutcome()),
			Reason:     h.GetReason(),
			StartedAt:  fromUnixNano(h.GetStartedAtUnixNano()),
			LeaseToken: engine.LeaseToken(h.GetLease()),
			Directive:  directiveFromStore(h.GetDirective()),
		}
		if !a.StartedAt.IsZero() {
			a.Duration = a.At.Sub(a.StartedAt)
		}
		r.History = append(r.History, a)
	}
	return r
}

// The engine names attempt outcomes and directives; the store keeps the
// numbers of store.proto (a directive plus one, 0: none).
var (
	storeOutcomes   = []string{"", "nack", "lease_expired", "released", "cancelled"}
	storeDirectives = []string{"", "default", "after", "dead_letter"}
)

func outcomeToStore(name string) storepb.AttemptOutcome {
	return storepb.AttemptOutcome(max(slices.Index(storeOutcomes, name), 0))
}

func outcomeFromStore(o storepb.AttemptOutcome) string {
	if int(o) < len(storeOutcomes) {
		return storeOutcomes[o]
	}
	return ""
}

func directiveToStore(name string) uint32 { return uint32(max(slices.Index(storeDirectives, name), 0)) }

func directiveFromStore(d uint32) string {
	if int(d) < len(storeDirectives) {
		return storeDirectives[d]
	}
	return ""
}
