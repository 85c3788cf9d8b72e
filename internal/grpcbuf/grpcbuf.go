// Package grpcbuf owns the buffers sepp's gRPC client and server read and
// write messages in, the proto marshalling into them that both use, and the
// HTTP/2 flow-control windows both open.
//
// gRPC's default pool jumps from 32 KiB to 1 MiB and zeroes a buffer's whole
// capacity when it hands it out, so every enqueue batch or reserve answer of
// a few tens of kilobytes cleared a megabyte (7% of a leader's CPU serving
// reserves). With tiers a power of two apart a buffer is at most twice the
// message.
package grpcbuf

import (
	"fmt"

	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/proto"
)

// Flow-control windows, set on both ends. Left unset, gRPC starts each
// stream and connection at 64 KiB and grows them from its bandwidth-delay
// estimate, which on loopback or a LAN stays small: sixteen consumers each
// receiving reserve answers of some 30 KB then take turns on the
// connection's window. Fixed windows (gRPC's estimate may grow to the same
// 16 MiB per connection) made consume 13% faster in the project's benchmark,
// with 9% less server CPU per job (make bench-ab, three rounds). The
// messages themselves stay bounded by max_message_bytes.
const (
	StreamWindow     = 4 << 20
	ConnectionWindow = 16 << 20
)

// Pool is the buffer pool for gRPC's transport and for Marshal.
var Pool = mem.NewTieredBufferPool(256, 4<<10, 16<<10, 32<<10, 64<<10, 128<<10, 256<<10, 512<<10, 1<<20)

// Marshal is gRPC's proto marshalling, except that a large message is
// encoded into a buffer from Pool rather than from gRPC's default pool.
func Marshal(v any) (mem.BufferSlice, error) {
	m, ok := v.(proto.Message)
	if !ok {
		return nil, fmt.Errorf("proto: cannot marshal %T, want proto.Message", v)
	}
	// UseCachedSize reuses what Size just computed; a message is not
	// changed while it is sent.
	opts := proto.MarshalOptions{UseCachedSize: true}
	return Encode(proto.Size(m), func(dst []byte) ([]byte, error) { return opts.MarshalAppend(dst, m) })
}

// Encode returns the size bytes that fill appends to an empty slice of
// that capacity, in the buffer gRPC's codec would use: a slice of its own
// below gRPC's pooling threshold, else one from Pool, which gRPC gives back
// when it has sent the message. Hand-written encoders of hot messages use
// it with the size they computed.
func Encode(size int, fill func(dst []byte) ([]byte, error)) (mem.BufferSlice, error) {
	if mem.IsBelowBufferPoolingThreshold(size) {
		b, err := fill(make([]byte, 0, size))
		if err != nil {
			return nil, err
		}
		return mem.BufferSlice{mem.SliceBuffer(b)}, nil
	}
	buf := Pool.Get(size)
	b, err := fill((*buf)[:0])
	if err != nil {
		Pool.Put(buf)
		return nil, err
	}
	*buf = b
	return mem.BufferSlice{mem.NewBuffer(buf, Pool)}, nil
}
