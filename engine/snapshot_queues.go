package engine

import (
	"errors"
	"fmt"
	"slices"
)

// snapshotLayout is the layout this state is written in: the oldest that
// holds all of it, so an engine that never used a newer feature writes
// what an older binary reads and digests alike.
func (e *Engine) snapshotLayout() uint64 {
	if len(e.deps) > 0 {
		return snapshotVersionDependencies
	}
	if len(e.progress) > 0 {
		return snapshotVersionProgress
	}
	if e.compactCharge {
		return snapshotVersionCompactCharge
	}
	if e.completedHeld > 0 || HasCompletedRetention(e.cfg) {
		return snapshotVersionCompleted
	}
	if HasTags(e.cfg) {
		return snapshotVersionTags
	}
	if e.traceUsed {
		return snapshotVersionTrace
	}
	if e.payloadsOffHeap || e.cfg.Limits.MaxDiskBytes != 0 {
		return snapshotVersionPayloadsOff
	}
	if e.recordFields {
		return snapshotVersionAttempts
	}
	if e.expiryUsed || HasExpiryFairness(e.cfg) {
		return snapshotVersionExpiryFair
	}
	if len(e.redrives) > 0 {
		return snapshotVersionRedrive
	}
	if e.cancelUsed {
		return snapshotVersionCancel
	}
	if len(e.unique) > 0 {
		return snapshotVersionUnique
	}
	if len(e.schedules) > 0 {
		return snapshotVersionSchedules
	}
	v := snapshotVersionOf(e.cfg)
	if v >= snapshotVersionOperator {
		return v // every later layout has the operator section too
	}
	if len(e.declared) > 0 || e.forwardAsArrived || e.forwardKeepsPriority || e.declaredLimits {
		return snapshotVersionOperator
	}
	for _, q := range e.queues { // any: order does not matter
		if q.purged != 0 {
			return snapshotVersionOperator
		}
	}
	return v
}

// encodeOperatorSection writes the flags (bit 0: forwardAsArrived, bit 1:
// forwardKeepsPriority, bit 2: declaredLimits, the last two set only by a
// cluster whose every member reads them), each queue's purged count, in
// the queues' (name) order, then the applied declarations by queue name.
func (e *Engine) encodeOperatorSection(c *encoder, qs []*queue) {
	var flags uint64
	if e.forwardAsArrived {
		flags |= 1
	}
	if e.forwardKeepsPriority {
		flags |= 2
	}
	if e.declaredLimits {
		flags |= 4
	}
	c.uvarint(flags)
	c.uvarint(uint64(len(qs)))
	for _, q := range qs {
		c.uvarint(q.purged)
	}
	names := make([]string, 0, len(e.declared))
	for name := range e.declared {
		names = append(names, name)
	}
	slices.Sort(names)
	c.uvarint(uint64(len(names)))
	for _, name := range names {
		c.string(name)
		fps := e.declared[name]
		c.uvarint(uint64(len(fps)))
		for _, fp := range fps {
			c.uvarint(fp)
		}
	}
}

func (d *decoder) decodeOperatorSection(e *Engine, qs []*queue) error {
	switch flags := d.uvarint(); {
	case d.err != nil:
		return d.err
	case flags&^7 != 0:
		return fmt.Errorf("operator section: unknown flags %#x", flags)
	default:
		e.forwardAsArrived = flags&1 != 0
		e.forwardKeepsPriority = flags&2 != 0
		e.declaredLimits = flags&4 != 0
	}
	if n := d.count(1 << 32); d.err == nil && n != len(qs) {
		return fmt.Errorf("operator section: %d purged counts for %d queues", n, len(qs))
	}
	for _, q := range qs {
		q.purged = d.uvarint()
	}
	n := d.count(1 << 32)
	var prev string
	for i := 0; i < n && d.err == nil; i++ {
		name := d.string()
		if d.err == nil && (!ValidQueueName(name) || (i > 0 && name <= prev)) {
			return fmt.Errorf("operator section: declaration %d: bad or unsorted queue name %q", i, name)
		}
		prev = name
		m := d.count(maxDeclarationsKept)
		if d.err == nil && m == 0 {
			return fmt.Errorf("operator section: queue %q has no declarations", name)
		}
		fps := make([]uint64, 0, m)
		for k := 0; k < m && d.err == nil; k++ {
			fps = append(fps, d.uvarint())
		}
		if e.declared == nil {
			e.declared = make(map[string][]uint64)
		}
		e.declared[name] = fps
	}
	if d.err != nil {
		return d.err
	}
	// Layout 4 is written only for this section; a later layout carries it
	// whether or not it holds anything.
	if d.version == snapshotVersionOperator && len(e.declared) == 0 && !e.forwardAsArrived && !e.forwardKeepsPriority && !e.declaredLimits && !slices.ContainsFunc(qs, func(q *queue) bool { return q.purged != 0 }) {
		return errors.New("operator section: layout 4 written without anything it holds")
	}
	return nil
}
