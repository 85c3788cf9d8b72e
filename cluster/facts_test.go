package cluster_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sepp-io/sepp/cluster"
	"github.com/sepp-io/sepp/cluster/clustertest"
	"github.com/sepp-io/sepp/engine"
	"github.com/sepp-io/sepp/fsm"
)

// TestFacts_LeaderRecordsEachMembersFacts: the leader asks every member for
// its facts (Config.PeerFacts) and records them in the replicated state, so
// every node's status shows every member's binary version, command
// versions, memory limit and GOMAXPROCS. A follower whose facts say an
// older command version keeps the leader on one JobAck per ref and the
// cluster on a minimum key window of 0; a follower whose binary serves no
// facts call (an older binary) is asked the health-name question instead
// (Config.PeerCommandVersion), and only then.
func TestFacts_LeaderRecordsEachMembersFacts(t *testing.T) {
	errUnreachable := errors.New("connection refused")
	tests := []struct {
		name string
		// odd is the odd follower's facts answer; legacy its
		// health-name answer, asked only after ErrFactsUnsupported.
		odd       func() (cluster.MemberFacts, error)
		legacy    func() (uint32, error)
		wantKnown int // members recorded as applying an ack batch
		wantBatch bool
		// wantMinWindow is limits.idempotency_min_window on every node.
		wantMinWindow time.Duration
		wantLegacy    bool
	}{
		{name: "every member is new",
			odd:       func() (cluster.MemberFacts, error) { return factsOf(fsm.CommandVersion, 1<<30), nil },
			wantKnown: 3, wantBatch: true, wantMinWindow: engine.DefaultLimits().IdempotencyMinWindow},
		{name: "a follower's facts say an older command version",
			odd:       func() (cluster.MemberFacts, error) { return factsOf(1, 1<<30), nil },
			wantKnown: 2},
		{name: "a follower applies ack batches but not the minimum window",
			odd:       func() (cluster.MemberFacts, error) { return factsOf(fsm.CommandVersionAckBatch, 1<<30), nil },
			wantKnown: 3, wantBatch: true},
		{name: "a follower serves no facts call, and its health names say version 1",
			odd: func() (cluster.MemberFacts, error) {
				return cluster.MemberFacts{}, fmt.Errorf("n: %w", cluster.ErrFactsUnsupported)
			},
			legacy: func() (uint32, error) { return 1, nil }, wantKnown: 2},
		{name: "a follower serves no facts call, and its health names say ack batches",
			odd:       func() (cluster.MemberFacts, error) { return cluster.MemberFacts{}, cluster.ErrFactsUnsupported },
			legacy:    func() (uint32, error) { return fsm.CommandVersionAckBatch, nil },
			wantKnown: 3, wantBatch: true, wantLegacy: true},
		{name: "a follower cannot be asked",
			odd:       func() (cluster.MemberFacts, error) { return cluster.MemberFacts{}, errUnreachable },
			wantKnown: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var oddID atomic.Pointer[string]
			var oddAsked, legacyAsked, legacyAskedOfOthers atomic.Int64
			c := clustertest.New(t, 3, clustertest.WithConfig(func(i int, cfg *cluster.Config) {
				cfg.Facts = cluster.MemberFacts{BinaryVersion: "v-test", MemoryLimitBytes: int64(i+1) << 30, MemoryLimitFrom: "test", GOMAXPROCS: 2}
				cfg.PeerFacts = func(_ context.Context, m cluster.NodeInfo) (cluster.MemberFacts, error) {
					odd := oddID.Load()
					switch {
					case odd == nil:
						return cluster.MemberFacts{}, errUnreachable
					case m.ID == *odd:
						oddAsked.Add(1)
						return tt.odd()
					}
					return factsOf(fsm.CommandVersion, 1<<30), nil
				}
				cfg.PeerCommandVersion = func(_ context.Context, m cluster.NodeInfo) (uint32, error) {
					if odd := oddID.Load(); odd == nil || m.ID != *odd || tt.legacy == nil {
						legacyAskedOfOthers.Add(1)
						return 0, errUnreachable
					}
					legacyAsked.Add(1)
					return tt.legacy()
				}
			}))
			li := c.WaitLeader()
			leader := c.Node(li)
			odd := c.Node(others(c, li)[0]).Self().ID
			oddID.Store(&odd)
			clustertest.WaitFor(t, 10*time.Second, "the members' facts recorded", func() bool {
				return membersWithVersion(leader) >= tt.wantKnown && oddAsked.Load() > 0 && (tt.legacy == nil || legacyAsked.Load() > 0)
			})
			if got := membersWithVersion(leader); got != tt.wantKnown {
				t.Fatalf("%d members recorded as applying an ack batch, want %d", got, tt.wantKnown)
			}
			if n := legacyAskedOfOthers.Load(); n != 0 {
				t.Fatalf("the health-name question was asked %d times of members that serve the facts call", n)
			}
			refs := leaseJobs(t, leader, "facts", 20, 1000)
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
			// Every node's status shows the facts the leader recorded (a
			// follower once it has applied them).
			var mismatch string
			showsFacts := func() bool {
				for i := range 3 {
					st, err := c.Node(i).Status(context.Background())
					if err != nil {
						mismatch = err.Error()
						return false
					}
					for _, m := range st.Members {
						f := m.Facts
						switch {
						case m.ID == st.Self.ID || m.ID == leader.Self().ID:
							if f == nil || f.BinaryVersion != "v-test" || f.MaxCommandVersion != fsm.CommandVersion || f.GOMAXPROCS != 2 || f.MemoryLimitBytes == 0 {
								mismatch = fmt.Sprintf("node %d shows %s's facts %+v, want its own report", i, m.ID, f)
								return false
							}
						case m.ID == odd && tt.wantLegacy:
							if f == nil || !f.Legacy || f.MaxCommandVersion != fsm.CommandVersionAckBatch {
								mismatch = fmt.Sprintf("node %d shows the older member's facts %+v, want legacy version %d", i, f, fsm.CommandVersionAckBatch)
								return false
							}
						case m.ID != odd:
							if f == nil || f.BinaryVersion != "peer" || f.MaxCommandVersion != fsm.CommandVersion {
								mismatch = fmt.Sprintf("node %d shows %s's facts %+v, want the recorded answer", i, m.ID, f)
								return false
							}
						}
					}
				}
				return true
			}
			t.Cleanup(func() {
				if t.Failed() && mismatch != "" {
					t.Log("last mismatch: " + mismatch)
				}
			})
			clustertest.WaitFor(t, 10*time.Second, "every node's status showing the recorded facts", showsFacts)
			c.RequireSameDigest()
		})
	}
}

