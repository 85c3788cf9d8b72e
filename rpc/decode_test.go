package rpc

import (
	"bytes"
	"fmt"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	seppv1 "github.com/sepp-io/sepp/proto/sepp/v1"
)

// requireSameDecode decodes raw with decodeEnqueueBatch and, when it
// accepts, requires proto.Unmarshal to give the same message. It returns
// whether the fast decoder accepted.
func requireSameDecode(t testing.TB, raw []byte) bool {
	t.Helper()
	var fast seppv1.EnqueueBatchRequest
	if !decodeEnqueueBatch(append([]byte(nil), raw...), &fast) {
		if len(fast.GetJobs()) != 0 {
			t.Fatalf("a refused decode changed the message: %v", &fast)
		}
		return false
	}
	var want seppv1.EnqueueBatchRequest
	if err := proto.Unmarshal(raw, &want); err != nil {
		t.Fatalf("the fast decoder accepted what proto.Unmarshal refuses (%v): % x", err, raw)
	}
	if !proto.Equal(&fast, &want) {
		t.Fatalf("fast decode = %v\nproto.Unmarshal = %v\nwire % x", &fast, &want, raw)
	}
	return true
}

func marshal(t testing.TB, m proto.Message) []byte {
	t.Helper()
	b, err := proto.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestDecodeEnqueueBatch_SameAsProto(t *testing.T) {
	prio := func(p uint32) *uint32 { return &p }
	tests := []struct {
		name string
		jobs []*seppv1.EnqueueRequest
	}{
		{"Minimal", []*seppv1.EnqueueRequest{{Queue: "q"}}},
		{"EmptyJob", []*seppv1.EnqueueRequest{{}, {Queue: "q"}}},
		{"ProducerShape", []*seppv1.EnqueueRequest{
			{Queue: "q", JobType: "t", Payload: make([]byte, 256), IdempotencyKey: "k-1"},
			{Queue: "q", JobType: "t", Payload: []byte("two"), IdempotencyKey: "k-2"},
			{Queue: "q", JobType: "t", Payload: []byte("three")},
			{Queue: "q", JobType: "t", Payload: []byte("four"), IdempotencyKey: "k-4"},
		}},
		{"QueuesAndTypesChange", []*seppv1.EnqueueRequest{
			{Queue: "a", JobType: "x"}, {Queue: "b", JobType: "x"}, {Queue: "a", JobType: "y"}, {Queue: "a", JobType: "y"},
		}},
		{"EveryField", []*seppv1.EnqueueRequest{{
			Queue: "q", JobType: "tÿpe", Payload: []byte{0xff, 0}, Priority: prio(7),
			ScheduledAt: &timestamppb.Timestamp{Seconds: 1893456000, Nanos: 5}, MaxAttempts: 4,
			Custom: map[string]string{"a": "1", "": "empty key", "b": ""}, IdempotencyKey: "clé",
		}}},
		{"ZeroPriorityIsSet", []*seppv1.EnqueueRequest{{Queue: "q", Priority: prio(0)}, {Queue: "q"}}},
		{"NegativeAndEmptyTimestamps", []*seppv1.EnqueueRequest{
			{Queue: "q", ScheduledAt: &timestamppb.Timestamp{Seconds: -5, Nanos: -1}},
			{Queue: "q", ScheduledAt: &timestamppb.Timestamp{}},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if !requireSameDecode(t, marshal(t, &seppv1.EnqueueBatchRequest{Jobs: tt.jobs})) {
				t.Fatal("the fast decoder refused a well-formed request")
			}
		})
	}
}

// Wire forms that proto.Unmarshal merges, overwrites, keeps as unknown or
// refuses: the fast decoder must refuse them (the general decoder then
// runs) or decode them the same.
func TestDecodeEnqueueBatch_FallsBack(t *testing.T) {
	job := func(fields ...[]byte) []byte {
		var j []byte
		for _, f := range fields {
			j = append(j, f...)
		}
		return protowire.AppendBytes(protowire.AppendTag(nil, 1, protowire.BytesType), j)
	}
	str := func(num protowire.Number, s string) []byte {
		return protowire.AppendString(protowire.AppendTag(nil, num, protowire.BytesType), s)
	}
	varint := func(num protowire.Number, v uint64) []byte {
		return protowire.AppendVarint(protowire.AppendTag(nil, num, protowire.VarintType), v)
	}
	entry := func(fields ...[]byte) []byte {
		var e []byte
		for _, f := range fields {
			e = append(e, f...)
		}
		return protowire.AppendBytes(protowire.AppendTag(nil, 7, protowire.BytesType), e)
	}
	cat := func(parts ...[]byte) []byte {
		var out []byte
		for _, p := range parts {
			out = append(out, p...)
		}
		return out
	}
	tests := []struct {
		name   string
		raw    []byte
		refuse bool // must go the general way
	}{
		{"Empty", nil, true},
		{"InvalidUTF8Queue", job(str(1, "q\xff")), true},
		{"InvalidUTF8JobType", job(str(1, "q"), str(2, "\xc3\x28")), true},
		{"InvalidUTF8Key", job(str(1, "q"), str(8, "\xff")), true},
		{"InvalidUTF8CustomKey", job(entry(str(1, "\xff"), str(2, "v"))), true},
		{"InvalidUTF8CustomValue", job(entry(str(1, "k"), str(2, "\xff"))), true},
		{"RepeatedQueue", job(str(1, "a"), str(1, "b")), true},
		{"RepeatedTimestamp", job(str(5, string(varint(1, 5))), str(5, string(varint(2, 7)))), true},
		{"UnknownJobField", job(str(1, "q"), str(9, "x")), true},
		{"UnknownTopField", cat(job(str(1, "q")), str(2, "x")), true},
		{"WrongWireType", job(varint(1, 3)), true},
		{"PriorityAsBytes", job(str(4, "x")), true},
		{"Truncated", job(str(1, "q"))[:4], true},
		{"UnknownTimestampField", job(str(5, string(varint(3, 1)))), true},
		{"CustomEntryWithUnknownField", job(entry(str(1, "k"), str(3, "x"))), true},
		{"CustomDuplicateKeys", job(entry(str(1, "k"), str(2, "1")), entry(str(1, "k"), str(2, "2"))), false},
		{"CustomEntryWithoutKeyOrValue", job(entry(str(2, "v")), entry(str(1, "k")), entry()), false},
		{"FieldsOutOfOrder", job(str(8, "key"), varint(6, 2), str(3, "p"), str(1, "q")), false},
		{"HugeVarints", job(varint(4, 1<<40+3), varint(6, 1<<33+1)), false},
		{"EmptyPayloadPresent", job(str(3, ""), str(1, "q")), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if ok := requireSameDecode(t, tt.raw); ok && tt.refuse {
				t.Fatal("the fast decoder accepted a form it must leave to proto.Unmarshal")
			} else if !ok && !tt.refuse {
				t.Fatal("the fast decoder refused a form it decodes")
			}
		})
	}
}

