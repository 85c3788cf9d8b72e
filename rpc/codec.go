package rpc

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"google.golang.org/grpc"
	"google.golang.org/grpc/encoding"
	_ "google.golang.org/grpc/encoding/proto" // registers the codec wrapped below
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/sepp-io/sepp/internal/grpcbuf"
)

// Go's protobuf rejects a proto3 string holding invalid UTF-8 while decoding,
// and grpc turns any decoding failure into codes.Internal without naming the
// field. A queue name with a stray byte is bad input, not a server fault, so
// the server decodes through utf8Codec: when a sepp.v1 request fails on
// invalid UTF-8 only, it finds the offending field, decodes a copy with the
// bad bytes replaced, and records the field against the message; the first
// interceptor (rejectInvalidUTF8) then answers InvalidArgument naming it
// before any handler sees the request.
type utf8Codec struct {
	base encoding.CodecV2
	// bad maps a decoded request message (pointer) to the field path that
	// held invalid UTF-8. Entries live from decode to the interceptor, which
	// grpc runs right after decoding every unary request.
	bad *sync.Map
}

func newUTF8Codec() utf8Codec {
	return utf8Codec{base: encoding.GetCodecV2("proto"), bad: &sync.Map{}}
}

func (c utf8Codec) Name() string { return c.base.Name() }

// Marshal marshals into grpcbuf's tiers: gRPC's codec takes its buffers
// from its default pool, which hands a 40 KiB reserve answer a 1 MiB buffer
// and zeroes all of it first.
func (c utf8Codec) Marshal(v any) (mem.BufferSlice, error) {
	if _, ok := v.(proto.Message); !ok {
		return c.base.Marshal(v)
	}
	return grpcbuf.Marshal(v)
}

func (c utf8Codec) Unmarshal(data mem.BufferSlice, v any) error {
	err := c.base.Unmarshal(data, v)
	if err == nil || !isInvalidUTF8(err) {
		return err
	}
	m, ok := v.(proto.Message)
	if !ok {
		return err
	}
	md := m.ProtoReflect().Descriptor()
	// Only our own unary requests: their interceptor always runs and clears
	// the entry. Streams (health, reflection) keep the default behaviour.
	if md.ParentFile().Package() != "sepp.v1" {
		return err
	}
	field, fixed, ok := replaceInvalidUTF8(data.Materialize(), md, "")
	if !ok || field == "" {
		return err
	}
	proto.Reset(m)
	if uerr := proto.Unmarshal(fixed, m); uerr != nil {
		return err
	}
	c.bad.Store(m, field)
	return nil
}

func isInvalidUTF8(err error) bool {
	var utf8Err interface{ InvalidUTF8() bool }
	if errors.As(err, &utf8Err) {
		return utf8Err.InvalidUTF8()
	}
	return strings.Contains(err.Error(), "invalid UTF-8")
}

// rejectInvalidUTF8 is the first unary interceptor: it answers a request the
// codec flagged with InvalidArgument naming the field.
func (c utf8Codec) rejectInvalidUTF8(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	if field, ok := c.bad.LoadAndDelete(req); ok {
		f := field.(string)
		return nil, invalidField(f, "UTF-8", "must be valid UTF-8")
	}
	return handler(ctx, req)
}

// replaceInvalidUTF8 re-encodes msg with every invalid UTF-8 sequence in a
// string field replaced by U+FFFD. It returns the path of the first such
// field ("jobs[2].queue", "custom.value"); ok is false when msg does not
// parse as wire format at all.
func replaceInvalidUTF8(msg []byte, md protoreflect.MessageDescriptor, prefix string) (firstBad string, out []byte, ok bool) {
	seen := map[protowire.Number]int{}
	out = make([]byte, 0, len(msg))
	for len(msg) > 0 {
		num, typ, n := protowire.ConsumeTag(msg)
		if n < 0 {
			return "", nil, false
		}
		tagBytes := msg[:n]
		m := protowire.ConsumeFieldValue(num, typ, msg[n:])
		if m < 0 {
			return "", nil, false
		}
		value := msg[n : n+m]
		msg = msg[n+m:]
		fd := md.Fields().ByNumber(num)
		if fd == nil || typ != protowire.BytesType {
			out = append(out, tagBytes...)
			out = append(out, value...)
			continue
		}
		raw, _ := protowire.ConsumeBytes(value)
		path := prefix + string(fd.Name())
		if fd.IsList() {
			path += "[" + strconv.Itoa(seen[num]) + "]"
			seen[num]++
		}
		switch fd.Kind() {
		case protoreflect.StringKind:
			if !utf8.Valid(raw) {
				if firstBad == "" {
					firstBad = path
				}
				raw = []byte(strings.ToValidUTF8(string(raw), "\uFFFD"))
			}
		case protoreflect.MessageKind:
			bad, fixed, okNested := replaceInvalidUTF8(raw, fd.Message(), path+".")
			if !okNested {
				return "", nil, false
			}
			if firstBad == "" {
				firstBad = bad
			}
			raw = fixed
		}
		out = protowire.AppendTag(out, num, typ)
		out = protowire.AppendBytes(out, raw)
	}
	return firstBad, out, true
}

func itoa(i int) string { return strconv.Itoa(i) }
