package store

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	"google.golang.org/protobuf/proto"

	storepb "github.com/sepp-io/sepp/proto/seppstore/v1"
)

// FormatVersion is the layout of keys and records this package writes
// (StoreMeta.format_version). Open refuses a store of a newer layout.
const FormatVersion = 1

// pebbleFormat pins Pebble's on-disk format, so that a Pebble upgrade never
// ratchets a store's files to a format an older sepp cannot open; raising it
// is a deliberate change (DB.RatchetFormatMajorVersion) behind the cluster's
// version gate.
const pebbleFormat = pebble.FormatValueSeparation

// Errors. Every error this package returns wraps one of them or a Pebble
// error; the next step maps them to gRPC codes in rpc's one table.
var (
	// ErrNotFound: no record under the key read.
	ErrNotFound = errors.New("store: not found")
	// ErrInvalidArgument: a caller's input is out of bounds (the message
	// names the field and the limit).
	ErrInvalidArgument = errors.New("store: invalid argument")
	// ErrStaleIndex: a batch was committed with an applied index at or below
	// the store's; replay must skip entries the store already holds.
	ErrStaleIndex = errors.New("store: applied index does not advance")
	// ErrCorrupt: a record or the meta record does not decode, or the store
	// was written by a newer layout.
	ErrCorrupt = errors.New("store: corrupt")
	// ErrClosed: the store is closed.
	ErrClosed = errors.New("store: closed")
)

// Options configure Open. The zero value is the production setting on the
// operating system's file system.
type Options struct {
	// FS is the file system; nil: the operating system's. Tests pass
	// vfs.NewMem or vfs.NewCrashableMem.
	FS vfs.FS
	// CacheBytes is the block cache; 0: 64 MiB.
	CacheBytes int64
	// MemTableBytes is one memtable's size; 0: 64 MiB. With the WAL off it
	// is also about how much a crash loses and restart replays from the
	// Raft log (up to MemTableStopWrites memtables).
	MemTableBytes uint64
	// Logger receives Pebble's messages; nil: discarded.
	Logger pebble.Logger
	// OnFailure is called once, from a goroutine of Pebble's, with the
	// first error of a background flush or compaction (a disk that fails
	// writes or reads). Pebble retries a failed flush at once and forever
	// (cockroachdb/pebble#6139, open; #6166 proposes a backoff, which would
	// not end the wait), and when its memtables are full every commit
	// blocks: the owner must
	// stop rather than wait (the state machine stops the node). nil: the
	// error is only logged and kept for Failed.
	OnFailure func(error)

	// noAutoCompactions leaves every file where flushes put it, so that a
	// benchmark measures reads over tombstones that no compaction removed.
	noAutoCompactions bool
}

// Store is the on-disk store of job bodies and dead letters. Reads are safe
// from any goroutine; batches are committed from one goroutine (the FSM's
// apply goroutine), as are Checkpoint and Close.
type Store struct {
	db      *pebble.DB
	fs      vfs.FS
	dir     string
	applied atomic.Uint64
	term    atomic.Uint64

	mu     sync.Mutex // guards closed against Close racing a commit
	closed bool
	// snaps counts the open Snapshots: Close waits for them, so that a
	// persist still streaming from one never reads a closed database.
	snaps sync.WaitGroup

	failure *failure
	faults  *faultInjector // a test build's crash in a flush (faultinject_on.go)
	// writeStalls counts Pebble's write stalls since the store was opened
	// (Stats).
	writeStalls *atomic.Int64

	// metaFirst plants the bug the crash test must catch: the applied
	// index committed in its own batch before the data (export_test.go).
	metaFirst bool
}

// pebbleOptions are the options for a queue workload. Why each:
//   - DisableWAL: the Raft log is the write-ahead log. Every change comes
//     from a committed entry the log already holds durably, so a second
//     WAL would write each body twice. What survives a crash is what was
//     flushed, with the applied index of the same batches (it is in them),
//     and restart replays the log from that index.
//   - Large memtables (64 MiB, 4 before writes stall): a job acked within
//     a memtable's lifetime never reaches an SST (its Set and SingleDelete
//     cancel in the flush), and a burst of enqueues does not stall apply.
//   - Tombstone-dense compaction (Pebble's default threshold, kept
//     explicit): heads of queues consumed in order leave runs of
//     tombstones; Pebble compacts blocks dense with them so that a seek to
//     the new head does not step over them (cockroachdb/pebble #3790).
func pebbleOptions(o Options, f *failure) *pebble.Options {
	fs := o.FS
	if fs == nil {
		fs = vfs.Default
	}
	memtable := o.MemTableBytes
	if memtable == 0 {
		memtable = 64 << 20
	}
	logger := o.Logger
	if logger == nil {
		logger = discardLogger{}
	}
	po := &pebble.Options{
		FS:                          fs,
		DisableWAL:                  true,
		MemTableSize:                memtable,
		MemTableStopWritesThreshold: 4,
		FormatMajorVersion:          pebbleFormat,
		Logger:                      logger,
	}
	po.Experimental.TombstoneDenseCompactionThreshold = 0.10
	// A write stall holds up the apply of every entry behind it: say so.
	po.EventListener = &pebble.EventListener{
		WriteStallBegin: func(i pebble.WriteStallBeginInfo) { logger.Infof("store: write stall: %s", i.Reason) },
		WriteStallEnd:   func() { logger.Infof("store: write stall ended") },
		BackgroundError: func(err error) {
			logger.Errorf("store: background error: %v", err)
			f.report(err)
		},
	}
	po.DisableAutomaticCompactions = o.noAutoCompactions
	return po
}

