package cluster_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sepp-io/sepp/cluster"
	"github.com/sepp-io/sepp/cluster/clustertest"
	"github.com/sepp-io/sepp/fsm"
)

// leaderWithOddMember starts a three-node cluster in which one follower
// says it applies command versions up to oddVersion (the others this
// binary's), waits until the leader has recorded every member's version,
// and returns the leader: what a rolling upgrade looks like from it.
func leaderWithOddMember(t *testing.T, oddVersion uint32) *cluster.Node {
	t.Helper()
	var oddID atomic.Pointer[string]
	c := clustertest.New(t, 3, clustertest.WithConfig(func(_ int, cfg *cluster.Config) {
		cfg.PeerCommandVersion = oddMemberVersions(&oddID, oddVersion)
	}))
	li := c.WaitLeader()
	leader := c.Node(li)
	pickOddFollower(c, li, &oddID)
	want := 3
	if oddVersion < fsm.CommandVersion {
		want = 2
	}
	clustertest.WaitFor(t, 10*time.Second, "the members' versions recorded", func() bool {
		n := 0
		for _, m := range leader.FSM().Nodes() {
			if m.AppliesCommandVersion(fsm.CommandVersion) {
				n++
			}
		}
		return n >= want
	})
	return leader
}

// oddMemberVersions answers the leader's question for each member's command
// version: oddVersion for the member named in oddID, this binary's for the
// others, and no answer until oddID is set. The odd member must be chosen
// once the leader is known (pickOddFollower): a leader records its own
// binary's version, whatever this says.
func oddMemberVersions(oddID *atomic.Pointer[string], oddVersion uint32) func(context.Context, cluster.NodeInfo) (uint32, error) {
	return func(_ context.Context, m cluster.NodeInfo) (uint32, error) {
		switch odd := oddID.Load(); {
		case odd == nil:
			return 0, errors.New("not yet")
		case m.ID == *odd:
			return oddVersion, nil
		}
		return fsm.CommandVersion, nil
	}
}

// pickOddFollower names a follower of leader li the odd member and returns
// its id.
func pickOddFollower(c *clustertest.Cluster, li int, oddID *atomic.Pointer[string]) string {
	odd := c.Node(others(c, li)[0]).Self().ID
	oddID.Store(&odd)
	return odd
}
