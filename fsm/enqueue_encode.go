package fsm

import (
	"encoding/binary"
	"hash/crc32"
	"slices"
	"unicode/utf8"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/timestamppb"

	seppv1 "github.com/sepp-io/sepp/proto/sepp/v1"
	cmdpb "github.com/sepp-io/sepp/proto/seppcmd/v1"
)

// Tags (field number and wire type, each one byte) of the fields
// encodeEntryFast writes, from proto/seppcmd/v1/command.proto.
const (
	tagEntryFormatVersion    = 1<<3 | byte(protowire.VarintType)
	tagEntryCommands         = 2<<3 | byte(protowire.BytesType)
	tagCommandVersion        = 1<<3 | byte(protowire.VarintType)
	tagCommandNowUnixNano    = 2<<3 | byte(protowire.VarintType)
	tagCommandEnqueueBatch   = 11<<3 | byte(protowire.BytesType)
	tagEnqueueBatchRequests  = 2<<3 | byte(protowire.BytesType)
	tagRequestQueue          = 1<<3 | byte(protowire.BytesType)
	tagRequestJobType        = 2<<3 | byte(protowire.BytesType)
	tagRequestPayload        = 3<<3 | byte(protowire.BytesType)
	tagRequestPriority       = 4<<3 | byte(protowire.VarintType)
	tagRequestScheduledAt    = 5<<3 | byte(protowire.BytesType)
	tagRequestMaxAttempts    = 6<<3 | byte(protowire.VarintType)
	tagRequestCustom         = 7<<3 | byte(protowire.BytesType)
	tagRequestIdempotencyKey = 8<<3 | byte(protowire.BytesType)
	tagTimestampSeconds      = 1<<3 | byte(protowire.VarintType)
	tagTimestampNanos        = 2<<3 | byte(protowire.VarintType)
	tagTraceparent           = 1<<3 | byte(protowire.BytesType)
	tagTracestate            = 2<<3 | byte(protowire.BytesType)
	tagMapKey                = 1<<3 | byte(protowire.BytesType)
	tagMapValue              = 2<<3 | byte(protowire.BytesType)
)

// The fields of each message encodeEntryFast writes that it neither writes
// nor reads directly to decline the entry: every field added to the proto
// since the fast encoder was written. Set, such a field makes it decline
// the entry through protobuf reflection (writesAll), so a new field reaches
// the log through protobuf's encoder with no change here, and costs a
// reflective check per item until the fast encoder is taught it.
var (
	// The case of Command's op is found by its type, not field by field.
	fastCommandRest      = fieldsBut((*cmdpb.Command)(nil), 1, 2, 11)
	fastEnqueueBatchRest = fieldsBut((*cmdpb.JobEnqueueBatch)(nil), 1, 2)
	// Written: 1-8 and the trace context. Declined directly, in
	// fastEnqueueRequest: unique, expires_at, ttl_ms, after, on_parent_failure.
	fastEnqueueRequestRest = fieldsBut((*seppv1.EnqueueRequest)(nil), 1, 2, 3, 4, 5, 6, 7, 8, enqueueTraceField, 110, 140, 141, 180, 181)
	fastTimestampRest      = fieldsBut((*timestamppb.Timestamp)(nil), 1, 2)
	fastTraceContextRest   = fieldsBut((*seppv1.TraceContext)(nil), 1, 2)
)

// fieldsBut is every field of m's message but those numbered handled and
// the members of its oneofs (not a proto3 optional's own).
func fieldsBut(m protoreflect.ProtoMessage, handled ...protowire.Number) []protoreflect.FieldDescriptor {
	var rest []protoreflect.FieldDescriptor
	fields := m.ProtoReflect().Descriptor().Fields()
	for i := range fields.Len() {
		fd := fields.Get(i)
		if slices.Contains(handled, fd.Number()) {
			continue
		}
		if o := fd.ContainingOneof(); o != nil && !o.IsSynthetic() {
			continue
		}
		rest = append(rest, fd)
	}
	return rest
}

