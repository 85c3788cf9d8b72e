//go:build sepp_fault_inject

package cluster

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/hashicorp/raft"
)

// A test build's disk that fails or stalls on demand
// (integration/diskfaults_test.go); never in a release build.

// injectEIOFile, present in the data dir, makes every log write fail with
// EIO, as a failed fsync reports.
const injectEIOFile = "inject-eio"

// injectStallFile, present in the data dir, makes every log write wait
// until it is removed, as a disk that stops answering for a while does.
const injectStallFile = "inject-stall"

func injectDiskFaults(s *raftStores, dir string) {
	s.log = &eioLogStore{LogStore: s.log, trigger: filepath.Join(dir, injectEIOFile), stall: filepath.Join(dir, injectStallFile)}
}

type eioLogStore struct {
	raft.LogStore
	trigger, stall string
}

func (s *eioLogStore) IsMonotonic() bool { return isMonotonic(s.LogStore) }

func (s *eioLogStore) failing() error {
	if _, err := os.Stat(s.trigger); err == nil {
		return fmt.Errorf("fsync %s: %w (injected: %s exists)", s.trigger, syscall.EIO, injectEIOFile)
	}
	return nil
}

func (s *eioLogStore) StoreLogs(logs []*raft.Log) error {
	for {
		if _, err := os.Stat(s.stall); err != nil {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := s.failing(); err != nil {
		return err
	}
	return s.LogStore.StoreLogs(logs)
}

func (s *eioLogStore) StoreLog(l *raft.Log) error { return s.StoreLogs([]*raft.Log{l}) }
