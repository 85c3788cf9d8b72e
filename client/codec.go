package client

import (
	"fmt"

	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/proto"

	seppv1 "github.com/sepp-io/sepp/proto/sepp/v1"
)

// protoCodec is gRPC's proto codec with one difference: large messages are
// encoded into buffers from messageBuffers, not gRPC's default pool, which
// hands a 40 KiB enqueue batch a 1 MiB buffer and zeroes all of it first.
type protoCodec struct{}

func (protoCodec) Name() string { return "proto" }

func (protoCodec) Marshal(v any) (mem.BufferSlice, error) {
	m, ok := v.(proto.Message)
	if !ok {
		return nil, fmt.Errorf("proto: cannot marshal %T, want proto.Message", v)
	}
	// UseCachedSize reuses what Size just computed; the message is not
	// changed in between.
	size := proto.Size(m)
	opts := proto.MarshalOptions{UseCachedSize: true}
	if mem.IsBelowBufferPoolingThreshold(size) {
		buf, err := opts.Marshal(m)
		if err != nil {
			return nil, err
		}
		return mem.BufferSlice{mem.SliceBuffer(buf)}, nil
	}
	buf := messageBuffers.Get(size)
	if _, err := opts.MarshalAppend((*buf)[:0], m); err != nil {
		messageBuffers.Put(buf)
		return nil, err
	}
	return mem.BufferSlice{mem.NewBuffer(buf, messageBuffers)}, nil
}

func (protoCodec) Unmarshal(data mem.BufferSlice, v any) error {
	m, ok := v.(proto.Message)
	if !ok {
		return fmt.Errorf("proto: cannot unmarshal into %T, want proto.Message", v)
	}
	buf := data.MaterializeToBuffer(messageBuffers)
	defer buf.Free()
	// Reserve responses are most of what the client decodes; the fast path
	// copies out all it keeps, so buf may be freed after it.
	if r, ok := m.(*seppv1.ReserveResponse); ok && decodeReserveResponse(buf.ReadOnlyData(), r) {
		return nil
	}
	return proto.Unmarshal(buf.ReadOnlyData(), m)
}
