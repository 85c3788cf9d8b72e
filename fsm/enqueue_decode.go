package fsm

import (
	"time"
	"unicode/utf8"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/sepp-io/sepp/engine"
	"github.com/sepp-io/sepp/internal/wire"
	cmdpb "github.com/sepp-io/sepp/proto/seppcmd/v1"
)

// entryCommand is one command of a decoded entry, as ApplyBatch applies it:
// the protobuf message, or, when pb is nil, a JobEnqueueBatch that
// decodeEntryFast decoded straight into engine params.
type entryCommand struct {
	pb          *cmdpb.Command
	nowUnixNano int64
	enqueue     []engine.EnqueueParams
}

// decodeEntryForApply is what ApplyBatch decodes an entry with: the fast
// decoder for an entry holding enqueue batches of the usual shape, else
// DecodeEntry. Its verdict and error are DecodeEntry's in every case.
func decodeEntryForApply(data []byte) ([]entryCommand, error) {
	if cmds, ok := decodeEntryFast(data); ok {
		return cmds, nil
	}
	return decodeEntryGeneral(data)
}

// decodeEntryGeneral is DecodeEntry, shaped for ApplyBatch.
func decodeEntryGeneral(data []byte) ([]entryCommand, error) {
	entry, err := DecodeEntry(data)
	if err != nil {
		return nil, err
	}
	cmds := make([]entryCommand, len(entry.GetCommands()))
	for i, c := range entry.GetCommands() {
		cmds[i].pb = c
	}
	return cmds, nil
}

// decodeEntryFast decodes an entry whose JobEnqueueBatch commands dominate
// it, the shape producers fill the log with. DecodeEntry would allocate,
// per job, a cmdpb.EnqueueParams, its queue, job type, payload and key, and
// applyJobEnqueueBatch then copy each into an engine.EnqueueParams; here
// the params of every batch of the entry live in one slice, the queue and
// job type strings are shared by the jobs that repeat them, and a job's
// payload is a slice of the entry (the engine keeps a copy, so a kept job
// pins no part of the entry); its only allocation here is its idempotency
// key. Other commands of the entry are unmarshalled one by one, as
// proto.Unmarshal of the whole entry would.
//
// It decodes only what it can decode exactly as DecodeEntry does: on
// anything else (an unknown field, a wire type that does not match, a
// field repeated where protobuf would merge or overwrite, invalid UTF-8, a
// malformed message, any entry DecodeEntry would refuse) it returns false
// and the caller runs DecodeEntry, which gives the same commands, or the
// error. An entry without an enqueue batch of the usual shape is left to
// DecodeEntry too: the fast decoder has nothing to save there.
func decodeEntryFast(data []byte) ([]entryCommand, bool) {
	body, err := entryBody(data)
	if err != nil {
		return nil, false
	}
	// First pass: the entry's own fields, and how many commands and fast
	// enqueue items there are, so that each is allocated at once.
	var formatVersion uint64
	formatSeen := false
	nCmds, nItems, nFast := 0, 0, 0
	for b := body; len(b) > 0; {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return nil, false
		}
		b = b[n:]
		switch {
		case num == 1 && typ == protowire.VarintType && !formatSeen:
			formatVersion, n = protowire.ConsumeVarint(b)
			formatSeen = true
		case num == 2 && typ == protowire.BytesType:
			var cmd []byte
			cmd, n = protowire.ConsumeBytes(b)
			if n >= 0 {
				if _, _, items, _, ok := enqueueBatchShape(cmd); ok {
					nItems += items
					nFast++
				}
				nCmds++
			}
		default:
			return nil, false
		}
		if n < 0 {
			return nil, false
		}
		b = b[n:]
	}
	framed := data[0] == entryFrameV2
	if v := uint32(formatVersion); framed && v != EntryFormatVersion || !framed && v != entryFormatV1 {
		return nil, false
	}
	if nFast == 0 {
		return nil, false
	}

	d := enqueueDecoder{items: make([]engine.EnqueueParams, nItems)}
	cmds := make([]entryCommand, nCmds)
	i := 0
	for b := body; len(b) > 0; {
		num, _, n := protowire.ConsumeTag(b)
		b = b[n:]
		if num == 1 {
			_, n = protowire.ConsumeVarint(b)
			b = b[n:]
			continue
		}
		raw, n := protowire.ConsumeBytes(b)
		b = b[n:]
		if !d.command(&cmds[i], raw) {
			var pb cmdpb.Command
			if proto.Unmarshal(raw, &pb) != nil {
				return nil, false
			}
			cmds[i] = entryCommand{pb: &pb}
		}
		if pb := cmds[i].pb; pb != nil && checkDecodedCommand(i, pb) != nil {
			return nil, false
		}
		i++
	}
	return cmds, true
}

