package store

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/cockroachdb/pebble/v2/objstorage/objstorageprovider"
	"github.com/cockroachdb/pebble/v2/sstable"

	storepb "github.com/sepp-io/sepp/proto/seppstore/v1"
)

// loadDir is the folder inside the store's directory where a Load stages
// its tables until it adds them. Pebble keeps no file of its own in a
// subfolder, and a store emptied for a load (its directory removed) takes a
// crashed load's leftovers with it.
const loadDir = "load"

// loadTableBytes is about how much of a load one staged table holds: large
// enough that a backlog is a few dozen files, small enough that a table
// being written holds little in memory.
const loadTableBytes = 64 << 20

// A Load fills an empty store with job bodies in ascending id order,
// writing them straight into tables that it then adds to the store in one
// step (Pebble's ingest). A batch load would write each body into a
// memtable, flush it into a level-0 table and compact it down the levels;
// a table written once in key order is what those steps end with, so a
// follower refilling its store from a snapshot it installs writes each
// body once, at about the disk's speed.
//
// Until Finish returns, the store holds none of the load's bodies. A crash
// before that leaves staged files in the store's load folder, which the
// next emptying of the store removes (a store whose load never finished has
// no applied index, so a restart empties it and loads the snapshot again).
// A Load is not safe for concurrent use.
type Load struct {
	s          *Store
	opts       sstable.WriterOptions
	tableBytes uint64 // loadTableBytes; tests cut tables smaller
	w          *sstable.Writer
	path       string // of the table being written
	paths      []string
	lastID     uint64
	any        bool
	buf        []byte
	key        []byte
	err        error
}

// NewLoad starts a load into s, which must hold no job body (a store just
// emptied for a snapshot's bodies): an ingested table's keys must not
// overlap what the store holds, or Pebble flushes the store's memtables
// first.
func (s *Store) NewLoad() (*Load, error) {
	dir := s.fs.PathJoin(s.dir, loadDir)
	if err := s.fs.RemoveAll(dir); err != nil {
		return nil, fmt.Errorf("store: load: %w", err)
	}
	if err := s.fs.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("store: load: %w", err)
	}
	return &Load{s: s, opts: s.loadWriterOptions(), tableBytes: loadTableBytes, key: make([]byte, 0, 9)}, nil
}

// loadWriterOptions are the table options of the store's last level, where
// an ingest into an empty key range puts the tables, in the newest table
// format the store's pinned Pebble format allows.
func (s *Store) loadWriterOptions() sstable.WriterOptions {
	po := pebbleOptions(Options{FS: s.fs}, &failure{})
	po.EnsureDefaults()
	return po.MakeWriterOptions(len(po.Levels)-1, s.db.TableFormat())
}

// PutJob adds a job's body. Ids must ascend: a load writes tables in key
// order. An error is kept: every later call and Finish return it.
func (l *Load) PutJob(id uint64, body *storepb.JobBody) error {
	if l.err != nil {
		return l.err
	}
	if l.any && id <= l.lastID {
		l.err = fmt.Errorf("%w: load: job %d after job %d, ids must ascend", ErrInvalidArgument, id, l.lastID)
		return l.err
	}
	l.lastID, l.any = id, true
	var err error
	if l.buf, err = marshal.MarshalAppend(l.buf[:0], body); err != nil {
		l.err = fmt.Errorf("store: load: marshal job body %d: %w", id, err)
		return l.err
	}
	if l.w == nil {
		if l.err = l.nextTable(); l.err != nil {
			return l.err
		}
	}
	l.key = binary.BigEndian.AppendUint64(append(l.key[:0], kindBody), id) // bodyKey's layout
	if err := l.w.Set(l.key, l.buf); err != nil {
		l.err = fmt.Errorf("store: load: write job body %d: %w", id, err)
		return l.err
	}
	if l.w.Raw().EstimatedSize() >= l.tableBytes {
		l.err = l.closeTable()
	}
	return l.err
}

// nextTable opens the next staged table.
func (l *Load) nextTable() error {
	path := l.s.fs.PathJoin(l.s.dir, loadDir, fmt.Sprintf("%06d.sst", len(l.paths)+1))
	f, err := l.s.fs.Create(path, "")
	if err != nil {
		return fmt.Errorf("store: load: %w", err)
	}
	l.w = sstable.NewWriter(objstorageprovider.NewFileWritable(f), l.opts)
	l.path = path
	return nil
}

// closeTable finishes the table being written (its close syncs the file).
func (l *Load) closeTable() error {
	if l.w == nil {
		return nil
	}
	err := l.w.Close()
	l.w = nil
	if err != nil {
		return fmt.Errorf("store: load: close %s: %w", l.path, err)
	}
	l.paths = append(l.paths, l.path)
	return nil
}

// Finish adds every staged table to the store in one step and removes the
// staging folder. The bodies are then in the store, in its last level; the
// store's applied index is not changed (a batch committed after it says
// what the store now holds, as a batch load's last batch does).
func (l *Load) Finish(ctx context.Context) error {
	if l.err != nil {
		l.Abort()
		return l.err
	}
	if err := l.closeTable(); err != nil {
		l.Abort()
		return err
	}
	if len(l.paths) > 0 {
		if err := l.s.db.Ingest(ctx, l.paths); err != nil {
			l.Abort()
			return fmt.Errorf("store: load: ingest %d tables: %w", len(l.paths), err)
		}
	}
	l.err = errors.New("store: load finished")
	return l.removeStaged()
}

// Abort drops the load: nothing it wrote reaches the store.
func (l *Load) Abort() {
	if l.w != nil {
		_ = l.w.Close()
		l.w = nil
	}
	if l.err == nil {
		l.err = errors.New("store: load aborted")
	}
	_ = l.removeStaged()
}

func (l *Load) removeStaged() error {
	if err := l.s.fs.RemoveAll(l.s.fs.PathJoin(l.s.dir, loadDir)); err != nil {
		return fmt.Errorf("store: load: %w", err)
	}
	return nil
}
