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

func payloadsOffHeap(n *cluster.Node) (on bool) {
	_ = n.FSM().Read(func(e *engine.Engine) error { on = e.PayloadsOffHeap(); return nil })
	return on
}

// Payloads count against the disk budget only when the config asks
// (limits.payload_budget "disk": Config.PayloadsOffHeap) and every member
// applies command version 16; otherwise the memory budget keeps counting
// them on every node, although every node keeps them in its payload store.
func TestPayloadsOffHeap_OnlyWhenAskedAndEveryMemberApplies(t *testing.T) {
	for _, tc := range []struct {
		name       string
		asked      bool
		oddVersion uint32
		want       bool
	}{
		{"AskedAllAt16", true, fsm.CommandVersion, true},
		{"AskedOneAt15", true, fsm.CommandVersionQueueReserveLimits, false},
		{"NotAsked", false, fsm.CommandVersion, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var oddID atomic.Pointer[string]
			c := clustertest.New(t, 3, clustertest.WithConfig(func(_ int, cfg *cluster.Config) {
				cfg.Engine.Queues = []engine.QueueConfig{{Name: "declared"}}
				cfg.PeerCommandVersion = oddMemberVersions(&oddID, tc.oddVersion)
				cfg.PayloadsOffHeap = tc.asked
			}))
			odd := pickOddFollower(c, c.WaitLeader(), &oddID)
			clustertest.WaitFor(t, 10*time.Second, "the file's config and the odd member's version replicated", func() bool {
				for _, i := range c.Alive() {
					if !namesQueue(c.Node(i), "declared") || !recordFields(c.Node(i)) && tc.oddVersion >= fsm.CommandVersionRecordFields {
						return false
					}
					if m, ok := c.Node(i).FSM().Node(odd); !ok || m.MaxCommandVersion != tc.oddVersion {
						return false
					}
				}
				return true
			})
			if tc.want {
				clustertest.WaitFor(t, 10*time.Second, "payloadsOffHeap on every node", func() bool {
					for _, i := range c.Alive() {
						if !payloadsOffHeap(c.Node(i)) {
							return false
						}
					}
					return true
				})
				c.RequireSameDigest()
				return
			}
			for _, i := range c.Alive() {
				if payloadsOffHeap(c.Node(i)) {
					t.Fatalf("node %d counts payloads against the disk budget (asked %v, a member at %d)", i, tc.asked, tc.oddVersion)
				}
			}
		})
	}
}
