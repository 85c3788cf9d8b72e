package fsm

import (
	"fmt"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/sepp-io/sepp/apiconv"
	"github.com/sepp-io/sepp/engine"
	cmdpb "github.com/sepp-io/sepp/proto/seppcmd/v1"
)

// hotEnqueueEntries encodes n entries of the shape `sepp bench produce`
// proposes: one JobEnqueueBatch of items jobs each, one queue and job type,
// 256-byte payloads and 32-hex-digit idempotency keys unique across all
// entries.
func hotEnqueueEntries(tb testing.TB, n, items int, form enqueueForm) [][]byte {
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
		data, err := EncodeEntry(stamped(t0.Add(time.Duration(e)*time.Millisecond), form.batch(tb, params)))
		if err != nil {
			tb.Fatal(err)
		}
		out[e] = data
	}
	return out
}

// enqueueForm is one of the log's two forms of an enqueue batch.
type enqueueForm struct {
	name   string
	public bool
}

// enqueueForms are the older EnqueueParams form, which logs written before
// CommandVersionPublicEnqueue hold, and the public form the leader writes
// since.
var enqueueForms = []enqueueForm{{"older", false}, {"public", true}}

// batch builds a JobEnqueueBatch of params in the form.
func (f enqueueForm) batch(tb testing.TB, params []engine.EnqueueParams) *cmdpb.Command {
	tb.Helper()
	if !f.public {
		return EnqueueBatchCommand(params)
	}
	c, ok := PublicEnqueueBatchCommand(params)
	if !ok {
		tb.Fatal("the public form does not state the benchmark's params")
	}
	return c
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
	for _, form := range enqueueForms {
		entries := hotEnqueueEntries(b, 64, items, form)
		for _, dec := range benchDecoders {
			benchApplyEntries(b, form.name+"/"+dec.name, dec.decode, entries, items)
		}
	}
}

func benchApplyEntries(b *testing.B, name string, decode func([]byte) ([]entryCommand, error), entries [][]byte, items int) {
	b.Helper()
	{
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			var f *FSM
			for i := 0; i < b.N; i++ {
				k := i % len(entries)
				if k == 0 {
					b.StopTimer()
					f = New(Config{Engine: engine.Config{Limits: engine.DefaultLimits()}, SnapshotTempDir: b.TempDir()})
					f.decodeFunc = decode
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
	for _, form := range enqueueForms {
		for _, shape := range []struct {
			name string
			data []byte
		}{{"plain", hotEnqueueEntries(b, 1, 128, form)[0]}, {"traced", tracedEnqueueEntry(b, 128, form)}} {
			benchDecodeEntry(b, form.name+"/"+shape.name, shape.data)
		}
	}
}

// tracedEnqueueEntry is hotEnqueueEntries' entry with a trace context in
// every item, each its own (separate enqueues of a traced producer).
func tracedEnqueueEntry(tb testing.TB, items int, form enqueueForm) []byte {
	tb.Helper()
	params := make([]engine.EnqueueParams, items)
	for i := range params {
		params[i] = engine.EnqueueParams{
			Queue: "bench", JobType: "bench.job", Payload: make([]byte, 256),
			IdempotencyKey: fmt.Sprintf("%032x", i),
			Trace:          &engine.TraceContext{Traceparent: fmt.Sprintf("00-4bf92f3577b34da6a3ce929d0e0e4736-%016x-01", i+1)},
		}
	}
	data, err := EncodeEntry(stamped(t0, form.batch(tb, params)))
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
					batch := c.pb.GetJobEnqueueBatch()
					items := make([]engine.EnqueueParams, len(batch.GetItems()))
					for k, it := range batch.GetItems() {
						items[k] = enqueueParamsFromProto(it)
					}
					if len(batch.GetRequests()) > 0 {
						if items, err = apiconv.EnqueueBatchParams(batch.GetRequests()); err != nil {
							b.Fatal(err)
						}
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
	for _, form := range enqueueForms {
		b.Run(form.name, func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				data, err := EncodeEntry(stamped(t0, form.batch(b, params)))
				if err != nil {
					b.Fatal(err)
				}
				entrySink = data
			}
		})
	}
}

var entrySink []byte