// Field numbers of the enqueue batch's path through the messages.
const (
	commandVersionField        = 1
	commandNowField            = 2
	commandEnqueueBatchField   = 11
	enqueueBatchItemsField     = 1
	enqueueBatchRequestsField  = 2
	enqueueQueueField          = 1
	enqueueJobTypeField        = 2
	enqueuePayloadField        = 3
	enqueuePriorityField       = 4
	enqueueScheduledAtField    = 5
	enqueueMaxAttemptsField    = 6
	enqueueCustomField         = 7
	enqueueIdempotencyKeyField = 8
	// enqueueTraceField is EnqueueParams.trace (command version 17): a
	// traced workload puts it in every item.
	enqueueTraceField = 170
)

// enqueueBatchShape reports whether a Command's bytes are a version in the
// applied range, an optional now and one JobEnqueueBatch holding nothing
// but items of one form, each field once, and returns the now, the batch's
// bytes, its number of items and whether they are in the public form
// (requests, CommandVersionPublicEnqueue) rather than the older items. The
// operation is of version 1, so any version in range has it. Protobuf would
// merge a batch field repeated in one command (its items appended) and keep
// the last version or now; those, like unknown fields and a batch mixing
// the two forms (which apply refuses), are left to it.
func enqueueBatchShape(cmd []byte) (now int64, batch []byte, items int, public bool, ok bool) {
	var version, nowBits uint64
	var seen uint8
	for len(cmd) > 0 {
		num, typ, n := protowire.ConsumeTag(cmd)
		if n < 0 {
			return 0, nil, 0, false, false
		}
		cmd = cmd[n:]
		var bit uint8
		switch {
		case num == commandVersionField && typ == protowire.VarintType:
			bit = 1
			version, n = protowire.ConsumeVarint(cmd)
		case num == commandNowField && typ == protowire.VarintType:
			bit = 2
			nowBits, n = protowire.ConsumeVarint(cmd)
		case num == commandEnqueueBatchField && typ == protowire.BytesType:
			bit = 4
			batch, n = protowire.ConsumeBytes(cmd)
		default:
			return 0, nil, 0, false, false
		}
		if n < 0 || seen&bit != 0 {
			return 0, nil, 0, false, false
		}
		seen |= bit
		cmd = cmd[n:]
	}
	if seen&4 == 0 || uint32(version) < 1 || uint32(version) > CommandVersion {
		return 0, nil, 0, false, false
	}
	for b := batch; len(b) > 0; {
		num, typ, n := protowire.ConsumeTag(b)
		if items == 0 {
			public = num == enqueueBatchRequestsField
		}
		want := protowire.Number(enqueueBatchItemsField)
		if public {
			want = enqueueBatchRequestsField
		}
		if n < 0 || num != want || typ != protowire.BytesType {
			return 0, nil, 0, false, false
		}
		_, m := protowire.ConsumeBytes(b[n:])
		if m < 0 {
			return 0, nil, 0, false, false
		}
		b = b[n+m:]
		items++
	}
	return int64(nowBits), batch, items, public, true
}

// enqueueDecoder holds what the enqueue batches of one entry share.
type enqueueDecoder struct {
	// items has room for every item of every batch of the usual shape;
	// used is how many are taken.
	items []engine.EnqueueParams
	used  int
	// The last distinct queue and job type, reused by the jobs that
	// repeat them.
	queue, jobType wire.SharedString
	// prios holds the priorities the items point to, allocated on first
	// use with room for every item, so it never moves. The engine reads
	// a priority and keeps only its value.
	prios wire.Slab[uint32]
	// traces holds the items' trace contexts likewise: the engine keeps a
	// copy of one, never the pointer.
	traces wire.Slab[engine.TraceContext]
}

// command decodes one Command into c if it is a JobEnqueueBatch that the
// fast decoder decodes exactly; else it reports false and c is untouched.
func (d *enqueueDecoder) command(c *entryCommand, raw []byte) bool {
	now, batch, n, public, ok := enqueueBatchShape(raw)
	if !ok {
		return false
	}
	items := d.items[d.used : d.used+n : d.used+n]
	for k := 0; len(batch) > 0; k++ {
		_, _, l := protowire.ConsumeTag(batch)
		v, m := protowire.ConsumeBytes(batch[l:])
		batch = batch[l+m:]
		if !d.item(&items[k], v, public) {
			// The slots stay in items, unused: a later batch starts
			// after them, and the entry is dropped once applied.
			d.used += n
			return false
		}
	}
	d.used += n
	*c = entryCommand{nowUnixNano: now, enqueue: items}
	return true
}

