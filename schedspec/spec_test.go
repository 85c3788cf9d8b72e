package schedspec

import (
	"errors"
	"testing"
	"time"

	"github.com/sepp-io/sepp/engine"
)

func cronSpec(t *testing.T, expr, zone string) *Spec {
	t.Helper()
	s, err := Parse(engine.ScheduleParams{Kind: engine.ScheduleCron, Cron: expr, TimeZone: zone})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func mustTime(t *testing.T, s string) time.Time {
	t.Helper()
	v, err := time.Parse(time.RFC3339, s)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestNext_DST pins the documented daylight saving behaviour. New York
// springs forward on 2024-03-10 at 02:00 EST (to 03:00 EDT) and falls back
// on 2024-11-03 at 02:00 EDT (to 01:00 EST).
func TestNext_DST(t *testing.T) {
	tests := []struct {
		name, expr, zone, after string
		want                    []string // successive ticks, UTC
	}{
		{name: "SkippedHourFiresAfterGap", expr: "30 2 * * *", zone: "America/New_York", after: "2024-03-09T12:00:00Z",
			// 02:30 EST does not exist on 03-10: fires at 03:30 EDT (07:30Z), then 02:30 EDT.
			want: []string{"2024-03-10T07:30:00Z", "2024-03-11T06:30:00Z"}},
		{name: "RepeatedHourFiresOnce", expr: "30 1 * * *", zone: "America/New_York", after: "2024-11-02T12:00:00Z",
			// 01:30 occurs at 05:30Z (EDT) and 06:30Z (EST): only the first fires.
			want: []string{"2024-11-03T05:30:00Z", "2024-11-04T06:30:00Z"}},
		{name: "MinutelyAcrossFallBack", expr: "59 * * * *", zone: "America/New_York", after: "2024-11-03T05:00:00Z",
			// 01:59 EDT (05:59Z) fires; 01:59 EST (06:59Z) is its repeat.
			want: []string{"2024-11-03T05:59:00Z", "2024-11-03T07:59:00Z"}},
		{name: "OutsideDSTUnchanged", expr: "0 12 * * *", zone: "Europe/Berlin", after: "2024-07-01T00:00:00Z",
			want: []string{"2024-07-01T10:00:00Z", "2024-07-02T10:00:00Z"}},
		{name: "HourlyAcrossFallBack", expr: "0 * * * *", zone: "America/New_York", after: "2024-11-03T04:30:00Z",
			want: []string{"2024-11-03T05:00:00Z", "2024-11-03T07:00:00Z", "2024-11-03T08:00:00Z"}},
		{name: "SecondsField", expr: "*/15 * * * * *", zone: "", after: "2024-01-01T00:00:01Z",
			want: []string{"2024-01-01T00:00:15Z", "2024-01-01T00:00:30Z"}},
		{name: "Descriptor", expr: "@daily", zone: "Europe/Berlin", after: "2024-06-01T12:00:00Z",
			want: []string{"2024-06-01T22:00:00Z", "2024-06-02T22:00:00Z"}},
		{name: "DomOrDow", expr: "0 0 1 * MON", zone: "", after: "2024-04-01T00:00:00Z",
			// the 1st of a month, or a Monday: 2024-04-08 is the next Monday.
			want: []string{"2024-04-08T00:00:00Z", "2024-04-15T00:00:00Z"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := cronSpec(t, tt.expr, tt.zone)
			at := mustTime(t, tt.after)
			for i, w := range tt.want {
				at = s.Next(at)
				if !at.Equal(mustTime(t, w)) {
					t.Fatalf("tick %d = %s, want %s", i, at.Format(time.RFC3339), w)
				}
			}
		})
	}
}

func TestParse_Refuses(t *testing.T) {
	tests := []struct {
		name  string
		p     engine.ScheduleParams
		field string
	}{
		{"BadCron", engine.ScheduleParams{Kind: engine.ScheduleCron, Cron: "61 * * * *"}, "cron"},
		{"ZonePrefix", engine.ScheduleParams{Kind: engine.ScheduleCron, Cron: "CRON_TZ=Asia/Tokyo * * * * *"}, "cron"},
		{"TooFewFields", engine.ScheduleParams{Kind: engine.ScheduleCron, Cron: "* *"}, "cron"},
		{"BadZone", engine.ScheduleParams{Kind: engine.ScheduleCron, Cron: "* * * * *", TimeZone: "Mars/Olympus"}, "time_zone"},
		{"LocalZone", engine.ScheduleParams{Kind: engine.ScheduleCron, Cron: "* * * * *", TimeZone: "Local"}, "time_zone"},
		{"ShortInterval", engine.ScheduleParams{Kind: engine.ScheduleInterval, Interval: time.Millisecond}, "interval"},
		{"NoKind", engine.ScheduleParams{}, "kind"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse(tt.p)
			var fe *engine.FieldError
			if !errors.As(err, &fe) || fe.Field != tt.field || !errors.Is(err, engine.ErrInvalidArgument) {
				t.Fatalf("err = %v, want a field error on %s wrapping ErrInvalidArgument", err, tt.field)
			}
		})
	}
}

func TestPlan(t *testing.T) {
	s, err := Parse(engine.ScheduleParams{Kind: engine.ScheduleInterval, Interval: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	base := mustTime(t, "2030-01-01T00:00:00Z")
	sec := func(n float64) time.Time { return base.Add(time.Duration(n * float64(time.Second))) }
	tests := []struct {
		name   string
		next   time.Time
		now    time.Time
		policy engine.CatchUpPolicy
		want   Fire
		wantOK bool
	}{
		{name: "NotDue", next: sec(2), now: sec(1.5)},
		{name: "Unset", next: time.Time{}, now: sec(1.5)},
		{name: "OnTime", next: sec(1), now: sec(1.2), wantOK: true, want: Fire{Tick: sec(1), Next: sec(2)}},
		{name: "MissedOnce", next: sec(1), now: sec(10.5), policy: engine.CatchUpOnce, wantOK: true, want: Fire{Tick: sec(10), Next: sec(11)}},
		{name: "MissedSkip", next: sec(1), now: sec(10.5), policy: engine.CatchUpSkip, wantOK: true, want: Fire{Tick: sec(10), Next: sec(11), Missed: true}},
		{name: "LateBeyondGrace", next: sec(1), now: sec(1.9), policy: engine.CatchUpSkip, wantOK: true, want: Fire{Tick: sec(1), Next: sec(2), Missed: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := Plan(s, tt.next, tt.now, tt.policy, 500*time.Millisecond)
			if ok != tt.wantOK || got != tt.want {
				t.Fatalf("Plan = %+v %v, want %+v %v", got, ok, tt.want, tt.wantOK)
			}
		})
	}
}

// FuzzParse: any expression and zone parse or are refused with a field
// error, never panic, and a parsed cron spec's ticks move strictly forward.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"* * * * *", "*/5 * * * * *", "@daily", "0 0 31 2 *", "30 2 * * *", "61 * * * *", ""} {
		f.Add(s, "America/New_York")
	}
	f.Fuzz(func(t *testing.T, expr, zone string) {
		s, err := Parse(engine.ScheduleParams{Kind: engine.ScheduleCron, Cron: expr, TimeZone: zone})
		if err != nil {
			var fe *engine.FieldError
			if !errors.As(err, &fe) {
				t.Fatalf("error %v is not a field error", err)
			}
			return
		}
		at := time.Date(2024, 11, 2, 0, 0, 0, 0, time.UTC)
		for i := 0; i < 5; i++ {
			next := s.Next(at)
			if next.IsZero() {
				return
			}
			if !next.After(at) {
				t.Fatalf("%q: tick %v not after %v", expr, next, at)
			}
			at = next
		}
	})
}

// TestParse_AcceptsWhatGoCronV091Did: go-cron v0.15 parses specs v0.9.1
// refused (an upper-case H in a day name, the never-ticking descriptors);
// Parse still refuses them, so a leader on an earlier release can fire every
// schedule a newer one accepted. What both parse ticks alike.
func TestParse_AcceptsWhatGoCronV091Did(t *testing.T) {
	for _, expr := range []string{"0 0 * * THU", "0 0 * * MON-THU", "0 9 * * THU,FRI", "0 0 0 * * THU#2", "@triggered", "@manual", "@none"} {
		_, err := Parse(engine.ScheduleParams{Kind: engine.ScheduleCron, Cron: expr})
		if !errors.Is(err, ErrInvalidSpec) {
			t.Errorf("Parse(%q) = %v, want ErrInvalidSpec", expr, err)
		}
	}
	after := mustTime(t, "2026-12-04T12:00:00Z")
	want := cronSpec(t, "0 0 * * 4", "Europe/Berlin").Next(after)
	for _, expr := range []string{"0 0 * * thu", "0 0 * * Thu"} {
		if got := cronSpec(t, expr, "Europe/Berlin").Next(after); !got.Equal(want) {
			t.Errorf("%q: Next = %v, want %v", expr, got, want)
		}
	}
	for _, expr := range []string{"@hourly", "@every 1h", "0 0 * * 0-6", "0 0 * * mon-thu"} {
		cronSpec(t, expr, "")
	}
}
