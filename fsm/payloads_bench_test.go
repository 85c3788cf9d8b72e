package fsm

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"

	"github.com/sepp-io/sepp/engine"
)

// payloadModes are where a replica keeps payloads: in its heap, or in its
// on-disk store (payloads.go).
var payloadModes = []string{"heap", "store"}

func benchFSM(b *testing.B, mode string) *FSM {
	b.Helper()
	cfg := Config{Engine: engine.Config{Limits: engine.DefaultLimits()}, SnapshotTempDir: b.TempDir()}
	if mode == "store" || mode == "checkpoint" {
		cfg.PayloadDir = filepath.Join(b.TempDir(), "payloads")
	}
	if mode == "checkpoint" {
		cfg.SnapshotCheckpointDir = filepath.Join(b.TempDir(), "snapshot-checkpoints")
	}
	f, err := Open(cfg)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = f.Close() })
	return f
}

// BenchmarkApplyEnqueueBatchPayloads applies entries of one 128-item
// JobEnqueueBatch (as BenchmarkApplyEnqueueBatch, fast decoder) with the
// payloads in the heap and in the store, for the A/B of the store's cost
// on the apply path:
//
//	go test -run '^$' -bench 'ApplyEnqueueBatchPayloads' -benchmem ./fsm/
func BenchmarkApplyEnqueueBatchPayloads(b *testing.B) {
	const items = 128
	entries := hotEnqueueEntries(b, 64, items, enqueueForms[1])
	for _, mode := range payloadModes {
		b.Run(mode, func(b *testing.B) {
			b.ReportAllocs()
			var f *FSM
			for i := 0; i < b.N; i++ {
				k := i % len(entries)
				if k == 0 {
					b.StopTimer()
					f = benchFSM(b, mode)
					b.StartTimer()
				}
				res := f.Apply(&raft.Log{Index: uint64(k + 1), Term: 1, Type: raft.LogCommand, Data: entries[k]}).([]Result)
				if last := res[0].Batch[items-1]; last.Err != nil || last.Result.Duplicate {
					b.Fatalf("last item: %+v", last)
				}
			}
			b.ReportMetric(float64(b.N*items)/b.Elapsed().Seconds(), "jobs/s")
		})
	}
}

// BenchmarkSnapshotPayloads times Snapshot (the part under the lock, which
// holds up apply) of 200,000 waiting jobs of 256 bytes, payloads in the
// heap and in the store, and Persist (ms/persist):
//
//	go test -run '^$' -bench 'SnapshotPayloads' -benchtime 3x ./fsm/
func BenchmarkSnapshotPayloads(b *testing.B) {
	jobs := shortBench(*snapshotBenchJobs)
	// store-section: the store with every member restoring format 2, so
	// the capture writes payload lengths and the bodies go to Persist.
	// store-last: format 4, the bodies last, read from a view by Persist.
	// checkpoint-last: format 4 with a checkpoint, persisted into raft's
	// file store through CheckpointSnapshots (no body copied).
	// checkpoint-protobuf: the same with the engine's part in protobuf
	// (what a cluster of this release writes), and a twentieth of the
	// backlog enqueued again before each snapshot, so that its checkpoint
	// flushes a memtable as a live node's does.
	// checkpoint-files: the same in format 5 (the store's files last).
	// checkpoint-streamed: format 6, the engine's part written once, in
	// chunks, with no temporary file (what a cluster of this release
	// writes).
	for _, mode := range append(payloadModes, "store-section", "store-last", "checkpoint-last", "checkpoint-protobuf", "checkpoint-files", "checkpoint-streamed") {
		b.Run(mode, func(b *testing.B) {
			base, _, _ := strings.Cut(mode, "-")
			f := benchFSM(b, base)
			switch mode {
			case "store-section":
				f.nodes["n1"] = NodeMeta{ID: "n1", MaxCommandVersion: CommandVersionSnapshotPayloads}
			case "store-last", "checkpoint-last":
				f.nodes["n1"] = NodeMeta{ID: "n1", MaxCommandVersion: CommandVersionSnapshotPayloadsLast}
			case "checkpoint-protobuf":
				f.nodes["n1"] = NodeMeta{ID: "n1", MaxCommandVersion: CommandVersionSnapshotProtobuf}
			case "checkpoint-files":
				f.nodes["n1"] = NodeMeta{ID: "n1", MaxCommandVersion: CommandVersionSnapshotStoreFiles}
			case "checkpoint-streamed":
				f.nodes["n1"] = NodeMeta{ID: "n1", MaxCommandVersion: CommandVersionSnapshotEngineStreamed}
			}
			var snaps raft.SnapshotStore
			if strings.HasPrefix(mode, "checkpoint-") {
				dir := b.TempDir()
				inner, err := raft.NewFileSnapshotStoreWithLogger(dir, 2, hclog.NewNullLogger())
				if err != nil {
					b.Fatal(err)
				}
				if snaps, err = CheckpointSnapshots(inner, f.cfg.SnapshotCheckpointDir, nil); err != nil {
					b.Fatal(err)
				}
			}
			fillWaiting(b, f, jobs, 256)
			var persist time.Duration
			b.ResetTimer()
			refill := 0
			for i := 0; i < b.N; i++ {
				if mode == "checkpoint-protobuf" || mode == "checkpoint-files" || mode == "checkpoint-streamed" {
					b.StopTimer()
					fillWaitingFrom(b, f, jobs+refill, jobs/20, 256)
					refill += jobs / 20
					b.StartTimer()
				}
				s, err := f.Snapshot()
				if err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				start := time.Now()
				var sink raft.SnapshotSink = discardSink{}
				if snaps != nil {
					if sink, err = snaps.Create(raft.SnapshotVersionMax, f.AppliedIndex(), 1, raft.Configuration{}, 1, nil); err != nil {
						b.Fatal(err)
					}
				}
				if err := s.Persist(sink); err != nil {
					b.Fatal(err)
				}
				persist += time.Since(start)
				s.Release()
				b.StartTimer()
			}
			b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/snapshot")
			b.ReportMetric(float64(persist.Milliseconds())/float64(b.N), "ms/persist")
		})
	}
}

