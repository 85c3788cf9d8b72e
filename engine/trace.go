package engine

import (
	"fmt"
	"slices"
)

// TraceContext is a job's W3C trace context (https://www.w3.org/TR/trace-context/):
// the producer's traceparent and tracestate, carried with the job so that the
// server's and the worker's spans join the producer's trace. The engine only
// keeps and returns it; it never reads it to decide anything. A job without
// one costs nothing: the pointer lives in the job's extension, which most
// jobs do not have.
type TraceContext struct {
	// Traceparent is "version-trace_id-parent_id-flags" in lowercase hex,
	// e.g. 00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01.
	Traceparent string
	// Tracestate is the vendors' list; empty when none.
	Tracestate string
}

// The bounds of a trace context. A version-00 traceparent is 55 bytes; a
// later version may append fields, so the bound leaves room for them. The
// W3C recommendation asks that at least 512 bytes of tracestate be
// propagated; we keep that much.
const (
	MaxTraceparentBytes = 128
	MaxTracestateBytes  = 512
	// traceOverhead is the TraceContext (two string headers) the job's
	// extension points to, in its 32-byte size class.
	traceOverhead = 32
)

// CheckTraceContext checks t as the engine does before it keeps it: the
// error is an invalid argument naming the field (trace_context.traceparent
// or trace_context.tracestate) and the rule or limit it breaks. A nil t is
// valid (no trace context).
func CheckTraceContext(t *TraceContext) error {
	if t == nil {
		return nil
	}
	const tp, ts = "trace_context.traceparent", "trace_context.tracestate"
	switch {
	case len(t.Traceparent) > MaxTraceparentBytes:
		return invalid(tp, "is %d bytes, above the limit of %d", len(t.Traceparent), MaxTraceparentBytes)
	case len(t.Tracestate) > MaxTracestateBytes:
		return invalid(ts, "is %d bytes, above the limit of %d", len(t.Tracestate), MaxTracestateBytes)
	case t.Traceparent == "":
		return invalid(tp, "is required with a trace context (tracestate alone is not one)")
	}
	if why := traceparentProblem(t.Traceparent); why != "" {
		return invalid(tp, "%s", why)
	}
	for i := 0; i < len(t.Tracestate); i++ {
		if c := t.Tracestate[i]; c < 0x20 || c > 0x7e {
			return invalid(ts, "must be printable ASCII, byte %d is %#x", i, c)
		}
	}
	return nil
}

// traceparentProblem says what makes s no W3C traceparent, or "".
// version "ff" is invalid; version 00 is exactly 55 bytes; a later version
// is at least that, and anything it appends starts with '-'.
func traceparentProblem(s string) string {
	const want = "version-trace_id-parent_id-flags: 2, 32, 16 and 2 lowercase hex digits joined by '-'"
	if len(s) < 55 || s[2] != '-' || s[35] != '-' || s[52] != '-' {
		return "must be " + want
	}
	for i := range 55 {
		if i == 2 || i == 35 || i == 52 {
			continue
		}
		if c := s[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return "must be " + want
		}
	}
	switch {
	case s[:2] == "ff":
		return "version ff is invalid"
	case s[:2] == "00" && len(s) != 55:
		return "is 55 bytes in version 00"
	case len(s) > 55 && s[55] != '-':
		return "must be " + want
	case s[3:35] == "00000000000000000000000000000000":
		return "trace_id must not be all zeros"
	case s[36:52] == "0000000000000000":
		return "parent_id must not be all zeros"
	}
	return ""
}

// traceCharge is what a job's trace context costs in the memory count.
func traceCharge(t *TraceContext) int64 {
	if t == nil {
		return 0
	}
	return traceOverhead + int64(len(t.Traceparent)) + int64(len(t.Tracestate))
}

// cloneTrace is a copy of t the engine may keep (or a caller may own): the
// strings are cloned off whatever buffer they were decoded from.
func cloneTrace(t *TraceContext) *TraceContext {
	if t == nil {
		return nil
	}
	b := make([]byte, 0, len(t.Traceparent)+len(t.Tracestate))
	b = append(append(b, t.Traceparent...), t.Tracestate...)
	s := string(b)
	return &TraceContext{Traceparent: s[:len(t.Traceparent)], Tracestate: s[len(t.Traceparent):]}
}

// setTrace gives j the trace context t (a copy the engine owns) and
// charges it to j's queue; a nil t leaves j as it is.
func (e *Engine) setTrace(j *job, t *TraceContext) {
	if t == nil {
		return
	}
	before := e.jobCharge(j)
	j.extension().trace = cloneTrace(t)
	e.traceUsed = true
	e.charge(j.q, e.jobCharge(j)-before)
}

// traceOf is j's trace context, nil when it has none. The engine never
// changes a kept trace context (it replaces the pointer, if anything), so
// callers inside the engine may share it; views copy it.
func traceOf(j *job) *TraceContext {
	if j.ext == nil {
		return nil
	}
	return j.ext.trace
}

// JobTrace is the queue and trace context of a live job or a retained
// dead one; ok is false when the job is not held or has no trace context.
// A cheap read (no payload, no view) for the spans of an ack or a nack.
func (e *Engine) JobTrace(id JobID) (queue string, t TraceContext, ok bool) {
	j := e.jobForRead(id)
	if j == nil {
		if r := e.dead[id]; r != nil {
			j = r.j
		}
	}
	if j == nil || traceOf(j) == nil {
		return "", TraceContext{}, false
	}
	return j.q.name, *j.ext.trace, true
}

// encodeTraceSection writes, by job id, every live job and retained record
// with a trace context: its id, traceparent and tracestate.
func (e *Engine) encodeTraceSection(c *encoder) {
	var traced []*job
	e.jobs.each(func(j *job) bool {
		if traceOf(j) != nil {
			traced = append(traced, j)
		}
		return true
	})
	for r := e.deadHead; r != nil; r = r.next {
		if traceOf(r.j) != nil {
			traced = append(traced, r.j)
		}
	}
	slices.SortFunc(traced, func(a, b *job) int {
		switch {
		case a.id < b.id:
			return -1
		case a.id > b.id:
			return 1
		}
		return 0
	})
	c.uvarint(uint64(len(traced)))
	for _, j := range traced {
		c.uvarint(uint64(j.id))
		c.string(j.ext.trace.Traceparent)
		c.string(j.ext.trace.Tracestate)
	}
}

func (d *decoder) decodeTraceSection(e *Engine) error {
	if d.version < snapshotVersionCompactCharge {
		e.traceUsed = true // layouts 13..15 are written only once it is; later ones carry it (attempts section, bit 3)
	}
	n := d.count(1 << 40)
	var last JobID
	for i := 0; i < n && d.err == nil; i++ {
		id := JobID(d.uvarint())
		t := &TraceContext{Traceparent: d.string(), Tracestate: d.string()}
		if d.err != nil {
			break
		}
		if id <= last {
			return fmt.Errorf("trace section: job %d out of order", id)
		}
		last = id
		if err := CheckTraceContext(t); err != nil {
			return fmt.Errorf("trace section: job %d: %v", id, err)
		}
		j := e.jobForChange(id) // a restored job held compact is converted to take its trace
		if j == nil {
			if r := e.dead[id]; r != nil {
				j = r.j
			}
		}
		if j == nil {
			return fmt.Errorf("trace section: job %d, which the snapshot does not hold", id)
		}
		j.extension().trace = t
	}
	return d.err
}