// factsOf is a member's facts answer: version v, a memory limit of limit.
func factsOf(v uint32, limit int64) cluster.MemberFacts {
	return cluster.MemberFacts{BinaryVersion: "peer", MinCommandVersion: 1, MaxCommandVersion: v,
		MemoryLimitBytes: limit, MemoryLimitFrom: "cgroup memory limit", GOMAXPROCS: 4, Started: time.Unix(1e9, 0)}
}

// budgets is every node's applied limits.max_memory_bytes.
func budgets(c *clustertest.Cluster) []int64 {
	var out []int64
	for _, i := range c.Alive() {
		var b int64
		_ = c.Node(i).Read(context.Background(), true, func(e engine.View) error {
			b = e.Config().Limits.MaxMemoryBytes
			return nil
		})
		out = append(out, b)
	}
	return out
}

func allEqual(bs []int64, want int64) bool {
	for _, b := range bs {
		if b != want {
			return false
		}
	}
	return len(bs) > 0
}

// TestFacts_MemoryBudgetFromSmallestMember: with limits.max_memory_share
// and no explicit max_memory_bytes, the budget every replica applies is
// the share of the smallest member's memory limit, not the leader's own
// (a leader in 8 GiB must not set a budget that a follower in 512 MiB
// cannot restart with); it follows a member's facts when they change (a
// member restarted in another limit) and the membership (the smallest
// member removed).
func TestFacts_MemoryBudgetFromSmallestMember(t *testing.T) {
	const share = 0.5
	// Every node's own report says 8 GiB; what the followers answer the
	// leader is set below, once the leader is known.
	var mu sync.Mutex
	limits := map[string]int64{}
	limitOf := func(id string) int64 {
		mu.Lock()
		defer mu.Unlock()
		if l, ok := limits[id]; ok {
			return l
		}
		return 8 << 30
	}
	setLimit := func(id string, l int64) {
		mu.Lock()
		defer mu.Unlock()
		limits[id] = l
	}
	c := clustertest.New(t, 3, clustertest.WithConfig(func(_ int, cfg *cluster.Config) {
		cfg.MemoryShare = share
		cfg.Facts = cluster.MemberFacts{BinaryVersion: "v-test", MemoryLimitBytes: 8 << 30, MemoryLimitFrom: "cgroup memory limit"}
		cfg.PeerFacts = func(_ context.Context, m cluster.NodeInfo) (cluster.MemberFacts, error) {
			return factsOf(fsm.CommandVersion, limitOf(m.ID)), nil
		}
	}))
	li := c.WaitLeader()
	clustertest.WaitFor(t, 15*time.Second, "the budget from the leader's 8 GiB", func() bool {
		return allEqual(budgets(c), int64(share*float64(8<<30)))
	})
	fs := others(c, li)
	small, mid := c.Node(fs[0]).Self().ID, c.Node(fs[1]).Self().ID
	setLimit(small, 512<<20)
	setLimit(mid, 4<<30)
	clustertest.WaitFor(t, 30*time.Second, "the budget from the smallest member", func() bool {
		return allEqual(budgets(c), int64(share*float64(512<<20)))
	})

	// The smallest restarts in more memory: its facts change, and the
	// budget follows the next smallest (the leader's recheck).
	setLimit(small, 6<<30)
	clustertest.WaitFor(t, 30*time.Second, "the budget from the next smallest once the smallest reports more", func() bool {
		return allEqual(budgets(c), int64(share*float64(4<<30)))
	})

	// The now smallest member removed: the budget comes from the others.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	leader := c.Node(c.WaitLeader())
	if leader.Self().ID == mid {
		t.Skip("leadership moved to the member this step removes")
	}
	if err := leader.Remove(ctx, mid); err != nil {
		t.Fatal(err)
	}
	clustertest.WaitFor(t, 30*time.Second, "the budget from the remaining members once one is removed", func() bool {
		var b int64
		_ = leader.Read(context.Background(), true, func(e engine.View) error {
			b = e.Config().Limits.MaxMemoryBytes
			return nil
		})
		return b == int64(share*float64(6<<30))
	})
}