// writesAll reports whether m holds nothing encodeEntryFast would leave
// out, beyond what its caller checks directly: no field of rest is set,
// and m has no unknown fields.
func writesAll(m protoreflect.Message, rest []protoreflect.FieldDescriptor) bool {
	for _, fd := range rest {
		if m.Has(fd) {
			return false
		}
	}
	return len(m.GetUnknown()) == 0
}

// encodeEntryFast encodes an entry whose every command is a JobEnqueueBatch
// in the public form (CommandVersionPublicEnqueue), the entries producers
// fill the log with, into exactly the bytes encodeEntryGeneral writes: the
// reflection-driven marshal walks every field of every item twice (size,
// then bytes) through generic code, which for a 256-item batch is most of
// the leader's cost of proposing it. Here the sizes are plain arithmetic,
// the output is allocated once, header included, and nothing is written
// into the messages (protobuf's size cache is), so it is no more racy than
// reading them.
//
// It reproduces protobuf's deterministic encoding: fields in field-number
// order (version, now, then the oneof case 11), proto3 scalars and empty
// strings and bytes omitted, an explicitly set optional priority written
// even when 0, a set message field (scheduled_at, trace_context) written
// even when empty, custom map entries sorted by key with both key and value
// always written. It returns false, and the caller marshals the entry the
// generic way, for anything else: a command of another operation or of
// none, a batch in the older EnqueueParams form (written only while a
// member of the cluster lacks version 26), a nil command, batch or item
// (protobuf writes them as empty messages, which no proposer means to
// write), any field it does not write (unique options, deadlines and
// dependencies, rare and left to protobuf, and any field added to the
// proto since), unknown fields on any message, and a string that is not
// valid UTF-8 (protobuf refuses to encode it, and the generic path gives
// that error).
func encodeEntryFast(cmds []*cmdpb.Command) ([]byte, bool) {
	// The batch sizes are needed again for the length prefixes; a small
	// entry keeps them on the stack.
	var small [8]int
	batchSizes := small[:0]
	if len(cmds) > len(small) {
		batchSizes = make([]int, 0, len(cmds))
	}
	var valid validStrings
	body := 1 + protowire.SizeVarint(EntryFormatVersion)
	for _, c := range cmds {
		batch, ok := fastEnqueueBatch(c)
		if !ok {
			return nil, false
		}
		bs := 0
		for _, r := range batch.Requests {
			if !fastEnqueueRequest(r, &valid) {
				return nil, false
			}
			bs += lenFieldSize(enqueueRequestSize(r))
		}
		batchSizes = append(batchSizes, bs)
		body += lenFieldSize(commandSize(c, bs))
	}

	total := entryHeaderV2 + body
	buf := make([]byte, entryHeaderV2, total)
	buf[0] = entryFrameV2
	// format_version is a non-zero constant, so protobuf always writes it.
	buf = append(buf, tagEntryFormatVersion)
	buf = protowire.AppendVarint(buf, EntryFormatVersion)
	for i, c := range cmds {
		bs := batchSizes[i]
		buf = append(buf, tagEntryCommands)
		buf = protowire.AppendVarint(buf, uint64(commandSize(c, bs)))
		buf = appendVarintField(buf, tagCommandVersion, uint64(c.Version))
		buf = appendVarintField(buf, tagCommandNowUnixNano, uint64(c.NowUnixNano))
		buf = append(buf, tagCommandEnqueueBatch)
		buf = protowire.AppendVarint(buf, uint64(bs))
		for _, r := range c.GetJobEnqueueBatch().Requests {
			buf = append(buf, tagEnqueueBatchRequests)
			buf = protowire.AppendVarint(buf, uint64(enqueueRequestSize(r)))
			buf = appendEnqueueRequest(buf, r)
		}
	}
	if len(buf) != total {
		// Only a caller changing the commands while they are encoded (a
		// data race) makes the two passes disagree; the generic path
		// then encodes whatever it reads rather than a torn entry.
		return nil, false
	}
	binary.BigEndian.PutUint32(buf[1:entryHeaderV2], crc32.Checksum(buf[entryHeaderV2:], castagnoli))
	return buf, true
}

