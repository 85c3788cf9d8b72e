package fsm

import (
	"bytes"
	"fmt"
	"maps"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/sepp-io/sepp/apiconv"
	"github.com/sepp-io/sepp/engine"
	cmdpb "github.com/sepp-io/sepp/proto/seppcmd/v1"
)

// fastSeedEntries are entries of the shape decodeEntryFast decodes, and
// near it: the seeds of FuzzDecodeEntryFast besides seedEntries.
func fastSeedEntries(t testing.TB) map[string][]byte {
	t.Helper()
	prio := uint32(4)
	hot := make([]engine.EnqueueParams, 4)
	for i := range hot {
		hot[i] = engine.EnqueueParams{Queue: "bench", JobType: "bench.job", Payload: bytes.Repeat([]byte{byte(i)}, 16), IdempotencyKey: fmt.Sprintf("%032x", i)}
	}
	full := []engine.EnqueueParams{
		{Queue: "q", JobType: "t", Payload: []byte("x"), Priority: &prio, ScheduledAt: t0.Add(time.Minute), MaxAttempts: 3, Custom: map[string]string{"a": "1", "b": "2"}, IdempotencyKey: "k"},
		{Queue: "r", JobType: "u"},
		{},
	}
	traced := make([]engine.EnqueueParams, 3)
	for i := range traced {
		traced[i] = hot[i]
		traced[i].Trace = &engine.TraceContext{Traceparent: fmt.Sprintf("00-4bf92f3577b34da6a3ce929d0e0e4736-%016x-01", i+1)}
	}
	traced[1].Trace.Tracestate = "congo=t61rcWkgMzE"
	traced[2].Trace = &engine.TraceContext{} // present, empty: as protobuf decodes it
	entries := map[string][]*cmdpb.Command{
		"traced":      {EnqueueBatchCommand(traced)},
		"hot":         {EnqueueBatchCommand(hot)},
		"every_field": {EnqueueBatchCommand(full)},
		"mixed":       {EnqueueBatchCommand(hot[:2]), TickCommand(), EnqueueBatchCommand(full), AckBatchCommand([]engine.LeaseRef{{JobID: 1, LeaseToken: 2}})},
		"empty_batch": {EnqueueBatchCommand(nil)},

		"public_traced":      {mustPublicBatch(t, traced)},
		"public_hot":         {mustPublicBatch(t, hot)},
		"public_every_field": {mustPublicBatch(t, full)},
		"public_mixed":       {mustPublicBatch(t, hot[:2]), TickCommand(), EnqueueBatchCommand(full), mustPublicBatch(t, full), AckBatchCommand([]engine.LeaseRef{{JobID: 1, LeaseToken: 2}})},
	}
	out := make(map[string][]byte, len(entries)+1)
	for name, cmds := range entries {
		data, err := EncodeEntry(stamped(t0, cmds...))
		if err != nil {
			t.Fatal(err)
		}
		out[name] = data
	}
	v1, err := proto.Marshal(&cmdpb.Entry{FormatVersion: entryFormatV1, Commands: stamped(t0, EnqueueBatchCommand(hot))})
	if err != nil {
		t.Fatal(err)
	}
	out["hot_v1"] = v1
	return out
}

// mustPublicBatch is PublicEnqueueBatchCommand of items the public form
// states exactly.
func mustPublicBatch(t testing.TB, items []engine.EnqueueParams) *cmdpb.Command {
	t.Helper()
	c, ok := PublicEnqueueBatchCommand(items)
	if !ok {
		t.Fatalf("the public form does not state %+v", items)
	}
	return c
}

// FuzzDecodeEntryFast: on any bytes, the decoder ApplyBatch uses gives
// DecodeEntry's verdict and error, and whatever the fast decoder accepts,
// DecodeEntry accepts too, with the same commands and enqueue params.
func FuzzDecodeEntryFast(f *testing.F) {
	for _, data := range seedEntries(f) {
		f.Add(data)
	}
	for _, data := range fastSeedEntries(f) {
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		fastAgrees(t, data)
		// Past the checksum, so that mutations reach the decoder.
		body := data
		if len(data) >= entryHeaderV2 && data[0] == entryFrameV2 {
			body = data[entryHeaderV2:]
		}
		fastAgrees(t, frameV2(body))
	})
}

