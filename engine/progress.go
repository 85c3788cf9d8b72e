package engine

import (
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"
)

// Progress is what the worker running a job last reported of it: how far
// it is (0 to 100) and a short message. It arrives with a lease extension
// (ExtendParams.Progress), so reporting it costs no log entry beyond the
// extension, and it is replicated state like the lease itself: in the
// snapshot (layout snapshotVersionProgress), the digest and the memory
// count.
//
// It belongs to the delivery, not to the job: it is kept only while the
// job is Reserved and is cleared when the delivery ends, whatever ends it
// (ack, nack, release, lease expiry, cancel, an admin action), so a retry
// starts with none and never shows the progress of an attempt that
// failed. A completed job does not keep it either: its result is the
// delivery's last word (completed.go).
type Progress struct {
	// Percent is 0 to 100.
	Percent uint32
	// Message is at most MaxProgressMessageBytes of UTF-8; "" for none.
	Message string
}

// The bounds of a progress report. The message is a status line for a
// person reading the admin UI or GetJob, not a log: 256 bytes holds a
// sentence and keeps what a million reserved jobs could hold bounded.
const (
	MaxProgressPercent      = 100
	MaxProgressMessageBytes = 256
	// progressOverhead is a progress-map entry: the id, the Progress (a
	// string header and the percent) and the map's slack.
	progressOverhead = 48
)

// CheckProgress checks p as the engine does before it keeps it: the error
// is an invalid argument naming the field (progress.percent or
// progress.message) and the limit it breaks. A nil p is valid (no report).
func CheckProgress(p *Progress) error {
	if p == nil {
		return nil
	}
	switch {
	case p.Percent > MaxProgressPercent:
		return invalid("progress.percent", "must be at most %d, got %d", MaxProgressPercent, p.Percent)
	case len(p.Message) > MaxProgressMessageBytes:
		return invalid("progress.message", "is %d bytes, above the limit of %d", len(p.Message), MaxProgressMessageBytes)
	case !utf8.ValidString(p.Message):
		return invalid("progress.message", "must be valid UTF-8")
	}
	return nil
}

// progressCharge is what a reserved job's progress costs in the memory
// count, charged to the job's queue.
func progressCharge(p Progress) int64 { return progressOverhead + int64(len(p.Message)) }

// setProgress makes p (checked) the progress of j, a Reserved job,
// replacing any it had, and charges the difference.
func (e *Engine) setProgress(j *job, p Progress) {
	if old, ok := e.progress[j.id]; ok {
		e.charge(j.q, -progressCharge(old))
	}
	p.Message = strings.Clone(p.Message) // off the command's buffer
	e.progress[j.id] = p
	e.charge(j.q, progressCharge(p))
}

// clearProgress drops the progress of j, whose delivery ended (detach).
func (e *Engine) clearProgress(j *job) {
	if old, ok := e.progress[j.id]; ok {
		e.charge(j.q, -progressCharge(old))
		delete(e.progress, j.id)
	}
}

// progressOf is a copy of j's progress for a view; nil when it has none.
func (e *Engine) progressOf(j *job) *Progress {
	if j.state != StateReserved {
		return nil
	}
	p, ok := e.progress[j.id]
	if !ok {
		return nil
	}
	return &p
}

// The flags the progress section starts with. Bit 0 is traceUsed, the
// sticky flag that makes a state be written in layout snapshotVersionTrace
// or later (snapshotLayout). Layouts 13..15 imply it from their version
// (layout 16 carries it in the attempts section), which this one cannot do: a state
// is written in it for its progress, which ends, and a replica that
// restored it must then write the layout the others write
// (snapshotVersionTrace if a job ever had a trace context, else older). The
// other sticky flags (cancel, expiry) are implied as before: they pick
// layouts below 11, and a cluster whose members keep attempt detail
// (command version 12) never writes those.
const (
	flagTraceUsed uint64 = 1 << iota
	progressFlags        = flagTraceUsed
)

// encodeProgressSection writes the flags, then, by job id, each reserved
// job's progress: its id, percent and message.
func (e *Engine) encodeProgressSection(c *encoder) {
	var flags uint64
	if e.traceUsed {
		flags |= flagTraceUsed
	}
	c.uvarint(flags)
	ids := make([]JobID, 0, len(e.progress))
	for id := range e.progress { // sorted below: order does not matter
		ids = append(ids, id)
	}
	slices.Sort(ids)
	c.uvarint(uint64(len(ids)))
	for _, id := range ids {
		p := e.progress[id]
		c.uvarint(uint64(id))
		c.uvarint(uint64(p.Percent))
		c.string(p.Message)
	}
}

func (d *decoder) decodeProgressSection(e *Engine) error {
	flags := d.uvarint()
	if flags&^progressFlags != 0 {
		return fmt.Errorf("progress section: unknown flags %#x", flags)
	}
	e.traceUsed = flags&flagTraceUsed != 0 // as the attempts section did (layout 16 on)
	n := d.count(1 << 40)
	var last JobID
	for i := 0; i < n && d.err == nil; i++ {
		id := JobID(d.uvarint())
		pct := d.uvarint()
		msg := d.string()
		if d.err != nil {
			break
		}
		if id <= last {
			return fmt.Errorf("progress section: job %d out of order", id)
		}
		last = id
		if pct > MaxProgressPercent {
			return fmt.Errorf("progress section: job %d: percent %d above %d", id, pct, MaxProgressPercent)
		}
		p := Progress{Percent: uint32(pct), Message: msg}
		if err := CheckProgress(&p); err != nil {
			return fmt.Errorf("progress section: job %d: %v", id, err)
		}
		if j := e.jobs.get(id); j == nil || j.state != StateReserved {
			return fmt.Errorf("progress section: job %d, which the snapshot does not hold reserved", id)
		}
		e.progress[id] = p
	}
	if d.err != nil {
		return d.err
	}
	// The layout is written only while a job has progress, so that a
	// state without any is written as an older binary writes it.
	if len(e.progress) == 0 && d.version == snapshotVersionProgress {
		return fmt.Errorf("progress section: layout %d written without progress", snapshotVersionProgress)
	}
	return nil
}