// fastEnqueueBatch returns c's JobEnqueueBatch if encodeEntryFast can
// encode c around it: a non-nil command and batch holding nothing but the
// fields it writes (so no item of the older form).
func fastEnqueueBatch(c *cmdpb.Command) (*cmdpb.JobEnqueueBatch, bool) {
	if c == nil {
		return nil, false
	}
	op, ok := c.Op.(*cmdpb.Command_JobEnqueueBatch)
	if !ok || op.JobEnqueueBatch == nil || len(op.JobEnqueueBatch.Items) != 0 {
		return nil, false
	}
	if !writesAll(c.ProtoReflect(), fastCommandRest) || !writesAll(op.JobEnqueueBatch.ProtoReflect(), fastEnqueueBatchRest) {
		return nil, false
	}
	return op.JobEnqueueBatch, true
}

// validStrings are the last queue and job type found valid UTF-8: the
// items of a batch nearly always repeat them, often as the same string,
// which compares equal without reading its bytes.
type validStrings struct{ queue, jobType string }

// fastEnqueueRequest says whether encodeEntryFast can encode r: not nil,
// nothing set but the fields it writes, and every string valid UTF-8, as
// protobuf demands of a proto3 string (map keys and values included). The
// fields it declines directly are read as struct fields, which costs
// nothing next to the reflective check of the rest.
func fastEnqueueRequest(r *seppv1.EnqueueRequest, valid *validStrings) bool {
	if r == nil || r.Unique != nil || r.TtlMs != 0 || r.ExpiresAt != nil || len(r.After) != 0 || r.OnParentFailure != 0 {
		return false // unique options, deadlines and dependencies go through the protobuf encoder
	}
	if !writesAll(r.ProtoReflect(), fastEnqueueRequestRest) {
		return false // and so does any field added to the proto since
	}
	if ts := r.ScheduledAt; ts != nil && !writesAll(ts.ProtoReflect(), fastTimestampRest) {
		return false
	}
	// A trace context (field 170) is written after the idempotency key,
	// where protobuf's field order puts it when every field between them
	// is unset, as writesAll has just checked.
	if t := r.TraceContext; t != nil && (!writesAll(t.ProtoReflect(), fastTraceContextRest) || !utf8.ValidString(t.Traceparent) || !utf8.ValidString(t.Tracestate)) {
		return false
	}
	if r.Queue != valid.queue {
		if !utf8.ValidString(r.Queue) {
			return false
		}
		valid.queue = r.Queue
	}
	if r.JobType != valid.jobType {
		if !utf8.ValidString(r.JobType) {
			return false
		}
		valid.jobType = r.JobType
	}
	if !utf8.ValidString(r.IdempotencyKey) {
		return false
	}
	if len(r.Custom) > 0 { // ranging over even a nil map costs a call
		for k, v := range r.Custom {
			if !utf8.ValidString(k) || !utf8.ValidString(v) {
				return false
			}
		}
	}
	return true
}

// lenFieldSize is the size of a length-delimited field with a one-byte
// tag and n bytes of content.
func lenFieldSize(n int) int { return 1 + protowire.SizeBytes(n) }

// commandSize is the size of c's message, whose batch message has
// batchSize bytes.
func commandSize(c *cmdpb.Command, batchSize int) int {
	n := lenFieldSize(batchSize)
	n += varintFieldSize(uint64(c.Version)) + varintFieldSize(uint64(c.NowUnixNano))
	return n
}

// enqueueRequestSize is the size of r's message.
func enqueueRequestSize(r *seppv1.EnqueueRequest) int {
	n := 0
	if len(r.Queue) > 0 {
		n += lenFieldSize(len(r.Queue))
	}
	if len(r.JobType) > 0 {
		n += lenFieldSize(len(r.JobType))
	}
	if len(r.Payload) > 0 {
		n += lenFieldSize(len(r.Payload))
	}
	if r.Priority != nil {
		n += 1 + protowire.SizeVarint(uint64(*r.Priority))
	}
	if ts := r.ScheduledAt; ts != nil {
		n += lenFieldSize(timestampSize(ts))
	}
	n += varintFieldSize(uint64(r.MaxAttempts))
	if len(r.Custom) > 0 {
		for k, v := range r.Custom {
			n += lenFieldSize(mapEntrySize(k, v))
		}
	}
	if len(r.IdempotencyKey) > 0 {
		n += lenFieldSize(len(r.IdempotencyKey))
	}
	if t := r.TraceContext; t != nil {
		n += protowire.SizeTag(enqueueTraceField) + protowire.SizeBytes(traceContextSize(t))
	}
	return n
}

