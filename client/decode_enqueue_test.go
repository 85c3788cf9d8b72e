package client

import (
	"bytes"
	"math"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	seppv1 "github.com/sepp-io/sepp/proto/sepp/v1"
)

// requireSameEnqueueDecode is requireSameDecode for EnqueueBatchResponse;
// a refused decode must leave even a message holding results untouched.
func requireSameEnqueueDecode(t testing.TB, raw []byte) bool {
	t.Helper()
	before := &seppv1.EnqueueBatchResponse{Results: []*seppv1.EnqueueBatchResult{enqueued(9, seppv1.JobState_JOB_STATE_DEAD, true)}}
	return requireFastDecode(t, raw, before, decodeEnqueueBatchResponse)
}

func enqueued(id uint64, state seppv1.JobState, duplicate bool) *seppv1.EnqueueBatchResult {
	return &seppv1.EnqueueBatchResult{Outcome: &seppv1.EnqueueBatchResult_Enqueued{
		Enqueued: &seppv1.EnqueueResponse{JobId: id, State: state, Duplicate: duplicate},
	}}
}

// enqueueBatchResponse is the server's answer to a batch of n new jobs, as
// the producer gets it: ids in a row, every item ready, every tenth a
// duplicate of an earlier enqueue, every seventh scheduled.
func enqueueBatchResponse(n int, firstID uint64) *seppv1.EnqueueBatchResponse {
	r := &seppv1.EnqueueBatchResponse{}
	for i := range n {
		state := seppv1.JobState_JOB_STATE_READY
		if i%7 == 6 {
			state = seppv1.JobState_JOB_STATE_SCHEDULED
		}
		r.Results = append(r.Results, enqueued(firstID+uint64(i), state, i%10 == 9))
	}
	return r
}

func TestDecodeEnqueueBatchResponse_SameAsProto(t *testing.T) {
	tests := []struct {
		name string
		resp *seppv1.EnqueueBatchResponse
	}{
		{"OneItem", enqueueBatchResponse(1, 1)},
		{"TwoItems", enqueueBatchResponse(2, 1_000_000)},
		{"FullBatch", enqueueBatchResponse(256, 1<<40)},
		{"IDsNearMax", enqueueBatchResponse(3, math.MaxUint64-2)},
		{"AllDuplicates", &seppv1.EnqueueBatchResponse{Results: []*seppv1.EnqueueBatchResult{
			enqueued(5, seppv1.JobState_JOB_STATE_READY, true), enqueued(5, seppv1.JobState_JOB_STATE_SCHEDULED, true),
		}}},
		// Duplicates answer the original job's state, whatever it is now.
		{"EveryState", &seppv1.EnqueueBatchResponse{Results: []*seppv1.EnqueueBatchResult{
			enqueued(1, seppv1.JobState_JOB_STATE_RESERVED, true), enqueued(2, seppv1.JobState_JOB_STATE_READY, true),
			enqueued(3, seppv1.JobState_JOB_STATE_DEAD, true), enqueued(4, seppv1.JobState_JOB_STATE_UNSPECIFIED, false),
		}}},
		{"UnknownAndNegativeStates", &seppv1.EnqueueBatchResponse{Results: []*seppv1.EnqueueBatchResult{
			enqueued(1, seppv1.JobState(99), false), enqueued(2, seppv1.JobState(-1), false),
			enqueued(math.MaxUint64, seppv1.JobState(math.MinInt32), true), enqueued(4, seppv1.JobState(math.MaxInt32), false),
		}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if !requireSameEnqueueDecode(t, marshal(t, tt.resp)) {
				t.Fatal("the fast decoder refused a response it handles")
			}
		})
	}
}

