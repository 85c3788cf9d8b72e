package rpc_test

import (
	"testing"

	"go.uber.org/goleak"
)

// No test may leave a goroutine behind: servers, connections and long-polls
// all end with their test.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
