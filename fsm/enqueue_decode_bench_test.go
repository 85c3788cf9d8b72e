package fsm

import (
	"fmt"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/sepp-io/sepp/engine"
)

// hotEnqueueEntries encodes n entries of the shape `sepp bench produce`
// proposes: one JobEnqueueBatch of items jobs each, one queue and job type,
// 256-byte payloads and 32-hex-digit idempotency keys unique across all
// entries.
func hotEnqueueEntries(tb testing.TB, n, items int) [][]byte {
	tb.Helper()
	payload := make([]byte, 256)
	for i := range payload {
		payload[i] = byte(i)
	}
	out := make([][]byte, n)
	for e := range out {
		params := make([]engine.EnqueueParams, items)
		for i := range params {
			params[i] = engine.EnqueueParams{
				Queue: "bench", JobType: "bench.job", Payload: payload,
				IdempotencyKey: fmt.Sprintf("%032x", e*items+i),
			}
		}
		data, err := EncodeEntry(stamped(t0.Add(time.Duration(e)*time.Millisecond), EnqueueBatchCommand(params)))
		if err != nil {
			tb.Fatal(err)
		}
		out[e] = data
	}
	return out
}

// BenchmarkApplyEnqueueBatch decodes and applies entries of one 128-item
// JobEnqueueBatch, as every replica does for each entry a producer makes,
// with DecodeEntry ("general", the decoder before decodeEntryFast) and
// with ApplyBatch's decoder ("fast"). A fresh state machine takes over
// every len(entries) entries, so the keys stay unique and the engine small.
//
//	go test -run '^$' -bench 'ApplyEnqueueBatch|DecodeEnqueueEntry' -benchmem ./fsm/
func BenchmarkApplyEnqueueBatch(b *testing.B) {
	const items = 128
	entries := hotEnqueueEntries(b, 64, items)
	for _, dec := range benchDecoders {
		b.Run(dec.name, func(b *testing.B) {
			b.ReportAllocs()
			var f *FSM
			for i := 0; i < b.N; i++ {
				k := i % len(entries)
				if k == 0 {
					b.StopTimer()
					f = New(Config{Engine: engine.Config{Limits: engine.DefaultLimits()}, SnapshotTempDir: b.TempDir()})
					f.decodeFunc = dec.decode
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

var benchDecoders = []struct {
	name   string
	decode func([]byte) ([]entryCommand, error)
}{
	{"general", decodeEntryGeneral},
	{"fast", decodeEntryForApply},
}

// BenchmarkDecodeEnqueueEntry is the decoding part of
// BenchmarkApplyEnqueueBatch alone: an entry of one 128-item batch into
// the engine params the applier hands over.
func BenchmarkDecodeEnqueueEntry(b *testing.B) {
	for _, shape := range []struct {
		name string
		data []byte
	}{{"plain", hotEnqueueEntries(b, 1, 128)[0]}, {"traced", tracedEnqueueEntry(b, 128)}} {
		benchDecodeEntry(b, shape.name, shape.data)
	}
}

// tracedEnqueueEntry is hotEnqueueEntries' entry with a trace context in
// every item, each its own (separate enqueues of a traced producer).
func tracedEnqueueEntry(tb testing.TB, items int) []byte {
	tb.Helper()
	params := make([]engine.EnqueueParams, items)
	for i := range params {
		params[i] = engine.EnqueueParams{
			Queue: "bench", JobType: "bench.job", Payload: make([]byte, 256),
			IdempotencyKey: fmt.Sprintf("%032x", i),
			Trace:          &engine.TraceContext{Traceparent: fmt.Sprintf("00-4bf92f3577b34da6a3ce929d0e0e4736-%016x-01", i+1)},
		}
	}
	data, err := EncodeEntry(stamped(t0, EnqueueBatchCommand(params)))
	if err != nil {
		tb.Fatal(err)
	}
	return data
}

func benchDecodeEntry(b *testing.B, shape string, data []byte) {
	b.Helper()
	for _, dec := range benchDecoders {
		b.Run(shape+"/"+dec.name, func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				cmds, err := dec.decode(data)
				if err != nil {
					b.Fatal(err)
				}
				if c := cmds[0]; c.pb != nil {
					items := make([]engine.EnqueueParams, len(c.pb.GetJobEnqueueBatch().GetItems()))
					for k, it := range c.pb.GetJobEnqueueBatch().GetItems() {
						items[k] = enqueueParamsFromProto(it)
					}
					benchSink = items
				} else {
					benchSink = c.enqueue
				}
			}
		})
	}
}

var benchSink []engine.EnqueueParams

// BenchmarkEncodeEnqueueBatch is the leader's side: a 256-item
// JobEnqueueBatch command built from engine params and encoded as an entry.
//
//	go test -run '^$' -bench EncodeEnqueueBatch -benchmem ./fsm/
func BenchmarkEncodeEnqueueBatch(b *testing.B) {
	payload := make([]byte, 256)
	params := make([]engine.EnqueueParams, 256)
	for i := range params {
		params[i] = engine.EnqueueParams{
			Queue: "bench", JobType: "bench.job", Payload: payload,
			IdempotencyKey: fmt.Sprintf("%032x", i),
		}
	}
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		data, err := EncodeEntry(stamped(t0, EnqueueBatchCommand(params)))
		if err != nil {
			b.Fatal(err)
		}
		entrySink = data
	}
}

var entrySink []byte
