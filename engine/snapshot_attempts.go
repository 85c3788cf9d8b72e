package engine

import (
	"errors"
	"fmt"
	"slices"
)

// attemptDetail reports whether j holds anything only the attempts
// section carries.
func attemptDetail(j *job) bool {
	x := j.ext
	if x == nil {
		return false
	}
	if x.origin != nil {
		return true
	}
	return slices.ContainsFunc(x.history, func(h attemptRecord) bool {
		return h.startedAt != 0 || h.lease != 0 || h.directive != 0
	})
}

// encodeAttemptsSection writes the flags (bit 0: recordFields, bit 1:
// payloadsOffHeap, bit 2: compactCharge and, from layout 16, bit 3:
// traceUsed, which layouts 13..15 imply from their version and layout 16
// cannot: it is written for the charge, trace or not, and a restored
// replica must write what the others write in the later layouts), the
// delivery starts by job id, then, by job id, every live job and retained
// record with detail: its history's detail, entry by entry, and its origin.
func (e *Engine) encodeAttemptsSection(c *encoder, version uint64) {
	var flags uint64
	if e.recordFields {
		flags |= 1
	}
	if e.payloadsOffHeap {
		flags |= 2
	}
	if e.compactCharge {
		flags |= 4
	}
	if version >= snapshotVersionCompactCharge && e.traceUsed {
		flags |= 8
	}
	c.uvarint(flags)
	ids := make([]JobID, 0, len(e.started))
	for id := range e.started {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	c.uvarint(uint64(len(ids)))
	for _, id := range ids {
		c.uvarint(uint64(id))
		c.varint(e.started[id])
	}
	var detailed []*job
	e.jobs.each(func(j *job) bool {
		if attemptDetail(j) {
			detailed = append(detailed, j)
		}
		return true
	})
	for r := e.deadHead; r != nil; r = r.next {
		if attemptDetail(r.j) {
			detailed = append(detailed, r.j)
		}
	}
	slices.SortFunc(detailed, func(a, b *job) int {
		switch {
		case a.id < b.id:
			return -1
		case a.id > b.id:
			return 1
		}
		return 0
	})
	c.uvarint(uint64(len(detailed)))
	for _, j := range detailed {
		x := j.ext
		c.uvarint(uint64(j.id))
		c.uvarint(uint64(len(x.history)))
		for _, h := range x.history {
			c.varint(h.startedAt)
			c.uvarint(uint64(h.lease))
			c.byte(h.directive)
		}
		c.bool(x.origin != nil)
		if o := x.origin; o != nil {
			c.string(o.queue)
			c.uvarint(uint64(o.jobID))
			c.byte(uint8(o.cause))
			c.varint(o.failedAt)
			c.string(o.lastReason)
			c.uvarint(uint64(o.finalAttempt))
		}
	}
}

func (d *decoder) decodeAttemptsSection(e *Engine) error {
	flags := d.uvarint()
	switch {
	case d.err != nil:
		return d.err
	case flags&^15 != 0 || d.version < snapshotVersionPayloadsOff && flags&2 != 0 || d.version < snapshotVersionCompactCharge && flags&12 != 0:
		return fmt.Errorf("attempts section: unknown flags %#x", flags)
	case d.version < snapshotVersionPayloadsOff && flags&1 == 0:
		return errors.New("attempts section: layout 11 written without recordFields")
	}
	e.recordFields = flags&1 != 0
	e.payloadsOffHeap = flags&2 != 0
	e.compactCharge = flags&4 != 0
	if d.version >= snapshotVersionCompactCharge {
		e.traceUsed = flags&8 != 0
	}
	n := d.count(1 << 40)
	var last JobID
	for i := 0; i < n && d.err == nil; i++ {
		id, at := JobID(d.uvarint()), d.varint()
		if d.err != nil {
			break
		}
		if id <= last {
			return fmt.Errorf("attempts section: delivery start of job %d out of order", id)
		}
		last = id
		if j := e.jobs.get(id); j == nil || j.state != StateReserved {
			return fmt.Errorf("attempts section: delivery start of job %d, which is not reserved", id)
		}
		e.started[id] = at
	}
	n = d.count(1 << 40)
	last = 0
	for i := 0; i < n && d.err == nil; i++ {
		id := JobID(d.uvarint())
		nh := d.count(maxAttemptHistory)
		if d.err != nil {
			break
		}
		if id <= last {
			return fmt.Errorf("attempts section: detail of job %d out of order", id)
		}
		last = id
		j := e.jobForChange(id) // a restored job held compact (a forwarded copy) is converted to take its origin
		if j == nil {
			if r := e.dead[id]; r != nil {
				j = r.j
			}
		}
		if j == nil {
			return fmt.Errorf("attempts section: detail of job %d, which the snapshot does not hold", id)
		}
		x := j.extension()
		if nh != len(x.history) {
			return fmt.Errorf("attempts section: job %d has %d history entries, its detail %d", id, len(x.history), nh)
		}
		for k := range x.history {
			h := &x.history[k]
			h.startedAt = d.varint()
			h.lease = LeaseToken(d.uvarint())
			h.directive = d.byte()
			if d.err == nil && int(h.directive) >= len(directiveNames) {
				return fmt.Errorf("attempts section: job %d: unknown directive %d", id, h.directive)
			}
		}
		if d.bool() {
			o := &jobOrigin{queue: d.string(), jobID: JobID(d.uvarint()), cause: Cause(d.byte()), failedAt: d.varint(), lastReason: d.string(), finalAttempt: d.u32()}
			if d.err != nil {
				break
			}
			if o.cause == CauseUnknown || o.cause > d.maxCause() {
				return fmt.Errorf("attempts section: job %d: unknown origin cause %d", id, o.cause)
			}
			if err := checkQueueName("origin", o.queue); err != nil {
				return fmt.Errorf("attempts section: job %d: %w", id, err)
			}
			x.origin = o
		}
	}
	return d.err
}
