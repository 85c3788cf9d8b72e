package store

import (
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"

	"github.com/cockroachdb/pebble/v2"
	"google.golang.org/protobuf/proto"

	storepb "github.com/sepp-io/sepp/proto/seppstore/v1"
)

func (s *Store) get(key []byte, m proto.Message, what string) error {
	v, closer, err := s.db.Get(key)
	if errors.Is(err, pebble.ErrNotFound) {
		return ErrNotFound
	}
	if err != nil {
		return fmt.Errorf("store: read %s: %w", what, err)
	}
	defer closer.Close()
	if err := proto.Unmarshal(v, m); err != nil {
		return fmt.Errorf("%w: %s: %v", ErrCorrupt, what, err)
	}
	return nil
}

// Job reads one job's body; ErrNotFound if the store holds none.
func (s *Store) Job(id uint64) (*storepb.JobBody, error) {
	m := &storepb.JobBody{}
	if err := s.get(bodyKey(id), m, "job body"); err != nil {
		return nil, err
	}
	return m, nil
}

// Progress reads one job's progress; ErrNotFound if it has none.
func (s *Store) Progress(id uint64) (*storepb.JobProgress, error) {
	m := &storepb.JobProgress{}
	if err := s.get(progressKey(id), m, "job progress"); err != nil {
		return nil, err
	}
	return m, nil
}

// Completed reads one completed job's record; ErrNotFound if absent.
func (s *Store) Completed(id uint64) (*storepb.CompletedJob, error) {
	m := &storepb.CompletedJob{}
	if err := s.get(completedKey(id), m, "completed job"); err != nil {
		return nil, err
	}
	return m, nil
}

// DeadLetter reads one dead-letter record; ErrNotFound if absent.
func (s *Store) DeadLetter(queue string, id uint64) (*storepb.DeadLetter, error) {
	k, err := deadKey(queue, id)
	if err != nil {
		return nil, err
	}
	m := &storepb.DeadLetter{}
	if err := s.get(k, m, "dead letter"); err != nil {
		return nil, err
	}
	return m, nil
}

// Jobs calls fn with the body of each job in ids, in ascending id order,
// through one iterator bounded to [min id, max id]: the bodies the engine
// hands out together (a reservation of a queue's head) are neighbours on
// disk, so each lookup after the first is a short step forward, not a
// point lookup from the root. An id with no body is passed with a nil body.
// ids is sorted in place. fn must not keep body's buffers beyond the call
// (they are decoded copies, so it may keep body itself).
func (s *Store) Jobs(ids []uint64, fn func(id uint64, body *storepb.JobBody) error) error {
	if len(ids) == 0 {
		return nil
	}
	slices.Sort(ids)
	it, err := s.db.NewIter(&pebble.IterOptions{
		LowerBound: bodyKey(ids[0]),
		UpperBound: prefixEnd(bodyKey(ids[len(ids)-1])),
	})
	if err != nil {
		return fmt.Errorf("store: iterator: %w", err)
	}
	defer it.Close()
	key := make([]byte, 9)
	key[0] = kindBody
	for _, id := range ids {
		binary.BigEndian.PutUint64(key[1:], id)
		// Ascending seeks: Pebble steps forward from the last position
		// when the target is past it.
		if !it.SeekGE(key) || keyID(it.Key()) != id {
			if err := it.Error(); err != nil {
				return fmt.Errorf("store: read job bodies: %w", err)
			}
			if err := fn(id, nil); err != nil {
				return err
			}
			continue
		}
		m := &storepb.JobBody{}
		if err := proto.Unmarshal(it.Value(), m); err != nil {
			return fmt.Errorf("%w: job body %d: %v", ErrCorrupt, id, err)
		}
		if err := fn(id, m); err != nil {
			return err
		}
	}
	return it.Error()
}

// JobRange calls fn with each job body of an id in [from, to), in id
// order, until fn returns false. The iterator is bounded to the range, so
// it never steps over the tombstones of jobs deleted below from.
func (s *Store) JobRange(from, to uint64, fn func(id uint64, body *storepb.JobBody) bool) error {
	if from >= to {
		return nil
	}
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: bodyKey(from), UpperBound: bodyKey(to)})
	if err != nil {
		return fmt.Errorf("store: iterator: %w", err)
	}
	defer it.Close()
	for ok := it.First(); ok; ok = it.Next() {
		m := &storepb.JobBody{}
		if err := proto.Unmarshal(it.Value(), m); err != nil {
			return fmt.Errorf("%w: job body %d: %v", ErrCorrupt, keyID(it.Key()), err)
		}
		if !fn(keyID(it.Key()), m) {
			break
		}
	}
	if err := it.Error(); err != nil {
		return fmt.Errorf("store: read job bodies: %w", err)
	}
	return nil
}

