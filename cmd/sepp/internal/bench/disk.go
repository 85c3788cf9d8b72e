package bench

import (
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// A synchronous enqueue waits for two fsyncs one after the other (the
// leader's log write, then a follower's), so the disk's fsync latency is the
// floor under the sync latency figures, and it differs between machines far
// more than CPU speed does. The bench measures it in the local cluster's
// folder before the scenarios, so that every report carries the floor it was
// measured on.
const (
	diskProbeWrites = 300
	diskProbeBytes  = 1024 // about one small log entry
)

// diskFigures appends diskProbeWrites records of diskProbeBytes to a file in
// dir, each followed by an fsync, as a log store does, and reports the
// fsync's p50 and p99.
func (r *runner) diskFigures(dir string) error {
	lat, err := fsyncLatencies(dir, diskProbeWrites, diskProbeBytes)
	if err != nil {
		return err
	}
	sortDurations(lat)
	r.add("disk_fsync_p50", ms(percentile(lat, 0.50)), "ms")
	r.add("disk_fsync_p99", ms(percentile(lat, 0.99)), "ms")
	return nil
}

// fsyncLatencies times n appends of size bytes, each made durable by fsync
// before the next, in a scratch file in dir that it removes afterwards.
func fsyncLatencies(dir string, n, size int) ([]time.Duration, error) {
	f, err := os.CreateTemp(dir, "disk-probe-*")
	if err != nil {
		return nil, fmt.Errorf("disk probe: %w", err)
	}
	defer func() {
		f.Close()
		os.Remove(f.Name())
	}()
	record := make([]byte, size)
	lat := make([]time.Duration, 0, n)
	for range n {
		t0 := time.Now()
		if _, err := f.Write(record); err != nil {
			return nil, fmt.Errorf("disk probe: write %s: %w", filepath.Base(f.Name()), err)
		}
		if err := f.Sync(); err != nil {
			return nil, fmt.Errorf("disk probe: fsync %s: %w", filepath.Base(f.Name()), err)
		}
		lat = append(lat, time.Since(t0))
	}
	return lat, nil
}
