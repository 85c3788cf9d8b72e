package engine

import (
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	storepb "github.com/sepp-io/sepp/proto/seppstore/v1"
)

// The plain waiting job and the idempotency key are nearly all of a large
// snapshot's elements. For them the writer appends the protobuf encoding
// itself, the bytes proto.Marshal writes for the same message (fields in
// number order, zero values left out), without building the message: at
// a million jobs with keys this takes the snapshot from 311 ms to about a
// third of it (BenchmarkSnapshotPayloadLengths). Every other element goes
// through proto.Marshal. enginetest.RequireProtoRoundTrip checks, for every
// state the engine's tests build, that the whole form is the deterministic
// encoding of the EngineSnapshot it decodes to, so a field written here
// that protobuf would write otherwise fails it.

// plainPB reports whether j is written by appendPlainJob: nothing beyond
// the job's own scalar fields (no extension, no progress, no parents).
func (e *Engine) plainPB(j *job) bool {
	if j.ext != nil {
		return false
	}
	if j.state == StateReserved {
		if _, ok := e.progress[j.id]; ok {
			return false
		}
	}
	return len(e.deps) == 0 || e.deps[j.id] == nil
}

// appendPlainJob appends the EngineJob of a job plainPB accepts.
func (e *Engine) appendPlainJob(b []byte, w *pbWriter, j *job, queue uint64) []byte {
	var worker string
	var started int64
	if j.state == StateReserved {
		worker, started = e.workers[j.id], e.started[j.id]
	}
	return appendPlainJobFields(b, w.c, j, queue, j.jobType(), uint64(e.leaseOf(j)), worker, started)
}

// appendPlainJobFields is appendPlainJob with what j's engine holds for
// it given: its type, lease, and if Reserved its worker and start. A
// captured snapshot (snapshot_capture.go) writes compact jobs with it.
func appendPlainJobFields(b []byte, c *encoder, j *job, queue uint64, jobType string, lease uint64, worker string, started int64) []byte {
	b = appendVarintField(b, 1, uint64(j.id))
	b = appendVarintField(b, 2, queue)
	b = appendStringField(b, 3, jobType)
	if c.lengthsOnly {
		b = appendVarintField(b, 5, uint64(j.payloadLen))
	} else if p := payloadVia(j, c.payload); len(p) > 0 {
		b = protowire.AppendTag(b, 4, protowire.BytesType)
		b = protowire.AppendBytes(b, p)
	}
	b = appendVarintField(b, 6, uint64(j.priority))
	b = appendVarintField(b, 7, uint64(j.state))
	if j.flags&flagRetryWait != 0 {
		b = appendVarintField(b, 8, 1)
	}
	b = appendVarintField(b, 9, uint64(j.enqueuedAt))
	b = appendVarintField(b, 10, uint64(j.due))
	b = appendVarintField(b, 11, lease)
	b = appendVarintField(b, 12, uint64(j.attempt))
	b = appendVarintField(b, 13, uint64(j.maxAttempts))
	if j.state == StateReserved {
		b = appendStringField(b, 14, worker)
		b = appendVarintField(b, 15, uint64(started))
	}
	return b
}

// appendKey appends the EngineIdempotencyKey of ent.
// plain is the engine's table of keys not packed (idemKeys.plain).
func appendKeyPB(b []byte, ent *idemEntry, plain []string, queue uint64) []byte {
	b = appendVarintField(b, 1, queue)
	if ent.packed() {
		b = protowire.AppendTag(b, 3, protowire.BytesType)
		b = protowire.AppendBytes(b, ent.packedKey[:])
	} else {
		b = appendStringField(b, 2, plain[ent.plainIndex()])
	}
	b = appendVarintField(b, 4, uint64(ent.jobID()))
	return appendVarintField(b, 5, uint64(ent.createdAt))
}

// appendVarintField appends field num as protobuf writes an integer or a
// bool of that value: nothing when it is zero.
func appendVarintField(b []byte, num protowire.Number, v uint64) []byte {
	switch {
	case v == 0:
		return b
	case v < 0x80 && num < 16: // one byte each: the common case
		return append(b, byte(num)<<3|byte(protowire.VarintType), byte(v))
	}
	b = protowire.AppendTag(b, num, protowire.VarintType)
	return protowire.AppendVarint(b, v)
}

// appendStringField appends field num as protobuf writes a string: nothing
// when it is empty.
func appendStringField(b []byte, num protowire.Number, s string) []byte {
	if s == "" {
		return b
	}
	b = protowire.AppendTag(b, num, protowire.BytesType)
	return protowire.AppendString(b, s)
}

