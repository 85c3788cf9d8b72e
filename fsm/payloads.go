package fsm

import (
	"errors"
	"fmt"
	"os"

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
// The store holds what the engine holds and nothing else, and is rebuilt
// at every start: Open empties it, the snapshot raft restores refills it,
// and the log replayed after the snapshot does the rest. So the store never
// has to agree with a state it did not see being built, and what a crash
// leaves in it does not matter (Pebble's WAL is off: the Raft log is the
// durable copy). Keeping the store across restarts, with snapshots that
// carry no payloads, is the next step (store/DESIGN.md).
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
// budget's share (limits.max_memory_share) leaves room for; the store is
// rebuilt at each start, so a memtable's size is not what a crash costs.
func PayloadStoreOptions(memoryLimit int64) store.Options {
	if memoryLimit <= 0 {
		return store.Options{}
	}
	n := min(max(memoryLimit/64, 4<<20), 64<<20)
	return store.Options{MemTableBytes: uint64(n), CacheBytes: n}
}

// storeLogger passes the store's messages to the state machine's log.
type storeLogger struct{ log hclog.Logger }

func (l storeLogger) Infof(format string, args ...any)  { l.log.Info(fmt.Sprintf(format, args...)) }
func (l storeLogger) Errorf(format string, args ...any) { l.log.Error(fmt.Sprintf(format, args...)) }
func (l storeLogger) Fatalf(format string, args ...any) { panic(fmt.Sprintf(format, args...)) }

// openPayloadStore empties dir and opens a store in it.
func openPayloadStore(dir string, opts store.Options) (*payloadStore, error) {
	if opts.MemTableBytes == 0 {
		opts.MemTableBytes = payloadMemTableBytes
	}
	if opts.CacheBytes == 0 {
		opts.CacheBytes = payloadCacheBytes
	}
	if err := os.RemoveAll(dir); err != nil {
		return nil, fmt.Errorf("fsm: empty the payload store: %w", err)
	}
	st, err := store.Open(dir, opts)
	if err != nil {
		return nil, fmt.Errorf("fsm: open the payload store: %w", err)
	}
	return &payloadStore{dir: dir, opts: opts, st: st}, nil
}

// stopOnStoreFailure stops the node at the payload store's first failed
// flush or compaction (store.Options.OnFailure): Pebble would retry it
// forever and, its memtables full, block the apply with the node still
// heartbeating, a leader that commits nothing. Stopping loses nothing: the
// store is rebuilt from the snapshot and the log at the next start, and
// the others go on without this node meanwhile (as PostgreSQL learned of
// fsync, a write the disk refused is not retried in place).
func stopOnStoreFailure(err error) {
	panic(fmt.Sprintf("fsm: payload store failed, stopping the node (it rebuilds the store from its snapshot and log at the next start): %v", err))
}

func (p *payloadStore) fail(what string, err error) {
	panic(fmt.Sprintf("fsm: payload store: %s: %v", what, err))
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
	if b.Empty() {
		b.Close()
		return nil
	}
	if err := b.Commit(index, term); err != nil {
		return fmt.Errorf("fsm: payload store: commit index %d: %w", index, err)
	}
	return nil
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
	st, err := openPayloadStore(p.dir, p.opts)
	if err != nil {
		return err
	}
	p.st = st.st
	p.batch = p.st.NewBatch() // a load reads nothing back: no index needed
	p.loading = true
	return nil
}

// endLoad commits what a load left in its last batch.
func (p *payloadStore) endLoad() {
	b := p.batch
	p.batch, p.loading = nil, false
	if err := b.CommitUnindexed(); err != nil {
		p.fail("load", err)
	}
}

// close releases the store.
func (p *payloadStore) close() error {
	if p.batch != nil {
		p.batch.Close()
		p.batch = nil
	}
	return p.st.Close()
}
