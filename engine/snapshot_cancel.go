package engine

import "fmt"

// knownSnapshotLayout reports whether this engine reads layout v (v within
// 1..snapshotVersion): every layout up to snapshotVersion, each holding
// all the sections of the ones before it.
func knownSnapshotLayout(v uint64) bool {
	return v >= 1 && v <= snapshotVersion
}

// maxCause is the highest dead-letter cause the layout being read holds.
func (d *decoder) maxCause() Cause {
	if d.version >= snapshotVersionExpiryFair {
		return CauseExpired
	}
	if d.version >= snapshotVersionCancel {
		return CauseCancelled
	}
	return CauseAdmin
}

// maxOutcome is the highest attempt outcome the layout being read holds.
func (d *decoder) maxOutcome() uint8 {
	if d.version >= snapshotVersionCancel {
		return outcomeCancelled
	}
	return outcomeReleased
}

// encodeCancelSection writes each queue's count of jobs dead-lettered as
// cancelled, in the queues' (name) order.
func (e *Engine) encodeCancelSection(c *encoder, qs []*queue) {
	c.uvarint(uint64(len(qs)))
	for _, q := range qs {
		c.uvarint(q.deadLettered[CauseCancelled])
	}
}

func (d *decoder) decodeCancelSection(e *Engine, qs []*queue) error {
	if n := d.count(1 << 32); d.err == nil && n != len(qs) {
		return fmt.Errorf("cancel section: %d cancelled counts for %d queues", n, len(qs))
	}
	for _, q := range qs {
		q.deadLettered[CauseCancelled] = d.uvarint()
	}
	if d.err != nil {
		return d.err
	}
	e.cancelUsed = true
	return nil
}
