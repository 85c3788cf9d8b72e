package fsm

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"

	"github.com/sepp-io/sepp/store"
)

// Snapshot checkpoints (issue 35 item 3): a snapshot copies no payload.
//
// A format 4 snapshot ends with the payload section: every job body, 3 GiB
// at 10M jobs of 256 B, read from the store and written by every snapshot,
// though a node reads it only when it installs the snapshot from a leader
// or rebuilds its store. With a checkpoint directory configured
// (Config.SnapshotCheckpointDir), Snapshot pins the store's state at the
// snapshot's index with store.Checkpoint (a flush and hard links, under the
// lock with the engine's part), and the snapshot kept on disk stops after
// the first checksum: meta, the engine's part, the completed section. The
// payload section is produced from the checkpoint when the snapshot is
// opened (Open below) and read that far: when raft sends it to a follower,
// or restores it over a store behind it. What goes over the wire, and what
// every reader sees, is the format 4 stream byte for byte, so followers of
// any binary that restores format 4 install it, and nothing is gated.
//
// On disk, beside raft's snapshots folder, the root holds per snapshot id
// the checkpoint (a directory of Pebble files linked to the store's) and
// <id>.json stating the payload section's size, which raft must know
// before it sends a byte (InstallSnapshotRequest.Size). Snapshot writes the
// checkpoint under a pending name; the sink renames it to the snapshot's
// id before raft finalises the snapshot, so a crash leaves either a pending
// directory or an id raft does not list, both removed at the next start.
// A checkpoint is removed once raft no longer lists its snapshot (raft
// reaps all but the newest few), unless it is being read.

const (
	checkpointPendingPrefix = "pending-"
	checkpointInfoSuffix    = ".json"
)

// checkpointInfo is <id>.json: what Open needs to stream the payload
// section without reading it first.
type checkpointInfo struct {
	// PayloadSectionBytes is the section's size without its checksum.
	PayloadSectionBytes int64 `json:"payload_section_bytes"`
	// StoreFiles says that the section is the checkpoint's files (format
	// 5), not its payload records (format 4).
	StoreFiles bool `json:"store_files,omitempty"`
}

// CheckpointSnapshots wraps raft's snapshot store for a state machine
// configured with Config.SnapshotCheckpointDir = root: snapshots persisted
// through it keep their payloads in a checkpoint under root, and Open
// serves them whole. It removes what a crash left under root.
func CheckpointSnapshots(inner raft.SnapshotStore, root string, logger hclog.Logger) (raft.SnapshotStore, error) {
	if logger == nil {
		logger = hclog.NewNullLogger()
	}
	if err := os.MkdirAll(root, 0o755); err != nil {
		return nil, fmt.Errorf("fsm: snapshot checkpoints: %w", err)
	}
	c := &checkpointSnapshots{SnapshotStore: inner, root: root, log: logger, busy: map[string]int{}, open: map[string]*openCheckpoint{}}
	c.collect(true)
	return c, nil
}

type checkpointSnapshots struct {
	raft.SnapshotStore
	root string
	log  hclog.Logger

	mu sync.Mutex
	// busy counts, per snapshot id, the sinks writing it and the readers
	// streaming its checkpoint: collect leaves those alone.
	busy map[string]int
	// open holds, per snapshot id, the checkpoint opened for the readers
	// streaming it: Pebble locks a directory it opens, even read only, so
	// two followers sent the same snapshot at once share one handle.
	open map[string]*openCheckpoint
}

// openCheckpoint is a checkpoint opened read only and its readers.
type openCheckpoint struct {
	st   *store.Store
	refs int
}

// acquire returns the checkpoint of snapshot id opened read only, opening
// it for its first reader; release closes it after its last.
func (c *checkpointSnapshots) acquire(id, dir string) (*store.Store, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if oc := c.open[id]; oc != nil {
		oc.refs++
		return oc.st, nil
	}
	st, err := store.OpenCheckpoint(dir, store.Options{})
	if err != nil {
		return nil, err
	}
	c.open[id] = &openCheckpoint{st: st, refs: 1}
	return st, nil
}

func (c *checkpointSnapshots) releaseStore(id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	oc := c.open[id]
	if oc == nil {
		return
	}
	if oc.refs--; oc.refs == 0 {
		delete(c.open, id)
		if err := oc.st.Close(); err != nil {
			c.log.Warn("snapshot checkpoints: closing a checkpoint", "snapshot", id, "error", err)
		}
	}
}