// TestFacts_ExplicitMemoryBudgetWins: limits.max_memory_bytes set is the
// budget, whatever the members' limits.
func TestFacts_ExplicitMemoryBudgetWins(t *testing.T) {
	c := clustertest.New(t, 3, clustertest.WithConfig(func(i int, cfg *cluster.Config) {
		cfg.MemoryShare = 0.5
		cfg.Engine.Limits.MaxMemoryBytes = 3 << 30
		cfg.Facts = cluster.MemberFacts{MemoryLimitBytes: 1 << 30}
		cfg.PeerFacts = func(context.Context, cluster.NodeInfo) (cluster.MemberFacts, error) {
			return factsOf(fsm.CommandVersion, 256<<20), nil
		}
	}))
	leader := c.Node(c.WaitLeader())
	clustertest.WaitFor(t, 10*time.Second, "every member's facts recorded", func() bool {
		return membersWithVersion(leader) == 3
	})
	clustertest.WaitFor(t, 10*time.Second, "the explicit budget on every node", func() bool {
		return allEqual(budgets(c), 3<<30)
	})
}

// TestFacts_RollingUpgrade: every member starts on a binary older than the
// facts call (the leader learns only version 1, by the health names); the
// members are upgraded one at a time (they start answering GetMemberFacts
// with this binary's version), and the leader keeps proposing one JobAck
// per ref until the last one is, then one JobAckBatch.
func TestFacts_RollingUpgrade(t *testing.T) {
	var upgraded sync.Map // id -> true
	c := clustertest.New(t, 3, clustertest.WithConfig(func(_ int, cfg *cluster.Config) {
		cfg.PeerFacts = func(_ context.Context, m cluster.NodeInfo) (cluster.MemberFacts, error) {
			if _, ok := upgraded.Load(m.ID); ok {
				return factsOf(fsm.CommandVersion, 1<<30), nil
			}
			return cluster.MemberFacts{}, cluster.ErrFactsUnsupported
		}
		cfg.PeerCommandVersion = func(context.Context, cluster.NodeInfo) (uint32, error) { return 1, nil }
	}))
	li := c.WaitLeader()
	leader := c.Node(li)
	refs := leaseJobs(t, leader, "upgrade", 30, 1000)
	ackCommands := func(refs []engine.LeaseRef) uint64 {
		t.Helper()
		before := proposedCommands(leader)
		errs, err := leader.AckBatch(context.Background(), refs)
		if err != nil {
			t.Fatal(err)
		}
		checkAckErrs(t, errs, make([]error, len(refs)))
		return proposedCommands(leader) - before
	}
	if d := ackCommands(refs[0:10]); d < 10 {
		t.Fatalf("every follower older: %d commands for 10 acks, want one per ack", d)
	}
	fs := others(c, li)
	upgraded.Store(c.Node(fs[0]).Self().ID, true)
	clustertest.WaitFor(t, 10*time.Second, "the first upgraded member's facts recorded", func() bool {
		return membersWithVersion(leader) == 2
	})
	if d := ackCommands(refs[10:20]); d < 10 {
		t.Fatalf("one follower older: %d commands for 10 acks, want one per ack", d)
	}
	upgraded.Store(c.Node(fs[1]).Self().ID, true)
	clustertest.WaitFor(t, 10*time.Second, "every member's facts recorded", func() bool {
		return membersWithVersion(leader) == 3
	})
	if d := ackCommands(refs[20:30]); d > 3 {
		t.Fatalf("every member upgraded: %d commands for 10 acks, want one ack batch", d)
	}
	c.RequireSameDigest()
}

