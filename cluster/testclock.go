//go:build !sepp_test_clock

package cluster

import "time"

// systemClock is the wall clock members compare and leaders stamp: the
// system's. A binary built with the tag sepp_test_clock (testclock_on.go)
// reads a shifted one instead, for the integration tests of clock faults.
func systemClock(string) func() time.Time { return time.Now }
