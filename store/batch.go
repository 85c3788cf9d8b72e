package store

import (
	"errors"
	"fmt"

	"github.com/cockroachdb/pebble/v2"
	"google.golang.org/protobuf/proto"

	storepb "github.com/sepp-io/sepp/proto/seppstore/v1"
)

// Batch collects the records of one applied Raft entry, or of several
// applied together, and commits them with the applied index in one atomic
// write: after a crash the store holds either all of them and the new index
// or none of them and the old one.
//
// Deletion contract (what keeps the head of a queue cheap to read): a job
// body and a dead letter are written once and deleted once, so they are
// deleted with a SingleDelete, which vanishes with the value it deletes in
// the first compaction that sees both instead of sinking to the bottom
// level as a tombstone. The caller must never Put the same body or dead
// letter twice without a delete between (the engine never does: job ids are
// unique, and a redriven job is a new write after the dead letter's delete).
// Progress is overwritten while a job runs and deleted with a plain Delete.
//
// A method's error is kept and returned by Commit; a batch with an error
// commits nothing. A Batch is not safe for concurrent use.
type Batch struct {
	s   *Store
	b   *pebble.Batch
	err error
	buf []byte
}

// NewBatch starts an empty batch.
func (s *Store) NewBatch() *Batch {
	return &Batch{s: s, b: s.db.NewBatch()}
}

// NewIndexedBatch starts an empty batch that can be read (Job): a read
// sees the batch's own writes over the store's committed state, as the
// apply of one entry must see a body an earlier entry of the same batch
// wrote.
func (s *Store) NewIndexedBatch() *Batch {
	return &Batch{s: s, b: s.db.NewIndexedBatch()}
}

// Job reads one job's body as the batch would leave the store: its own
// writes and deletes over the committed state. The batch must be indexed.
func (b *Batch) Job(id uint64) (*storepb.JobBody, error) {
	v, closer, err := b.b.Get(bodyKey(id))
	if errors.Is(err, pebble.ErrNotFound) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("store: read job body in batch: %w", err)
	}
	defer closer.Close()
	m := &storepb.JobBody{}
	if err := proto.Unmarshal(v, m); err != nil {
		return nil, fmt.Errorf("%w: job body: %v", ErrCorrupt, err)
	}
	return m, nil
}

// NewJobReader opens a reader over the job bodies as this indexed batch
// sees them: its own writes over the store's. One reader serves several
// reads far more cheaply than a Get each (a Get sets up its way through
// every level again; the reader's iterator keeps it). Writes to the batch
// after it opened are not seen; close it before the next.
func (b *Batch) NewJobReader() (*JobReader, error) {
	return newJobReader(b.b.NewIter)
}

// Len is the batch's size in bytes (to cut a long load into batches).
func (b *Batch) Len() int { return b.b.Len() }

func (b *Batch) set(key []byte, m proto.Message, what string) {
	if b.err != nil {
		return
	}
	var err error
	b.buf, err = marshal.MarshalAppend(b.buf[:0], m)
	if err != nil {
		b.err = fmt.Errorf("store: marshal %s: %w", what, err)
		return
	}
	// Set copies key and value into the batch.
	if err := b.b.Set(key, b.buf, nil); err != nil {
		b.err = fmt.Errorf("store: batch %s: %w", what, err)
	}
}

// PutJob writes a job's body (at enqueue). The body must not exist.
func (b *Batch) PutJob(id uint64, body *storepb.JobBody) {
	b.set(bodyKey(id), body, "job body")
}

// DeleteJob deletes a job's body (the job was acked, dead-lettered, purged
// or expired). It does not touch the job's progress: see DeleteProgress.
func (b *Batch) DeleteJob(id uint64) {
	if b.err == nil {
		if err := b.b.SingleDelete(bodyKey(id), nil); err != nil {
			b.err = fmt.Errorf("store: batch delete job: %w", err)
		}
	}
}

// PutProgress writes or overwrites a job's progress (a nack, an expired
// lease, a release).
func (b *Batch) PutProgress(id uint64, p *storepb.JobProgress) {
	b.set(progressKey(id), p, "job progress")
}

// DeleteProgress deletes a job's progress. The engine calls it only for a
// job that has some (it keeps one bit per job saying so), so the common
// job, acked on its first delivery, leaves no tombstone of it.
func (b *Batch) DeleteProgress(id uint64) {
	if b.err == nil {
		if err := b.b.Delete(progressKey(id), nil); err != nil {
			b.err = fmt.Errorf("store: batch delete progress: %w", err)
		}
	}
}

// PutCompleted writes a completed job's record (at its ack). It must not
// exist: job ids are never reused, and a job is acked once.
func (b *Batch) PutCompleted(id uint64, c *storepb.CompletedJob) {
	b.set(completedKey(id), c, "completed job")
}

