package client

import (
	"bytes"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/sepp-io/sepp/internal/wire"
	seppv1 "github.com/sepp-io/sepp/proto/sepp/v1"
)

// decodeReserveResponse is the client's decoder of its hottest response, a
// ReserveResponse, built for the common shape of one: many deliveries of one
// queue, one job type and one worker id. proto.Unmarshal allocates every
// delivery's ReservedJob, JobContext, Job, timestamps and strings on their
// own; this decoder allocates each kind of message once for the whole
// response (a slab), shares the strings that repeat among the deliveries,
// and gives each payload a copy of its own. Payloads are never slices of
// raw or of one another: raw is a pooled buffer, freed after decoding, and
// a handler may keep one payload for as long as it likes without pinning
// the others.
//
// It decodes only what it can decode exactly as proto.Unmarshal would: on
// anything else (an unknown field, a field it does not handle such as
// Job.custom, Job.history or Job.origin, a wire type that does not match, a singular
// field repeated, invalid UTF-8, a malformed message) it returns false,
// leaves m untouched, and the caller runs proto.Unmarshal, which gives the
// same message or the error.
func decodeReserveResponse(raw []byte, m *seppv1.ReserveResponse) bool {
	// First pass: count the deliveries, so the slabs are sized once.
	n, ok := wire.CountRepeated(raw)
	if !ok {
		return false
	}
	d := reserveDecoder{n: n}
	var jobs []*seppv1.ReservedJob
	if n > 0 {
		jobs = make([]*seppv1.ReservedJob, n)
		reserved := make([]seppv1.ReservedJob, n)
		for i, b := 0, raw; i < n; i++ {
			var v []byte
			v, b = wire.NextRepeated(b)
			if !d.reservedJob(&reserved[i], v) {
				return false
			}
			jobs[i] = &reserved[i]
		}
	}
	m.Reset() // as proto.Unmarshal does
	m.Jobs = jobs
	return true
}

// reserveDecoder holds what the deliveries of one response share: a slab
// per message field and the last value of each string field. Every message
// holds a field at most once (a repeat is refused), so a slab of n (the
// number of deliveries) never runs out.
type reserveDecoder struct {
	n                                    int
	contexts                             wire.Slab[seppv1.JobContext]
	jobs                                 wire.Slab[seppv1.Job]
	ctxDeadline, enqueuedAt, scheduledAt wire.Slab[timestamppb.Timestamp]
	nextAttemptAt, jobDeadline           wire.Slab[timestamppb.Timestamp]
	expiresAt, startedAt                 wire.Slab[timestamppb.Timestamp]
	traces                               wire.Slab[seppv1.TraceContext]
	queue, jobType, workerID, lastReason wire.SharedString
	// The jobs of one producer's batch share a trace context.
	traceparent, tracestate wire.SharedString
}

// Job fields numbered above 31 that the fast path decodes. The server
// sets started_at on every delivery and expires_at on every job with a
// deadline: a decoder without them refuses every response (it did, from
// the attempt-history release until the bench's A/B showed the consume
// rate 21% down).
const (
	jobExpiresAt protowire.Number = 140
	jobStartedAt protowire.Number = 150
	// A traced job's trace context: a decoder without it would refuse
	// every response of a traced workload.
	jobTraceContext protowire.Number = 170
)

// Field layouts of the messages decoded here. Field numbers absent from a
// layout (unknown fields, Job.custom, Job.history, Job.origin) are refused.
var (
	reservedJobFields = layout{bytes: bits(1, 2)}
	contextFields     = layout{varints: bits(1, 2, 3, 4), bytes: bits(5, 6, 7)}
	jobFields         = layout{varints: bits(1, 5, 6, 10, 11), bytes: bits(2, 3, 4, 7, 8, 9, 13, 14, 15),
		wideBytes: []protowire.Number{jobExpiresAt, jobStartedAt, jobTraceContext}}
	traceContextFields = layout{bytes: bits(1, 2)}
)

func (d *reserveDecoder) reservedJob(rj *seppv1.ReservedJob, b []byte) bool {
	r := fieldReader{b: b, layout: reservedJobFields}
	ok := true
	for ok && r.next() {
		switch r.num {
		case 1:
			rj.Ctx = d.contexts.Next(d.n)
			ok = d.context(rj.Ctx, r.bytes)
		case 2:
			rj.Job = d.jobs.Next(d.n)
			ok = d.job(rj.Job, r.bytes)
		}
	}
	return ok && !r.bad
}

func (d *reserveDecoder) context(c *seppv1.JobContext, b []byte) bool {
	r := fieldReader{b: b, layout: contextFields}
	ok := true
	for ok && r.next() {
		switch r.num {
		case 1:
			c.JobId = r.varint
		case 2:
			c.LeaseToken = r.varint
		case 3:
			c.Attempt = uint32(r.varint)
		case 4:
			c.MaxAttempts = uint32(r.varint)
		case 5:
			c.LeaseDeadline, ok = d.timestamp(&d.ctxDeadline, r.bytes)
		case 6:
			c.Queue, ok = d.queue.Of(r.bytes)
		case 7:
			c.WorkerId, ok = d.workerID.Of(r.bytes)
		}
	}
	return ok && !r.bad
}

