package cluster

import (
	"slices"
	"testing"
	"time"
)

// fakeClocks is a wall clock and a monotonic clock a test moves: advance
// moves both (time passing), shift moves the wall clock alone (a step).
type fakeClocks struct {
	wall time.Time
	mono time.Duration
}

func (f *fakeClocks) advance(d time.Duration) { f.wall, f.mono = f.wall.Add(d), f.mono+d }

func TestStampClock(t *testing.T) {
	t.Parallel()
	base := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	const bound = time.Second
	type step struct {
		advance time.Duration // both clocks
		shift   time.Duration // the wall clock alone
		trust   bool          // the members confirm the wall clock first
		ahead   time.Duration // setAhead first
		want    time.Duration // stamped time minus base
	}
	tests := []struct {
		name      string
		steps     []step
		wantJumps int
	}{
		{"SteadyClockIsFollowed", []step{{want: 0}, {advance: time.Second, want: time.Second}, {advance: time.Minute, want: 61 * time.Second}}, 0},
		{"ForwardJumpOfAnHourIsNotFollowed", []step{
			{want: 0},
			{advance: time.Second, shift: time.Hour, want: time.Second},
			{advance: 2 * time.Second, want: 3 * time.Second},
		}, 1},
		{"BackwardJumpOfAnHourDoesNotStopTime", []step{
			{want: 0},
			{advance: time.Second, shift: -time.Hour, want: time.Second},
			{advance: 2 * time.Second, want: 3 * time.Second},
		}, 1},
		{"StepWithinTheBoundIsFollowed", []step{{want: 0}, {advance: time.Second, shift: 900 * time.Millisecond, want: 1900 * time.Millisecond}}, 0},
		{"JumpTheMembersConfirmIsFollowed", []step{
			{want: 0},
			{advance: time.Second, shift: time.Hour, want: time.Second},
			{advance: time.Second, trust: true, want: time.Hour + 2*time.Second},
			{advance: time.Second, want: time.Hour + 3*time.Second},
		}, 1},
		{"ClockBackAfterAJumpIsFollowedAgain", []step{
			{want: 0},
			{advance: time.Second, shift: time.Hour, want: time.Second},
			{advance: time.Second, shift: -time.Hour, want: 2 * time.Second},
			{advance: time.Second, want: 3 * time.Second},
		}, 1},
		{"ClockAheadOfTheMembersIsPulledBack", []step{
			{want: 0},
			{advance: time.Second, ahead: 300 * time.Millisecond, want: 700 * time.Millisecond},
			{advance: time.Second, ahead: -time.Second, want: 2 * time.Second},
		}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := &fakeClocks{wall: base}
			c := newStampClock(func() time.Time { return f.wall }, func() time.Duration { return f.mono }, bound)
			jumps := 0
			c.onJump = func(time.Duration) { jumps++ }
			var last time.Time
			for i, s := range tt.steps {
				f.advance(s.advance)
				f.wall = f.wall.Add(s.shift)
				if s.trust {
					c.trustWall()
				}
				if s.ahead != 0 {
					c.setAhead(s.ahead)
				}
				got := c.Now()
				if d := got.Sub(base); d != s.want {
					t.Fatalf("step %d: stamped base%+v, want base%+v", i, d, s.want)
				}
				if got.Before(last) {
					t.Fatalf("step %d: stamped time went back from %v to %v", i, last, got)
				}
				last = got
			}
			if jumps != tt.wantJumps {
				t.Errorf("jumps reported %d, want %d", jumps, tt.wantJumps)
			}
		})
	}
}

func TestStampClock_WithoutMonotonicFollowsTheWall(t *testing.T) {
	t.Parallel()
	f := &fakeClocks{wall: time.Unix(1000, 0)}
	c := newStampClock(func() time.Time { return f.wall }, nil, time.Second)
	c.Now()
	f.wall = f.wall.Add(time.Hour) // a test's clock moved by the test
	if got := c.Now(); !got.Equal(f.wall) {
		t.Fatalf("stamped %v, want the test clock's %v", got, f.wall)
	}
}

