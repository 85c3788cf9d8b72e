package cluster_test

import (
	"testing"

	"go.uber.org/goleak"
)

// Every node a test starts must stop every goroutine it started.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
