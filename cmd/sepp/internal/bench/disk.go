package bench

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// A synchronous enqueue waits for a follower's log write (the leader's own
// runs at the same time, on the same disk when the nodes share a machine),
// so the disk's fsync latency is the floor under the sync latency figures,
// and it differs between machines far more than CPU speed does. A produce
// entry of 256 jobs is about 80 KiB, which all three nodes write at once:
// on a shared disk that write, not the CPU, sets the produce rate. The bench
// measures both in the local cluster's folder before the scenarios, so that
// every report carries the floor it was measured on.
const (
	diskProbeWrites = 300
	diskProbeBytes  = 1024 // about one small log entry

	entryProbeWriters = 3        // the three nodes of a local cluster
	entryProbeWrites  = 100      // by each writer
	entryProbeBytes   = 80 << 10 // about one 256-job entry
)

// diskFigures appends diskProbeWrites records of diskProbeBytes to a file in
// dir, each followed by an fsync, as a log store does, and reports the
// fsync's p50 and p99; then the same for entryProbeWriters writers at once,
// each appending entryProbeBytes records to a file of its own.
func (r *runner) diskFigures(dir string) error {
	for _, probe := range []struct {
		name                   string
		writers, writes, bytes int
	}{
		{"disk_fsync", 1, diskProbeWrites, diskProbeBytes},
		{"disk_fsync_80k_3writers", entryProbeWriters, entryProbeWrites, entryProbeBytes},
	} {
		lat, err := fsyncLatencies(dir, probe.writers, probe.writes, probe.bytes)
		if err != nil {
			return err
		}
		sortDurations(lat)
		r.add(probe.name+"_p50", ms(percentile(lat, 0.50)), "ms")
		r.add(probe.name+"_p99", ms(percentile(lat, 0.99)), "ms")
	}
	return nil
}

// fsyncLatencies times n appends of size bytes by each of writers
// goroutines at once, each append made durable by fsync before that
// writer's next, each writer in a scratch file of its own in dir that it
// removes afterwards. It returns all writers*n latencies.
func fsyncLatencies(dir string, writers, n, size int) ([]time.Duration, error) {
	lats := make([][]time.Duration, writers)
	errs := make([]error, writers)
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() { lats[w], errs[w] = fsyncWriter(dir, n, size) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	all := make([]time.Duration, 0, writers*n)
	for _, l := range lats {
		all = append(all, l...)
	}
	return all, nil
}

func fsyncWriter(dir string, n, size int) ([]time.Duration, error) {
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
