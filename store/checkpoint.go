package store

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// Checkpoint pins the store's state in dir (which must not exist) and
// returns the applied index it holds. It flushes the memtables, then hard
// links the store's files (SSTs are immutable, so a link is a copy that
// costs nothing; only the small MANIFEST and OPTIONS are copied). Its cost
// grows with the number of files, not with the bytes they hold.
//
// It must not run beside a commit: the FSM calls it from Snapshot, which
// raft runs on the apply goroutine, so the checkpoint holds exactly the
// entries up to the returned index.
func (s *Store) Checkpoint(dir string) (uint64, error) {
	index := s.applied.Load()
	if err := s.db.Flush(); err != nil {
		return 0, fmt.Errorf("store: checkpoint flush: %w", err)
	}
	if err := s.db.Checkpoint(dir); err != nil {
		return 0, fmt.Errorf("store: checkpoint %s: %w", dir, err)
	}
	return index, nil
}

// checkpointFiles lists a checkpoint's files in name order (a checkpoint
// has no subdirectories).
func checkpointFiles(fs vfs.FS, dir string) ([]string, error) {
	names, err := fs.List(dir)
	if err != nil {
		return nil, err
	}
	slices.Sort(names)
	return names, nil
}

func fsOf(o Options) vfs.FS {
	if o.FS == nil {
		return vfs.Default
	}
	return o.FS
}

// WriteCheckpoint streams the checkpoint in dir to w as a tar archive of its
// files, in name order. This is what a leader sends a follower that needs
// an install: the files as they are, read sequentially, without decoding a
// record.
func WriteCheckpoint(dir string, w io.Writer, o Options) error {
	fs := fsOf(o)
	names, err := checkpointFiles(fs, dir)
	if err != nil {
		return fmt.Errorf("store: list checkpoint %s: %w", dir, err)
	}
	tw := tar.NewWriter(w)
	for _, name := range names {
		if err := writeTarFile(fs, tw, dir, name); err != nil {
			return fmt.Errorf("store: stream checkpoint file %s: %w", name, err)
		}
	}
	if err := tw.Close(); err != nil {
		return fmt.Errorf("store: stream checkpoint: %w", err)
	}
	return nil
}

// tarBlock is tar's block: a header is one, a file's bytes are padded to
// whole blocks, and two zero blocks end the archive.
const tarBlock = 512

// CheckpointStreamBytes is the size of what WriteCheckpoint writes for the
// checkpoint in dir, from its files' sizes alone: raft must state a
// snapshot's size before it sends a byte, and a checkpoint's files never
// change once written.
func CheckpointStreamBytes(dir string, o Options) (int64, error) {
	fs := fsOf(o)
	names, err := checkpointFiles(fs, dir)
	if err != nil {
		return 0, fmt.Errorf("store: list checkpoint %s: %w", dir, err)
	}
	n := int64(2 * tarBlock)
	for _, name := range names {
		st, err := fs.Stat(fs.PathJoin(dir, name))
		if err != nil {
			return 0, fmt.Errorf("store: checkpoint file %s: %w", name, err)
		}
		if len(name) > 100 {
			// A longer name takes a PAX header of its own; Pebble's
			// names are short, and the size must be exact.
			return 0, fmt.Errorf("store: checkpoint file name %q is longer than a tar header holds", name)
		}
		n += tarBlock + (st.Size()+tarBlock-1)/tarBlock*tarBlock
	}
	return n, nil
}

func writeTarFile(fs vfs.FS, tw *tar.Writer, dir, name string) error {
	f, err := fs.Open(fs.PathJoin(dir, name))
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	if st.IsDir() {
		return errors.New("unexpected directory in a checkpoint")
	}
	if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: st.Size(), Typeflag: tar.TypeReg}); err != nil {
		return err
	}
	_, err = io.Copy(tw, f)
	return err
}

// maxCheckpointFiles bounds how many files ReadCheckpoint accepts, so a
// corrupt stream cannot fill a directory.
const maxCheckpointFiles = 1 << 20

