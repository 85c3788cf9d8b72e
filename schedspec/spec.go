package schedspec

import (
	"fmt"
	"strings"
	"time"
	// The zone database goes into the binary, so a node without one on
	// disk (a scratch container) still knows every zone. Ticks are computed
	// by the leader and replicated, so nodes with different zone data never
	// disagree about the state.
	_ "time/tzdata"

	cron "github.com/netresearch/go-cron"

	"github.com/sepp-io/sepp/engine"
)

// ErrInvalidSpec wraps every reason a spec is refused; the error also
// wraps engine.ErrInvalidArgument, so the API maps it like any bad field.
var ErrInvalidSpec = fmt.Errorf("invalid schedule spec: %w", engine.ErrInvalidArgument)

// Spec is a parsed schedule spec.
type Spec struct {
	kind     engine.ScheduleKind
	interval time.Duration
	sched    cron.Schedule
	loc      *time.Location
}

var parser = cron.MustNewParser(cron.SecondOptional | cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor | cron.DowOrDom)

// Parse parses the spec of p: its kind, cron expression or interval, and
// time zone (empty is UTC).
func Parse(p engine.ScheduleParams) (*Spec, error) {
	loc := time.UTC
	if p.TimeZone != "" {
		l, err := time.LoadLocation(p.TimeZone)
		if err != nil || p.TimeZone == "Local" {
			return nil, fieldErr("time_zone", fmt.Sprintf("%q is not an IANA time zone name", p.TimeZone))
		}
		loc = l
	}
	switch p.Kind {
	case engine.ScheduleInterval:
		if p.Interval < engine.MinScheduleInterval {
			return nil, fieldErr("interval", fmt.Sprintf("must be at least %s, got %s", engine.MinScheduleInterval, p.Interval))
		}
		return &Spec{kind: p.Kind, interval: p.Interval, loc: loc}, nil
	case engine.ScheduleCron:
		// The parser takes a zone prefix in the expression too; the zone
		// has its own field, so there is one place that says it.
		if strings.HasPrefix(p.Cron, "TZ=") || strings.HasPrefix(p.Cron, "CRON_TZ=") {
			return nil, fieldErr("cron", "must not name a zone (TZ= or CRON_TZ=); set time_zone")
		}
		s, err := parser.Parse(p.Cron)
		if err != nil {
			return nil, fieldErr("cron", fmt.Sprintf("%q: %v", p.Cron, err))
		}
		if reason := refusedBeforeV015(p.Cron); reason != "" {
			return nil, fieldErr("cron", fmt.Sprintf("%q: %s", p.Cron, reason))
		}
		return &Spec{kind: p.Kind, sched: s, loc: loc}, nil
	}
	return nil, fieldErr("kind", fmt.Sprintf("must be cron or interval, got %d", p.Kind))
}

// refusedBeforeV015 says why a spec that go-cron v0.15 parses is still
// refused: it is one go-cron v0.9.1, which earlier sepp releases use, did not
// parse. v0.13.4 stopped reading an upper-case H in a day name (THU,
// MON-THU) as a hash expression, which this parser does not enable, and
// v0.12.0 added the @triggered, @manual and @none descriptors, which never
// tick. A leader on an earlier release parses every schedule again to fire
// it (cluster's scheduler), so during a rolling upgrade or after a
// downgrade it would not fire a schedule only the newer parser accepts.
// For every spec both versions accept, Next is the same (SpecSchedule's
// code did not change between them; docs/changelog.md, 2026-12-04). Lifting
// this needs a command-version gate: once every member runs a release
// with go-cron v0.13.4 or later.
func refusedBeforeV015(spec string) string {
	if strings.HasPrefix(spec, "@") {
		switch spec {
		case "@triggered", "@manual", "@none":
			return "never ticks"
		}
		return ""
	}
	if strings.Contains(spec, "H") {
		return `an upper-case H is not accepted: write a day name such as THU in lower case ("thu") or as a number (4)`
	}
	return ""
}

func fieldErr(field, reason string) error {
	return &engine.FieldError{Field: field, Reason: reason, Err: ErrInvalidSpec}
}

// Next is the first tick strictly after t, in UTC; the zero time when the
// spec never ticks again.
func (s *Spec) Next(t time.Time) time.Time {
	if s.kind == engine.ScheduleInterval {
		iv := int64(s.interval)
		n := t.UnixNano()
		k := n / iv
		if n < 0 && n%iv != 0 {
			k-- // floor toward minus infinity
		}
		return time.Unix(0, (k+1)*iv).UTC()
	}
	next := s.sched.Next(t.In(s.loc))
	// A wall time a fall-back repeats fires at its first occurrence only:
	// the parser matches both, so the second is stepped over. The bound
	// only guards against a zone with a pathological rule.
	for i := 0; i < 8 && !next.IsZero() && s.repeatedWallTime(next); i++ {
		next = s.sched.Next(next)
	}
	if next.IsZero() {
		return time.Time{}
	}
	return next.UTC()
}

// repeatedWallTime reports whether t's local wall time already occurred
// earlier, under the larger offset in force before a fall-back (within the
// three hours before t, the longest shift any zone has used).
func (s *Spec) repeatedWallTime(t time.Time) bool {
	t = t.In(s.loc)
	_, off := t.Zone()
	_, offBefore := t.Add(-3 * time.Hour).Zone()
	if offBefore <= off {
		return false
	}
	first := t.Add(-time.Duration(offBefore-off) * time.Second)
	_, offFirst := first.Zone()
	return offFirst == offBefore && first.Format(time.DateTime) == t.Format(time.DateTime)
}

// Fire is one ScheduleFire the leader proposes.
type Fire struct {
	Tick, Next time.Time
	Missed     bool // consume Tick without a job
}

// maxCatchUpSteps bounds the walk over missed ticks, so a schedule every
// second missed for a year costs no more than this many Next calls; past
// it, the latest tick is taken to be the one the walk reached.
const maxCatchUpSteps = 100_000

// Plan is what a leader does at now for a schedule whose stored next tick
// is next: nothing (ok false) while next is in the future or unset; else one
// fire. A tick at most grace late is on time and fires. Later than that,
// ticks were missed (no leader fired them): CatchUpOnce fires one job, at
// the latest tick not after now, for all of them; CatchUpSkip consumes that
// tick without a job. Either way the next tick after now is stored.
func Plan(s *Spec, next, now time.Time, policy engine.CatchUpPolicy, grace time.Duration) (Fire, bool) {
	if next.IsZero() || next.After(now) {
		return Fire{}, false
	}
	following := s.Next(next)
	if now.Sub(next) <= grace && (following.IsZero() || following.After(now)) {
		return Fire{Tick: next, Next: following}, true
	}
	latest := next
	for i := 0; i < maxCatchUpSteps; i++ {
		n := s.Next(latest)
		if n.IsZero() || n.After(now) {
			break
		}
		latest = n
	}
	return Fire{Tick: latest, Next: s.Next(now), Missed: policy == engine.CatchUpSkip}, true
}

// FirstTick is the next tick a schedule defined (or resumed) at now has.
func FirstTick(s *Spec, now time.Time) (time.Time, error) {
	t := s.Next(now)
	if t.IsZero() {
		return time.Time{}, fieldErr("cron", "never matches a future time")
	}
	return t, nil
}