// Create starts a snapshot whose sink can adopt a checkpoint.
func (c *checkpointSnapshots) Create(version raft.SnapshotVersion, index, term uint64, configuration raft.Configuration, configurationIndex uint64, trans raft.Transport) (raft.SnapshotSink, error) {
	sink, err := c.SnapshotStore.Create(version, index, term, configuration, configurationIndex, trans)
	if err != nil {
		return nil, err
	}
	c.hold(sink.ID())
	return &checkpointSink{SnapshotSink: sink, c: c}, nil
}

// List is raft's list, each snapshot's size the whole stream's, as Open
// states it.
func (c *checkpointSnapshots) List() ([]*raft.SnapshotMeta, error) {
	snaps, err := c.SnapshotStore.List()
	if err != nil {
		return nil, err
	}
	out := make([]*raft.SnapshotMeta, len(snaps))
	for i, m := range snaps {
		out[i] = m
		if info, ok, err := c.info(m.ID); err == nil && ok {
			whole := *m
			whole.Size += info.PayloadSectionBytes + 4
			out[i] = &whole
		}
	}
	return out, nil
}

// Open returns the snapshot as its state machine wrote it, the payload
// section included: for a snapshot whose payloads stay in a checkpoint,
// the stored part followed by the section read from the checkpoint.
func (c *checkpointSnapshots) Open(id string) (*raft.SnapshotMeta, io.ReadCloser, error) {
	meta, rc, err := c.SnapshotStore.Open(id)
	if err != nil {
		return nil, nil, err
	}
	info, ok, err := c.info(id)
	if err != nil || !ok {
		if err != nil {
			_ = rc.Close()
		}
		return meta, rc, err
	}
	dir := filepath.Join(c.root, id)
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		_ = rc.Close()
		return nil, nil, fmt.Errorf("fsm: snapshot %s keeps its payloads in the checkpoint %s, which is missing: %v", id, dir, err)
	}
	whole := *meta
	whole.Size += info.PayloadSectionBytes + 4 // the section and its checksum
	c.hold(id)
	return &whole, &checkpointReader{
		stored: rc,
		c:      c,
		id:     id,
		dir:    dir,
		want:   info.PayloadSectionBytes,
		files:  info.StoreFiles,
	}, nil
}

// info reads <id>.json; ok is false when the snapshot has no checkpoint.
func (c *checkpointSnapshots) info(id string) (checkpointInfo, bool, error) {
	if id != filepath.Base(id) || strings.HasPrefix(id, ".") {
		return checkpointInfo{}, false, fmt.Errorf("fsm: snapshot id %q is not a folder name", id)
	}
	data, err := os.ReadFile(filepath.Join(c.root, id+checkpointInfoSuffix))
	if errors.Is(err, os.ErrNotExist) {
		return checkpointInfo{}, false, nil
	}
	if err != nil {
		return checkpointInfo{}, false, fmt.Errorf("fsm: snapshot %s: %w", id, err)
	}
	var info checkpointInfo
	if err := json.Unmarshal(data, &info); err != nil || info.PayloadSectionBytes < 8 {
		return checkpointInfo{}, false, fmt.Errorf("fsm: snapshot %s: %s does not hold a payload section size (%v)", id, id+checkpointInfoSuffix, err)
	}
	return info, true, nil
}

func (c *checkpointSnapshots) hold(id string) {
	c.mu.Lock()
	c.busy[id]++
	c.mu.Unlock()
}

func (c *checkpointSnapshots) release(id string) {
	c.mu.Lock()
	if c.busy[id]--; c.busy[id] <= 0 {
		delete(c.busy, id)
	}
	c.mu.Unlock()
	c.collect(false)
}

