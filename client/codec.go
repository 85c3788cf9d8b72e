package client

import (
	"fmt"

	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/proto"

	"github.com/sepp-io/sepp/internal/grpcbuf"
	seppv1 "github.com/sepp-io/sepp/proto/sepp/v1"
)

// protoCodec is gRPC's proto codec with one difference: messages are
// encoded into and decoded from grpcbuf's buffer tiers, not gRPC's default
// pool (see grpcbuf), and reserve answers, most of what a worker
// receives, have a decoder of their own (decode.go).
type protoCodec struct{}

func (protoCodec) Name() string { return "proto" }

func (protoCodec) Marshal(v any) (mem.BufferSlice, error) { return grpcbuf.Marshal(v) }

func (protoCodec) Unmarshal(data mem.BufferSlice, v any) error {
	m, ok := v.(proto.Message)
	if !ok {
		return fmt.Errorf("proto: cannot unmarshal into %T, want proto.Message", v)
	}
	buf := data.MaterializeToBuffer(grpcbuf.Pool)
	defer buf.Free()
	// Reserve responses are most of what the client decodes; the fast path
	// copies out all it keeps, so buf may be freed after it.
	if r, ok := m.(*seppv1.ReserveResponse); ok && decodeReserveResponse(buf.ReadOnlyData(), r) {
		return nil
	}
	return proto.Unmarshal(buf.ReadOnlyData(), m)
}