// Open opens (creating if absent) the store in dir and reads its applied
// index.
func Open(dir string, o Options) (*Store, error) {
	f := &failure{onFailure: o.OnFailure}
	po := pebbleOptions(o, f)
	faults := injectFaults(dir, po)
	cacheBytes := o.CacheBytes
	if cacheBytes <= 0 {
		cacheBytes = 64 << 20
	}
	cache := pebble.NewCache(cacheBytes)
	defer cache.Unref()
	po.Cache = cache
	s, err := openWith(dir, po, f, faults)
	if err != nil {
		return nil, err
	}
	faults.start(s)
	return s, nil
}

// openWith opens the Pebble database in dir with po and reads the store's
// applied index from it: Open's and OpenCheckpoint's shared part.
func openWith(dir string, po *pebble.Options, f *failure, faults *faultInjector) (*Store, error) {
	stalls := countWriteStalls(po)
	db, err := pebble.Open(dir, po)
	if err != nil {
		return nil, fmt.Errorf("store: open %s: %w", dir, err)
	}
	s := &Store{db: db, fs: po.FS, dir: dir, failure: f, faults: faults, writeStalls: stalls}
	meta, err := s.readMeta()
	if err != nil {
		_ = db.Close()
		return nil, err
	}
	s.applied.Store(meta.GetAppliedIndex())
	s.term.Store(meta.GetAppliedTerm())
	return s, nil
}

func (s *Store) readMeta() (*storepb.StoreMeta, error) {
	v, closer, err := s.db.Get(metaKey)
	if errors.Is(err, pebble.ErrNotFound) {
		return &storepb.StoreMeta{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("store: read meta: %w", err)
	}
	defer closer.Close()
	meta := &storepb.StoreMeta{}
	if err := proto.Unmarshal(v, meta); err != nil {
		return nil, fmt.Errorf("%w: meta record: %v", ErrCorrupt, err)
	}
	if meta.GetFormatVersion() > FormatVersion {
		return nil, fmt.Errorf("%w: store format %d is newer than this binary's %d", ErrCorrupt, meta.GetFormatVersion(), FormatVersion)
	}
	return meta, nil
}

// AppliedIndex is the index of the last Raft entry whose records the store
// holds. After a restart it is the index of the last flushed batch: the FSM
// replays the log from AppliedIndex()+1 and skips every entry at or below.
func (s *Store) AppliedIndex() uint64 { return s.applied.Load() }

// AppliedTerm is the term of the entry at AppliedIndex.
func (s *Store) AppliedTerm() uint64 { return s.term.Load() }

// Close flushes nothing (the Raft log holds what the memtables hold) and
// releases the store.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	s.faults.stop()
	s.snaps.Wait()
	if err := s.db.Close(); err != nil {
		return fmt.Errorf("store: close: %w", err)
	}
	return nil
}

// Flush writes the memtables to disk, so that what is applied so far
// survives a crash. Checkpoint flushes by itself; a node may call Flush
// before a planned shutdown to shorten the replay at restart.
func (s *Store) Flush() error {
	if err := s.db.Flush(); err != nil {
		return fmt.Errorf("store: flush: %w", err)
	}
	return nil
}

// FlushAsync starts a flush of what is applied so far and returns a
// function that waits for it. The caller records something now (a
// snapshot's index, FSM.Snapshot) and waits later, off its hot path, for
// it to be durable (the snapshot's Persist).
func (s *Store) FlushAsync() (wait func() error, err error) {
	done, err := s.db.AsyncFlush()
	if err != nil {
		return nil, fmt.Errorf("store: flush: %w", err)
	}
	return func() error {
		<-done
		return s.Failed() // a flush that failed reports it (and the node stops: Options.OnFailure)
	}, nil
}

// DiskBytes is the space the store's files take on disk (SSTs, manifest,
// and files still held by an open checkpoint's iterator), for the node's
// disk budget.
func (s *Store) DiskBytes() uint64 { return s.db.Metrics().DiskSpaceUsage() }

var marshal = proto.MarshalOptions{Deterministic: true}

// discardLogger drops Pebble's messages; Fatalf still stops the process,
// as Pebble expects.
type discardLogger struct{}

func (discardLogger) Infof(string, ...any)              {}
func (discardLogger) Errorf(string, ...any)             {}
func (discardLogger) Fatalf(format string, args ...any) { panic(fmt.Sprintf(format, args...)) }

// failure keeps the store's first background error (Options.OnFailure).
type failure struct {
	onFailure func(error)
	once      sync.Once
	err       atomic.Pointer[error]
}

func (f *failure) report(err error) {
	f.once.Do(func() {
		f.err.Store(&err)
		if f.onFailure != nil {
			f.onFailure(err)
		}
	})
}

// Failed is the first error of a background flush or compaction, nil while
// there was none (Options.OnFailure).
func (s *Store) Failed() error {
	if p := s.failure.err.Load(); p != nil {
		return *p
	}
	return nil
}
