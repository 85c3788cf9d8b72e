//go:build race

package engine_test

// raceEnabled: the race detector multiplies memory and time, so the
// million-job memory test skips under it.
const raceEnabled = true
