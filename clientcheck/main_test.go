package clientcheck_test

import (
	"testing"

	"go.uber.org/goleak"
)

// No test may leave a goroutine behind: every server, connection and
// worker a test starts ends with it.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
