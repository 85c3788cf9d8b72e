//go:build !unix

package client_test

import "time"

func processCPU() (time.Duration, bool) { return 0, false }