// TestFacts_JoinAsksTheNewMemberAtOnce: a member that joins (a replaced
// disk's node, joined again) is asked its facts right after the join, not
// at the leader's next recheck: until it is known, every feature newer
// than the oldest binary is refused (the fault campaign saw workflows
// refused for seconds after each wipe). The recheck here is an hour away.
func TestFacts_JoinAsksTheNewMemberAtOnce(t *testing.T) {
	var asked atomic.Int64
	c := clustertest.New(t, 1, clustertest.WithConfig(func(_ int, cfg *cluster.Config) {
		cfg.MemberQuestions = cluster.MemberQuestions{Recheck: time.Hour, Retry: 100 * time.Millisecond}
		cfg.PeerFacts = func(context.Context, cluster.NodeInfo) (cluster.MemberFacts, error) {
			asked.Add(1)
			return factsOf(fsm.CommandVersion, 1<<30), nil
		}
	}))
	leader := c.Node(c.WaitLeader())
	// The lone member's first round is over: the next is an hour away.
	clustertest.WaitFor(t, 5*time.Second, "the leader ready", func() bool {
		_, err := cluster.Do(context.Background(), leader, engine.EnqueueOp{Params: job("q", 1)})
		return err == nil
	})
	j := c.AddNode()
	joined := c.Node(j).Self()
	if err := leader.Join(ctxT(t, 10*time.Second), joined); err != nil {
		t.Fatalf("join: %v", err)
	}
	clustertest.WaitFor(t, 5*time.Second, "the joined member's facts recorded", func() bool {
		m, ok := leader.FSM().Node(joined.ID)
		return ok && m.AppliesCommandVersion(fsm.CommandVersion)
	})
	if asked.Load() == 0 {
		t.Fatal("the joined member was never asked")
	}
}
