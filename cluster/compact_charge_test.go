package cluster_test

import (
	"testing"

	"github.com/sepp-io/sepp/engine"
	"github.com/sepp-io/sepp/fsm"
)

// The leader turns the compact charge on (a ConfigSet of command version
// 22) only once every member applies version 22: with a member of the
// release before (21) it stays off on every node, so every replica
// refuses the same enqueues near a budget; with all members current it is
// on everywhere, and the replicas' states are equal.
func TestCompactCharge_WaitsForEveryMember(t *testing.T) {
	requireSwitchWaitsForEveryMember(t, "the compact charge", (*engine.Engine).CompactCharge, []memberCase{
		{"AllCurrent", fsm.CommandVersion, true},
		{"OneAt21", fsm.CommandVersionPublicQueueSettings, false},
	})
}