// fastAgrees is FuzzDecodeEntryFast's verdict on one input; it returns
// whether the fast decoder accepted it.
func fastAgrees(t *testing.T, data []byte) bool {
	t.Helper()
	general, gerr := decodeEntryGeneral(data)
	got, err := decodeEntryForApply(data)
	if (err == nil) != (gerr == nil) || err != nil && err.Error() != gerr.Error() {
		t.Fatalf("decodeEntryForApply: %v, DecodeEntry: %v", err, gerr)
	}
	fast, ok := decodeEntryFast(data)
	if !ok {
		return false
	}
	if gerr != nil {
		t.Fatalf("fast decoder accepted an entry DecodeEntry refuses: %v", gerr)
	}
	if !sameCommands(fast, general) || !sameCommands(got, general) {
		t.Fatalf("fast decoder's commands differ from DecodeEntry's:\nfast:    %s\ngeneral: %s", describeCommands(fast), describeCommands(general))
	}
	return true
}

// sameCommands compares decoded commands by what the applier sees: a
// fast-decoded batch equals a protobuf one whose items convert to the same
// engine params.
func sameCommands(got, want []entryCommand) bool {
	if len(got) != len(want) {
		return false
	}
	for i := range got {
		g, w := got[i], want[i]
		if g.pb != nil {
			if !proto.Equal(g.pb, w.pb) {
				return false
			}
			continue
		}
		batch := w.pb.GetJobEnqueueBatch()
		if batch == nil || g.nowUnixNano != w.pb.GetNowUnixNano() {
			return false
		}
		// What the applier makes of the general path's batch, in
		// either form; one it refuses must not have been decoded fast.
		var want []engine.EnqueueParams
		if reqs := batch.GetRequests(); len(reqs) > 0 {
			items, err := apiconv.EnqueueBatchParams(reqs)
			if err != nil || len(batch.GetItems()) > 0 {
				return false
			}
			want = items
		} else {
			for _, it := range batch.GetItems() {
				want = append(want, enqueueParamsFromProto(it))
			}
		}
		if len(g.enqueue) != len(want) {
			return false
		}
		for k := range want {
			if !sameParams(g.enqueue[k], want[k]) {
				return false
			}
		}
	}
	return true
}

// sameParams compares params as the engine reads them: an empty payload or
// custom map is the same as none.
func sameParams(a, b engine.EnqueueParams) bool {
	return a.Queue == b.Queue && a.JobType == b.JobType && bytes.Equal(a.Payload, b.Payload) &&
		(a.Priority == nil) == (b.Priority == nil) && (a.Priority == nil || *a.Priority == *b.Priority) &&
		a.ScheduledAt == b.ScheduledAt && a.MaxAttempts == b.MaxAttempts &&
		maps.Equal(a.Custom, b.Custom) && a.IdempotencyKey == b.IdempotencyKey &&
		(a.Trace == nil) == (b.Trace == nil) && (a.Trace == nil || *a.Trace == *b.Trace)
}

func describeCommands(cmds []entryCommand) string {
	var b bytes.Buffer
	for i, c := range cmds {
		if c.pb != nil {
			fmt.Fprintf(&b, "[%d] pb %v ", i, c.pb)
		} else {
			fmt.Fprintf(&b, "[%d] fast now=%d %+v ", i, c.nowUnixNano, c.enqueue)
		}
	}
	return b.String()
}

// Raw wire builders for the fallback table: each appends one field.
func wireBytes(b []byte, num protowire.Number, v []byte) []byte {
	return protowire.AppendBytes(protowire.AppendTag(b, num, protowire.BytesType), v)
}

func wireVarint(b []byte, num protowire.Number, v uint64) []byte {
	return protowire.AppendVarint(protowire.AppendTag(b, num, protowire.VarintType), v)
}

// hotItem is the wire form of one usual enqueue item.
func hotItem(i int) []byte {
	b := wireBytes(nil, enqueueQueueField, []byte("q"))
	b = wireBytes(b, enqueueJobTypeField, []byte("t"))
	b = wireBytes(b, enqueuePayloadField, []byte("payload"))
	return wireBytes(b, enqueueIdempotencyKeyField, fmt.Appendf(nil, "%032x", i))
}