func TestJudgeClock(t *testing.T) {
	t.Parallel()
	const bound = time.Second
	ms := time.Millisecond
	s := func(off, err time.Duration) clockSample { return clockSample{offset: off, err: err} }
	tests := []struct {
		name         string
		voters       int
		samples      map[string]clockSample
		wantSkewed   bool
		wantDisagree []string
		wantMedian   time.Duration
		medianKnown  bool
	}{
		{"LeaderAnHourAheadOfBoth", 3, map[string]clockSample{"b": s(-time.Hour, ms), "c": s(-time.Hour, 2*ms)}, true, []string{"b", "c"}, -time.Hour, true},
		{"LeaderAnHourBehindBoth", 3, map[string]clockSample{"b": s(time.Hour, ms), "c": s(time.Hour, ms)}, true, []string{"b", "c"}, time.Hour, true},
		{"OneMemberOffIsNotThisNodesFault", 3, map[string]clockSample{"b": s(time.Hour, ms), "c": s(5*ms, ms)}, false, []string{"b"}, 5 * ms, true},
		{"OffsetWithinTheErrorIsNotCounted", 3, map[string]clockSample{"b": s(1500*ms, 600*ms), "c": s(1500*ms, 600*ms)}, false, nil, 1500 * ms, true},
		{"OneMemberUnknownCannotDecide", 3, map[string]clockSample{"b": s(time.Hour, ms)}, false, []string{"b"}, 0, true},
		{"NoSamples", 3, nil, false, nil, 0, false},
		{"TwoOfFiveIsNoMajority", 5, map[string]clockSample{"b": s(time.Hour, ms), "c": s(time.Hour, ms), "d": s(0, ms), "e": s(0, ms)}, false, []string{"b", "c"}, 0, true},
		{"ThreeOfFiveIsAMajority", 5, map[string]clockSample{"b": s(-time.Hour, ms), "c": s(-time.Hour, ms), "d": s(-time.Hour, ms), "e": s(0, ms)}, true, []string{"b", "c", "d"}, -time.Hour, true},
		{"ClusterOfOneIsNeverSkewed", 1, nil, false, nil, 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			v := judgeClock(tt.voters, tt.samples, bound)
			if v.skewed != tt.wantSkewed || !slices.Equal(v.disagree, tt.wantDisagree) {
				t.Fatalf("skewed %v disagree %v, want %v %v", v.skewed, v.disagree, tt.wantSkewed, tt.wantDisagree)
			}
			if v.medianKnown != tt.medianKnown || v.median != tt.wantMedian {
				t.Fatalf("median %v (known %v), want %v (known %v)", v.median, v.medianKnown, tt.wantMedian, tt.medianKnown)
			}
		})
	}
}

func TestTransferTarget(t *testing.T) {
	t.Parallel()
	const bound = time.Second
	ms := time.Millisecond
	s := func(off time.Duration) clockSample { return clockSample{offset: off, err: ms} }
	tests := []struct {
		name    string
		voters  int
		samples map[string]clockSample
		want    string
	}{
		{"MembersThatAgreeWithEachOther", 3, map[string]clockSample{"b": s(-time.Hour), "c": s(-time.Hour + 10*ms)}, "b"},
		{"NotTheMemberThatIsOffToo", 3, map[string]clockSample{"b": s(-2 * time.Hour), "c": s(-time.Hour)}, ""},
		{"MajorityOfFive", 5, map[string]clockSample{"b": s(-3 * time.Hour), "c": s(-time.Hour), "d": s(-time.Hour), "e": s(-time.Hour)}, "c"},
		{"NoSamples", 3, nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := transferTarget(tt.voters, tt.samples, bound); got != tt.want {
				t.Fatalf("target %q, want %q", got, tt.want)
			}
		})
	}
}
