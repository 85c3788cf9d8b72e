//go:build sepp_test_clock

package cluster

import (
	"bufio"
	"bytes"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// A shifted wall clock for the integration tests of clock faults
// (integration/clock_test.go); never in a release build. Go reads the clock
// without libc, so libfaketime cannot shift a Go binary: a binary built
// with the tag sepp_test_clock reads the file named by SEPP_TEST_CLOCK_FILE,
// whose lines are
//
//	<node id> <offset ms> <drift ppm>
//
// and shifts this node's wall clock by the offset plus the drift times the
// time since the line last changed. The monotonic clock is left alone, as a
// real clock step or a drifting time daemon leaves it. The test may rewrite
// the file while the node runs: it is read again at most every 10ms.

// TestClockFileEnv names the environment variable of the shift file.
const TestClockFileEnv = "SEPP_TEST_CLOCK_FILE"

type shiftedClock struct {
	path, node string

	mu       sync.Mutex
	readAt   time.Time // real time of the last read (with its monotonic reading)
	line     string    // this node's line as last read
	offset   time.Duration
	driftPPM float64
	since    time.Time // real time the line took effect
}

func systemClock(node string) func() time.Time {
	path := os.Getenv(TestClockFileEnv)
	if path == "" {
		return time.Now
	}
	c := &shiftedClock{path: path, node: node}
	return c.now
}

func (c *shiftedClock) now() time.Time {
	real := time.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.readAt.IsZero() || real.Sub(c.readAt) >= 10*time.Millisecond {
		c.readAt = real
		c.reload(real)
	}
	shift := c.offset + time.Duration(c.driftPPM*float64(real.Sub(c.since))/1e6)
	return real.Round(0).Add(shift)
}

func (c *shiftedClock) reload(real time.Time) {
	b, err := os.ReadFile(c.path)
	if err != nil {
		return // keep the last shift
	}
	line := ""
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		if f := strings.Fields(sc.Text()); len(f) == 3 && f[0] == c.node {
			line = strings.Join(f, " ")
		}
	}
	if line == c.line {
		return
	}
	c.line = line
	c.offset, c.driftPPM, c.since = 0, 0, real
	if f := strings.Fields(line); len(f) == 3 {
		if ms, err := strconv.ParseInt(f[1], 10, 64); err == nil {
			c.offset = time.Duration(ms) * time.Millisecond
		}
		if ppm, err := strconv.ParseFloat(f[2], 64); err == nil {
			c.driftPPM = ppm
		}
	}
}
