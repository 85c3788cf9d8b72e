package rpc

import (
	"bytes"
	"math"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/sepp-io/sepp/internal/grpcbuf"
	seppv1 "github.com/sepp-io/sepp/proto/sepp/v1"
)

func enqueued(id uint64, state seppv1.JobState, dup bool) *seppv1.EnqueueBatchResult {
	return &seppv1.EnqueueBatchResult{Outcome: &seppv1.EnqueueBatchResult_Enqueued{
		Enqueued: &seppv1.EnqueueResponse{JobId: id, State: state, Duplicate: dup},
	}}
}

func itemError() *seppv1.EnqueueBatchResult {
	return &seppv1.EnqueueBatchResult{Outcome: &seppv1.EnqueueBatchResult_Error{
		Error: &seppv1.ItemError{Code: 3, Message: "queue: must not be empty"},
	}}
}

// withUnknown gives m an unknown varint field, as a newer peer's message
// decoded here would carry.
func withUnknown[M proto.Message](m M) M {
	m.ProtoReflect().SetUnknown(protoreflect.RawFields(protowire.AppendVarint(protowire.AppendTag(nil, 99, protowire.VarintType), 7)))
	return m
}

// enqueueBatchAnswer is a leader's answer to a full batch of n fresh jobs,
// every eighth a duplicate of an earlier one.
func enqueueBatchAnswer(n int) *seppv1.EnqueueBatchResponse {
	resp := &seppv1.EnqueueBatchResponse{}
	for i := range n {
		resp.Results = append(resp.Results, enqueued(uint64(1_000_000+i), seppv1.JobState_JOB_STATE_READY, i%8 == 7))
	}
	return resp
}

// requireSameEncoding marshals m with the fast encoder (which must accept
// it when wantFast) and with the server's codec, twice (the second time into
// a buffer the first returned), and requires proto.Marshal's bytes of both.
func requireSameEncoding(t testing.TB, m *seppv1.EnqueueBatchResponse, wantFast bool) {
	t.Helper()
	want, err := proto.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	data, ok := marshalEnqueueBatchResponse(m)
	if ok != wantFast {
		t.Fatalf("fast encoder accepted = %v, want %v", ok, wantFast)
	}
	if ok {
		got := data.Materialize()
		data.Free()
		if !bytes.Equal(got, want) {
			t.Fatalf("fast encoding\n% x\nproto.Marshal\n% x", got, want)
		}
	}
	codec := newUTF8Codec()
	for range 2 {
		data, err := codec.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		if got := data.Materialize(); !bytes.Equal(got, want) {
			t.Fatalf("codec encoding\n% x\nproto.Marshal\n% x", got, want)
		}
		data.Free()
	}
}

func TestMarshalEnqueueBatchResponse_SameAsProto(t *testing.T) {
	var allStates []*seppv1.EnqueueBatchResult
	for s := range int32(len(seppv1.JobState_name)) {
		allStates = append(allStates, enqueued(uint64(s)+1, seppv1.JobState(s), false), enqueued(uint64(s)+1, seppv1.JobState(s), true))
	}
	tests := []struct {
		name    string
		results []*seppv1.EnqueueBatchResult
	}{
		{"Empty", nil},
		{"OneItem", []*seppv1.EnqueueBatchResult{enqueued(1, seppv1.JobState_JOB_STATE_READY, false)}},
		{"Duplicates", []*seppv1.EnqueueBatchResult{
			enqueued(7, seppv1.JobState_JOB_STATE_READY, true),
			enqueued(8, seppv1.JobState_JOB_STATE_SCHEDULED, true),
			enqueued(9, seppv1.JobState_JOB_STATE_READY, false),
		}},
		{"EveryState", allStates},
		{"UnknownStates", []*seppv1.EnqueueBatchResult{
			enqueued(1, 5, false), enqueued(1, 127, false), enqueued(1, 128, false),
			enqueued(1, math.MaxInt32, true), enqueued(1, -1, false), enqueued(1, math.MinInt32, true),
		}},
		{"JobIDs", []*seppv1.EnqueueBatchResult{
			enqueued(0, seppv1.JobState_JOB_STATE_READY, false), enqueued(1, seppv1.JobState_JOB_STATE_READY, false),
			enqueued(127, 0, false), enqueued(128, 0, false),
			enqueued(1<<63, seppv1.JobState_JOB_STATE_READY, false), enqueued(math.MaxUint64, seppv1.JobState_JOB_STATE_READY, true),
		}},
		{"AllZero", []*seppv1.EnqueueBatchResult{enqueued(0, 0, false)}},
		{"NilResult", []*seppv1.EnqueueBatchResult{nil, enqueued(1, seppv1.JobState_JOB_STATE_READY, false), nil}},
		{"NilOutcome", []*seppv1.EnqueueBatchResult{{}, enqueued(1, seppv1.JobState_JOB_STATE_READY, false)}},
		{"TypedNilOutcome", []*seppv1.EnqueueBatchResult{{Outcome: (*seppv1.EnqueueBatchResult_Enqueued)(nil)}}},
		{"NilEnqueueResponse", []*seppv1.EnqueueBatchResult{{Outcome: &seppv1.EnqueueBatchResult_Enqueued{}}}},
		{"LargestResult", []*seppv1.EnqueueBatchResult{enqueued(math.MaxUint64, math.MinInt32, true)}},
		{"FullBatch", enqueueBatchAnswer(256).Results},            // pooled buffer
		{"AboveLargestTier", enqueueBatchAnswer(100_000).Results}, // over 1 MiB
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			requireSameEncoding(t, &seppv1.EnqueueBatchResponse{Results: tt.results}, true)
		})
	}
	t.Run("NilResponse", func(t *testing.T) {
		if _, ok := marshalEnqueueBatchResponse(nil); ok {
			t.Fatal("fast encoder accepted a nil response")
		}
		requireSameEncoding(t, (*seppv1.EnqueueBatchResponse)(nil), false)
	})
}