// timestampSize is the size of a Timestamp message: int64 seconds and
// int32 nanos, each a varint of its sign-extended value.
func timestampSize(ts *timestamppb.Timestamp) int {
	return varintFieldSize(uint64(ts.Seconds)) + varintFieldSize(uint64(int64(ts.Nanos)))
}

// traceContextSize is the size of t's message.
func traceContextSize(t *seppv1.TraceContext) int {
	n := 0
	if len(t.Traceparent) > 0 {
		n += lenFieldSize(len(t.Traceparent))
	}
	if len(t.Tracestate) > 0 {
		n += lenFieldSize(len(t.Tracestate))
	}
	return n
}

// mapEntrySize is the size of one custom map entry's message: protobuf
// writes its key and value even when empty.
func mapEntrySize(k, v string) int {
	return lenFieldSize(len(k)) + lenFieldSize(len(v))
}

// appendEnqueueRequest appends r's message, without its tag and length.
func appendEnqueueRequest(b []byte, r *seppv1.EnqueueRequest) []byte {
	if len(r.Queue) > 0 {
		b = append(b, tagRequestQueue)
		b = protowire.AppendString(b, r.Queue)
	}
	if len(r.JobType) > 0 {
		b = append(b, tagRequestJobType)
		b = protowire.AppendString(b, r.JobType)
	}
	if len(r.Payload) > 0 {
		b = append(b, tagRequestPayload)
		b = protowire.AppendBytes(b, r.Payload)
	}
	if r.Priority != nil {
		b = append(b, tagRequestPriority)
		b = protowire.AppendVarint(b, uint64(*r.Priority))
	}
	if ts := r.ScheduledAt; ts != nil {
		// Present, even empty (the epoch): protobuf writes a set message.
		b = append(b, tagRequestScheduledAt)
		b = protowire.AppendVarint(b, uint64(timestampSize(ts)))
		b = appendVarintField(b, tagTimestampSeconds, uint64(ts.Seconds))
		b = appendVarintField(b, tagTimestampNanos, uint64(int64(ts.Nanos)))
	}
	b = appendVarintField(b, tagRequestMaxAttempts, uint64(r.MaxAttempts))
	if len(r.Custom) > 0 {
		// Deterministic marshalling sorts string keys bytewise, as
		// slices.Sort does.
		keys := make([]string, 0, len(r.Custom))
		for k := range r.Custom {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			v := r.Custom[k]
			b = append(b, tagRequestCustom)
			b = protowire.AppendVarint(b, uint64(mapEntrySize(k, v)))
			b = append(b, tagMapKey)
			b = protowire.AppendString(b, k)
			b = append(b, tagMapValue)
			b = protowire.AppendString(b, v)
		}
	}
	if len(r.IdempotencyKey) > 0 {
		b = append(b, tagRequestIdempotencyKey)
		b = protowire.AppendString(b, r.IdempotencyKey)
	}
	if t := r.TraceContext; t != nil {
		// Present, even empty: protobuf writes a set message field.
		b = protowire.AppendTag(b, enqueueTraceField, protowire.BytesType)
		b = protowire.AppendVarint(b, uint64(traceContextSize(t)))
		if len(t.Traceparent) > 0 {
			b = append(b, tagTraceparent)
			b = protowire.AppendString(b, t.Traceparent)
		}
		if len(t.Tracestate) > 0 {
			b = append(b, tagTracestate)
			b = protowire.AppendString(b, t.Tracestate)
		}
	}
	return b
}

// appendVarintField appends a proto3 scalar field with a one-byte tag,
// which protobuf leaves out when it is zero.
func appendVarintField(b []byte, tag byte, v uint64) []byte {
	if v == 0 {
		return b
	}
	return protowire.AppendVarint(append(b, tag), v)
}

// varintFieldSize is the size appendVarintField adds.
func varintFieldSize(v uint64) int {
	if v == 0 {
		return 0
	}
	return 1 + protowire.SizeVarint(v)
}
