//go:build !unix

package clientcheck_test

import "time"

func processCPU() (time.Duration, bool) { return 0, false }
