package rpc

import (
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/sepp-io/sepp/internal/grpcbuf"
	seppv1 "github.com/sepp-io/sepp/proto/sepp/v1"
)

// marshalEnqueueBatchResponse is the server's encoder of the answer to the
// hottest request. The generic marshaller walks every result, oneof and
// EnqueueResponse through its table-driven coders twice (once to size, once
// to write) and stores each size in the message; this encoder knows the
// three-level shape and writes it straight into one buffer, sized first, of
// the same kind grpcbuf.Marshal uses.
//
// It encodes only what it can encode exactly as proto.Marshal would: a
// result that is nil, has no outcome, or is Enqueued (the first two encode
// as an empty result, an Enqueued with a nil EnqueueResponse as an empty
// EnqueueResponse). On anything else (an ItemError, unknown fields on any of
// the three messages) it returns false and the caller marshals the whole
// message the generic way: an answer with item errors is the uncommon case,
// and one path per message keeps the encoder small.
func marshalEnqueueBatchResponse(m *seppv1.EnqueueBatchResponse) (mem.BufferSlice, bool) {
	if m == nil || len(m.ProtoReflect().GetUnknown()) != 0 {
		return nil, false
	}
	size := 0
	for _, r := range m.Results {
		n, ok := enqueueBatchResultSize(r)
		if !ok {
			return nil, false
		}
		size += 1 + protowire.SizeVarint(uint64(n)) + n
	}
	data, err := grpcbuf.Encode(size, func(dst []byte) ([]byte, error) {
		return appendEnqueueBatchResults(dst, m.Results), nil
	})
	return data, err == nil
}

// enqueueBatchResultSize is the encoded size of r (without its tag and
// length); ok is false when r needs the generic marshaller.
func enqueueBatchResultSize(r *seppv1.EnqueueBatchResult) (n int, ok bool) {
	if r == nil {
		return 0, true // proto.Marshal writes a nil element as an empty message
	}
	if len(r.ProtoReflect().GetUnknown()) != 0 {
		return 0, false
	}
	switch o := r.Outcome.(type) {
	case nil:
		return 0, true
	case *seppv1.EnqueueBatchResult_Enqueued:
		if o == nil {
			return 0, true // a typed nil wrapper, which proto.Marshal treats as no outcome
		}
		if o.Enqueued != nil && len(o.Enqueued.ProtoReflect().GetUnknown()) != 0 {
			return 0, false
		}
		e := enqueueResponseSize(o.Enqueued)
		return 1 + protowire.SizeVarint(uint64(e)) + e, true
	default:
		return 0, false
	}
}

func enqueueResponseSize(e *seppv1.EnqueueResponse) int {
	if e == nil {
		return 0
	}
	n := 0
	if e.JobId != 0 {
		n += 1 + protowire.SizeVarint(e.JobId)
	}
	if e.State != 0 {
		// An enum is an int32 on the wire: a negative one takes ten bytes.
		n += 1 + protowire.SizeVarint(uint64(int64(e.State)))
	}
	if e.Duplicate {
		n += 2
	}
	return n
}

// The tags, as proto.Marshal writes them: fields in number order.
const (
	tagResults   = 1<<3 | byte(protowire.BytesType)  // EnqueueBatchResponse.results
	tagEnqueued  = 1<<3 | byte(protowire.BytesType)  // EnqueueBatchResult.enqueued
	tagJobID     = 1<<3 | byte(protowire.VarintType) // EnqueueResponse.job_id
	tagState     = 2<<3 | byte(protowire.VarintType) // EnqueueResponse.state
	tagDuplicate = 3<<3 | byte(protowire.VarintType) // EnqueueResponse.duplicate
)

// appendEnqueueBatchResults appends the results that
// enqueueBatchResultSize accepted. Every length fits one byte (a result is
// at most 26 bytes), so each is written as a placeholder and filled in once
// its fields are; b, sized by the caller, never grows.
func appendEnqueueBatchResults(b []byte, results []*seppv1.EnqueueBatchResult) []byte {
	for _, r := range results {
		var o *seppv1.EnqueueBatchResult_Enqueued
		if r != nil {
			o, _ = r.Outcome.(*seppv1.EnqueueBatchResult_Enqueued)
		}
		if o == nil {
			b = append(b, tagResults, 0)
			continue
		}
		e := o.Enqueued
		if e == nil {
			b = append(b, tagResults, 2, tagEnqueued, 0)
			continue
		}
		start := len(b)
		b = append(b, tagResults, 0, tagEnqueued, 0)
		if e.JobId != 0 {
			b = append(b, tagJobID)
			b = protowire.AppendVarint(b, e.JobId)
		}
		if e.State != 0 {
			b = append(b, tagState)
			b = protowire.AppendVarint(b, uint64(int64(e.State)))
		}
		if e.Duplicate {
			b = append(b, tagDuplicate, 1)
		}
		n := len(b) - start - 4
		b[start+1] = byte(2 + n)
		b[start+3] = byte(n)
	}
	return b
}