func TestDecodeEnqueueBatch_PayloadsDoNotOverlap(t *testing.T) {
	raw := marshal(t, &seppv1.EnqueueBatchRequest{Jobs: []*seppv1.EnqueueRequest{
		{Queue: "q", Payload: []byte("aaaa"), IdempotencyKey: "k1"},
		{Queue: "q", Payload: []byte("bbbb"), IdempotencyKey: "k2"},
	}})
	var m seppv1.EnqueueBatchRequest
	if !decodeEnqueueBatch(raw, &m) {
		t.Fatal("refused")
	}
	// An append to one payload must not write over the bytes after it.
	_ = append(m.Jobs[0].Payload, "xxxxxxxxxxxx"...)
	if string(m.Jobs[1].Payload) != "bbbb" || m.Jobs[0].GetIdempotencyKey() != "k1" || m.Jobs[1].GetIdempotencyKey() != "k2" {
		t.Fatalf("jobs after an append: %v", &m)
	}
}

func FuzzDecodeEnqueueBatch(f *testing.F) {
	prio := uint32(3)
	for _, m := range []*seppv1.EnqueueBatchRequest{
		{Jobs: []*seppv1.EnqueueRequest{{Queue: "q", JobType: "t", Payload: []byte("p"), IdempotencyKey: "k"}}},
		{Jobs: []*seppv1.EnqueueRequest{{Queue: "q", Priority: &prio, ScheduledAt: &timestamppb.Timestamp{Seconds: 1893456000, Nanos: 7}, Custom: map[string]string{"a": "b"}}, {}}},
	} {
		b, err := proto.Marshal(m)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		requireSameDecode(t, raw)
	})
}

// BenchmarkDecodeEnqueueBatch: the server's decoding of one EnqueueBatch
// request of 128 jobs in the producer's shape (256-byte payload, a key
// each), by proto.Unmarshal (as before decode.go) and by the batch decoder.
// Both start from the transport's bytes, as the codec gets them.
func BenchmarkDecodeEnqueueBatch(b *testing.B) {
	req := &seppv1.EnqueueBatchRequest{}
	for i := range 128 {
		req.Jobs = append(req.Jobs, &seppv1.EnqueueRequest{
			Queue: "produce-1", JobType: "bench", Payload: make([]byte, 256), IdempotencyKey: fmt.Sprintf("c0ffee-%08d", i),
		})
	}
	wire := marshal(b, req)
	b.Run("proto", func(b *testing.B) {
		b.ReportAllocs()
		for range b.N {
			var m seppv1.EnqueueBatchRequest
			if err := proto.Unmarshal(wire, &m); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("batch", func(b *testing.B) {
		b.ReportAllocs()
		for range b.N {
			var m seppv1.EnqueueBatchRequest
			if !decodeEnqueueBatch(bytes.Clone(wire), &m) { // the clone stands for Materialize
				b.Fatal("refused")
			}
		}
	})
}
