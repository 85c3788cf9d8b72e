//go:build sepp_planted_restart_bug

package cluster

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/hashicorp/raft"
)

// A deliberately broken store for the integration tests' planted-bug proof
// (integration/nemesis_planted_test.go); never in a release build. It
// reproduces the failure of raft-wal v0.4.0 (hashicorp/raft-wal#31) with any
// store: once raft truncates the log's tail (a follower dropping an
// uncommitted suffix that conflicts with the new leader's log), every later
// start refuses the data dir.

// plantedMarker is written in the data dir by a tail truncation.
const plantedMarker = "planted-tail-truncated"

func plantRestartBug(s *raftStores, dir string) error {
	marker := filepath.Join(dir, plantedMarker)
	if _, err := os.Stat(marker); err == nil {
		return fmt.Errorf("cluster: %w: %s: planted bug (build tag sepp_planted_restart_bug): the log tail was truncated", ErrCorruptData, marker)
	}
	s.log = &plantedLogStore{LogStore: s.log, marker: marker}
	return nil
}

type plantedLogStore struct {
	raft.LogStore
	marker string
}

func (s *plantedLogStore) IsMonotonic() bool { return isMonotonic(s.LogStore) }

// DeleteRange marks a tail truncation: a range that ends at the last index
// but starts after the first. Compaction (the head) and a snapshot install
// (the whole log) do not count.
func (s *plantedLogStore) DeleteRange(min, max uint64) error {
	first, ferr := s.FirstIndex()
	last, lerr := s.LastIndex()
	if err := s.LogStore.DeleteRange(min, max); err != nil {
		return err
	}
	if ferr == nil && lerr == nil && min > first && max >= last {
		return os.WriteFile(s.marker, []byte(fmt.Sprintf("deleted %d..%d of %d..%d\n", min, max, first, last)), 0o644)
	}
	return nil
}
