package cluster_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/sepp-io/sepp/cluster"
	"github.com/sepp-io/sepp/engine"
	"github.com/sepp-io/sepp/fsm"
)

// TestUnique_RefusedUntilEveryMemberApplies: while a follower runs a binary
// older than CommandVersionUnique the leader refuses unique enqueues (a
// *CommandVersionError, nothing proposed) and still takes plain ones; once
// every member applies it, a unique enqueue and its duplicate go through.
func TestUnique_RefusedUntilEveryMemberApplies(t *testing.T) {
	for _, oddVersion := range []uint32{fsm.CommandVersionReserveLimits, fsm.CommandVersion} {
		leader := leaderWithOddMember(t, oddVersion)
		p := engine.EnqueueParams{Queue: "q", JobType: "t", Unique: &engine.UniqueOpts{Key: "k"}}
		ctx := context.Background()
		res, err := cluster.Do(ctx, leader, engine.EnqueueOp{Params: p})
		if oddVersion < fsm.CommandVersionUnique {
			var ve *cluster.CommandVersionError
			if !errors.As(err, &ve) || ve.Version != fsm.CommandVersionUnique {
				t.Fatalf("old member: enqueue = %+v, %v; want a CommandVersionError", res, err)
			}
			// The refusal names the feature as the table of versions does.
			if ve.Feature != "unique_jobs" || !strings.Contains(err.Error(), "needs command version 8 (unique_jobs)") {
				t.Fatalf("old member: refusal %q names feature %q, want unique_jobs", err, ve.Feature)
			}
			if _, err := cluster.Do(ctx, leader, engine.EnqueueOp{Params: engine.EnqueueParams{Queue: "q", JobType: "t"}}); err != nil {
				t.Fatalf("a plain enqueue is refused: %v", err)
			}
			continue
		}
		if err != nil || res.Duplicate {
			t.Fatalf("enqueue = %+v, %v", res, err)
		}
		dup, err := cluster.Do(ctx, leader, engine.EnqueueOp{Params: p})
		if err != nil || !dup.Duplicate || dup.JobID != res.JobID {
			t.Fatalf("second enqueue = %+v, %v; want a duplicate of job %d", dup, err, res.JobID)
		}
	}
}
