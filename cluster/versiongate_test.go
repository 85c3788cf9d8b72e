package cluster_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/sepp-io/sepp/cluster"
	"github.com/sepp-io/sepp/cluster/clustertest"
	"github.com/sepp-io/sepp/engine"
	"github.com/sepp-io/sepp/fsm"
)

// A new cluster's leader knows its members' command versions only once it
// has asked them, its first moments in office. An enqueue with a deadline,
// a unique enqueue, a schedule written in that window waits for the
// answers instead of being refused as if a member were old (users of every
// SDK met "needs command version 11 ... finish upgrading" right after
// `sepp dev` said ready).
func TestVersionGate_NewLeaderWaitsForItsMembersAnswers(t *testing.T) {
	cases := []struct {
		name string
		call func(ctx context.Context, n *cluster.Node) error
	}{
		{"enqueue with a ttl", func(ctx context.Context, n *cluster.Node) error {
			_, err := cluster.Do(ctx, n, engine.EnqueueOp{Params: engine.EnqueueParams{Queue: "q", JobType: "t", Expiry: &engine.ExpiryOpts{TTL: time.Minute}}})
			return err
		}},
		{"unique enqueue", func(ctx context.Context, n *cluster.Node) error {
			_, err := cluster.Do(ctx, n, engine.EnqueueOp{Params: engine.EnqueueParams{Queue: "q", JobType: "t", Unique: &engine.UniqueOpts{Key: "k"}}})
			return err
		}},
		{"schedule", func(ctx context.Context, n *cluster.Node) error {
			_, err := n.Propose(ctx, engine.CreateScheduleOp{Params: engine.ScheduleParams{Name: "s", Kind: engine.ScheduleInterval, Interval: time.Minute,
				Template: engine.JobTemplate{Queue: "q", JobType: "t"}}})
			return err
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			answer := make(chan struct{})
			c := clustertest.New(t, 3, clustertest.WithConfig(func(_ int, cfg *cluster.Config) {
				// Every member answers the leader's question only when the
				// test says so. The leader is ready without their answers
				// after FirstRoundWait, which is also how long the request
				// waits for them: long enough for the test to see it wait.
				cfg.MemberQuestions.FirstRoundWait = 1500 * time.Millisecond
				cfg.PeerFacts = func(ctx context.Context, _ cluster.NodeInfo) (cluster.MemberFacts, error) {
					select {
					case <-answer:
						return factsOf(fsm.CommandVersion, 1<<30), nil
					case <-ctx.Done():
						return cluster.MemberFacts{}, ctx.Err()
					}
				}
			}))
			leader := c.Node(c.WaitLeader())
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			done := make(chan error, 1)
			go func() { done <- tc.call(ctx, leader) }()
			clustertest.WaitFor(t, 10*time.Second, "the request waiting for the leader's first round of questions", func() bool {
				select {
				case err := <-done:
					t.Fatalf("answered before the leader knew its members: %v", err)
				default:
				}
				return cluster.VersionWaitsForTest(leader) >= 1
			})
			close(answer)
			if err := <-done; err != nil {
				t.Fatalf("once the members answered: %v", err)
			}
		})
	}
}

// A member the leader has asked but which has not answered keeps a feature
// off, and the refusal names that member rather than blaming an upgrade.
func TestVersionGate_RefusalNamesTheMemberThatHasNotAnswered(t *testing.T) {
	c := clustertest.New(t, 3, clustertest.WithConfig(func(_ int, cfg *cluster.Config) {
		cfg.PeerFacts = func(context.Context, cluster.NodeInfo) (cluster.MemberFacts, error) {
			return cluster.MemberFacts{}, errors.New("no answer")
		}
	}))
	leader := c.Node(c.WaitLeader())
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_, err := cluster.Do(ctx, leader, engine.EnqueueOp{Params: engine.EnqueueParams{Queue: "q", JobType: "t", Expiry: &engine.ExpiryOpts{TTL: time.Minute}}})
	var ve *cluster.CommandVersionError
	if !errors.As(err, &ve) {
		t.Fatalf("enqueue with a ttl = %v, want a *CommandVersionError", err)
	}
	if !strings.Contains(err.Error(), "has not yet told the leader") || !strings.Contains(ve.Lacking, "member ") {
		t.Fatalf("refusal %q does not name the member that has not answered", err)
	}
	if _, err := cluster.Do(ctx, leader, engine.EnqueueOp{Params: engine.EnqueueParams{Queue: "q", JobType: "t"}}); err != nil {
		t.Fatalf("a plain enqueue is refused: %v", err)
	}
}
