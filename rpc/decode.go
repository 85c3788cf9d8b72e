package rpc

import (
	"strings"
	"unicode/utf8"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/sepp-io/sepp/internal/wire"
	seppv1 "github.com/sepp-io/sepp/proto/sepp/v1"
)

// decodeEnqueueBatch is the server's decoder of the hottest request, an
// EnqueueBatchRequest, built for the common shape of one: many jobs of one
// queue and one job type, each with a payload and an idempotency key. The
// general decoder allocates every job, its payload and each of its strings
// on its own, and copies every payload out of a pooled buffer; this one
// takes raw (the request's bytes, which it keeps) and allocates the jobs
// together, points each payload into raw (so a payload is copied once, from
// the transport into raw), shares the queue and job type strings among the
// jobs that repeat them, and puts all idempotency keys in one string.
//
// It decodes only what it can decode exactly as proto.Unmarshal would: on
// anything else (an unknown field, a wire type that does not match, a field
// repeated within a job, invalid UTF-8, a malformed message) it returns
// false, leaves m untouched, and the caller runs the general decoder, which
// gives the same message, the field to blame, or the error.
//
// A decoded payload shares raw's memory: a consumer that keeps one must
// copy it (the engine does, for params that are not Owned, and a Raft node
// copies them into the log entry it proposes).
func decodeEnqueueBatch(raw []byte, m *seppv1.EnqueueBatchRequest) bool {
	// First pass: count the jobs, so they are allocated at once.
	n, ok := wire.CountRepeated(raw)
	if !ok {
		return false
	}
	if n == 0 {
		return false // nothing to gain; proto.Unmarshal handles it
	}
	d := batchDecoder{jobs: make([]seppv1.EnqueueRequest, n)}
	ptrs := make([]*seppv1.EnqueueRequest, n)
	for i, b := 0, raw; len(b) > 0; i++ {
		var v []byte
		v, b = wire.NextRepeated(b)
		if !d.job(i, v) {
			return false
		}
		ptrs[i] = &d.jobs[i]
	}
	d.finishKeys()
	m.Reset() // as proto.Unmarshal does
	m.Jobs = ptrs
	return true
}

// batchDecoder holds what the jobs of one batch share.
type batchDecoder struct {
	jobs []seppv1.EnqueueRequest
	// The last distinct queue and job type, reused by the jobs that
	// repeat them.
	queue, jobType wire.SharedString
	// Slabs for the optional fields, allocated on first use with room for
	// one per job, so they never move (a job repeating a field is refused).
	prios wire.Slab[uint32]
	stamp wire.Slab[timestamppb.Timestamp]
	// Idempotency keys: where each is in the request, to be copied
	// into one string at the end.
	keys    []keyRef
	keySize int
}

type keyRef struct {
	job   int
	bytes []byte
}

// Fields of EnqueueRequest, as a bit each to refuse a repeated one (which
// proto.Unmarshal would merge or overwrite: the general decoder does that).
const (
	fieldQueue          = 1
	fieldJobType        = 2
	fieldPayload        = 3
	fieldPriority       = 4
	fieldScheduledAt    = 5
	fieldMaxAttempts    = 6
	fieldCustom         = 7
	fieldIdempotencyKey = 8
)

// job decodes job i (a zero message) from b.
func (d *batchDecoder) job(i int, b []byte) bool {
	j := &d.jobs[i]
	var seen uint16
	for len(b) > 0 {
		num, typ, l := protowire.ConsumeTag(b)
		if l < 0 || num < fieldQueue || num > fieldIdempotencyKey {
			return false
		}
		b = b[l:]
		bit := uint16(1) << num
		if seen&bit != 0 && num != fieldCustom {
			return false
		}
		seen |= bit
		switch num {
		case fieldPriority, fieldMaxAttempts:
			if typ != protowire.VarintType {
				return false
			}
			v, vl := protowire.ConsumeVarint(b)
			if vl < 0 {
				return false
			}
			b = b[vl:]
			if num == fieldMaxAttempts {
				j.MaxAttempts = uint32(v)
				continue
			}
			prio := d.prios.Next(len(d.jobs))
			*prio = uint32(v)
			j.Priority = prio
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
		case fieldQueue:
			var ok bool
			if j.Queue, ok = d.queue.Of(v); !ok {
				return false
			}
		case fieldJobType:
			var ok bool
			if j.JobType, ok = d.jobType.Of(v); !ok {
				return false
			}
		case fieldPayload:
			if len(v) > 0 {
				j.Payload = v[:len(v):len(v)] // appending must not run into the next field
			}
		case fieldScheduledAt:
			ts := d.stamp.Next(len(d.jobs))
			if !wire.Timestamp(ts, v) {
				return false
			}
			j.ScheduledAt = ts
		case fieldCustom:
			if !wire.AddStringMapEntry(&j.Custom, v) {
				return false
			}
		case fieldIdempotencyKey:
			if !utf8.Valid(v) {
				return false
			}
			if len(v) > 0 {
				if d.keys == nil {
					d.keys = make([]keyRef, 0, len(d.jobs))
				}
				d.keys = append(d.keys, keyRef{job: i, bytes: v})
				d.keySize += len(v)
			}
		}
	}
	return true
}

// finishKeys copies the idempotency keys into one string and hands each
// job its part.
func (d *batchDecoder) finishKeys() {
	if len(d.keys) == 0 {
		return
	}
	var sb strings.Builder
	sb.Grow(d.keySize)
	for _, k := range d.keys {
		sb.Write(k.bytes)
	}
	all, off := sb.String(), 0
	for _, k := range d.keys {
		d.jobs[k.job].IdempotencyKey = all[off : off+len(k.bytes)]
		off += len(k.bytes)
	}
}
