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

func recordFields(n *cluster.Node) (on bool) {
	_ = n.FSM().Read(func(e *engine.Engine) error { on = e.RecordFields(); return nil })
	return on
}

// The leader turns recordFields on (a ConfigSet of command version 12)
// only once every member applies version 12: with a member that applies
// 10 it stays off on every node; with all members at 12 it is on
// everywhere.
func TestRecordFields_WaitsForEveryMember(t *testing.T) {
	requireSwitchWaitsForEveryMember(t, "recordFields", (*engine.Engine).RecordFields, []memberCase{
		{"AllAt12", fsm.CommandVersion, true},
		{"OneAt10", fsm.CommandVersionRedrive, false},
	})
}

// memberCase is a cluster whose odd follower applies oddVersion, and
// whether the switch must end up on.
type memberCase struct {
	name       string
	oddVersion uint32
	want       bool
}

// requireSwitchWaitsForEveryMember runs each case on a three-node cluster
// with a declared queue: once the config and the odd member's version
// have replicated, the switch the leader turns on (read by on) must be on
// every node with equal digests when the case wants it, and off on every
// node otherwise.
func requireSwitchWaitsForEveryMember(t *testing.T, name string, on func(*engine.Engine) bool, cases []memberCase) {
	t.Helper()
	isOn := func(n *cluster.Node) (v bool) {
		_ = n.FSM().Read(func(e *engine.Engine) error { v = on(e); return nil })
		return v
	}
	for _, tc := range cases {
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
				clustertest.WaitFor(t, 10*time.Second, name+" on every node", func() bool {
					for _, i := range c.Alive() {
						if !isOn(c.Node(i)) {
							return false
						}
					}
					return true
				})
				c.RequireSameDigest()
				return
			}
			for _, i := range c.Alive() {
				if isOn(c.Node(i)) {
					t.Fatalf("node %d runs %s while a member applies only version %d", i, name, tc.oddVersion)
				}
			}
		})
	}
}

func namesQueue(n *cluster.Node, name string) (found bool) {
	_ = n.FSM().Read(func(e *engine.Engine) error {
		for _, q := range e.Config().Queues {
			found = found || q.Name == name
		}
		return nil
	})
	return found
}
