package rpc

import (
	"bytes"
	"testing"

	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	seppv1 "github.com/sepp-io/sepp/proto/sepp/v1"
)

func TestReplaceInvalidUTF8(t *testing.T) {
	bad := func(m proto.Message) []byte {
		b, err := proto.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		return bytes.ReplaceAll(b, []byte("@@"), []byte{0xc3, 0x28})
	}
	tests := []struct {
		name  string
		msg   []byte
		md    proto.Message
		field string
	}{
		{"TopLevel", bad(&seppv1.EnqueueRequest{Queue: "q", JobType: "@@"}), &seppv1.EnqueueRequest{}, "job_type"},
		{"MapKey", bad(&seppv1.EnqueueRequest{Queue: "q", Custom: map[string]string{"@@": "v"}}), &seppv1.EnqueueRequest{}, "custom.key"},
		{"RepeatedNested", bad(&seppv1.EnqueueBatchRequest{Jobs: []*seppv1.EnqueueRequest{{Queue: "a"}, {Queue: "b"}, {Queue: "@@"}}}), &seppv1.EnqueueBatchRequest{}, "jobs[2].queue"},
		{"Valid", bad(&seppv1.EnqueueRequest{Queue: "q", Payload: []byte{0xff}}), &seppv1.EnqueueRequest{}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			field, fixed, ok := replaceInvalidUTF8(tt.msg, tt.md.ProtoReflect().Descriptor(), "")
			if !ok || field != tt.field {
				t.Fatalf("field = %q, ok = %v; want %q", field, ok, tt.field)
			}
			if err := proto.Unmarshal(fixed, tt.md); err != nil {
				t.Errorf("the repaired message does not decode: %v", err)
			}
		})
	}
	if _, _, ok := replaceInvalidUTF8([]byte{0xff, 0xff, 0xff}, (&seppv1.EnqueueRequest{}).ProtoReflect().Descriptor(), ""); ok {
		t.Error("garbage wire bytes reported ok")
	}
}

// reserveResponse is a reserve answer of n deliveries with payloads of
// payload bytes, the server's largest frequent message (100 of 256 bytes
// are about 36 KiB, just over gRPC's 32 KiB buffer tier).
func reserveResponse(n, payload int) *seppv1.ReserveResponse {
	resp := &seppv1.ReserveResponse{}
	for i := range n {
		resp.Jobs = append(resp.Jobs, &seppv1.ReservedJob{
			Ctx: &seppv1.JobContext{
				JobId: uint64(i + 1), LeaseToken: uint64(i + 7), Attempt: 1, MaxAttempts: 3,
				LeaseDeadline: &timestamppb.Timestamp{Seconds: 1_800_000_000, Nanos: 123_456_789},
				Queue:         "bench", WorkerId: "worker-1",
			},
			Job: &seppv1.Job{
				Id: uint64(i + 1), Queue: "bench", JobType: "work", Payload: bytes.Repeat([]byte{byte(i)}, payload),
				Priority: 5, State: seppv1.JobState_JOB_STATE_RESERVED,
				EnqueuedAt: &timestamppb.Timestamp{Seconds: 1_799_999_990, Nanos: 987_654_321},
			},
		})
	}
	return resp
}

func TestUTF8CodecMarshal_SameBytesAsProto(t *testing.T) {
	codec := newUTF8Codec()
	tests := []struct {
		name string
		msg  proto.Message
	}{
		{"Small", &seppv1.EnqueueResponse{JobId: 42}},
		{"Empty", &seppv1.ReserveResponse{}},
		{"PooledTier", reserveResponse(100, 256)},        // tens of KiB
		{"AboveLargestTier", reserveResponse(5000, 256)}, // over 1 MiB
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want, err := proto.Marshal(tt.msg)
			if err != nil {
				t.Fatal(err)
			}
			// Twice: the second marshal gets a buffer the first one returned.
			for range 2 {
				data, err := codec.Marshal(tt.msg)
				if err != nil {
					t.Fatal(err)
				}
				if got := data.Materialize(); !bytes.Equal(got, want) {
					t.Fatalf("marshalled %d bytes that differ from proto.Marshal's %d", len(got), len(want))
				}
				data.Free()
			}
		})
	}
}

func TestUTF8CodecMarshal_RefusesANonProtoValue(t *testing.T) {
	if _, err := newUTF8Codec().Marshal(struct{}{}); err == nil {
		t.Fatal("marshalled a value that is not a proto message")
	}
}

// BenchmarkMarshalReserveResponse compares gRPC's own proto codec with the
// server's for a 100-delivery reserve answer.
func BenchmarkMarshalReserveResponse(b *testing.B) {
	msg := reserveResponse(100, 256)
	for _, bc := range []struct {
		name  string
		codec interface {
			Marshal(any) (mem.BufferSlice, error)
		}
	}{
		{"grpc", encoding.GetCodecV2("proto")},
		{"server", newUTF8Codec()},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				data, err := bc.codec.Marshal(msg)
				if err != nil {
					b.Fatal(err)
				}
				data.Free()
			}
		})
	}
}