// begin starts one element of field num in the encoder's buffer: a byte
// is kept for its length, which is nearly always below 128; the caller
// appends the element to w.c.out and calls end with what begin returned.
// This does the work of a scratch buffer and putRaw without copying the
// element a second time.
func (w *pbWriter) begin(num protowire.Number) int {
	w.c.out = append(protowire.AppendTag(w.c.out, num, protowire.BytesType), 0)
	return len(w.c.out)
}

// end writes the length of the element begun at start, moving the
// element up in the rare case the length takes more than one byte.
func (w *pbWriter) end(start int) {
	out := w.c.out
	at := start - 1
	if n := len(out) - start; n < 0x80 {
		out[at] = byte(n)
	} else {
		size := protowire.SizeVarint(uint64(n))
		out = append(out, make([]byte, size-1)...)
		copy(out[at+size:], out[start:len(out)-size+1])
		protowire.AppendVarint(out[at:at], uint64(n))
	}
	w.c.out = out
	w.c.flushIfFull()
}

// putRaw writes enc, an element's encoding, as one element of field num.
func (w *pbWriter) putRaw(num protowire.Number, enc []byte) {
	if w.c.err != nil {
		return
	}
	w.c.out = protowire.AppendTag(w.c.out, num, protowire.BytesType)
	w.c.out = protowire.AppendVarint(w.c.out, uint64(len(enc)))
	w.c.raw(enc)
}

// parsePlainJob takes apart the EngineJob b when it holds only the fields
// appendPlainJob writes, each once, leaving its bytes in b; ok false sends
// the element to proto.Unmarshal, which reads every field (and stops at
// what is malformed).
func parsePlainJob(b []byte) (s pbJobScalars, ok bool) {
	var seen uint32
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 || num > 15 || seen&(1<<num) != 0 {
			return s, false
		}
		seen |= 1 << num
		b = b[n:]
		switch typ {
		case protowire.VarintType:
			v, n := protowire.ConsumeVarint(b)
			if n < 0 {
				return s, false
			}
			b = b[n:]
			switch num {
			case 1:
				s.id = int64(v)
			case 2:
				s.queue = uint32(v)
			case 5:
				s.payloadLength = uint32(v)
			case 6:
				s.priority = uint32(v)
			case 7:
				s.state = uint32(v)
			case 8:
				s.retryWait = v != 0
			case 9:
				s.enqueuedAt = int64(v)
			case 10:
				s.due = int64(v)
			case 11:
				s.lease = int64(v)
			case 12:
				s.attempt = uint32(v)
			case 13:
				s.maxAttempts = uint32(v)
			case 15:
				s.startedAt = int64(v)
			default:
				return s, false
			}
			if v > 1<<32-1 && (num == 2 || num == 5 || (num >= 6 && num <= 8) || num == 12 || num == 13) {
				return s, false // out of its field's range: protobuf's reader decides
			}
		case protowire.BytesType:
			v, n := protowire.ConsumeBytes(b)
			if n < 0 {
				return s, false
			}
			b = b[n:]
			switch num {
			case 3:
				s.jobType = v
			case 4:
				s.payload = v
			case 14:
				s.worker = v
			default:
				return s, false
			}
		default:
			return s, false
		}
	}
	return s, true
}

// parseKey takes apart the EngineIdempotencyKey b, leaving its key in b;
// one with other fields than appendKeyPB writes goes to proto.Unmarshal.
func parseKey(b []byte) (k pbKey, err error) {
	whole := b
	var seen uint32
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 || num > 5 || seen&(1<<num) != 0 {
			return parseKeySlowly(whole)
		}
		seen |= 1 << num
		b = b[n:]
		switch {
		case typ == protowire.VarintType && (num == 1 || num == 4 || num == 5):
			v, n := protowire.ConsumeVarint(b)
			if n < 0 || (num == 1 && v > 1<<32-1) {
				return parseKeySlowly(whole)
			}
			b = b[n:]
			switch num {
			case 1:
				k.queue = uint32(v)
			case 4:
				k.jobID = v
			case 5:
				k.createdAt = int64(v)
			}
		case typ == protowire.BytesType && (num == 2 || num == 3):
			v, n := protowire.ConsumeBytes(b)
			if n < 0 {
				return parseKeySlowly(whole)
			}
			b = b[n:]
			if num == 2 {
				k.key = v
			} else {
				k.hexKey = v
			}
		default:
			return parseKeySlowly(whole)
		}
	}
	return k, nil
}

// parseKeySlowly is parseKey by proto.Unmarshal.
func parseKeySlowly(b []byte) (pbKey, error) {
	var m storepb.EngineIdempotencyKey
	if err := proto.Unmarshal(b, &m); err != nil {
		return pbKey{}, err
	}
	return pbKey{queue: m.GetQueue(), key: []byte(m.GetKey()), hexKey: m.GetHexKey(), jobID: m.GetJobId(), createdAt: m.GetCreatedAt()}, nil
}
