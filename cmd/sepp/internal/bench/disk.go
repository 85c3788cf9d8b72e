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

	idleProbeWrites = 50 // 1 KiB each, IdleGap apart

	entryProbeWriters = 3        // the three nodes of a local cluster
	entryProbeWrites  = 100      // by each writer
	entryProbeBytes   = 80 << 10 // about one 256-job entry
)

// diskFigures appends diskProbeWrites records of diskProbeBytes to a file in
// dir, each followed by an fsync, as a log store does, and reports the
// fsync's p50 and p99; then the same for entryProbeWriters writers at once,
// each appending entryProbeBytes records to a file of its own; then, unless
// IdleGap is 0, small appends IdleGap apart. (On the project's VM an fsync
// after 20 ms of quiet took 0.71 ms against 0.17 ms back to back, with a CPU
// kept busy too: the host's I/O path goes idle, and a producer that
// enqueues now and then pays for it on every node.)
func (r *runner) diskFigures(dir string) error {
	probes := []diskProbe{
		{"disk_fsync", 1, diskProbeWrites, diskProbeBytes, 0},
		{"disk_fsync_80k_3writers", entryProbeWriters, entryProbeWrites, entryProbeBytes, 0},
	}
	if r.opts.IdleGap > 0 {
		probes = append(probes, diskProbe{"disk_fsync_after_idle", 1, idleProbeWrites, diskProbeBytes, r.opts.IdleGap})
	}
	for _, probe := range probes {
		lat, err := fsyncLatencies(dir, probe.writers, probe.writes, probe.bytes, probe.gap)
		if err != nil {
			return err
		}
		sortDurations(lat)
		r.add(probe.name+"_p50", ms(percentile(lat, 0.50)), "ms")
		r.add(probe.name+"_p99", ms(percentile(lat, 0.99)), "ms")
	}
	return nil
}

// addFsyncRatio reports figure as a multiple of the disk's fsync latency
// measured in the same run (floor, a diskFigures figure), as
// <figure>_per_fsync: a synchronous enqueue cannot beat one fsync on the
// leader and one on a follower in parallel, so the ratio says how far
// above that floor it is, whatever the disk. Nothing is reported against a
// cluster the bench did not start (no disk figures) or a floor of 0.
func (r *runner) addFsyncRatio(figure, floor string) {
	v, okV := r.figure(figure)
	f, okF := r.figure(floor)
	if !okV || !okF || f <= 0 {
		return
	}
	r.add(figure+"_per_fsync", v/f, "x")
}

// diskProbe is one pattern of appends, each followed by an fsync.
type diskProbe struct {
	name                   string
	writers, writes, bytes int
	gap                    time.Duration // between one writer's appends
}

// fsyncLatencies times n appends of size bytes by each of writers
// goroutines at once, each append made durable by fsync before that
// writer's next (which waits gap more: the idle time being measured), each
// writer in a scratch file of its own in dir that it removes afterwards. It
// returns all writers*n latencies.
func fsyncLatencies(dir string, writers, n, size int, gap time.Duration) ([]time.Duration, error) {
	lats := make([][]time.Duration, writers)
	errs := make([]error, writers)
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() { lats[w], errs[w] = fsyncWriter(dir, n, size, gap) })
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

func fsyncWriter(dir string, n, size int, gap time.Duration) ([]time.Duration, error) {
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
	for i := range n {
		if i > 0 && gap > 0 {
			time.Sleep(gap)
		}
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

// diskWriteProbeBytes is how much diskWriteRate writes: enough that the
// disk's cache in front of it does not decide the figure.
const diskWriteProbeBytes = 256 << 20

// diskWriteRate writes size bytes to a scratch file in dir in 1 MiB
// writes, makes them durable with one fsync and removes the file: the
// disk's sequential write rate in bytes per second, which a snapshot
// install (a follower writing the stream it receives) cannot beat.
func diskWriteRate(dir string, size int) (float64, error) {
	f, err := os.CreateTemp(dir, "disk-write-probe-*")
	if err != nil {
		return 0, fmt.Errorf("disk write probe: %w", err)
	}
	defer func() {
		f.Close()
		os.Remove(f.Name())
	}()
	block := make([]byte, 1<<20)
	for i := range block {
		block[i] = byte(i * 131) // not all zeros: no file system may skip them
	}
	t0 := time.Now()
	for written := 0; written < size; written += len(block) {
		if _, err := f.Write(block[:min(len(block), size-written)]); err != nil {
			return 0, fmt.Errorf("disk write probe: %w", err)
		}
	}
	if err := f.Sync(); err != nil {
		return 0, fmt.Errorf("disk write probe: fsync: %w", err)
	}
	return float64(size) / time.Since(t0).Seconds(), nil
}