// ReadCheckpoint writes a checkpoint streamed by WriteCheckpoint into dir
// (created; it must not exist) and syncs every file and the directory, so
// that a follower can rename it into place. It refuses names that are not
// plain file names.
func ReadCheckpoint(r io.Reader, dir string, o Options) error {
	fs := fsOf(o)
	if _, err := fs.Stat(dir); err == nil {
		return fmt.Errorf("%w: checkpoint target %s exists", ErrInvalidArgument, dir)
	}
	if err := fs.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("store: receive checkpoint: %w", err)
	}
	tr := tar.NewReader(r)
	for n := 0; ; n++ {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fmt.Errorf("%w: checkpoint stream: %v", ErrCorrupt, err)
		}
		if n >= maxCheckpointFiles {
			return fmt.Errorf("%w: checkpoint stream holds more than %d files", ErrCorrupt, maxCheckpointFiles)
		}
		if h.Typeflag != tar.TypeReg || h.Name == "" || h.Name == "." || h.Name == ".." || strings.ContainsAny(h.Name, `/\`) {
			return fmt.Errorf("%w: checkpoint stream entry %q is not a plain file", ErrCorrupt, h.Name)
		}
		if err := readTarFile(fs, tr, fs.PathJoin(dir, h.Name)); err != nil {
			return fmt.Errorf("store: receive checkpoint file %s: %w", h.Name, err)
		}
		if n == 0 {
			killInInstall(dir, "staging") // a test build's crash point (faultinject_on.go)
		}
	}
	d, err := fs.OpenDir(dir)
	if err != nil {
		return fmt.Errorf("store: receive checkpoint: %w", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("store: sync checkpoint dir: %w", err)
	}
	return nil
}

func readTarFile(fs vfs.FS, r io.Reader, path string) error {
	f, err := fs.Create(path, vfs.WriteCategoryUnspecified)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, r); err != nil {
		_ = f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}

// Install replaces the store in dir by the checkpoint in staged (written by
// ReadCheckpoint or Checkpoint on the same file system) and opens it. The
// store in dir must be closed. The old store moves aside to dir+".old"
// before the rename and is removed after it; if a crash leaves dir missing,
// the next Install or Recover puts the old one back.
func Install(staged, dir string, o Options) (*Store, error) {
	fs := fsOf(o)
	old := dir + ".old"
	if err := Recover(dir, o); err != nil {
		return nil, err
	}
	_ = fs.RemoveAll(old)
	if _, err := fs.Stat(dir); err == nil {
		if err := fs.Rename(dir, old); err != nil {
			return nil, fmt.Errorf("store: install: move old store aside: %w", err)
		}
		killInInstall(dir, "swapping") // a test build's crash point (faultinject_on.go)
	}
	if err := fs.Rename(staged, dir); err != nil {
		return nil, fmt.Errorf("store: install: %w", err)
	}
	if err := syncParent(fs, dir); err != nil {
		return nil, fmt.Errorf("store: install: %w", err)
	}
	if err := fs.RemoveAll(old); err != nil {
		return nil, fmt.Errorf("store: install: remove old store: %w", err)
	}
	return Open(dir, o)
}

// Recover puts back a store that an Install interrupted by a crash moved
// aside (dir missing, dir+".old" present). It does nothing otherwise.
func Recover(dir string, o Options) error {
	fs := fsOf(o)
	if _, err := fs.Stat(dir); err == nil {
		return nil
	}
	old := dir + ".old"
	if _, err := fs.Stat(old); err != nil {
		return nil
	}
	if err := fs.Rename(old, dir); err != nil {
		return fmt.Errorf("store: recover %s: %w", dir, err)
	}
	return syncParent(fs, dir)
}

func syncParent(fs vfs.FS, path string) error {
	d, err := fs.OpenDir(fs.PathDir(path))
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// OpenCheckpoint opens the checkpoint in dir (written by Checkpoint) read
// only, to read what it pinned: a node serves a snapshot's payloads from
// its checkpoint long after the store has moved on (fsm, snapshot
// checkpoints). Nothing is written to dir; Close releases it.
func OpenCheckpoint(dir string, o Options) (*Store, error) {
	f := &failure{}
	po := pebbleOptions(o, f)
	po.ReadOnly = true
	// A read of a snapshot's payloads streams each block once: a small
	// cache of its own, apart from the store's.
	cache := pebble.NewCache(8 << 20)
	defer cache.Unref()
	po.Cache = cache
	return openWith(dir, po, f, nil)
}