// DeleteCompleted deletes a completed job's record (its retention ended,
// or its queue was deleted): a SingleDelete, the record being written once.
func (b *Batch) DeleteCompleted(id uint64) {
	if b.err == nil {
		if err := b.b.SingleDelete(completedKey(id), nil); err != nil {
			b.err = fmt.Errorf("store: batch delete completed job: %w", err)
		}
	}
}

// PutDeadLetter writes a dead-letter record of queue. It must not exist.
func (b *Batch) PutDeadLetter(queue string, id uint64, d *storepb.DeadLetter) {
	if b.err != nil {
		return
	}
	k, err := deadKey(queue, id)
	if err != nil {
		b.err = fmt.Errorf("store: put dead letter: %w", err)
		return
	}
	b.set(k, d, "dead letter")
}

// DeleteDeadLetter deletes one dead-letter record (requeued, deleted or
// expired).
func (b *Batch) DeleteDeadLetter(queue string, id uint64) {
	if b.err != nil {
		return
	}
	k, err := deadKey(queue, id)
	if err == nil {
		err = b.b.SingleDelete(k, nil)
	}
	if err != nil {
		b.err = fmt.Errorf("store: delete dead letter: %w", err)
	}
}

// DeleteDeadLetters deletes every dead-letter record of queue with an id in
// [from, to) with one range tombstone (drain, queue delete): its cost does
// not grow with the number of records, and reads past the range skip it
// whole.
func (b *Batch) DeleteDeadLetters(queue string, from, to uint64) {
	if b.err != nil {
		return
	}
	p, err := deadPrefix(queue)
	if err == nil && from >= to {
		err = fmt.Errorf("%w: dead-letter range [%d, %d) is empty", ErrInvalidArgument, from, to)
	}
	if err == nil {
		start := append(append([]byte(nil), p...), idKey(0, from)[1:]...)
		end := append(append([]byte(nil), p...), idKey(0, to)[1:]...)
		err = b.b.DeleteRange(start, end, nil)
	}
	if err != nil {
		b.err = fmt.Errorf("store: delete dead letters: %w", err)
	}
}

// Empty reports whether the batch holds no record.
func (b *Batch) Empty() bool { return b.b.Empty() }

// Commit writes the batch's records and the applied index (and its term)
// atomically, without an fsync: the Raft log already holds the entries
// durably, and a crash that loses this write loses the index with it, so
// replay applies the entries again. index must be above AppliedIndex.
// Commit closes the batch.
func (b *Batch) Commit(index, term uint64) error {
	return b.commitLocked(func(s *Store) error { return b.commitIndexed(s, index, term) })
}

// commitLocked closes the batch and, unless it holds an error or the store
// is closed, runs commit under the store's lock.
func (b *Batch) commitLocked(commit func(s *Store) error) error {
	defer b.Close()
	if b.err != nil {
		return b.err
	}
	s := b.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	return commit(s)
}

func (b *Batch) commitIndexed(s *Store, index, term uint64) error {
	if cur := s.applied.Load(); index <= cur {
		return fmt.Errorf("%w: batch index %d, store at %d", ErrStaleIndex, index, cur)
	}
	meta, err := marshal.Marshal(&storepb.StoreMeta{FormatVersion: FormatVersion, AppliedIndex: index, AppliedTerm: term})
	if err != nil {
		return fmt.Errorf("store: marshal meta: %w", err)
	}
	if s.metaFirst {
		// The planted bug: the index in a batch of its own, ahead of the
		// data. A crash between the two, or a memtable switch between
		// them, leaves an index that claims records the store lacks.
		mb := s.db.NewBatch()
		if err := mb.Set(metaKey, meta, nil); err != nil {
			return fmt.Errorf("store: batch meta: %w", err)
		}
		if err := mb.Commit(pebble.NoSync); err != nil {
			return fmt.Errorf("store: commit meta: %w", err)
		}
	} else if err := b.b.Set(metaKey, meta, nil); err != nil {
		return fmt.Errorf("store: batch meta: %w", err)
	}
	if err := b.b.Commit(pebble.NoSync); err != nil {
		return fmt.Errorf("store: commit index %d: %w", index, err)
	}
	s.applied.Store(index)
	s.term.Store(term)
	return nil
}

// CommitUnindexed writes the batch's records without moving the applied
// index, for a store being filled from a snapshot in several batches: the
// next Commit (the first entry applied after the snapshot) sets the index.
// Commit closes the batch.
func (b *Batch) CommitUnindexed() error {
	return b.commitLocked(func(*Store) error {
		if err := b.b.Commit(pebble.NoSync); err != nil {
			return fmt.Errorf("store: commit load: %w", err)
		}
		return nil
	})
}

// Close releases an uncommitted batch; after Commit it does nothing.
func (b *Batch) Close() {
	if b.b != nil {
		_ = b.b.Close()
		b.b = nil
	}
}
