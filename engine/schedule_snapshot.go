package engine

import (
	"fmt"
	"maps"
	"slices"
	"time"
)

// The schedules section of a layout 6 snapshot: the count, then each
// schedule by name: name, kind, cron, interval, time zone, overlap,
// catch-up, paused; the template (queue, type, payload, priority present and
// value, custom fields by key, max attempts); then last fired tick, next
// tick, last job, fired, skipped, created, updated.

func (e *Engine) encodeSchedules(c *encoder) {
	names := e.scheduleNames()
	c.uvarint(uint64(len(names)))
	for _, name := range names {
		s := e.schedules[name]
		p := &s.p
		c.string(p.Name)
		c.byte(uint8(p.Kind))
		c.string(p.Cron)
		c.varint(int64(p.Interval))
		c.string(p.TimeZone)
		c.byte(uint8(p.Overlap))
		c.byte(uint8(p.CatchUp))
		c.bool(p.Paused)
		t := &p.Template
		c.string(t.Queue)
		c.string(t.JobType)
		c.bytes(t.Payload)
		encodeOpt(c, t.Priority, func(v uint32) { c.uvarint(uint64(v)) })
		keys := slices.Sorted(maps.Keys(t.Custom))
		c.uvarint(uint64(len(keys)))
		for _, k := range keys {
			c.string(k)
			c.string(t.Custom[k])
		}
		c.uvarint(uint64(t.MaxAttempts))
		c.varint(s.lastFired)
		c.varint(s.nextTick)
		c.uvarint(uint64(s.lastJob))
		c.uvarint(s.fired)
		c.uvarint(s.skipped)
		c.varint(s.createdAt)
		c.varint(s.updatedAt)
	}
}

func (d *decoder) decodeSchedules(e *Engine) error {
	n := d.count(MaxSchedules)
	prev := ""
	for i := 0; i < n && d.err == nil; i++ {
		s := &schedule{}
		p := &s.p
		p.Name = d.string()
		p.Kind = ScheduleKind(d.byte())
		p.Cron = d.string()
		p.Interval = time.Duration(d.varint())
		p.TimeZone = d.string()
		p.Overlap = OverlapPolicy(d.byte())
		p.CatchUp = CatchUpPolicy(d.byte())
		p.Paused = d.bool()
		t := &p.Template
		t.Queue = d.string()
		t.JobType = d.string()
		t.Payload = d.bytes()
		t.Priority = decodeOpt(d, d.u32)
		nc := d.count(1 << 16)
		for k := 0; k < nc && d.err == nil; k++ {
			if t.Custom == nil {
				t.Custom = make(map[string]string, nc)
			}
			key := d.string()
			t.Custom[key] = d.string()
		}
		t.MaxAttempts = d.u32()
		s.lastFired = d.varint()
		s.nextTick = d.varint()
		s.lastJob = JobID(d.uvarint())
		s.fired = d.uvarint()
		s.skipped = d.uvarint()
		s.createdAt = d.varint()
		s.updatedAt = d.varint()
		if d.err != nil {
			break
		}
		if i > 0 && p.Name <= prev {
			return fmt.Errorf("schedule %q out of name order", p.Name)
		}
		prev = p.Name
		// Only the shape is checked: the limits a template was checked
		// against when it was defined may have changed since (a fire
		// refused by them counts as skipped), so they cannot make a
		// snapshot unreadable.
		if err := checkScheduleName(p.Name); err != nil {
			return fmt.Errorf("schedule %q: %w", p.Name, err)
		}
		if (p.Kind != ScheduleCron && p.Kind != ScheduleInterval) || p.Overlap > OverlapAllow || p.CatchUp > CatchUpSkip {
			return fmt.Errorf("schedule %q: kind %d, overlap %d, catch-up %d out of range", p.Name, p.Kind, p.Overlap, p.CatchUp)
		}
		e.schedules[p.Name] = s
	}
	return d.err
}