// batchCommand is the wire form of a version 1 command holding one batch of
// items.
func batchCommand(items ...[]byte) []byte {
	return batchCommandOf(commandV1, enqueueBatchItemsField, items)
}

// batchCommandOf is the wire form of a command of version holding one
// batch whose items are the batch's field number field.
func batchCommandOf(version uint64, field protowire.Number, items [][]byte) []byte {
	var batch []byte
	for _, it := range items {
		batch = wireBytes(batch, field, it)
	}
	c := wireVarint(nil, commandVersionField, version)
	c = wireVarint(c, commandNowField, uint64(t0.UnixNano()))
	return wireBytes(c, commandEnqueueBatchField, batch)
}

// publicItem is the wire form of one usual enqueue item in the public form
// (EnqueueRequest): the same fields, numbered alike.
func publicItem(i int) []byte { return hotItem(i) }

// publicBatchCommand is the wire form of a command holding one batch of
// requests in the public form.
func publicBatchCommand(items ...[]byte) []byte {
	return batchCommandOf(CommandVersionPublicEnqueue, enqueueBatchRequestsField, items)
}

// timestampWire is the wire form of a Timestamp message.
func timestampWire(seconds int64, nanos int32) []byte {
	b := wireVarint(nil, 1, uint64(seconds))
	return wireVarint(b, 2, uint64(int64(nanos)))
}

// entryOf is the wire form of a version 2 entry body of commands.
func entryOf(cmds ...[]byte) []byte {
	b := wireVarint(nil, 1, EntryFormatVersion)
	for _, c := range cmds {
		b = wireBytes(b, 2, c)
	}
	return b
}

