package store

import (
	"fmt"

	"github.com/cockroachdb/pebble/v2"
	"google.golang.org/protobuf/proto"

	storepb "github.com/sepp-io/sepp/proto/seppstore/v1"
)

// Snapshot is a point-in-time view of the store (Pebble's DB.NewSnapshot):
// the records committed when it was taken, whatever is committed after.
// Taking one costs O(1) and copies nothing; reading it costs what reading
// the store costs. The state machine takes one between two applies, under
// its lock, so that a snapshot's payloads are read off the apply path at
// exactly the snapshot's index (fsm/snapshot.go).
//
// While it is open, compactions keep the versions it can see of keys
// overwritten or deleted since (DESIGN.md, "Point-in-time snapshots"):
// hold one for the seconds a persist takes, not for good. Close releases
// it; Store.Close waits until every Snapshot is closed.
type Snapshot struct {
	st   *Store
	snap *pebble.Snapshot
}

// NewSnapshot takes a snapshot of what is committed now; ErrClosed once
// the store is closed.
func (s *Store) NewSnapshot() (*Snapshot, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, ErrClosed
	}
	s.snaps.Add(1)
	return &Snapshot{st: s, snap: s.db.NewSnapshot()}, nil
}

// EachJob calls fn with each job body's id and payload in ascending id
// order, until fn returns an error, which EachJob returns. The payload
// slice is valid only during the call.
func (s *Snapshot) EachJob(fn func(id uint64, payload []byte) error) error {
	it, err := s.snap.NewIter(&pebble.IterOptions{LowerBound: []byte{kindBody}, UpperBound: []byte{kindBody + 1}})
	if err != nil {
		return fmt.Errorf("store: snapshot iterator: %w", err)
	}
	m := &storepb.JobBody{}
	for ok := it.First(); ok; ok = it.Next() {
		m.Reset()
		// No aliasing of the iterator's buffer is kept past fn: Unmarshal
		// copies bytes fields unless told otherwise.
		if err := proto.Unmarshal(it.Value(), m); err != nil {
			_ = it.Close()
			return fmt.Errorf("%w: job body %d: %v", ErrCorrupt, keyID(it.Key()), err)
		}
		if err := fn(keyID(it.Key()), m.GetPayload()); err != nil {
			_ = it.Close()
			return err
		}
	}
	if err := it.Error(); err != nil {
		_ = it.Close()
		return fmt.Errorf("store: read job bodies: %w", err)
	}
	return it.Close()
}

// EachCompleted calls fn with each completed job's id and marshalled
// record in ascending id order, until fn returns an error, which
// EachCompleted returns. The bytes are valid only during the call: they
// are written to a snapshot as they are, not decoded.
func (s *Snapshot) EachCompleted(fn func(id uint64, record []byte) error) error {
	it, err := s.snap.NewIter(&pebble.IterOptions{LowerBound: []byte{kindCompleted}, UpperBound: []byte{kindCompleted + 1}})
	if err != nil {
		return fmt.Errorf("store: snapshot iterator: %w", err)
	}
	for ok := it.First(); ok; ok = it.Next() {
		if err := fn(keyID(it.Key()), it.Value()); err != nil {
			_ = it.Close()
			return err
		}
	}
	if err := it.Error(); err != nil {
		_ = it.Close()
		return fmt.Errorf("store: read completed jobs: %w", err)
	}
	return it.Close()
}

// Close releases the snapshot; closing it twice is a no-op.
func (s *Snapshot) Close() error {
	if s.snap == nil {
		return nil
	}
	err := s.snap.Close()
	s.snap = nil
	s.st.snaps.Done()
	return err
}
