package cli

import (
	"fmt"
	"strconv"
	"time"
)

// HumanDuration prints d for people, to at most two units: "350ms", "9.9s",
// "6m10s", "2h5m", "7d", "2d3h". Go's own String prints every digit
// ("6m9.911854031s"), which tables and messages do not need; --json keeps
// exact milliseconds.
func HumanDuration(d time.Duration) string {
	if d < 0 {
		return "-" + HumanDuration(-d)
	}
	const day = 24 * time.Hour
	switch {
	case d == 0:
		return "0s"
	case d < time.Second:
		return strconv.FormatInt(d.Round(time.Millisecond).Milliseconds(), 10) + "ms"
	case d < 10*time.Second:
		return strconv.FormatFloat(d.Round(100*time.Millisecond).Seconds(), 'f', -1, 64) + "s"
	case d < time.Minute:
		return strconv.FormatInt(int64(d.Round(time.Second)/time.Second), 10) + "s"
	case d < time.Hour:
		d = d.Round(time.Second)
		return twoUnits(int64(d/time.Minute), "m", int64(d%time.Minute/time.Second), "s")
	case d < day:
		d = d.Round(time.Minute)
		return twoUnits(int64(d/time.Hour), "h", int64(d%time.Hour/time.Minute), "m")
	default:
		d = d.Round(time.Hour)
		return twoUnits(int64(d/day), "d", int64(d%day/time.Hour), "h")
	}
}

func twoUnits(a int64, ua string, b int64, ub string) string {
	if b == 0 {
		return fmt.Sprintf("%d%s", a, ua)
	}
	return fmt.Sprintf("%d%s%d%s", a, ua, b, ub)
}