// collect removes the checkpoints of snapshots raft no longer lists (it
// reaped them) and, at start (pending true), the pending checkpoints a
// crash left; a checkpoint being written or read stays.
func (c *checkpointSnapshots) collect(pending bool) {
	snaps, err := c.SnapshotStore.List() // raft's own, not the sizes above
	if err != nil {
		c.log.Warn("snapshot checkpoints: cannot list the snapshots; nothing removed", "error", err)
		return
	}
	keep := make(map[string]bool, len(snaps))
	for _, s := range snaps {
		keep[s.ID] = true
	}
	ents, err := os.ReadDir(c.root)
	if err != nil {
		c.log.Warn("snapshot checkpoints: cannot read their folder; nothing removed", "error", err)
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, e := range ents {
		name := e.Name()
		id := strings.TrimSuffix(name, checkpointInfoSuffix)
		switch {
		case strings.HasPrefix(name, checkpointPendingPrefix):
			if !pending {
				continue // a Snapshot's, not yet persisted
			}
		case keep[id] || c.busy[id] > 0:
			continue
		}
		if err := os.RemoveAll(filepath.Join(c.root, name)); err != nil {
			c.log.Warn("snapshot checkpoints: cannot remove", "name", name, "error", err)
		}
	}
}

// checkpointAdopter is a sink that can keep a snapshot's payloads in its
// checkpoint: Persist hands it the pending checkpoint and the payload
// section's size after writing everything before the section.
type checkpointAdopter interface {
	adopt(pending string, sectionBytes int64, storeFiles bool)
}

// checkpointSink is raft's sink with a checkpoint to move into place.
type checkpointSink struct {
	raft.SnapshotSink
	c       *checkpointSnapshots
	pending string
	section int64
	files   bool
	ended   bool
}

func (s *checkpointSink) adopt(pending string, sectionBytes int64, storeFiles bool) {
	s.pending, s.section, s.files = pending, sectionBytes, storeFiles
}

// Close moves the adopted checkpoint to the snapshot's id, with its size,
// durably, then lets raft finalise the snapshot; a snapshot raft lists
// thus always finds its checkpoint.
func (s *checkpointSink) Close() error {
	if s.ended {
		return nil
	}
	s.ended = true
	defer s.c.release(s.ID())
	if s.pending == "" {
		return s.SnapshotSink.Close()
	}
	id := s.ID()
	dir := filepath.Join(s.c.root, id)
	infoPath := dir + checkpointInfoSuffix
	err := writeFileSynced(infoPath, checkpointInfo{PayloadSectionBytes: s.section, StoreFiles: s.files})
	if err == nil {
		err = os.Rename(s.pending, dir)
	}
	if err == nil {
		err = syncDir(s.c.root)
	}
	if err != nil {
		_ = s.SnapshotSink.Cancel()
		_ = os.RemoveAll(dir)
		_ = os.Remove(infoPath)
		return fmt.Errorf("fsm: snapshot %s: keep its checkpoint: %w", id, err)
	}
	if err := s.SnapshotSink.Close(); err != nil {
		_ = os.RemoveAll(dir)
		_ = os.Remove(infoPath)
		return err
	}
	return nil
}

// Cancel drops the snapshot; the pending checkpoint is its FSMSnapshot's
// to remove (Release).
func (s *checkpointSink) Cancel() error {
	if s.ended {
		return nil
	}
	s.ended = true
	defer s.c.release(s.ID())
	return s.SnapshotSink.Cancel()
}

func writeFileSynced(path string, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		_ = f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// checkpointReader is a snapshot read whole: the stored part, then the
// payload section (format 4) or the store's files (format 5) streamed
// from the checkpoint, which is opened only if the reader gets that far.
type checkpointReader struct {
	stored io.ReadCloser
	c      *checkpointSnapshots
	id     string
	dir    string
	want   int64
	files  bool

	storedDone bool
	pr         *io.PipeReader
	done       chan struct{}
	closed     bool
}

func (r *checkpointReader) Read(p []byte) (int, error) {
	if !r.storedDone {
		n, err := r.stored.Read(p)
		if errors.Is(err, io.EOF) {
			r.storedDone = true
			err = nil
		}
		if n > 0 || err != nil {
			return n, err
		}
	}
	if r.pr == nil {
		pr, pw := io.Pipe()
		r.pr, r.done = pr, make(chan struct{})
		go func() {
			defer close(r.done)
			bw := bufio.NewWriterSize(pw, 1<<20)
			var err error
			if r.files {
				err = writeCheckpointFiles(bw, r.dir, r.want)
			} else {
				var st *store.Store
				if st, err = r.c.acquire(r.id, r.dir); err == nil {
					err = writeStorePayloads(bw, st, r.dir, r.want)
					r.c.releaseStore(r.id)
				}
			}
			if err == nil {
				err = bw.Flush()
			}
			if err != nil && !errors.Is(err, io.ErrClosedPipe) { // not a reader that stopped early
				r.c.log.Error("snapshot checkpoints: streaming a snapshot's payloads failed", "snapshot", r.id, "error", err)
			}
			pw.CloseWithError(err) // nil: io.EOF for the reader
		}()
	}
	return r.pr.Read(p)
}

// Close stops the stream and lets the checkpoint be removed once raft no
// longer lists its snapshot.
func (r *checkpointReader) Close() error {
	if r.closed {
		return nil
	}
	r.closed = true
	err := r.stored.Close()
	if r.pr != nil {
		_ = r.pr.CloseWithError(io.ErrClosedPipe) // the writer stops at its next write
		<-r.done
	}
	r.c.release(r.id)
	return err
}

// writeCheckpointSection writes a snapshot's last section from the
// checkpoint in dir, as opening the snapshot streams it: format 5's files
// (files) or format 4's payload records, then the section's checksum.
func writeCheckpointSection(w io.Writer, dir string, want int64, files bool) error {
	if files {
		return writeCheckpointFiles(w, dir, want)
	}
	return writeCheckpointPayloads(w, dir, want)
}

// writeCheckpointPayloads writes the payload section of format 4 from the
// checkpoint in dir, then its checksum: exactly want bytes and 4 more, or
// an error (a checkpoint that does not hold what its snapshot stated).
func writeCheckpointPayloads(w io.Writer, dir string, want int64) error {
	st, err := store.OpenCheckpoint(dir, store.Options{})
	if err != nil {
		return err
	}
	defer st.Close()
	return writeStorePayloads(w, st, dir, want)
}

// writeStorePayloads is writeCheckpointPayloads from the checkpoint in dir
// opened as st.
func writeStorePayloads(w io.Writer, st *store.Store, dir string, want int64) error {
	view, err := st.NewSnapshot()
	if err != nil {
		return err
	}
	defer view.Close()
	crc := crc32.New(castagnoli)
	counted := &countingWriter{w: io.MultiWriter(w, crc)}
	if err := writePayloadSection(counted, view); err != nil {
		return err
	}
	if counted.n != want {
		return fmt.Errorf("checkpoint %s holds a payload section of %d bytes, its snapshot states %d", dir, counted.n, want)
	}
	_, err = w.Write(binary.BigEndian.AppendUint32(nil, crc.Sum32()))
	return err
}

// writeCheckpointFiles writes format 5's last section from the checkpoint
// in dir: its files as store.WriteCheckpoint archives them, then their
// checksum; want is the archive's size its snapshot stated, which it must
// be.
func writeCheckpointFiles(w io.Writer, dir string, want int64) error {
	crc := crc32.New(castagnoli)
	counted := &countingWriter{w: io.MultiWriter(w, crc)}
	if err := store.WriteCheckpoint(dir, counted, store.Options{}); err != nil {
		return err
	}
	if counted.n != want {
		return fmt.Errorf("checkpoint %s streams %d bytes of files, its snapshot states %d", dir, counted.n, want)
	}
	_, err := w.Write(binary.BigEndian.AppendUint32(nil, crc.Sum32()))
	return err
}

type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// CheckpointPinnedBytes is the disk space the snapshots' checkpoints hold
// beyond the payload store's own files: a checkpoint's files are hard
// links to the store's, free while the store keeps them, and held by the
// checkpoint alone once a compaction dropped them from the store, until
// raft drops the snapshot. 0 without checkpoints. Files are counted once
// however many checkpoints link them, by their allocated blocks (as du
// counts them).
func (f *FSM) CheckpointPinnedBytes() uint64 {
	if f.cfg.SnapshotCheckpointDir == "" || f.cfg.PayloadDir == "" {
		return 0
	}
	type inode struct{ dev, ino uint64 }
	live := map[inode]bool{}
	var pinned uint64
	walk := func(dir string, fn func(id inode, st *syscall.Stat_t)) {
		_ = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return nil // a file removed while walking: skipped
			}
			info, err := d.Info()
			if err != nil {
				return nil
			}
			if st, ok := info.Sys().(*syscall.Stat_t); ok {
				fn(inode{uint64(st.Dev), st.Ino}, st) //nolint:unconvert // Dev's type differs between platforms
			}
			return nil
		})
	}
	walk(f.cfg.PayloadDir, func(id inode, _ *syscall.Stat_t) { live[id] = true })
	walk(f.cfg.SnapshotCheckpointDir, func(id inode, st *syscall.Stat_t) {
		if !live[id] {
			live[id] = true                   // once, however many checkpoints link it
			pinned += uint64(st.Blocks) * 512 //nolint:gosec // a file's blocks, never negative
		}
	})
	return pinned
}