// snapshotBenchJobs is BenchmarkSnapshotPayloads's backlog: 200,000 by
// default, 10,000,000 for #35's figure (a few GiB of memory and minutes):
//
//	go test -run '^$' -bench 'SnapshotPayloads/checkpoint-protobuf' -benchtime 3x ./fsm/ -args -snapshot-jobs 10000000
var snapshotBenchJobs = flag.Int("snapshot-jobs", 200_000, "waiting jobs in BenchmarkSnapshotPayloads")

// discardSink is a raft.SnapshotSink that keeps nothing.
type discardSink struct{}

func (discardSink) Write(p []byte) (int, error) { return len(p), nil }
func (discardSink) ID() string                  { return "discard" }
func (discardSink) Cancel() error               { return nil }
func (discardSink) Close() error                { return nil }

// BenchmarkRestorePayloads restores a snapshot of 200,000 waiting jobs of
// 1 KiB, payloads into the heap and into the store (sized as for a node
// of 256 MiB and of 4 GiB): the bulk of a node's restart.
//
//	go test -run '^$' -bench 'RestorePayloads' -benchtime 2x ./fsm/
func BenchmarkRestorePayloads(b *testing.B) {
	jobs := shortBench(200_000)
	src := benchFSM(b, "heap")
	fillWaiting(b, src, jobs, 1024)
	data := snapshotBytes(b, src)
	for _, tc := range []struct {
		name   string
		memory int64
	}{{"heap", 0}, {"store-256MiB", 256 << 20}, {"store-4GiB", 4 << 30}} {
		b.Run(tc.name, func(b *testing.B) {
			cfg := Config{Engine: engine.Config{Limits: engine.DefaultLimits()}, SnapshotTempDir: b.TempDir()}
			if tc.memory != 0 {
				cfg.PayloadDir = filepath.Join(b.TempDir(), "payloads")
				cfg.PayloadStore = PayloadStoreOptions(tc.memory)
			}
			f, err := Open(cfg)
			if err != nil {
				b.Fatal(err)
			}
			defer f.Close()
			b.SetBytes(int64(len(data)))
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if err := f.Restore(io.NopCloser(bytes.NewReader(data))); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// fillWaiting enqueues jobs waiting jobs of payloadBytes, with keys as the
// Go client sends them, in entries of 500.
func fillWaiting(b *testing.B, f *FSM, jobs, payloadBytes int) {
	b.Helper()
	fillWaitingFrom(b, f, 0, jobs, payloadBytes)
}

// fillWaitingFrom is fillWaiting with idempotency keys from the first'th.
func fillWaitingFrom(b *testing.B, f *FSM, first, jobs, payloadBytes int) {
	b.Helper()
	payload := make([]byte, payloadBytes)
	for i := first; i < first+jobs; i += 500 {
		items := make([]engine.EnqueueParams, 500)
		for k := range items {
			items[k] = engine.EnqueueParams{Queue: "q", JobType: "t", Payload: payload, IdempotencyKey: fmt.Sprintf("%032x", i+k)}
		}
		applyEntry(b, f, f.AppliedIndex()+1, stamped(t0, EnqueueBatchCommand(items)))
	}
}

// BenchmarkReserveAckAtBacklog reserves 32 jobs (their payloads read, as
// on the node that answers) and acks them, entry by entry, from the head
// of a backlog of 200,000 jobs of 256 bytes, payloads in the heap and in
// the store: the apply side of consuming at a backlog.
//
//	go test -run '^$' -bench 'ReserveAckAtBacklog' -benchmem ./fsm/
func BenchmarkReserveAckAtBacklog(b *testing.B) {
	const jobs, batch = 200_000, 32
	for _, mode := range payloadModes {
		b.Run(mode, func(b *testing.B) {
			var f *FSM
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				if i%(jobs/batch) == 0 { // a new backlog (fillWaiting's keys would repeat)
					b.StopTimer()
					f = benchFSM(b, mode)
					fillWaiting(b, f, jobs, 256)
					b.StartTimer()
				}
				id := fmt.Sprint("r", i)
				done := f.AnswerReserve(id)
				res := applyEntry(b, f, f.AppliedIndex()+1, stamped(t0, ReserveCommand(engine.ReserveParams{Queue: "q", WorkerID: "w", N: batch, Lease: time.Minute, RequestID: id})))
				done()
				ds := res[0].Deliveries
				if len(ds) != batch || len(ds[0].Job.Payload) != 256 {
					b.Fatalf("reserve %d: %d deliveries (%v)", i, len(ds), res[0].Err)
				}
				refs := make([]engine.LeaseRef, len(ds))
				for k, d := range ds {
					refs[k] = engine.LeaseRef{JobID: d.Job.ID, LeaseToken: d.LeaseToken}
				}
				applyEntry(b, f, f.AppliedIndex()+1, stamped(t0, AckBatchCommand(refs)))
			}
			b.ReportMetric(float64(b.N*batch)/b.Elapsed().Seconds(), "jobs/s")
		})
	}
}

// shortBench is n, or a hundredth of it under -short: CI runs every
// benchmark once that way to check that it still runs (make bench
// BENCHFLAGS=-short), not to measure.
func shortBench(n int) int {
	if testing.Short() {
		return n / 100
	}
	return n
}
