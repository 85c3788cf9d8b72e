//go:build unix

package clientcheck_test

import (
	"syscall"
	"time"
)

// processCPU is the CPU time (user and system) this process has used, so a
// benchmark can report CPU per op, which a shared machine disturbs less
// than wall time.
func processCPU() (time.Duration, bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, false
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), true
}
