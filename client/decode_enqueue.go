package client

import (
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/sepp-io/sepp/internal/wire"
	seppv1 "github.com/sepp-io/sepp/proto/sepp/v1"
)

// decodeEnqueueBatchResponse is the producer's decoder of its answers, an
// EnqueueBatchResponse of up to a batch of results, built for the common
// shape of one: every item enqueued. proto.Unmarshal allocates each item's
// EnqueueBatchResult, its oneof wrapper and its EnqueueResponse on their
// own, three allocations per item; this decoder allocates each kind once
// for the whole response (a slab), so a response costs four allocations
// whatever its length. The client reads the results and drops the response
// at once, so a slab pins nothing for long.
//
// It decodes only what it can decode exactly as proto.Unmarshal would: on
// anything else (an item's error outcome, which is rare and left to the
// general path, an unknown field, a wire type that does not match, a
// singular or oneof field repeated, a malformed message, an empty response,
// item or EnqueueResponse, none of which a server sends) it returns false,
// leaves m untouched, and the caller runs proto.Unmarshal, which gives the
// same message or the error.
func decodeEnqueueBatchResponse(raw []byte, m *seppv1.EnqueueBatchResponse) bool {
	// First pass: count the results, so the slabs are sized once.
	n, ok := wire.CountRepeated(raw)
	if !ok || n == 0 {
		return false
	}
	ptrs := make([]*seppv1.EnqueueBatchResult, n)
	results := make([]seppv1.EnqueueBatchResult, n)
	outcomes := make([]seppv1.EnqueueBatchResult_Enqueued, n)
	enqueued := make([]seppv1.EnqueueResponse, n)
	for i, b := 0, raw; i < n; i++ {
		var v []byte
		v, b = wire.NextRepeated(b)
		if !enqueueBatchResult(v, &enqueued[i]) {
			return false
		}
		outcomes[i].Enqueued = &enqueued[i]
		results[i].Outcome = &outcomes[i]
		ptrs[i] = &results[i]
	}
	m.Reset() // as proto.Unmarshal does
	m.Results = ptrs
	return true
}

// Field layouts of the messages decoded here. Field numbers absent from a
// layout (unknown fields, EnqueueBatchResult.error) are refused.
var (
	enqueueBatchResultFields = layout{bytes: bits(1)}
	enqueueResponseFields    = layout{varints: bits(1, 2, 3)}
)

// enqueueBatchResult decodes one item, which must hold its enqueued outcome
// exactly once: proto.Unmarshal merges a repeated one, lets a later error
// replace it, and leaves the outcome nil when there is none.
func enqueueBatchResult(b []byte, e *seppv1.EnqueueResponse) bool {
	r := fieldReader{b: b, layout: enqueueBatchResultFields}
	if !r.next() || len(r.bytes) == 0 || !enqueueResponse(r.bytes, e) {
		return false
	}
	return !r.next() && !r.bad
}

func enqueueResponse(b []byte, e *seppv1.EnqueueResponse) bool {
	r := fieldReader{b: b, layout: enqueueResponseFields}
	for r.next() {
		switch r.num {
		case 1:
			e.JobId = r.varint
		case 2:
			// An open enum: proto.Unmarshal keeps any number, narrowed to
			// int32, not only the values it knows.
			e.State = seppv1.JobState(int32(r.varint))
		case 3:
			e.Duplicate = protowire.DecodeBool(r.varint) // any non-zero varint is true
		}
	}
	return !r.bad
}