// TestDecodeEntryFast_Fallbacks: the fast decoder decodes only what it can
// decode exactly as DecodeEntry, and leaves the rest to protobuf, per
// command or for the whole entry; either way ApplyBatch's decoder answers
// as DecodeEntry does.
func TestDecodeEntryFast_Fallbacks(t *testing.T) {
	item := hotItem(1)
	with := func(fields ...[]byte) []byte { return bytes.Join(append([][]byte{item}, fields...), nil) }
	tests := []struct {
		name string
		body []byte // unframed body; framed with a valid checksum
		raw  []byte // or the whole entry, as is
		// wantFast is how many commands the fast decoder decodes itself:
		// -1 when it leaves the whole entry to DecodeEntry.
		wantFast int
		// wantErr: DecodeEntry refuses the entry.
		wantErr bool
	}{
		{name: "UsualShape", body: entryOf(batchCommand(hotItem(1), hotItem(2))), wantFast: 1},
		{name: "Version1Entry", raw: bytes.Join([][]byte{wireVarint(nil, 1, entryFormatV1), wireBytes(nil, 2, batchCommand(item))}, nil), wantFast: 1},
		{name: "EmptyBatch", body: entryOf(batchCommand()), wantFast: 1},
		{name: "EveryFieldOnce", body: entryOf(batchCommand(with(
			wireVarint(nil, enqueuePriorityField, 3), wireVarint(nil, enqueueScheduledAtField, uint64(t0.UnixNano())),
			wireVarint(nil, enqueueMaxAttemptsField, 1<<33+5), // uint32 truncates, as in protobuf
			wireBytes(nil, enqueueCustomField, wireBytes(wireBytes(nil, 1, []byte("k")), 2, []byte("v"))),
			wireBytes(nil, enqueueCustomField, wireBytes(wireBytes(nil, 1, []byte("k")), 2, []byte("w"))), // last wins
			wireBytes(nil, enqueueCustomField, nil)))), wantFast:                                          1},
		{name: "TraceContext", body: entryOf(batchCommand(with(wireBytes(nil, enqueueTraceField, wireBytes(wireBytes(nil, 1, []byte("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")), 2, []byte("a=1")))),
			with(wireBytes(nil, enqueueTraceField, nil)))), wantFast: 1},
		{name: "TraceContextFieldsOutOfOrder", body: entryOf(batchCommand(with(wireBytes(nil, enqueueTraceField, wireBytes(wireBytes(nil, 2, []byte("s")), 1, []byte("p")))))), wantFast: 1},
		{name: "OtherCommandsUnmarshalled", body: entryOf(batchCommand(item), marshalCommand(t, TickCommand())), wantFast: 1},
		{name: "NoEnqueueBatch", body: entryOf(marshalCommand(t, TickCommand())), wantFast: -1},

		// Per command: protobuf decodes it; the entry's other batches stay fast.
		{name: "ItemFieldRepeated", body: entryOf(batchCommand(item), batchCommand(with(wireBytes(nil, enqueueQueueField, []byte("r"))))), wantFast: 1},
		{name: "ItemUnknownField", body: entryOf(batchCommand(item), batchCommand(with(wireVarint(nil, 9, 1)))), wantFast: 1},
		{name: "ItemWrongWireType", body: entryOf(batchCommand(item), batchCommand(with(wireVarint(nil, enqueuePayloadField, 1)))), wantFast: 1},
		{name: "ItemPriorityRepeated", body: entryOf(batchCommand(item), batchCommand(with(wireVarint(nil, enqueuePriorityField, 1), wireVarint(nil, enqueuePriorityField, 2)))), wantFast: 1},
		{name: "CustomUnknownField", body: entryOf(batchCommand(item), batchCommand(with(wireBytes(nil, enqueueCustomField, wireVarint(nil, 3, 1))))), wantFast: 1},
		{name: "CustomKeyRepeated", body: entryOf(batchCommand(item), batchCommand(with(wireBytes(nil, enqueueCustomField, wireBytes(wireBytes(nil, 1, []byte("a")), 1, []byte("b")))))), wantFast: 1},
		{name: "BatchFieldRepeated", body: entryOf(batchCommand(item), append(batchCommand(item), wireBytes(nil, commandEnqueueBatchField, wireBytes(nil, 1, item))...)), wantFast: 1},
		{name: "BatchUnknownField", body: entryOf(batchCommand(item), append(wireVarint(nil, commandVersionField, 1), wireBytes(nil, commandEnqueueBatchField, wireBytes(wireVarint(nil, 2, 1), 1, item))...)), wantFast: 1},
		{name: "TraceContextRepeated", body: entryOf(batchCommand(item), batchCommand(with(wireBytes(nil, enqueueTraceField, wireBytes(nil, 1, []byte("a"))), wireBytes(nil, enqueueTraceField, wireBytes(nil, 2, []byte("b")))))), wantFast: 1},
		{name: "TraceContextUnknownField", body: entryOf(batchCommand(item), batchCommand(with(wireBytes(nil, enqueueTraceField, wireVarint(nil, 3, 1))))), wantFast: 1},
		{name: "TraceparentRepeated", body: entryOf(batchCommand(item), batchCommand(with(wireBytes(nil, enqueueTraceField, wireBytes(wireBytes(nil, 1, []byte("a")), 1, []byte("b")))))), wantFast: 1},
		{name: "TraceContextAsVarint", body: entryOf(batchCommand(item), batchCommand(with(wireVarint(nil, enqueueTraceField, 1)))), wantFast: 1},
		{name: "CommandVersionRepeated", body: entryOf(batchCommand(item), append(wireVarint(nil, commandVersionField, 2), batchCommand(item)...)), wantFast: 1},
		{name: "CommandUnknownField", body: entryOf(batchCommand(item), append(batchCommand(item), wireVarint(nil, 99, 1)...)), wantFast: 1},
		{name: "CommandOtherOpAfterBatch", body: entryOf(batchCommand(item), append(batchCommand(item), marshalCommand(t, TickCommand())...)), wantFast: 1},

		// The whole entry: DecodeEntry decides.
		{name: "EntryUnknownField", body: append(entryOf(batchCommand(item)), wireVarint(nil, 3, 1)...), wantFast: -1},
		{name: "EntryFormatRepeated", body: append(entryOf(batchCommand(item)), wireVarint(nil, 1, EntryFormatVersion)...), wantFast: -1},
		{name: "EntryFormatWrong", body: bytes.Join([][]byte{wireVarint(nil, 1, 1), wireBytes(nil, 2, batchCommand(item))}, nil), wantFast: -1, wantErr: true},
		{name: "UnframedVersion2", raw: entryOf(batchCommand(item)), wantFast: -1, wantErr: true},
		{name: "BadChecksum", raw: append([]byte{entryFrameV2, 0, 0, 0, 0}, entryOf(batchCommand(item))...), wantFast: -1, wantErr: true},
		{name: "CommandVersion0", body: entryOf(batchCommand(item), append(wireVarint(nil, commandVersionField, 0), wireBytes(nil, commandEnqueueBatchField, nil)...)), wantFast: -1, wantErr: true},
		{name: "CommandVersionTooNew", body: entryOf(append(wireVarint(nil, commandVersionField, uint64(CommandVersion)+1), wireBytes(nil, commandEnqueueBatchField, nil)...)), wantFast: -1, wantErr: true},
		{name: "CommandVersionTruncated", body: entryOf(append(wireVarint(nil, commandVersionField, 1<<32+1), wireBytes(nil, commandEnqueueBatchField, nil)...)), wantFast: 1},
		{name: "OtherCommandRefused", body: entryOf(batchCommand(item), marshalCommand(t, &cmdpb.Command{Version: commandV1, Op: &cmdpb.Command_JobAckBatch{JobAckBatch: &cmdpb.JobAckBatch{}}})), wantFast: -1, wantErr: true},
		{name: "QueueInvalidUTF8", body: entryOf(batchCommand(item), batchCommand(bytes.Join([][]byte{wireBytes(nil, enqueueQueueField, []byte{0xff}), hotItem(2)[3:]}, nil))), wantFast: -1, wantErr: true},
		{name: "JobTypeInvalidUTF8", body: entryOf(batchCommand(wireBytes(nil, enqueueJobTypeField, []byte{'a', 0xc0}))), wantFast: -1, wantErr: true},
		{name: "KeyInvalidUTF8", body: entryOf(batchCommand(wireBytes(nil, enqueueIdempotencyKeyField, []byte{0xed, 0xa0, 0x80}))), wantFast: -1, wantErr: true},
		{name: "CustomValueInvalidUTF8", body: entryOf(batchCommand(wireBytes(nil, enqueueCustomField, wireBytes(nil, 2, []byte{0xff})))), wantFast: -1, wantErr: true},
		{name: "TraceparentInvalidUTF8", body: entryOf(batchCommand(with(wireBytes(nil, enqueueTraceField, wireBytes(nil, 1, []byte{0xff}))))), wantFast: -1, wantErr: true},
		{name: "ItemTruncated", body: entryOf(batchCommand(item[:len(item)-1])), wantFast: -1, wantErr: true},
		{name: "ItemLengthPastBatch", body: entryOf(append(wireVarint(nil, commandVersionField, 1), wireBytes(nil, commandEnqueueBatchField, []byte{0x0a, 0x05, 'x'})...)), wantFast: -1, wantErr: true},
		// The public form (CommandVersionPublicEnqueue).
		{name: "PublicUsualShape", body: entryOf(publicBatchCommand(publicItem(1), publicItem(2))), wantFast: 1},
		{name: "PublicScheduled", body: entryOf(publicBatchCommand(with(wireBytes(nil, enqueueScheduledAtField, timestampWire(t0.Unix(), 123))),
			with(wireBytes(nil, enqueueScheduledAtField, nil)))), wantFast: 1}, // the epoch: an empty message
		{name: "PublicScheduledFieldsOutOfOrder", body: entryOf(publicBatchCommand(with(wireBytes(nil, enqueueScheduledAtField, wireVarint(wireVarint(nil, 2, 5), 1, 7))))), wantFast: 1},
		{name: "PublicTraced", body: entryOf(publicBatchCommand(with(wireBytes(nil, enqueueTraceField, wireBytes(nil, 1, []byte("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")))))), wantFast: 1},
		{name: "PublicBesideOlderForm", body: entryOf(batchCommand(item), publicBatchCommand(item)), wantFast: 2},
		// Per command, protobuf decodes it and apply converts (or refuses) it.
		{name: "PublicMixedWithOlderItems", body: entryOf(publicBatchCommand(item), append(wireVarint(nil, commandVersionField, uint64(CommandVersionPublicEnqueue)),
			wireBytes(nil, commandEnqueueBatchField, wireBytes(wireBytes(nil, enqueueBatchRequestsField, item), enqueueBatchItemsField, item))...)), wantFast: 1},
		{name: "PublicScheduledAsVarint", body: entryOf(publicBatchCommand(item), publicBatchCommand(with(wireVarint(nil, enqueueScheduledAtField, 5)))), wantFast: 1},
		{name: "PublicScheduledBeforeYear1", body: entryOf(publicBatchCommand(item), publicBatchCommand(with(wireBytes(nil, enqueueScheduledAtField, timestampWire(minTimestampSeconds-1, 0))))), wantFast: 1},
		{name: "PublicScheduledAfterYear9999", body: entryOf(publicBatchCommand(item), publicBatchCommand(with(wireBytes(nil, enqueueScheduledAtField, timestampWire(maxTimestampSeconds, 0))))), wantFast: 1},
		{name: "PublicScheduledNanosNegative", body: entryOf(publicBatchCommand(item), publicBatchCommand(with(wireBytes(nil, enqueueScheduledAtField, timestampWire(5, -1))))), wantFast: 1},
		{name: "PublicScheduledNanosTooLarge", body: entryOf(publicBatchCommand(item), publicBatchCommand(with(wireBytes(nil, enqueueScheduledAtField, timestampWire(5, 1e9))))), wantFast: 1},
		{name: "PublicScheduledSecondsRepeated", body: entryOf(publicBatchCommand(item), publicBatchCommand(with(wireBytes(nil, enqueueScheduledAtField, wireVarint(wireVarint(nil, 1, 1), 1, 2))))), wantFast: 1},
		{name: "PublicScheduledUnknownField", body: entryOf(publicBatchCommand(item), publicBatchCommand(with(wireBytes(nil, enqueueScheduledAtField, wireVarint(nil, 3, 1))))), wantFast: 1},
		{name: "PublicTraceparentMalformed", body: entryOf(publicBatchCommand(item), publicBatchCommand(with(wireBytes(nil, enqueueTraceField, wireBytes(nil, 1, []byte("not-w3c")))))), wantFast: 1},
		{name: "PublicTtl", body: entryOf(publicBatchCommand(item), publicBatchCommand(with(wireVarint(nil, 141, 5)))), wantFast: 1},
		{name: "CommandLengthPastEntry", body: append(wireVarint(nil, 1, EntryFormatVersion), 0x12, 0x7f, 0x08), wantFast: -1, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			data := tt.raw
			if data == nil {
				data = frameV2(tt.body)
			}
			if _, err := DecodeEntry(data); (err != nil) != tt.wantErr {
				t.Fatalf("DecodeEntry: %v, want error %v", err, tt.wantErr)
			}
			accepted := fastAgrees(t, data)
			if !accepted {
				if tt.wantFast >= 0 {
					t.Fatalf("fast decoder left the entry to DecodeEntry, want %d commands decoded fast", tt.wantFast)
				}
				return
			}
			cmds, _ := decodeEntryFast(data)
			fast := 0
			for _, c := range cmds {
				if c.pb == nil {
					fast++
				}
			}
			if fast != tt.wantFast {
				t.Fatalf("fast decoder decoded %d commands itself, want %d (-1: none, whole entry left to DecodeEntry)", fast, tt.wantFast)
			}
		})
	}
}