// DeadLetters calls fn with the dead letters of queue whose id is above
// after, in id order, at most limit of them (limit <= 0: no limit), until fn
// returns false. It is the page read of the dead-letter list: the next page
// starts after the last id of this one.
func (s *Store) DeadLetters(queue string, after uint64, limit int, fn func(id uint64, d *storepb.DeadLetter) bool) error {
	p, err := deadPrefix(queue)
	if err != nil {
		return err
	}
	lower := append(append([]byte(nil), p...), idKey(0, after)[1:]...)
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: prefixEnd(p)})
	if err != nil {
		return fmt.Errorf("store: iterator: %w", err)
	}
	defer it.Close()
	n := 0
	for ok := it.First(); ok && (limit <= 0 || n < limit); ok = it.Next() {
		id := keyID(it.Key())
		if id == after {
			continue
		}
		m := &storepb.DeadLetter{}
		if err := proto.Unmarshal(it.Value(), m); err != nil {
			return fmt.Errorf("%w: dead letter %s/%d: %v", ErrCorrupt, queue, id, err)
		}
		n++
		if !fn(id, m) {
			break
		}
	}
	if err := it.Error(); err != nil {
		return fmt.Errorf("store: read dead letters: %w", err)
	}
	return nil
}

// Digest is a SHA-256 of the store's logical content: every data key and
// value in key order, each length-prefixed, and the applied index. It
// depends on what the batches wrote, not on how Pebble laid it out (flushes,
// compactions, SST boundaries), so replicas that applied the same entries
// have equal digests. It reads a consistent snapshot and may run beside
// commits; it walks the whole store (O(size)), so the FSM runs it only when
// asked to compare replicas.
func (s *Store) Digest() ([32]byte, uint64, error) {
	snap := s.db.NewSnapshot()
	defer snap.Close()
	var applied uint64
	v, closer, err := snap.Get(metaKey)
	switch {
	case err == nil:
		meta := &storepb.StoreMeta{}
		uerr := proto.Unmarshal(v, meta)
		closer.Close()
		if uerr != nil {
			return [32]byte{}, 0, fmt.Errorf("%w: meta record: %v", ErrCorrupt, uerr)
		}
		applied = meta.GetAppliedIndex()
	case !errors.Is(err, pebble.ErrNotFound):
		return [32]byte{}, 0, fmt.Errorf("store: digest: %w", err)
	}
	it, err := snap.NewIter(&pebble.IterOptions{LowerBound: []byte{kindBody}, UpperBound: []byte{kindEnd}})
	if err != nil {
		return [32]byte{}, 0, fmt.Errorf("store: digest: %w", err)
	}
	defer it.Close()
	h := sha256.New()
	var lenBuf [binary.MaxVarintLen64]byte
	h.Write(binary.AppendUvarint(lenBuf[:0], applied))
	for ok := it.First(); ok; ok = it.Next() {
		k, v := it.Key(), it.Value()
		h.Write(binary.AppendUvarint(lenBuf[:0], uint64(len(k))))
		h.Write(k)
		h.Write(binary.AppendUvarint(lenBuf[:0], uint64(len(v))))
		h.Write(v)
	}
	if err := it.Error(); err != nil {
		return [32]byte{}, 0, fmt.Errorf("store: digest: %w", err)
	}
	var sum [32]byte
	h.Sum(sum[:0])
	return sum, applied, nil
}

// JobReader reads job bodies one at a time through one iterator over the
// store as it was when the reader was made: reads in ascending id order
// (a snapshot of the engine writes its jobs so) step forward instead of
// descending from the root for each body as Job does. Not safe for
// concurrent use; Close it when done (it pins the files it reads).
type JobReader struct {
	it  *pebble.Iterator
	key []byte
}

// NewJobReader opens a reader over the job bodies.
func (s *Store) NewJobReader() (*JobReader, error) {
	return newJobReader(s.db.NewIter)
}

// newJobReader opens a JobReader on an iterator over the job bodies that
// newIter (the store's or a batch's) makes.
func newJobReader(newIter func(*pebble.IterOptions) (*pebble.Iterator, error)) (*JobReader, error) {
	it, err := newIter(&pebble.IterOptions{LowerBound: []byte{kindBody}, UpperBound: []byte{kindBody + 1}})
	if err != nil {
		return nil, fmt.Errorf("store: job body iterator: %w", err)
	}
	key := make([]byte, 9)
	key[0] = kindBody
	return &JobReader{it: it, key: key}, nil
}

// Job reads one job's body; ErrNotFound if the store holds none.
func (r *JobReader) Job(id uint64) (*storepb.JobBody, error) {
	binary.BigEndian.PutUint64(r.key[1:], id)
	// Ascending seeks: Pebble steps forward from the last position when
	// the target is past it.
	if !r.it.SeekGE(r.key) || keyID(r.it.Key()) != id {
		if err := r.it.Error(); err != nil {
			return nil, fmt.Errorf("store: read job body: %w", err)
		}
		return nil, ErrNotFound
	}
	m := &storepb.JobBody{}
	if err := proto.Unmarshal(r.it.Value(), m); err != nil {
		return nil, fmt.Errorf("%w: job body %d: %v", ErrCorrupt, id, err)
	}
	return m, nil
}

// Close releases the reader.
func (r *JobReader) Close() error { return r.it.Close() }