// Wire forms that proto.Unmarshal merges, overwrites, keeps as unknown or
// refuses, and outcomes the fast path leaves to it: the fast decoder must
// refuse them, or decode them the same.
func TestDecodeEnqueueBatchResponse_FallsBack(t *testing.T) {
	cat := func(parts ...[]byte) []byte { return bytes.Join(parts, nil) }
	msg := func(num protowire.Number, fields ...[]byte) []byte {
		return protowire.AppendBytes(protowire.AppendTag(nil, num, protowire.BytesType), cat(fields...))
	}
	varint := func(num protowire.Number, v uint64) []byte {
		return protowire.AppendVarint(protowire.AppendTag(nil, num, protowire.VarintType), v)
	}
	// item is one EnqueueBatchResult of a response holding fields.
	item := func(fields ...[]byte) []byte { return msg(1, fields...) }
	// resp is a response of one enqueued item whose EnqueueResponse holds fields.
	resp := func(fields ...[]byte) []byte { return item(msg(1, fields...)) }
	good := marshal(t, enqueueBatchResponse(2, 7))
	itemError := marshal(t, &seppv1.EnqueueBatchResponse{Results: []*seppv1.EnqueueBatchResult{
		enqueued(1, seppv1.JobState_JOB_STATE_READY, false),
		{Outcome: &seppv1.EnqueueBatchResult_Error{Error: &seppv1.ItemError{Code: 3, Message: "bad"}}},
	}})

	tests := []struct {
		name   string
		raw    []byte
		refuse bool // must go the general way
	}{
		{"ErrorOutcome", itemError, true},
		{"EmptyErrorOutcome", item(msg(2)), true},
		{"EnqueuedThenError", item(msg(1, varint(1, 1)), msg(2)), true},              // last wins: error
		{"ErrorThenEnqueued", item(msg(2), msg(1, varint(1, 1))), true},              // last wins: enqueued
		{"RepeatedEnqueued", item(msg(1, varint(1, 1)), msg(1, varint(3, 1))), true}, // merged
		{"EmptyResponse", nil, true},
		{"EmptyItem", cat(good, item()), true},
		{"EmptyEnqueued", resp(), true},
		{"UnknownTopField", cat(good, varint(2, 1)), true},
		{"UnknownItemField", item(msg(1, varint(1, 1)), varint(3, 1)), true},
		{"UnknownEnqueuedField", resp(varint(1, 1), varint(4, 1)), true},
		{"UnknownEnqueuedBytesField", resp(varint(1, 1), msg(9, []byte("x"))), true},
		{"HighestFieldNumber", resp(varint(protowire.MaxValidNumber, 1)), true},
		{"FieldNumberAboveMax", resp(protowire.AppendVarint(nil, uint64(protowire.MaxValidNumber+1)<<3)), true},
		{"FieldNumberZero", resp([]byte{0x00, 0x01}), true},
		{"WrongWireTypeTop", varint(1, 1), true},
		{"WrongWireTypeItem", item(varint(1, 1)), true},
		{"WrongWireTypeJobID", resp(msg(1, []byte{1})), true},
		{"WrongWireTypeState", resp(msg(2)), true},
		{"PackedBool", resp(msg(3, []byte{1})), true},
		{"Fixed64JobID", resp(protowire.AppendFixed64(protowire.AppendTag(nil, 1, protowire.Fixed64Type), 1)), true},
		{"Fixed32State", resp(protowire.AppendFixed32(protowire.AppendTag(nil, 2, protowire.Fixed32Type), 1)), true},
		{"Group", resp(protowire.AppendTag(nil, 1, protowire.StartGroupType), protowire.AppendTag(nil, 1, protowire.EndGroupType)), true},
		{"RepeatedJobID", resp(varint(1, 1), varint(1, 2)), true},
		{"RepeatedState", resp(varint(2, 1), varint(2, 2)), true},
		{"RepeatedDuplicate", resp(varint(3, 1), varint(3, 0)), true},
		{"TruncatedTop", good[:len(good)-1], true},
		{"TruncatedLength", []byte{0x0a, 0x05, 0x0a}, true},
		{"ItemLengthPastEnd", item([]byte{0x0a, 0x04, 0x08, 0x01}), true},
		{"TruncatedVarint", resp([]byte{0x08, 0x80}), true},
		{"OverlongVarint", resp([]byte{0x08, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02}), true},
		{"TruncatedTag", resp([]byte{0x88}), true},
		{"ErrorAfterManyGood", cat(marshal(t, enqueueBatchResponse(256, 1)), itemError), true},
		// Forms proto.Unmarshal decodes to what the fast path makes.
		{"DuplicateAsLargeVarint", resp(varint(1, 3), varint(3, 2)), false},
		{"DuplicateAsMaxVarint", resp(varint(3, math.MaxUint64)), false},
		{"DuplicateAsNonMinimalOne", resp([]byte{0x18, 0x81, 0x00}), false},
		{"DuplicateFalseExplicit", resp(varint(1, 3), varint(3, 0)), false},
		{"ExplicitZeros", resp(varint(1, 0), varint(2, 0), varint(3, 0)), false},
		{"NarrowedState", resp(varint(2, 1<<33+1)), false},
		{"NegativeStateTenBytes", resp(varint(2, math.MaxUint64)), false},
		{"FieldsOutOfOrder", resp(varint(3, 1), varint(2, 2), varint(1, 9)), false},
		{"NonMinimalTag", resp([]byte{0x88, 0x00, 0x05}), false},
		{"NonMinimalLength", item([]byte{0x0a, 0x82, 0x00, 0x08, 0x05}), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if ok := requireSameEnqueueDecode(t, tt.raw); ok && tt.refuse {
				t.Fatal("the fast decoder accepted a form it must leave to proto.Unmarshal")
			} else if !ok && !tt.refuse {
				t.Fatal("the fast decoder refused a form it decodes")
			}
		})
	}
}

