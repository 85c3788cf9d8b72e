package cluster_test

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/sepp-io/sepp/cluster"
	"github.com/sepp-io/sepp/cluster/clustertest"
	"github.com/sepp-io/sepp/engine"
	"github.com/sepp-io/sepp/fsm"
)

func compactCharge(n *cluster.Node) (on bool) {
	_ = n.FSM().Read(func(e *engine.Engine) error { on = e.CompactCharge(); return nil })
	return on
}

// The leader turns the compact charge on (a ConfigSet of command version
// 22) only once every member applies version 22: with a member of the
// release before (21) it stays off on every node, so every replica
// refuses the same enqueues near a budget; with all members current it is
// on everywhere, and the replicas' states are equal.
func TestCompactCharge_WaitsForEveryMember(t *testing.T) {
	for _, tc := range []struct {
		name       string
		oddVersion uint32
		want       bool
	}{
		{"AllCurrent", fsm.CommandVersion, true},
		{"OneAt21", fsm.CommandVersionPublicQueueSettings, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var oddID atomic.Pointer[string]
			c := clustertest.New(t, 3, clustertest.WithConfig(func(_ int, cfg *cluster.Config) {
				cfg.Engine.Queues = []engine.QueueConfig{{Name: "declared"}}
				cfg.PeerCommandVersion = oddMemberVersions(&oddID, tc.oddVersion)
			}))
			odd := pickOddFollower(c, c.WaitLeader(), &oddID)
			clustertest.WaitFor(t, 10*time.Second, "the file's config and the odd member's version replicated", func() bool {
				for _, i := range c.Alive() {
					if !namesQueue(c.Node(i), "declared") {
						return false
					}
					if m, ok := c.Node(i).FSM().Node(odd); !ok || m.MaxCommandVersion != tc.oddVersion {
						return false // the leader has not recorded its version yet
					}
				}
				return true
			})
			if tc.want {
				clustertest.WaitFor(t, 10*time.Second, "the compact charge on every node", func() bool {
					for _, i := range c.Alive() {
						if !compactCharge(c.Node(i)) {
							return false
						}
					}
					return true
				})
				c.RequireSameDigest()
				return
			}
			for _, i := range c.Alive() {
				if compactCharge(c.Node(i)) {
					t.Fatalf("node %d charges compact entries while a member applies only version %d", i, tc.oddVersion)
				}
			}
		})
	}
}
