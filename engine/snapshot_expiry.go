package engine

import (
	"fmt"
	"time"
)

// encodeExpiryFairSection writes, in order: per configured queue (config
// order) its max_wait and fairness key; per queue (name order) its count
// of jobs dead-lettered as expired; the live jobs with a deadline in id
// order (id, deadline); then for each queue (name order) with a fairness
// key, per priority level 0..MaxPriority, its lines in turn order (a flag
// for the line of jobs without the field, else the value).
func (e *Engine) encodeExpiryFairSection(c *encoder, qs []*queue) {
	c.uvarint(uint64(len(e.cfg.Queues)))
	for _, qc := range e.cfg.Queues {
		c.varint(int64(qc.MaxWait))
		c.string(qc.FairnessKey)
	}
	c.uvarint(uint64(len(qs)))
	for _, q := range qs {
		c.uvarint(q.deadLettered[CauseExpired])
	}
	n := 0
	e.jobs.each(func(j *job) bool {
		if hasDeadline(j) {
			n++
		}
		return true
	})
	c.uvarint(uint64(n))
	e.jobs.each(func(j *job) bool { // in id order
		if hasDeadline(j) {
			c.uvarint(uint64(j.id))
			c.varint(j.ext.expiresAt)
		}
		return c.err == nil
	})
	for _, q := range qs {
		if q.set.fairKey == "" {
			continue
		}
		for prio := range q.ready {
			order := q.ready[prio].fair.turnOrder()
			c.uvarint(uint64(len(order)))
			for _, k := range order {
				c.bool(k.none)
				if !k.none {
					c.string(k.value)
				}
			}
		}
	}
}

func (d *decoder) decodeExpiryFairSection(e *Engine, qs []*queue) error {
	if n := d.count(1 << 20); d.err == nil && n != len(e.cfg.Queues) {
		return fmt.Errorf("expiry section: %d queue settings for %d configured queues", n, len(e.cfg.Queues))
	}
	cfg := cloneConfig(e.cfg)
	for i := range cfg.Queues {
		cfg.Queues[i].MaxWait = time.Duration(d.varint())
		cfg.Queues[i].FairnessKey = d.string()
	}
	if d.err != nil {
		return d.err
	}
	if err := cfg.Validate(); err != nil {
		return fmt.Errorf("expiry section: config: %w", err)
	}
	e.applyConfig(cfg)
	if n := d.count(1 << 32); d.err == nil && n != len(qs) {
		return fmt.Errorf("expiry section: %d expired counts for %d queues", n, len(qs))
	}
	for _, q := range qs {
		q.deadLettered[CauseExpired] = d.uvarint()
	}
	n := d.count(1 << 40)
	var prev JobID
	for i := 0; i < n && d.err == nil; i++ {
		id, at := JobID(d.uvarint()), d.varint()
		if d.err != nil {
			break
		}
		var j *job
		if id > prev {
			j = e.jobForChange(id) // a restored job held compact is converted to take its deadline
		}
		switch {
		case j == nil || id <= prev:
			return fmt.Errorf("expiry section: deadline of job %d: not a live job, or out of order", id)
		case at <= 0:
			return fmt.Errorf("expiry section: job %d: bad deadline %d", id, at)
		}
		prev = id
		j.extension().expiresAt = at
		if j.state == StateReady || j.state == StateScheduled {
			e.watchDeadline(j)
		}
	}
	for _, q := range qs {
		if q.set.fairKey == "" || d.err != nil {
			continue
		}
		for prio := range q.ready {
			f := q.ready[prio].fair
			m := d.count(1 << 32)
			order := make([]*fairKey, 0, min(m, 1024))
			for k := 0; k < m && d.err == nil; k++ {
				var line *fairKey
				if d.bool() {
					line = f.none
				} else if v := d.string(); d.err == nil {
					line = f.keys[v]
				}
				order = append(order, line)
			}
			if d.err == nil && !f.setTurnOrder(order) {
				return fmt.Errorf("expiry section: queue %q priority %d: the turn order does not match the Ready jobs' keys", q.name, prio)
			}
		}
	}
	if d.err != nil {
		return d.err
	}
	e.expiryUsed = true
	return nil
}