func marshalCommand(t *testing.T, c *cmdpb.Command) []byte {
	t.Helper()
	c.NowUnixNano = t0.UnixNano()
	return marshal(t, c)
}

// TestApplyBatch_FastDecodeSameStateAsGeneral applies the same entries to
// a replica decoding them with DecodeEntry and to one decoding them as
// ApplyBatch does, and requires the same results, digest and snapshot
// bytes: duplicates, rejected items, scheduled and prioritised jobs,
// custom fields and other commands between the batches included.
func TestApplyBatch_FastDecodeSameStateAsGeneral(t *testing.T) {
	for _, seed := range []uint64{1, 2, 3} {
		t.Run(fmt.Sprint("Seed", seed), func(t *testing.T) {
			general, fast := newTestFSM(t), newTestFSM(t)
			general.decodeFunc = decodeEntryGeneral
			rng := rand.New(rand.NewPCG(seed, seed))
			now := t0
			var leases []engine.LeaseRef
			fastEntries := 0
			for index := uint64(1); index <= 150; index++ {
				now = now.Add(time.Duration(rng.IntN(1500)) * time.Millisecond)
				cmds := randomEnqueueEntry(rng, now, leases)
				data, err := EncodeEntry(stamped(now, cmds...))
				if err != nil {
					t.Fatal(err)
				}
				if _, ok := decodeEntryFast(data); ok {
					fastEntries++
				}
				log := &raft.Log{Index: index, Term: 1, Type: raft.LogCommand, Data: data}
				want := general.Apply(log).([]Result)
				got := fast.Apply(log).([]Result)
				if !reflect.DeepEqual(got, want) {
					t.Fatalf("index %d: results differ:\nfast:    %+v\ngeneral: %+v", index, got, want)
				}
				for _, res := range got {
					for _, d := range res.Deliveries {
						leases = append(leases, engine.LeaseRef{JobID: d.Job.ID, LeaseToken: d.LeaseToken})
					}
				}
				if general.Digest() != fast.Digest() {
					t.Fatalf("index %d: digests differ", index)
				}
			}
			if fastEntries < 50 {
				t.Fatalf("only %d of 150 entries took the fast decoder", fastEntries)
			}
			if !bytes.Equal(snapshotBytes(t, general), snapshotBytes(t, fast)) {
				t.Fatal("snapshot bytes differ")
			}
		})
	}
}