// item decodes one item into p (zero): an EnqueueParams message as
// enqueueParamsFromProto would convert proto.Unmarshal's message, or, when
// public, an EnqueueRequest as apiconv.FillEnqueueParams would. The two
// differ in this decoder's fields only in scheduled_at (nanoseconds since
// the epoch, or a Timestamp message) and in apiconv's check of the trace
// context, whose refusal (the whole command's) is left to the general path.
func (d *enqueueDecoder) item(p *engine.EnqueueParams, b []byte, public bool) bool {
	var seen uint16
	var ok bool
	for len(b) > 0 {
		num, typ, l := protowire.ConsumeTag(b)
		if l > 0 && num == enqueueTraceField {
			// Protobuf merges a repeated message field: left to it.
			if p.Trace != nil || typ != protowire.BytesType {
				return false
			}
			v, vl := protowire.ConsumeBytes(b[l:])
			if vl < 0 {
				return false
			}
			b = b[l+vl:]
			t := d.traces.Next(len(d.items))
			if !traceContext(t, v) || public && engine.CheckTraceContext(t) != nil {
				return false
			}
			p.Trace = t
			continue
		}
		if l < 0 || num < enqueueQueueField || num > enqueueIdempotencyKeyField {
			return false
		}
		b = b[l:]
		bit := uint16(1) << num
		if seen&bit != 0 && num != enqueueCustomField {
			return false // protobuf keeps the last; the general path does that
		}
		seen |= bit
		// scheduled_at is a varint in the older form, a Timestamp message
		// (a bytes field) in the public one.
		if num == enqueuePriorityField || num == enqueueMaxAttemptsField || num == enqueueScheduledAtField && !public {
			if typ != protowire.VarintType {
				return false
			}
			v, vl := protowire.ConsumeVarint(b)
			if vl < 0 {
				return false
			}
			b = b[vl:]
			switch num {
			case enqueuePriorityField:
				prio := d.prios.Next(len(d.items))
				*prio = uint32(v)
				p.Priority = prio
			case enqueueScheduledAtField:
				p.ScheduledAt = fromUnixNano(int64(v))
			default:
				p.MaxAttempts = uint32(v)
			}
			continue
		}
		if typ != protowire.BytesType {
			return false
		}
		v, vl := protowire.ConsumeBytes(b)
		if vl < 0 {
			return false
		}
		b = b[vl:]
		switch num {
		case enqueueScheduledAtField:
			if p.ScheduledAt, ok = timestampTime(v); !ok {
				return false
			}
		case enqueueQueueField:
			if p.Queue, ok = d.queue.Of(v); !ok {
				return false
			}
		case enqueueJobTypeField:
			if p.JobType, ok = d.jobType.Of(v); !ok {
				return false
			}
		case enqueuePayloadField:
			if len(v) > 0 {
				// A slice of the entry: the engine copies what it keeps,
				// before ApplyBatch returns the entry to raft.
				p.Payload = v[:len(v):len(v)]
			}
		case enqueueCustomField:
			if !wire.AddStringMapEntry(&p.Custom, v) {
				return false
			}
		case enqueueIdempotencyKeyField:
			if !utf8.Valid(v) {
				return false
			}
			if len(v) > 0 {
				p.IdempotencyKey = string(v) // kept by the engine
			}
		}
	}
	return true
}

// traceContext decodes a TraceContext message as enqueueParamsFromProto
// converts proto.Unmarshal's: each string field at most once and valid
// UTF-8, no other field. The engine keeps a copy of it.
func traceContext(t *engine.TraceContext, b []byte) bool {
	var seen uint8
	for len(b) > 0 {
		num, typ, l := protowire.ConsumeTag(b)
		if l < 0 || (num != 1 && num != 2) || typ != protowire.BytesType || seen&(1<<num) != 0 {
			return false
		}
		seen |= 1 << num
		v, vl := protowire.ConsumeBytes(b[l:])
		if vl < 0 || !utf8.Valid(v) {
			return false
		}
		b = b[l+vl:]
		if num == 1 {
			t.Traceparent = string(v)
		} else {
			t.Tracestate = string(v)
		}
	}
	return true
}

// The range timestamppb.Timestamp.CheckValid accepts: 0001-01-01 to
// 9999-12-31, in seconds since the epoch (the upper bound excluded).
const (
	minTimestampSeconds = -62135596800
	maxTimestampSeconds = 253402300800
)

// timestampTime decodes a Timestamp message as apiconv reads a valid one
// (ts.AsTime(), in UTC): each field at most once, no other field, in
// CheckValid's range; else false, and the general path decides.
func timestampTime(b []byte) (time.Time, bool) {
	var secs int64
	var nanos int32
	var seen uint8
	for len(b) > 0 {
		num, typ, l := protowire.ConsumeTag(b)
		if l < 0 || (num != 1 && num != 2) || typ != protowire.VarintType || seen&(1<<num) != 0 {
			return time.Time{}, false
		}
		seen |= 1 << num
		v, vl := protowire.ConsumeVarint(b[l:])
		if vl < 0 {
			return time.Time{}, false
		}
		b = b[l+vl:]
		if num == 1 {
			secs = int64(v)
		} else {
			nanos = int32(v) // protobuf's int32: the varint's low 32 bits
		}
	}
	if secs < minTimestampSeconds || secs >= maxTimestampSeconds || nanos < 0 || nanos >= 1e9 {
		return time.Time{}, false
	}
	return time.Unix(secs, int64(nanos)).UTC(), true
}
