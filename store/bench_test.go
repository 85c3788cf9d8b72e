package store

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	storepb "github.com/sepp-io/sepp/proto/seppstore/v1"
)

// benchRecords is the store size of the size-dependent benchmarks
// (bytes on disk, checkpoint): go test ./store -bench Checkpoint
// -store.records 10000000.
var benchRecords = flag.Int("store.records", 1_000_000, "records in the size-dependent store benchmarks")

func openDisk(tb testing.TB) *Store {
	tb.Helper()
	return openDiskWith(tb, Options{})
}

func openDiskWith(tb testing.TB, o Options) *Store {
	tb.Helper()
	s, err := Open(filepath.Join(tb.TempDir(), "db"), o)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = s.Close() })
	return s
}

// cpuTime is the process's user and system CPU time so far: with the
// machine shared, wall time per op measures the neighbours too, CPU time per
// op (which includes Pebble's flushes and compactions) much less so.
func cpuTime(tb testing.TB) time.Duration {
	tb.Helper()
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// reportCPU reports CPU ns per op since start.
func reportCPU(b *testing.B, start time.Duration) {
	b.Helper()
	b.ReportMetric(float64(cpuTime(b)-start)/float64(b.N), "cpu-ns/op")
}

// payload is n bytes that compress about as well as a JSON payload (half
// random, half repeated), so that the disk figures are not flattered.
func payload(rng *rand.Rand, n int) []byte {
	p := make([]byte, n)
	for i := range p {
		if i%2 == 0 {
			p[i] = byte(rng.Uint32())
		} else {
			p[i] = 'a'
		}
	}
	return p
}

func benchBody(rng *rand.Rand, n int) *storepb.JobBody {
	return &storepb.JobBody{Queue: "orders", JobType: "charge", Payload: payload(rng, n), EnqueuedAtUnixNano: 1_700_000_000_000_000_000}
}

// BenchmarkPutDelete1KiB: one op is one job's life in the store: its 1 KiB
// body written at enqueue and deleted at ack, 1,000 jobs later (the
// backlog a consumer keeps behind the producer), jobs per batch as the
// FSM's group commit gives them.
func BenchmarkPutDelete1KiB(b *testing.B) {
	for _, perBatch := range []int{1, 64} {
		b.Run(fmt.Sprintf("jobs_per_batch=%d", perBatch), func(b *testing.B) {
			s := openDisk(b)
			rng := rand.New(rand.NewPCG(1, 1))
			bodies := make([]*storepb.JobBody, 64)
			for i := range bodies {
				bodies[i] = benchBody(rng, 1024)
			}
			const lag = 1000
			b.SetBytes(1024)
			var id, index uint64
			batch := s.NewBatch()
			n := 0
			cpu0 := cpuTime(b)
			for b.Loop() {
				id++
				batch.PutJob(id, bodies[id%64])
				if id > lag {
					batch.DeleteJob(id - lag)
				}
				if n++; n == perBatch {
					index++
					if err := batch.Commit(index, 1); err != nil {
						b.Fatal(err)
					}
					batch = s.NewBatch()
					n = 0
				}
			}
			batch.Close()
			reportCPU(b, cpu0)
		})
	}
}

// fill writes n jobs with bodies of size bytes, 1,000 per batch, and
// flushes.
func fill(tb testing.TB, s *Store, n, size int) {
	tb.Helper()
	rng := rand.New(rand.NewPCG(2, 2))
	bodies := make([]*storepb.JobBody, 256)
	for i := range bodies {
		bodies[i] = benchBody(rng, size)
	}
	batch := s.NewBatch()
	for id := 1; id <= n; id++ {
		batch.PutJob(uint64(id), bodies[id%len(bodies)])
		if id%1000 == 0 || id == n {
			if err := batch.Commit(s.AppliedIndex()+1, 1); err != nil {
				tb.Fatal(err)
			}
			batch = s.NewBatch()
		}
	}
	batch.Close()
	if err := s.Flush(); err != nil {
		tb.Fatal(err)
	}
}

// BenchmarkDiskBytesPerJob reports the store's bytes on disk per waiting
// job at -store.records jobs of a 1 KiB body, after compactions settle.
func BenchmarkDiskBytesPerJob(b *testing.B) {
	s := openDisk(b)
	n := *benchRecords
	start := time.Now()
	fill(b, s, n, 1024)
	if err := s.db.Compact(b.Context(), []byte{kindBody}, []byte{kindEnd}, true); err != nil {
		b.Fatal(err)
	}
	b.Logf("filled and compacted %d jobs in %v", n, time.Since(start))
	for b.Loop() {
		_ = s.DiskBytes()
	}
	per := float64(s.DiskBytes()) / float64(n)
	b.ReportMetric(per, "disk-B/job")
	b.ReportMetric(per-1024, "overhead-B/job")
}

// BenchmarkCheckpoint times Checkpoint of a store of -store.records jobs
// (1 KiB bodies): a flush of what is left in the memtable and hard links,
// independent of the bytes held.
func BenchmarkCheckpoint(b *testing.B) {
	s := openDisk(b)
	fill(b, s, *benchRecords, 1024)
	// A memtable's worth of unflushed entries, as a running node has.
	rng := rand.New(rand.NewPCG(3, 3))
	batch := s.NewBatch()
	for i := range 10_000 {
		batch.PutJob(uint64(*benchRecords+1+i), benchBody(rng, 1024))
	}
	if err := batch.Commit(s.AppliedIndex()+1, 1); err != nil {
		b.Fatal(err)
	}
	dir := b.TempDir()
	i := 0
	cpu0 := cpuTime(b)
	for b.Loop() {
		i++
		if _, err := s.Checkpoint(filepath.Join(dir, fmt.Sprint(i))); err != nil {
			b.Fatal(err)
		}
	}
	reportCPU(b, cpu0)
	b.ReportMetric(float64(s.db.Metrics().Total().TablesCount), "ssts")
}

// BenchmarkHeadReadAfterMassDelete: a queue whose first 1M jobs were
// consumed reads the 100 bodies at its head as fast as a queue that never
// held them, because the read is bounded below by the head id the engine
// holds in memory. To show the worst case, automatic compactions are off:
// the bodies sit compacted in one level, the 1M deletes in a flushed file
// above them, and nothing removes either. A read that starts from the
// first key instead (what the store never does) steps over every deleted
// key.
func BenchmarkHeadReadAfterMassDelete(b *testing.B) {
	const deleted, live, page = 1_000_000, 10_000, 100
	cases := []struct {
		name    string
		deleted int
		single  bool
		bounded bool
		compact bool // compact the deletes away before reading
	}{
		{"deleted=0/bounded", 0, true, true, false},
		{"deleted=1M/SingleDelete/bounded", deleted, true, true, false},
		{"deleted=1M/Delete/bounded", deleted, false, true, false},
		{"deleted=1M/SingleDelete/bounded/compacted", deleted, true, true, true},
		{"deleted=1M/SingleDelete/from_first_key", deleted, true, false, false},
		{"deleted=1M/Delete/from_first_key", deleted, false, false, false},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			s := openDiskWith(b, Options{noAutoCompactions: true})
			fill(b, s, c.deleted+live, 64)
			if err := s.db.Compact(b.Context(), []byte{kindBody}, []byte{kindEnd}, true); err != nil {
				b.Fatal(err)
			}
			batch := s.NewBatch()
			for id := 1; id <= c.deleted; id++ {
				if c.single {
					batch.DeleteJob(uint64(id))
				} else if err := batch.b.Delete(bodyKey(uint64(id)), nil); err != nil {
					b.Fatal(err)
				}
				if id%1000 == 0 {
					if err := batch.Commit(s.AppliedIndex()+1, 1); err != nil {
						b.Fatal(err)
					}
					batch = s.NewBatch()
				}
			}
			if err := batch.Commit(s.AppliedIndex()+1, 1); err != nil {
				b.Fatal(err)
			}
			if err := s.Flush(); err != nil {
				b.Fatal(err)
			}
			if c.compact {
				if err := s.db.Compact(b.Context(), []byte{kindBody}, []byte{kindEnd}, true); err != nil {
					b.Fatal(err)
				}
			}
			head := uint64(c.deleted + 1)
			from := head
			if !c.bounded {
				from = 0
			}
			cpu0 := cpuTime(b)
			for b.Loop() {
				n := 0
				if err := s.JobRange(from, head+page, func(uint64, *storepb.JobBody) bool { n++; return n < page }); err != nil {
					b.Fatal(err)
				}
				if n != page {
					b.Fatalf("read %d bodies, want %d", n, page)
				}
			}
			reportCPU(b, cpu0)
			m := s.db.Metrics()
			b.ReportMetric(float64(m.Total().TablesCount), "ssts")
		})
	}
}