// randomEnqueueEntry is a mostly-enqueue entry: batches whose items repeat
// earlier keys, break the engine's rules, or use every field, between
// reserves, acks, ticks and pauses.
func randomEnqueueEntry(rng *rand.Rand, now time.Time, leases []engine.LeaseRef) []*cmdpb.Command {
	queues := []string{"a", "b", "c"}
	var cmds []*cmdpb.Command
	for k := 0; k < 1+rng.IntN(4); k++ {
		q := queues[rng.IntN(len(queues))]
		switch r := rng.IntN(10); {
		case r < 6:
			items := make([]engine.EnqueueParams, rng.IntN(40))
			for i := range items {
				p := engine.EnqueueParams{Queue: q, JobType: "t", Payload: bytes.Repeat([]byte{byte(i)}, rng.IntN(300))}
				if rng.IntN(2) == 0 {
					p.IdempotencyKey = fmt.Sprintf("%032x", rng.IntN(3000)) // repeats now and then
				}
				switch rng.IntN(12) {
				case 0:
					p.JobType = "" // refused by the engine
				case 1:
					prio := uint32(rng.IntN(12)) // 10 and 11 are refused
					p.Priority = &prio
				case 2:
					p.ScheduledAt = now.Add(time.Duration(rng.IntN(20)) * time.Second)
				case 3:
					p.ScheduledAt = now.Add(365 * 24 * time.Hour) // beyond the horizon
				case 4:
					p.Custom = map[string]string{"x": fmt.Sprint(i), "y": ""}
				case 5:
					p.MaxAttempts = uint32(rng.IntN(200))
				case 6:
					p.Queue = ""
				}
				items[i] = p
			}
			if c, ok := PublicEnqueueBatchCommand(items); ok && rng.IntN(2) == 0 {
				cmds = append(cmds, c)
			} else {
				cmds = append(cmds, EnqueueBatchCommand(items))
			}
		case r < 7:
			cmds = append(cmds, ReserveCommand(engine.ReserveParams{Queue: q, WorkerID: "w", N: 1 + rng.IntN(10), Lease: time.Duration(1+rng.IntN(5)) * time.Second}))
		case r < 8 && len(leases) > 0:
			cmds = append(cmds, AckBatchCommand([]engine.LeaseRef{leases[rng.IntN(len(leases))]}))
		case r < 9:
			cmds = append(cmds, TickCommand())
		default:
			if rng.IntN(2) == 0 {
				cmds = append(cmds, PauseQueueCommand(q))
			} else {
				cmds = append(cmds, ResumeQueueCommand(q))
			}
		}
	}
	return cmds
}
