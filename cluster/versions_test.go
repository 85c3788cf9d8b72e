package cluster_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sepp-io/sepp/cluster"
	"github.com/sepp-io/sepp/cluster/clustertest"
	"github.com/sepp-io/sepp/engine"
	"github.com/sepp-io/sepp/fsm"
)

// TestVersions_LeaderAsksEachMember: the leader asks every member what its
// binary applies (Config.PeerCommandVersion), records the answers, and
// batches acks only when every member applies a JobAckBatch, and sets
// limits.idempotency_min_window only when every member applies a ConfigSet
// that carries it (a member that dropped it would refuse keys the others
// forget early, and the states would part). A follower that runs an older
// binary, or cannot be asked, keeps the leader on one JobAck per ref and
// the cluster on a minimum window of 0. No leadership changes are needed.
func TestVersions_LeaderAsksEachMember(t *testing.T) {
	errUnreachable := errors.New("connection refused")
	tests := []struct {
		name      string
		odd       func() (uint32, error) // what the odd follower answers
		wantKnown int                    // members recorded as applying the batch
		wantBatch bool
		// wantMinWindow is limits.idempotency_min_window on every node.
		wantMinWindow time.Duration
	}{
		{"every member is new", func() (uint32, error) { return fsm.CommandVersion, nil }, 3, true, engine.DefaultLimits().IdempotencyMinWindow},
		{"a follower runs an older binary", func() (uint32, error) { return 1, nil }, 2, false, 0},
		{"a follower applies ack batches but not the minimum window", func() (uint32, error) { return fsm.CommandVersionAckBatch, nil }, 3, true, 0},
		{"a follower cannot be asked", func() (uint32, error) { return 0, errUnreachable }, 2, false, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// Until the test has picked the odd follower, members cannot
			// be asked, and the leader retries.
			var oddID atomic.Pointer[string]
			var oddAsked atomic.Int64
			c := clustertest.New(t, 3, clustertest.WithConfig(func(_ int, cfg *cluster.Config) {
				cfg.PeerCommandVersion = func(_ context.Context, m cluster.NodeInfo) (uint32, error) {
					odd := oddID.Load()
					switch {
					case odd == nil:
						return 0, errUnreachable
					case m.ID == *odd:
						oddAsked.Add(1)
						return tt.odd()
					}
					return fsm.CommandVersion, nil
				}
			}))
			li := c.WaitLeader()
			leader := c.Node(li)
			odd := c.Node(others(c, li)[0]).Self().ID
			oddID.Store(&odd)
			clustertest.WaitFor(t, 10*time.Second, "the members' versions recorded", func() bool {
				return membersWithVersion(leader) >= tt.wantKnown && oddAsked.Load() > 0
			})
			if got := membersWithVersion(leader); got != tt.wantKnown {
				t.Fatalf("%d members recorded as applying an ack batch, want %d", got, tt.wantKnown)
			}
			refs := leaseJobs(t, leader, "versions", 20, 1000)
			before := proposedCommands(leader)
			errs, err := leader.AckBatch(context.Background(), refs)
			if err != nil {
				t.Fatal(err)
			}
			checkAckErrs(t, errs, make([]error, len(refs)))
			d := proposedCommands(leader) - before
			if tt.wantBatch && d > 3 {
				t.Fatalf("%d commands for %d acks, want one ack batch", d, len(refs))
			}
			if !tt.wantBatch && d < uint64(len(refs)) {
				t.Fatalf("%d commands for %d acks, want one per ack", d, len(refs))
			}
			clustertest.WaitFor(t, 10*time.Second, "every node on the expected minimum key window", func() bool {
				for i := range 3 {
					var got time.Duration
					_ = c.Node(i).Read(context.Background(), true, func(e engine.View) error {
						got = e.Config().Limits.IdempotencyMinWindow
						return nil
					})
					if got != tt.wantMinWindow {
						return false
					}
				}
				return true
			})
			c.RequireSameDigest()
		})
	}
}