func (d *reserveDecoder) job(j *seppv1.Job, b []byte) bool {
	r := fieldReader{b: b, layout: jobFields}
	ok := true
	for ok && r.next() {
		switch r.num {
		case 1:
			j.Id = r.varint
		case 2:
			j.Queue, ok = d.queue.Of(r.bytes)
		case 3:
			j.JobType, ok = d.jobType.Of(r.bytes)
		case 4:
			if len(r.bytes) > 0 { // proto.Unmarshal leaves an empty payload nil
				j.Payload = bytes.Clone(r.bytes)
			}
		case 5:
			j.Priority = uint32(r.varint)
		case 6:
			j.State = seppv1.JobState(int32(r.varint))
		case 7:
			j.EnqueuedAt, ok = d.timestamp(&d.enqueuedAt, r.bytes)
		case 8:
			j.ScheduledAt, ok = d.timestamp(&d.scheduledAt, r.bytes)
		case 9:
			j.NextAttemptAt, ok = d.timestamp(&d.nextAttemptAt, r.bytes)
		case 10:
			j.Attempt = uint32(r.varint)
		case 11:
			j.MaxAttempts = uint32(r.varint)
		case 13:
			j.WorkerId, ok = d.workerID.Of(r.bytes)
		case 14:
			j.LeaseDeadline, ok = d.timestamp(&d.jobDeadline, r.bytes)
		case 15:
			j.LastReason, ok = d.lastReason.Of(r.bytes)
		case jobExpiresAt:
			j.ExpiresAt, ok = d.timestamp(&d.expiresAt, r.bytes)
		case jobStartedAt:
			j.StartedAt, ok = d.timestamp(&d.startedAt, r.bytes)
		case jobTraceContext:
			j.TraceContext = d.traces.Next(d.n)
			ok = d.traceContext(j.TraceContext, r.bytes)
		}
	}
	return ok && !r.bad
}

func (d *reserveDecoder) traceContext(tc *seppv1.TraceContext, b []byte) bool {
	r := fieldReader{b: b, layout: traceContextFields}
	ok := true
	for ok && r.next() {
		switch r.num {
		case 1:
			tc.Traceparent, ok = d.traceparent.Of(r.bytes)
		case 2:
			tc.Tracestate, ok = d.tracestate.Of(r.bytes)
		}
	}
	return ok && !r.bad
}

func (d *reserveDecoder) timestamp(s *wire.Slab[timestamppb.Timestamp], b []byte) (*timestamppb.Timestamp, bool) {
	ts := s.Next(d.n)
	return ts, wire.Timestamp(ts, b)
}

// layout says which field numbers (1 to 31) of a message are varints and
// which are length-delimited, one bit per number, and which numbers above
// 31 are length-delimited (wideBytes, at most 8).
type layout struct {
	varints, bytes uint32
	wideBytes      []protowire.Number
}

// wideBit is the seen-bit of number among l.wideBytes, or 0 if it is not
// one of them.
func (l layout) wideBit(num protowire.Number) uint8 {
	for i, w := range l.wideBytes {
		if w == num {
			return 1 << i
		}
	}
	return 0
}

func bits(nums ...protowire.Number) uint32 {
	var b uint32
	for _, n := range nums {
		b |= 1 << n
	}
	return b
}

// fieldReader walks the fields of one message, in the manner of
// bufio.Scanner: next reads a field into num and varint or bytes, and
// returns false at the end or on a field the fast path refuses (then bad is
// set): malformed, absent from the layout, of another wire type, or a
// repeat of one already read (which proto.Unmarshal would overwrite or
// merge).
type fieldReader struct {
	b        []byte
	layout   layout
	seen     uint32
	seenWide uint8
	bad      bool
	num      protowire.Number
	varint   uint64
	bytes    []byte
}

func (r *fieldReader) next() bool {
	if len(r.b) == 0 {
		return false
	}
	num, typ, n := protowire.ConsumeTag(r.b)
	var bit uint32
	var wide uint8
	switch {
	case n <= 0: // malformed; ConsumeTag also refuses numbers below 1
	case num < 32:
		bit = 1 << num
	default:
		wide = r.layout.wideBit(num)
	}
	m := -1
	switch {
	case wide != 0:
		if r.seenWide&wide == 0 && typ == protowire.BytesType {
			r.bytes, m = protowire.ConsumeBytes(r.b[n:])
		}
	case bit == 0 || r.seen&bit != 0:
	case typ == protowire.VarintType && r.layout.varints&bit != 0:
		r.varint, m = protowire.ConsumeVarint(r.b[n:])
	case typ == protowire.BytesType && r.layout.bytes&bit != 0:
		r.bytes, m = protowire.ConsumeBytes(r.b[n:])
	}
	if m < 0 {
		r.bad = true
		return false
	}
	r.seen |= bit
	r.seenWide |= wide
	r.num = num
	r.b = r.b[n+m:]
	return true
}
