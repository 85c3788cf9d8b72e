package engine

import (
	"errors"
	"fmt"
	"time"
)

// encodeRedriveSection writes the last task id given, then each task in id
// order.
func (e *Engine) encodeRedriveSection(c *encoder) {
	c.uvarint(e.nextRedrive)
	c.uvarint(uint64(len(e.redrives)))
	for _, t := range e.redrives {
		c.uvarint(t.id)
		c.byte(uint8(t.state))
		s := &t.p.Selection
		c.string(s.Queue)
		c.byte(uint8(s.Cause))
		c.string(s.JobType)
		c.string(s.ReasonContains)
		c.varint(t.after)
		c.varint(t.before)
		c.string(t.p.ToQueue)
		c.bool(t.p.Fresh)
		c.uvarint(uint64(t.p.Rate))
		c.string(t.p.By)
		c.uvarint(t.moved)
		c.uvarint(uint64(t.cursor))
		c.string(t.lastError)
		c.varint(t.createdAt)
		c.varint(t.updatedAt)
		c.varint(t.endedAt)
		c.string(t.endedBy)
	}
}

func (d *decoder) decodeRedriveSection(e *Engine) error {
	e.nextRedrive = d.uvarint()
	n := d.count(MaxActiveRedrives + MaxRedriveAudit)
	if d.err == nil && n == 0 && d.version == snapshotVersionRedrive {
		// A later layout holds the section whether or not a task exists.
		return errors.New("redrive section: layout 9 written without a task")
	}
	active, ended := 0, 0
	for i := 0; i < n && d.err == nil; i++ {
		t := &redriveTask{id: d.uvarint(), state: RedriveState(d.byte())}
		s := &t.p.Selection
		s.Queue = d.string()
		s.Cause = Cause(d.byte())
		s.JobType = d.string()
		s.ReasonContains = d.string()
		t.after = d.varint()
		t.before = d.varint()
		t.p.ToQueue = d.string()
		t.p.Fresh = d.bool()
		t.p.Rate = int(d.uvarint())
		t.p.By = d.string()
		t.moved = d.uvarint()
		t.cursor = JobID(d.uvarint())
		t.lastError = d.string()
		t.createdAt = d.varint()
		t.updatedAt = d.varint()
		t.endedAt = d.varint()
		t.endedBy = d.string()
		if d.err != nil {
			break
		}
		switch {
		case t.id == 0 || t.id > e.nextRedrive || (i > 0 && t.id <= e.redrives[i-1].id):
			return fmt.Errorf("redrive section: task %d: id %d out of order or above the last given %d", i, t.id, e.nextRedrive)
		case t.state == RedriveUnknown || t.state > RedriveDone:
			return fmt.Errorf("redrive section: task %d: unknown state %d", t.id, t.state)
		case s.Cause > maxCause:
			return fmt.Errorf("redrive section: task %d: unknown cause %d", t.id, s.Cause)
		case t.p.Rate < 1 || t.p.Rate > MaxRedriveRate:
			return fmt.Errorf("redrive section: task %d: rate %d out of range", t.id, t.p.Rate)
		case t.p.ToQueue != "" && !t.p.Fresh:
			return fmt.Errorf("redrive section: task %d: same-id requeue with a target queue", t.id)
		case t.state.Ended() != (t.endedAt != 0):
			return fmt.Errorf("redrive section: task %d: state %s with ended_at %d", t.id, t.state, t.endedAt)
		}
		if t.after != 0 {
			s.FailedAfter = time.Unix(0, t.after)
		}
		if t.before != 0 {
			s.FailedBefore = time.Unix(0, t.before)
		}
		if t.state.Ended() {
			ended++
		} else {
			active++
		}
		e.redrives = append(e.redrives, t)
	}
	if d.err != nil {
		return d.err
	}
	if active > MaxActiveRedrives || ended > MaxRedriveAudit {
		return fmt.Errorf("redrive section: %d active and %d ended tasks, above the bounds %d and %d", active, ended, MaxActiveRedrives, MaxRedriveAudit)
	}
	return nil
}