// What the fast encoder leaves to the generic one: the codec's answer must
// still be proto.Marshal's.
func TestMarshalEnqueueBatchResponse_FallsBack(t *testing.T) {
	ok := func() *seppv1.EnqueueBatchResult { return enqueued(1, seppv1.JobState_JOB_STATE_READY, false) }
	tests := []struct {
		name string
		resp *seppv1.EnqueueBatchResponse
	}{
		{"ItemError", &seppv1.EnqueueBatchResponse{Results: []*seppv1.EnqueueBatchResult{ok(), itemError(), ok()}}},
		{"NilItemError", &seppv1.EnqueueBatchResponse{Results: []*seppv1.EnqueueBatchResult{{Outcome: &seppv1.EnqueueBatchResult_Error{}}}}},
		{"TypedNilItemError", &seppv1.EnqueueBatchResponse{Results: []*seppv1.EnqueueBatchResult{{Outcome: (*seppv1.EnqueueBatchResult_Error)(nil)}}}},
		{"UnknownOnResponse", withUnknown(&seppv1.EnqueueBatchResponse{Results: []*seppv1.EnqueueBatchResult{ok()}})},
		{"UnknownOnResult", &seppv1.EnqueueBatchResponse{Results: []*seppv1.EnqueueBatchResult{ok(), withUnknown(ok())}}},
		{"UnknownOnEnqueueResponse", &seppv1.EnqueueBatchResponse{Results: []*seppv1.EnqueueBatchResult{
			{Outcome: &seppv1.EnqueueBatchResult_Enqueued{Enqueued: withUnknown(&seppv1.EnqueueResponse{JobId: 3})}},
		}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			requireSameEncoding(t, tt.resp, false)
		})
	}
}

// FuzzEncodeEnqueueBatchResponse builds a response from the fuzzer's bytes:
// per result a kind byte, then for an Enqueued one a job id (with a shift,
// so every varint length comes up), a state (known, or any int32) and the
// duplicate flag in the kind byte.
func FuzzEncodeEnqueueBatchResponse(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{0, 3, 1, 0, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0x83})
	f.Add([]byte{1, 0, 1, 2, 4, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0, 0xff, 0xff, 0xff, 0xff, 0x80, 6, 7})
	f.Add(bytes.Repeat([]byte{0, 3, 0x2a, 0, 0, 0, 0, 0, 0, 0, 50, 1, 0, 0, 0, 2}, 300))
	f.Fuzz(func(t *testing.T, data []byte) {
		in := fuzzInput(data)
		resp := &seppv1.EnqueueBatchResponse{}
		plain := true
		if in.next()%16 == 15 {
			withUnknown(resp)
			plain = false
		}
		for len(in) > 0 && len(resp.Results) < 1024 {
			kind := in.next()
			var r *seppv1.EnqueueBatchResult
			switch kind % 8 {
			case 0:
			case 1:
				r = &seppv1.EnqueueBatchResult{}
			case 2:
				r = &seppv1.EnqueueBatchResult{Outcome: &seppv1.EnqueueBatchResult_Enqueued{}}
			case 3, 4, 5:
				id := in.readUint(8) >> (in.next() % 65)
				state := seppv1.JobState(int32(in.readUint(4)))
				if in.next()%2 == 0 {
					state = seppv1.JobState(uint32(state) % 6) // the known states and the next one
				}
				r = enqueued(id, state, kind&0x80 != 0)
				if kind%8 == 5 && kind&0x40 != 0 {
					withUnknown(r.GetEnqueued())
					plain = false
				}
			case 6:
				r = itemError()
				plain = false
			case 7:
				r = withUnknown(enqueued(in.readUint(2), seppv1.JobState_JOB_STATE_READY, false))
				plain = false
			}
			resp.Results = append(resp.Results, r)
		}
		requireSameEncoding(t, resp, plain)
	})
}

type fuzzInput []byte

func (in *fuzzInput) next() byte {
	if len(*in) == 0 {
		return 0
	}
	c := (*in)[0]
	*in = (*in)[1:]
	return c
}

// readUint reads n bytes little-endian; missing bytes are zero.
func (in *fuzzInput) readUint(n int) uint64 {
	var v uint64
	for i := range n {
		v |= uint64(in.next()) << (8 * i)
	}
	return v
}

// BenchmarkMarshalEnqueueBatchResponse: the server's marshalling of a full
// EnqueueBatch answer (256 results), the generic way (grpcbuf.Marshal, as
// before encode_enqueue.go) and through the codec's fast encoder.
func BenchmarkMarshalEnqueueBatchResponse(b *testing.B) {
	msg := enqueueBatchAnswer(256)
	codec := newUTF8Codec()
	b.Run("generic", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			data, err := grpcbuf.Marshal(msg)
			if err != nil {
				b.Fatal(err)
			}
			data.Free()
		}
	})
	b.Run("fast", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			data, err := codec.Marshal(msg)
			if err != nil {
				b.Fatal(err)
			}
			data.Free()
		}
	})
}
