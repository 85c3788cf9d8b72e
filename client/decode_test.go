package client

import (
	"bytes"
	"fmt"
	"math"
	"testing"
	"unsafe"

	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	seppv1 "github.com/sepp-io/sepp/proto/sepp/v1"
)

// requireSameDecode decodes raw with decodeReserveResponse and with the
// codec, and requires both to agree with proto.Unmarshal (see
// requireFastDecode). It returns whether the fast decoder accepted.
func requireSameDecode(t testing.TB, raw []byte) bool {
	t.Helper()
	return requireFastDecode(t, raw, &seppv1.ReserveResponse{}, decodeReserveResponse)
}

// requireFastDecode checks a fast decoder of M against proto.Unmarshal:
// the fast decoder accepts only what proto.Unmarshal decodes to an equal
// message and leaves the message untouched when it refuses (before is what
// it holds then), and the codec gives the same message or fails as
// proto.Unmarshal does. It returns whether the fast decoder accepted.
func requireFastDecode[M proto.Message](t testing.TB, raw []byte, before M, fast func([]byte, M) bool) bool {
	t.Helper()
	want := before.ProtoReflect().New().Interface()
	wantErr := proto.Unmarshal(raw, want)

	viaCodec := before.ProtoReflect().New().Interface()
	err := protoCodec{}.Unmarshal(mem.BufferSlice{mem.SliceBuffer(bytes.Clone(raw))}, viaCodec)
	if (err == nil) != (wantErr == nil) {
		t.Fatalf("codec error %v, proto.Unmarshal error %v; wire % x", err, wantErr, raw)
	}
	if err == nil && !proto.Equal(viaCodec, want) {
		t.Fatalf("codec = %v\nproto.Unmarshal = %v\nwire % x", viaCodec, want, raw)
	}

	got := proto.Clone(before).(M)
	if !fast(raw, got) {
		if !proto.Equal(got, before) {
			t.Fatalf("a refused decode changed the message: %v", got)
		}
		return false
	}
	if wantErr != nil {
		t.Fatalf("the fast decoder accepted what proto.Unmarshal refuses (%v): % x", wantErr, raw)
	}
	if !proto.Equal(got, want) {
		t.Fatalf("fast decode = %v\nproto.Unmarshal = %v\nwire % x", got, want, raw)
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

// delivery is one delivery as the server sends it for a first attempt.
func delivery(i int) *seppv1.ReservedJob {
	id := uint64(1_000_000 + i)
	return &seppv1.ReservedJob{
		Ctx: &seppv1.JobContext{
			JobId: id, LeaseToken: 7_000_000 + uint64(i), Attempt: 1, MaxAttempts: 25,
			LeaseDeadline: &timestamppb.Timestamp{Seconds: 1_893_456_030, Nanos: 123_456_789},
			Queue:         "consume-1", WorkerId: "worker-3f2a",
		},
		Job: &seppv1.Job{
			Id: id, Queue: "consume-1", JobType: "bench", Payload: bytes.Repeat([]byte{byte(i)}, 256),
			State:      seppv1.JobState_JOB_STATE_RESERVED,
			EnqueuedAt: &timestamppb.Timestamp{Seconds: 1_893_456_000, Nanos: int32(i)},
			Attempt:    1, MaxAttempts: 25, WorkerId: "worker-3f2a",
			LeaseDeadline: &timestamppb.Timestamp{Seconds: 1_893_456_030, Nanos: 123_456_789},
			StartedAt:     &timestamppb.Timestamp{Seconds: 1_893_456_000, Nanos: 987_654_321},
		},
	}
}

func response(n int) *seppv1.ReserveResponse {
	r := &seppv1.ReserveResponse{}
	for i := range n {
		r.Jobs = append(r.Jobs, delivery(i))
	}
	return r
}

// retried is a redelivery carrying every optional field the fast path takes.
func retried() *seppv1.ReservedJob {
	d := delivery(1)
	d.Ctx.Attempt, d.Job.Attempt = 3, 3
	d.Job.Priority = 9
	d.Job.ScheduledAt = &timestamppb.Timestamp{Seconds: -62135596800}
	d.Job.NextAttemptAt = &timestamppb.Timestamp{Seconds: 253402300799, Nanos: 999_999_999}
	d.Job.LastReason = "débordement"
	d.Job.ExpiresAt = &timestamppb.Timestamp{Seconds: 1_893_459_600}
	d.Job.JobType = "tÿpe"
	d.Job.TraceContext = &seppv1.TraceContext{Traceparent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", Tracestate: "congo=t61rcWkgMzE"}
	return d
}

func TestDecodeReserveResponse_SameAsProto(t *testing.T) {
	changing := response(4)
	changing.Jobs[1].Job.Queue, changing.Jobs[1].Ctx.Queue = "other", "other"
	changing.Jobs[2].Job.JobType = "x"
	changing.Jobs[3].Ctx.WorkerId = "w2"
	tests := []struct {
		name string
		resp *seppv1.ReserveResponse
	}{
		{"NoDelivery", &seppv1.ReserveResponse{}},
		{"OneDelivery", response(1)},
		{"HundredDeliveries", response(100)},
		{"EveryHandledField", &seppv1.ReserveResponse{Jobs: []*seppv1.ReservedJob{retried(), delivery(2)}}},
		{"StringsChangeBetweenDeliveries", changing},
		{"TraceContexts", func() *seppv1.ReserveResponse {
			r := response(3)
			r.Jobs[0].Job.TraceContext = &seppv1.TraceContext{Traceparent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}
			r.Jobs[1].Job.TraceContext = &seppv1.TraceContext{Traceparent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", Tracestate: "a=1"}
			r.Jobs[2].Job.TraceContext = &seppv1.TraceContext{}
			return r
		}()},
		{"EmptyMessages", &seppv1.ReserveResponse{Jobs: []*seppv1.ReservedJob{
			{}, {Ctx: &seppv1.JobContext{}}, {Job: &seppv1.Job{EnqueuedAt: &timestamppb.Timestamp{}}},
		}}},
		{"LargestValues", &seppv1.ReserveResponse{Jobs: []*seppv1.ReservedJob{{
			Ctx: &seppv1.JobContext{JobId: math.MaxUint64, LeaseToken: math.MaxUint64, Attempt: math.MaxUint32, MaxAttempts: math.MaxUint32},
			Job: &seppv1.Job{Id: math.MaxUint64, State: seppv1.JobState(math.MinInt32), Priority: math.MaxUint32,
				LeaseDeadline: &timestamppb.Timestamp{Seconds: math.MinInt64, Nanos: math.MinInt32}},
		}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if !requireSameDecode(t, marshal(t, tt.resp)) {
				t.Fatal("the fast decoder refused a response it handles")
			}
		})
	}
}

// Wire forms that proto.Unmarshal merges, overwrites, keeps as unknown or
// refuses, and fields the fast path leaves to it: the fast decoder must
// refuse them, or decode them the same.
func TestDecodeReserveResponse_FallsBack(t *testing.T) {
	cat := func(parts ...[]byte) []byte { return bytes.Join(parts, nil) }
	msg := func(num protowire.Number, fields ...[]byte) []byte {
		return protowire.AppendBytes(protowire.AppendTag(nil, num, protowire.BytesType), cat(fields...))
	}
	str := func(num protowire.Number, s string) []byte { return msg(num, []byte(s)) }
	varint := func(num protowire.Number, v uint64) []byte {
		return protowire.AppendVarint(protowire.AppendTag(nil, num, protowire.VarintType), v)
	}
	// A response of one delivery whose ReservedJob holds fields.
	resp := func(fields ...[]byte) []byte { return msg(1, fields...) }
	ctx := func(fields ...[]byte) []byte { return resp(msg(1, fields...)) }
	job := func(fields ...[]byte) []byte { return resp(msg(2, fields...)) }
	good := marshal(t, response(2))

	tests := []struct {
		name   string
		raw    []byte
		refuse bool // must go the general way
	}{
		{"UnknownTopField", cat(good, str(2, "x")), true},
		{"UnknownReservedJobField", resp(str(3, "x")), true},
		{"UnknownContextField", ctx(varint(8, 1)), true},
		{"UnknownJobField", job(varint(17, 1)), true},
		{"UnknownTimestampField", job(msg(7, varint(3, 1))), true},
		{"HighestFieldNumber", job(varint(protowire.MaxValidNumber, 1)), true},
		{"FieldNumberAboveMax", job(protowire.AppendVarint(nil, uint64(protowire.MaxValidNumber+1)<<3)), true},
		{"FieldNumberZero", job([]byte{0x00, 0x01}), true},
		{"CustomMap", job(msg(12, str(1, "k"), str(2, "v"))), true},
		{"History", job(msg(16, varint(1, 2))), true},
		{"Origin", job(msg(151, str(1, "q"))), true},
		{"RepeatedStartedAt", job(msg(150), msg(150)), true},
		{"RepeatedExpiresAt", job(msg(140, varint(1, 1)), msg(140)), true},
		{"StartedAtAsVarint", job(varint(150, 1)), true},
		{"UnknownWideJobField", job(msg(149)), true},
		{"UnknownTraceContextField", job(msg(170, str(3, "x"))), true},
		{"RepeatedTraceContext", job(msg(170, str(1, "a")), msg(170, str(2, "b"))), true},
		{"RepeatedTraceparent", job(msg(170, str(1, "a"), str(1, "b"))), true},
		{"TraceContextAsVarint", job(varint(170, 1)), true},
		{"InvalidUTF8Traceparent", job(msg(170, str(1, "\xff"))), true},
		{"InvalidUTF8Tracestate", job(msg(170, str(2, "\xff"))), true},
		{"TraceContextFieldsOutOfOrder", job(msg(170, str(2, "s"), str(1, "p")), str(2, "q")), false},
		{"UnknownWideContextField", ctx(msg(150)), true},
		{"WideFieldsOutOfOrder", job(msg(150, varint(1, 5)), str(2, "q"), msg(140, varint(2, 7))), false},
		{"WrongWireTypeTop", varint(1, 1), true},
		{"WrongWireTypeVarintAsBytes", ctx(str(1, "x")), true},
		{"WrongWireTypeBytesAsVarint", job(varint(2, 1)), true},
		{"Fixed64", job(protowire.AppendFixed64(protowire.AppendTag(nil, 1, protowire.Fixed64Type), 1)), true},
		{"Group", job(protowire.AppendTag(nil, 1, protowire.StartGroupType), protowire.AppendTag(nil, 1, protowire.EndGroupType)), true},
		{"RepeatedContext", resp(msg(1), msg(1)), true},
		{"RepeatedJob", resp(msg(2), msg(2)), true},
		{"RepeatedScalar", ctx(varint(1, 1), varint(1, 2)), true},
		{"RepeatedString", job(str(2, "a"), str(2, "a")), true},
		{"RepeatedPayload", job(str(4, "a"), str(4, "b")), true},
		{"RepeatedTimestamp", ctx(msg(5), msg(5)), true},
		{"RepeatedSeconds", job(msg(7, varint(1, 1), varint(1, 2))), true},
		{"InvalidUTF8ContextQueue", ctx(str(6, "q\xff")), true},
		{"InvalidUTF8ContextWorker", ctx(str(7, "\xc3\x28")), true},
		{"InvalidUTF8JobQueue", job(str(2, "\xff")), true},
		{"InvalidUTF8JobType", job(str(3, "\xed\xa0\x80")), true}, // a surrogate
		{"InvalidUTF8JobWorker", job(str(13, "\xff")), true},
		{"InvalidUTF8LastReason", job(str(15, "\xff")), true},
		{"InvalidUTF8AfterValidRepeat", cat(job(str(2, "q")), job(str(2, "q\xff"))), true},
		{"TruncatedTop", good[:len(good)-1], true},
		{"TruncatedLength", []byte{0x0a, 0x05, 0x0a}, true},
		{"TruncatedVarint", ctx([]byte{0x08, 0x80}), true},
		{"OverlongVarint", ctx([]byte{0x08, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02}), true},
		{"EmptyPayloadPresent", job(str(4, ""), str(2, "q")), false},
		{"FieldsOutOfOrder", job(str(15, "r"), varint(11, 2), str(4, "p"), varint(1, 9)), false},
		{"NarrowedVarints", cat(ctx(varint(3, 1<<40+3)), job(varint(6, 1<<33+1), varint(5, math.MaxUint64))), false},
		{"NonMinimalTag", ctx([]byte{0x88, 0x00, 0x05}), false},
		{"ExplicitZeros", ctx(varint(1, 0), str(6, ""), msg(5)), false},
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

// A handler may keep a payload: it must own its memory, apart from the
// pooled buffer (freed after decoding) and from the other payloads.
func TestDecodeReserveResponse_PayloadsOwnTheirMemory(t *testing.T) {
	want := response(3)
	raw := marshal(t, want)
	var got seppv1.ReserveResponse
	if err := (protoCodec{}).Unmarshal(mem.BufferSlice{mem.SliceBuffer(raw)}, &got); err != nil {
		t.Fatal(err)
	}
	span := func(b []byte) [2]uintptr {
		p := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
		return [2]uintptr{p, p + uintptr(cap(b))}
	}
	overlap := func(a, b [2]uintptr) bool { return a[0] < b[1] && b[0] < a[1] }
	spans := [][2]uintptr{span(raw)}
	for i, d := range got.Jobs {
		p := span(d.GetJob().GetPayload())
		for _, s := range spans {
			if overlap(p, s) {
				t.Fatalf("payload %d [%#x, %#x) shares memory with [%#x, %#x)", i, p[0], p[1], s[0], s[1])
			}
		}
		spans = append(spans, p)
	}
	clear(raw) // as the pool may hand it to the next message
	if !proto.Equal(&got, want) {
		t.Fatalf("a decoded response changed with the buffer: %v", &got)
	}
}

func FuzzDecodeReserveResponse(f *testing.F) {
	edge := response(1)
	edge.Jobs[0].Job.Custom = map[string]string{"k": "v"}
	edge.Jobs[0].Job.History = []*seppv1.JobAttempt{{Attempt: 1, WorkerId: "w", Outcome: "nack"}}
	for _, m := range []*seppv1.ReserveResponse{
		{}, response(1), response(100), edge,
		{Jobs: []*seppv1.ReservedJob{retried(), {}, {Ctx: &seppv1.JobContext{}}}},
	} {
		f.Add(marshal(f, m))
	}
	unknown := protowire.AppendVarint(protowire.AppendTag(nil, protowire.MaxValidNumber, protowire.VarintType), 1)
	highest := protowire.AppendBytes(protowire.AppendTag(nil, 1, protowire.BytesType),
		protowire.AppendBytes(protowire.AppendTag(nil, 2, protowire.BytesType), unknown))
	f.Add(highest)
	f.Add(append(marshal(f, response(1)), unknown...))
	f.Fuzz(func(t *testing.T, raw []byte) {
		requireSameDecode(t, raw)
	})
}

// BenchmarkDecodeReserveResponse: the client's decoding of one Reserve
// response of 100 deliveries in the consume shape (one queue, job type and
// worker, 256-byte payloads), by proto.Unmarshal (as before decode.go) and
// by the fast decoder; traced: every job with a trace context (each its
// own traceparent, as jobs of separate enqueues have).
func BenchmarkDecodeReserveResponse(b *testing.B) {
	traced := response(100)
	for i, d := range traced.Jobs {
		d.Job.TraceContext = &seppv1.TraceContext{Traceparent: fmt.Sprintf("00-4bf92f3577b34da6a3ce929d0e0e4736-%016x-01", i+1)}
	}
	for _, tt := range []struct {
		name string
		wire []byte
	}{{"plain", marshal(b, response(100))}, {"traced", marshal(b, traced)}} {
		b.Run(tt.name+"/proto", func(b *testing.B) {
			b.ReportAllocs()
			for range b.N {
				var m seppv1.ReserveResponse
				if err := proto.Unmarshal(tt.wire, &m); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(tt.name+"/fast", func(b *testing.B) {
			b.ReportAllocs()
			for range b.N {
				var m seppv1.ReserveResponse
				if !decodeReserveResponse(tt.wire, &m) {
					b.Fatal("refused")
				}
			}
		})
	}
}