func FuzzDecodeEnqueueBatchResponse(f *testing.F) {
	withError := enqueueBatchResponse(3, 40)
	withError.Results[1] = &seppv1.EnqueueBatchResult{Outcome: &seppv1.EnqueueBatchResult_Error{
		Error: &seppv1.ItemError{Code: 6, Message: "exists"}}}
	for _, m := range []*seppv1.EnqueueBatchResponse{
		{}, enqueueBatchResponse(1, 1), enqueueBatchResponse(2, 1_000_000), enqueueBatchResponse(256, 1<<40),
		enqueueBatchResponse(4, math.MaxUint64-3), withError,
		{Results: []*seppv1.EnqueueBatchResult{
			enqueued(math.MaxUint64, seppv1.JobState_JOB_STATE_SCHEDULED, true), enqueued(0, seppv1.JobState(-7), false), {},
		}},
	} {
		f.Add(marshal(f, m))
	}
	// A duplicate flag of 2, and a state narrowed from a wide varint.
	f.Add([]byte{0x0a, 0x08, 0x0a, 0x06, 0x08, 0x01, 0x10, 0x01, 0x18, 0x02})
	f.Add([]byte{0x0a, 0x0a, 0x0a, 0x08, 0x10, 0x81, 0x80, 0x80, 0x80, 0x20, 0x18, 0x01})
	f.Fuzz(func(t *testing.T, raw []byte) {
		requireSameEnqueueDecode(t, raw)
	})
}

// BenchmarkDecodeEnqueueBatchResponse: the producer's decoding of one
// EnqueueBatch response of a full batch (256 items, all enqueued), by
// proto.Unmarshal (as before decode_enqueue.go) and by the fast decoder.
func BenchmarkDecodeEnqueueBatchResponse(b *testing.B) {
	wire := marshal(b, enqueueBatchResponse(256, 1<<40))
	b.Run("proto", func(b *testing.B) {
		b.ReportAllocs()
		for range b.N {
			var m seppv1.EnqueueBatchResponse
			if err := proto.Unmarshal(wire, &m); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("fast", func(b *testing.B) {
		b.ReportAllocs()
		for range b.N {
			var m seppv1.EnqueueBatchResponse
			if !decodeEnqueueBatchResponse(wire, &m) {
				b.Fatal("refused")
			}
		}
	})
}
