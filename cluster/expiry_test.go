package cluster_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/sepp-io/sepp/cluster"
	"github.com/sepp-io/sepp/engine"
	"github.com/sepp-io/sepp/fsm"
)

// TestExpiry_RefusedUntilEveryMemberApplies: while a follower runs a binary
// older than CommandVersionExpiryFairness the leader refuses enqueues with
// a deadline (a *CommandVersionError, nothing proposed) and queue updates
// that set a fairness key; once every member applies it, both go through.
func TestExpiry_RefusedUntilEveryMemberApplies(t *testing.T) {
	for _, oddVersion := range []uint32{fsm.CommandVersionRedrive, fsm.CommandVersion} {
		leader := leaderWithOddMember(t, oddVersion)
		ctx := context.Background()
		p := engine.EnqueueParams{Queue: "q", JobType: "t", Expiry: &engine.ExpiryOpts{TTL: time.Minute}}
		res, err := cluster.Do(ctx, leader, engine.EnqueueOp{Params: p})
		if _, perr := cluster.Do(ctx, leader, engine.EnqueueOp{Params: engine.EnqueueParams{Queue: "q", JobType: "t"}}); perr != nil {
			t.Fatalf("a plain enqueue is refused: %v", perr)
		}
		_, uerr := cluster.Do(ctx, leader, engine.UpdateQueueOp{Update: engine.QueueUpdate{Name: "q", Set: engine.QueueConfig{FairnessKey: "tenant"}}})
		if oddVersion < fsm.CommandVersionExpiryFairness {
			var ve *cluster.CommandVersionError
			if !errors.As(err, &ve) || ve.Version != fsm.CommandVersionExpiryFairness {
				t.Fatalf("old member: enqueue = %+v, %v; want a CommandVersionError", res, err)
			}
			if !errors.Is(uerr, cluster.ErrUpgradeInProgress) {
				t.Fatalf("old member: update setting a fairness key = %v, want ErrUpgradeInProgress", uerr)
			}
			continue
		}
		if err != nil || uerr != nil {
			t.Fatalf("enqueue = %+v, %v; update = %v", res, err, uerr)
		}
		var j engine.Job
		err = leader.FSM().Read(func(e *engine.Engine) (err error) {
			j, err = e.GetJob(res.JobID)
			return err
		})
		if err != nil || j.ExpiresAt().IsZero() {
			t.Fatalf("job %+v (%v): want a deadline", j, err)
		}
	}
}
