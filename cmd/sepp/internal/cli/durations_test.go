package cli

import (
	"testing"
	"time"
)

func TestHumanDuration(t *testing.T) {
	tests := []struct {
		in   time.Duration
		want string
	}{
		{0, "0s"},
		{1500 * time.Microsecond, "2ms"},
		{350 * time.Millisecond, "350ms"},
		{9*time.Second + 911*time.Millisecond, "9.9s"},
		{2 * time.Second, "2s"},
		{42*time.Second + 600*time.Millisecond, "43s"},
		{6*time.Minute + 9911854031*time.Nanosecond, "6m10s"},
		{5 * time.Minute, "5m"},
		{2*time.Hour + 5*time.Minute + 10*time.Second, "2h5m"},
		{7 * 24 * time.Hour, "7d"},
		{51 * time.Hour, "2d3h"},
		{-90 * time.Second, "-1m30s"},
	}
	for _, tt := range tests {
		if got := HumanDuration(tt.in); got != tt.want {
			t.Errorf("HumanDuration(%v) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
