package cluster

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hashicorp/raft"

	"github.com/sepp-io/sepp/engine"
	"github.com/sepp-io/sepp/fsm"
	"github.com/sepp-io/sepp/schedspec"
)

// ErrSchedulesUnavailable: a member of the cluster runs a binary that does
// not apply the schedule commands (a rolling upgrade is under way). Nothing
// was proposed; retry once every member is upgraded.
var ErrSchedulesUnavailable = errors.New("schedules unavailable until every member applies them")

// scheduleGrace is how late a tick may be and still count as on time; a
// tick later than this was missed (no leader was there to fire it), and the
// schedule's catch-up policy decides what it makes.
const scheduleGrace = time.Second

// schedulerMaxWait bounds the scheduler's sleep, so a clock step or a
// definition applied without waking it is noticed.
const schedulerMaxWait = 5 * time.Second

func (n *Node) schedulesAvailable(ctx context.Context) error {
	v := fsm.FeatureSchedules.CommandVersion
	ok, err := n.membersApplyFor(ctx, v)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("%w (%s: %s)", ErrSchedulesUnavailable, versionNeed(v), n.memberLacking(v))
	}
	return nil
}

// Schedule reads one schedule from this node's state.
func (n *Node) Schedule(name string) (engine.Schedule, error) {
	var s engine.Schedule
	err := n.fsm.Read(func(e *engine.Engine) error {
		var err error
		s, err = e.GetSchedule(name)
		return err
	})
	return s, err
}

// Schedules reads every schedule from this node's state, by name.
func (n *Node) Schedules() []engine.Schedule {
	var out []engine.Schedule
	_ = n.fsm.Read(func(e *engine.Engine) error {
		out = e.Schedules()
		return nil
	})
	return out
}

// runScheduler fires due schedule ticks while this node leads: for each
// schedule whose stored next tick has come by the leader's clock, it
// proposes one ScheduleFire planned by schedspec.Plan. The state machine
// drops a tick fired already, so a tick proposed by this leader and by the
// one before it makes one job; nothing here needs to remember what it fired.
func (n *Node) runScheduler(ctx context.Context) {
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	specs := map[string]cachedSpec{}
	for {
		applied := n.fsm.Applied()
		wait := schedulerMaxWait
		// The schedules are read first: with none (the common case) an
		// applied entry costs a read lock, not a raft configuration query.
		if schedules := n.Schedules(); len(schedules) > 0 && n.membersApply(fsm.CommandVersionSchedules) {
			now := n.clock()
			for _, s := range schedules {
				if s.Paused || s.NextTick.IsZero() {
					continue
				}
				if !s.NextTick.After(s.LastFiredTick) {
					// Defined or resumed by a leader whose clock was behind
					// the tick fired last: that tick would be a duplicate
					// that moves nothing, so plan from the one after it.
					c, ok := n.scheduleSpec(specs, s)
					if !ok {
						continue
					}
					s.NextTick = c.spec.Next(s.LastFiredTick)
					if s.NextTick.IsZero() {
						continue
					}
				}
				if !s.NextTick.After(now) {
					if !n.fireSchedule(ctx, specs, s, now) {
						return
					}
					wait = 0
					continue
				}
				if d := s.NextTick.Sub(now); d < wait {
					wait = d
				}
			}
		}
		if wait == 0 {
			continue // fired: read the state again
		}
		timer.Reset(wait)
		select {
		case <-applied:
		case <-timer.C:
		case <-ctx.Done():
			return
		}
		if !timer.Stop() {
			select {
			case <-timer.C:
			default:
			}
		}
	}
}

// cachedSpec is a parsed spec and the definition it was parsed from.
type cachedSpec struct {
	kind     engine.ScheduleKind
	cron, tz string
	interval time.Duration
	spec     *schedspec.Spec
}

// fireSchedule proposes the fire of s due at now; false when leadership
// ended.
func (n *Node) fireSchedule(ctx context.Context, specs map[string]cachedSpec, s engine.Schedule, now time.Time) bool {
	c, ok := n.scheduleSpec(specs, s)
	if !ok {
		return n.waitBriefly(ctx)
	}
	f, ok := schedspec.Plan(c.spec, s.NextTick, now, s.CatchUp, scheduleGrace)
	if !ok {
		return true
	}
	res, err := n.proposeInternal(ctx, fsm.FireScheduleCommand(s.Name, f.Tick, f.Next, f.Missed))
	switch {
	case err != nil && (ctx.Err() != nil || n.raft.State() != raft.Leader || errors.Is(err, ErrShutdown)):
		return false
	case err != nil:
		// An unknown outcome is safe to retry: the tick is deduplicated.
		n.log.Warn("schedule fire failed; retrying", "schedule", s.Name, "error", err)
		return n.waitBriefly(ctx)
	case res.Err != nil:
		n.log.Warn("schedule fire refused", "schedule", s.Name, "error", res.Err)
		return n.waitBriefly(ctx)
	case res.Fire.Skipped != "" && res.Fire.Skipped != "overlap" && res.Fire.Skipped != "missed":
		n.log.Warn("schedule tick made no job", "schedule", s.Name, "tick", f.Tick, "reason", res.Fire.Skipped)
	}
	return true
}

// scheduleSpec is s's parsed spec, from the cache while s's definition is
// unchanged. A spec that no longer parses (a zone gone from the database)
// is logged; the schedule stays due and is retried.
func (n *Node) scheduleSpec(specs map[string]cachedSpec, s engine.Schedule) (cachedSpec, bool) {
	c, ok := specs[s.Name]
	if ok && c.kind == s.Kind && c.cron == s.Cron && c.tz == s.TimeZone && c.interval == s.Interval {
		return c, true
	}
	spec, err := schedspec.Parse(s.ScheduleParams)
	if err != nil {
		n.log.Error("schedule spec does not parse; not fired", "schedule", s.Name, "error", err)
		return cachedSpec{}, false
	}
	c = cachedSpec{kind: s.Kind, cron: s.Cron, tz: s.TimeZone, interval: s.Interval, spec: spec}
	specs[s.Name] = c
	return c, true
}

// waitBriefly backs off after a failed fire; false when leadership ended.
func (n *Node) waitBriefly(ctx context.Context) bool {
	t := time.NewTimer(100 * time.Millisecond)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
