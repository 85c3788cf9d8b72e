package cluster

import (
	"context"
	"errors"
	"fmt"
	"syscall"
	"testing"
)

func TestDiskWatch(t *testing.T) {
	var w diskWatch
	w.dir = "/data"
	enospc := fmt.Errorf("write /data/raft.db: %w", syscall.ENOSPC)
	// raft's LogCache flattens the store's error with %q; bolt's grow with %s.
	flattened := fmt.Errorf("unable to store logs within log store, err: %q", enospc.Error())

	if err := w.explain(ErrNoLeader); err != ErrNoLeader { //nolint:errorlint // unchanged: the very error
		t.Fatalf("explain with a healthy disk = %v, want the error unchanged", err)
	}
	if err := w.observe("store logs", errors.New("bolt: timeout"), 100, true); errors.Is(err, ErrDiskFull) || w.full.Load() != nil {
		t.Fatalf("an unrelated write error was taken for a full disk: %v", err)
	}
	err := w.observe("store logs", flattened, 48<<10, true)
	var df *DiskFullError
	if !errors.As(err, &df) || df.Dir != "/data" || w.full.Load() == nil {
		t.Fatalf("observe(ENOSPC through LogCache) = %v, want *DiskFullError on /data", err)
	}

	tests := []struct {
		name     string
		err      error
		diskFull bool
	}{
		{"NoLeader", ErrNoLeader, true},
		{"NotYetServing", fmt.Errorf("%w: leader elected, not yet serving", ErrNoLeader), true},
		{"WaitedOutDeadline", fmt.Errorf("cluster: not proposed: %w", context.DeadlineExceeded), true},
		{"LeaderKnown", &NotLeaderError{Leader: NodeInfo{ID: "n2", GRPCAddr: "10.0.0.2:50051"}}, false},
		{"Shutdown", ErrShutdown, false},
		{"Nil", nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := w.explain(tt.err)
			if errors.Is(got, ErrDiskFull) != tt.diskFull {
				t.Fatalf("explain(%v) = %v, disk full %v, want %v", tt.err, got, !tt.diskFull, tt.diskFull)
			}
			if tt.err != nil && !errors.Is(got, tt.err) {
				t.Fatalf("explain(%v) = %v lost the original error", tt.err, got)
			}
		})
	}

	// Writes that fit in bolt's free pages (a stable-store write, raft's
	// small no-op entries) prove nothing; once the log has taken as many
	// bytes as the write that failed, the disk has room again.
	_ = w.observe("stable store set", nil, 1<<20, false)
	if w.full.Load() == nil {
		t.Fatal("a successful stable-store write cleared the disk-full state")
	}
	for range 3 {
		_ = w.observe("store logs", nil, 16<<10-1, true)
	}
	if w.full.Load() == nil {
		t.Fatal("log writes smaller in total than the failed one cleared the disk-full state")
	}
	_ = w.observe("store logs", nil, 3, true)
	if err := w.explain(ErrNoLeader); err != ErrNoLeader { //nolint:errorlint // unchanged: the very error
		t.Fatalf("after the log took 48 KiB again explain = %v, want the error unchanged", err)
	}
}
