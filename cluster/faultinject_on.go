//go:build sepp_fault_inject

package cluster

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
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

// injectKillInSnapshotFile, present in the data dir, makes the node kill
// its own process with SIGKILL in the middle of the next snapshot it
// writes of the kind the file names:
//
//   - "create": a snapshot the node takes of its own state, killed with
//     part of the state written;
//   - "install": a snapshot the leader sends it, killed with part of the
//     transfer written;
//   - "installed": a snapshot the leader sends it, killed once the whole
//     of it is on disk but before the state machine restored it.
//
// A snapshot whose index is past the node's last log entry is one being
// installed (a leader sends one only to a follower missing the entries it
// compacted); any other is one the node takes. The file is removed before
// the kill, so the restarted node runs on.
const injectKillInSnapshotFile = "inject-kill-in-snapshot"

func injectSnapshotFaults(snaps raft.SnapshotStore, dir string, logs raft.LogStore) raft.SnapshotStore {
	return &killingSnapshots{SnapshotStore: snaps, trigger: filepath.Join(dir, injectKillInSnapshotFile), logs: logs}
}

type killingSnapshots struct {
	raft.SnapshotStore
	trigger string
	logs    raft.LogStore
}

func (k *killingSnapshots) Create(version raft.SnapshotVersion, index, term uint64, configuration raft.Configuration,
	configurationIndex uint64, trans raft.Transport) (raft.SnapshotSink, error) {
	sink, err := k.SnapshotStore.Create(version, index, term, configuration, configurationIndex, trans)
	if err != nil {
		return sink, err
	}
	aim, err := os.ReadFile(k.trigger)
	if err != nil {
		return sink, nil
	}
	if _, err := k.logs.LastIndex(); err != nil {
		return sink, nil
	}
	kind := "create"
	if receivedSnapshot(k.logs, index) {
		kind = "install"
	}
	want := strings.TrimSpace(string(aim))
	if want != kind && (want != "installed" || kind != "install") {
		return sink, nil
	}
	if err := os.Remove(k.trigger); err != nil {
		return sink, nil
	}
	return &killingSink{SnapshotSink: sink, aim: want, index: index}, nil
}

// killingSink kills the process at its first write, half of which it
// writes first (a torn snapshot: the node writes through a 1 MiB buffer,
// the leader's transfer arrives in 32 KiB pieces), except for
// "installed", which it kills once the store has finalised the snapshot
// (Close), before raft hands it to the state machine.
type killingSink struct {
	raft.SnapshotSink
	aim     string
	index   uint64
	written int64
}

func (s *killingSink) Write(p []byte) (int, error) {
	if s.aim == "installed" {
		n, err := s.SnapshotSink.Write(p)
		s.written += int64(n)
		return n, err
	}
	n, _ := s.SnapshotSink.Write(p[:len(p)/2])
	s.kill(fmt.Sprintf("%d of the first %d bytes written", n, len(p)))
	return 0, nil
}

func (s *killingSink) Close() error {
	if s.aim != "installed" {
		s.kill("closed with nothing written")
	}
	if err := s.SnapshotSink.Close(); err != nil {
		return err
	}
	s.kill(fmt.Sprintf("all %d bytes on disk, not yet restored", s.written))
	return nil
}

func (s *killingSink) kill(state string) {
	fmt.Fprintf(os.Stderr, "cluster: killed in snapshot %d (%s), %s (injected: %s)\n", s.index, s.aim, state, injectKillInSnapshotFile)
	_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
	select {} // SIGKILL cannot be caught: the process ends here
}
