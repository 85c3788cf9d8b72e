package cluster_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/sepp-io/sepp/cluster"
	"github.com/sepp-io/sepp/cluster/clustertest"
	"github.com/sepp-io/sepp/engine"
)

func ctxT(t *testing.T, d time.Duration) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

func job(queue string, i int) engine.EnqueueParams {
	return engine.EnqueueParams{Queue: queue, JobType: "t", Payload: []byte("job-" + strconv.Itoa(i))}
}

// enqueueN enqueues n jobs from c concurrent callers and returns their ids.
func enqueueN(t *testing.T, node *cluster.Node, n, c int) []engine.JobID {
	t.Helper()
	ids := make([]engine.JobID, n)
	var wg sync.WaitGroup
	errs := make(chan error, n)
	var next atomic.Int64
	for w := 0; w < c; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				res, err := cluster.Do(context.Background(), node, engine.EnqueueOp{Params: job("q", i)})
				if err != nil {
					errs <- fmt.Errorf("enqueue %d: %w", i, err)
					return
				}
				ids[i] = res.JobID
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	return ids
}

func requireJobs(t *testing.T, node *cluster.Node, ids []engine.JobID) {
	t.Helper()
	err := node.Read(ctxT(t, 5*time.Second), false, func(e engine.View) error {
		for _, id := range ids {
			if _, err := e.GetJob(id); err != nil {
				return fmt.Errorf("job %d: %w", id, err)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("committed job missing on %s: %v", node.Self().ID, err)
	}
}

func others(c *clustertest.Cluster, not int) []int {
	var out []int
	for _, i := range c.Alive() {
		if i != not {
			out = append(out, i)
		}
	}
	return out
}

func TestCluster_RandomWorkloadConverges(t *testing.T) {
	c := clustertest.New(t, 3)
	leader := c.Node(c.WaitLeader())
	var wg sync.WaitGroup
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func(seed uint64) {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(seed, 1))
			ctx := context.Background()
			var leases []engine.LeaseRef
			for i := 0; i < 60; i++ {
				q := []string{"a", "b"}[rng.IntN(2)]
				switch r := rng.IntN(10); {
				case r < 5:
					p := job(q, i)
					if rng.IntN(3) == 0 {
						p.ScheduledAt = time.Now().Add(time.Duration(rng.IntN(200)) * time.Millisecond)
					}
					_, err := cluster.Do(ctx, leader, engine.EnqueueOp{Params: p})
					if err != nil {
						t.Errorf("enqueue: %v", err)
						return
					}
				case r < 7:
					ds, err := cluster.Do(ctx, leader, engine.ReserveOp{Params: engine.ReserveParams{Queue: q, WorkerID: "w", N: 2, Lease: 100 * time.Millisecond}})
					if err != nil {
						t.Errorf("reserve: %v", err)
						return
					}
					for _, d := range ds {
						leases = append(leases, engine.LeaseRef{JobID: d.Job.ID, LeaseToken: d.LeaseToken})
					}
				case len(leases) > 0:
					ref := leases[0]
					leases = leases[1:]
					var err error
					if r < 9 {
						_, err = cluster.Do(ctx, leader, engine.AckOp{Ref: ref})
					} else {
						_, err = cluster.Do(ctx, leader, engine.NackOp{Params: engine.NackParams{LeaseRef: ref, Reason: "x"}})
					}
					if err != nil && !errors.Is(err, engine.ErrLeaseLost) {
						t.Errorf("ack/nack: %v", err)
						return
					}
				}
			}
		}(uint64(w))
	}
	wg.Wait()
	c.RequireSameDigest()
}

// logStores are the log stores the persistence tests run on: the WAL every
// new node uses and bolt, which data directories created with it keep.
var logStores = []string{cluster.LogStoreWAL, cluster.LogStoreBolt}

func withLogStore(store string, more func(i int, cfg *cluster.Config)) clustertest.Option {
	return clustertest.WithConfig(func(i int, cfg *cluster.Config) {
		cfg.LogStore = store
		if more != nil {
			more(i, cfg)
		}
	})
}

func TestCluster_LeaderKillKeepsEveryCommittedOp(t *testing.T) {
	for _, store := range logStores {
		t.Run(store, func(t *testing.T) {
			c := clustertest.New(t, 3, withLogStore(store, nil))
			li := c.WaitLeader()
			ids := enqueueN(t, c.Node(li), 200, 16)

			c.Kill(li)
			nl := c.WaitLeaderAmong(others(c, li))
			requireJobs(t, c.Node(nl), ids)
			more := enqueueN(t, c.Node(nl), 20, 4)

			c.Restart(li)
			c.RequireSameDigest()
			requireJobs(t, c.Node(nl), more)
		})
	}
}

func TestCluster_RestartedNodeCatchesUpFromDisk(t *testing.T) {
	c := clustertest.New(t, 3)
	li := c.WaitLeader()
	f := others(c, li)[0]
	enqueueN(t, c.Node(li), 50, 4)
	c.RequireSameDigest()

	c.Kill(f)
	ids := enqueueN(t, c.Node(li), 50, 4)
	// Restarting with the same config (Bootstrap still set) must not
	// re-bootstrap: the node has state and rejoins with it.
	c.Restart(f)
	c.RequireSameDigest()
	if err := c.Node(f).Read(ctxT(t, time.Second), true, func(e engine.View) error {
		_, err := e.GetJob(ids[len(ids)-1])
		return err
	}); err != nil {
		t.Fatalf("restarted follower lacks a job committed while it was down: %v", err)
	}
}

func TestCluster_LaggingNodeInstallsSnapshot(t *testing.T) {
	for _, store := range logStores {
		t.Run(store, func(t *testing.T) {
			c := clustertest.New(t, 3, withLogStore(store, func(_ int, cfg *cluster.Config) {
				cfg.TrailingLogs = 4
				cfg.SnapshotThreshold = 1 << 30 // only the explicit snapshot below
			}))
			li := c.WaitLeader()
			f := others(c, li)[0]
			enqueueN(t, c.Node(li), 10, 1)
			c.RequireSameDigest()
			followerLast := c.Node(f).RaftStats()["last_log_index"]

			c.Kill(f)
			enqueueN(t, c.Node(li), 100, 1) // ~100 entries: far past TrailingLogs
			if err := c.Node(li).Snapshot(); err != nil {
				t.Fatal(err)
			}
			snapIndex, _ := strconv.ParseUint(c.Node(li).RaftStats()["last_snapshot_index"], 10, 64)
			if last, _ := strconv.ParseUint(followerLast, 10, 64); snapIndex < last+4+50 {
				t.Fatalf("leader snapshot at %d does not compact past the follower's last index %d", snapIndex, last)
			}

			c.Restart(f)
			c.RequireSameDigest()
			// Raft records the installed snapshot just after restoring the FSM.
			clustertest.WaitFor(t, 5*time.Second, "the follower to record the leader's snapshot", func() bool {
				got, _ := strconv.ParseUint(c.Node(f).RaftStats()["last_snapshot_index"], 10, 64)
				return got >= snapIndex
			})
		})
	}
}

func TestCluster_PartitionedLeaderCannotCommit(t *testing.T) {
	c := clustertest.New(t, 3, clustertest.WithInmemTransport())
	li := c.WaitLeader()
	old := c.Node(li)
	enqueueN(t, old, 5, 1)

	c.Partition(li)
	p := job("q", 999)
	p.IdempotencyKey = "written-to-the-old-leader"
	_, err := cluster.Do(ctxT(t, 3*time.Second), old, engine.EnqueueOp{Params: p})
	if err == nil {
		t.Fatal("an isolated leader reported a committed enqueue")
	}
	var nle *cluster.NotLeaderError
	if !errors.Is(err, cluster.ErrUnknownOutcome) && !errors.As(err, &nle) && !errors.Is(err, cluster.ErrNoLeader) && !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("isolated leader: err %v, want unknown outcome, not leader, no leader or a deadline", err)
	}
	if err := old.Read(ctxT(t, 2*time.Second), false, func(engine.View) error { return nil }); err == nil {
		t.Fatal("an isolated node served a linearizable read")
	}

	nl := c.WaitLeaderAmong(others(c, li))
	ids := enqueueN(t, c.Node(nl), 10, 2)

	c.Heal()
	c.RequireSameDigest()
	requireJobs(t, c.Node(c.WaitLeader()), ids)
	// The old leader's entry never committed: the idempotency key is free.
	res, err := cluster.Do(ctxT(t, 5*time.Second), c.Node(c.WaitLeader()), engine.EnqueueOp{Params: p})
	if err != nil {
		t.Fatal(err)
	}
	if res.Duplicate {
		t.Fatal("the enqueue the isolated leader failed was applied after all")
	}
}

// fakeClock is a settable clock shared by a cluster's nodes.
type fakeClock struct{ nanos atomic.Int64 }

func newFakeClock(t time.Time) *fakeClock {
	c := &fakeClock{}
	c.nanos.Store(t.UnixNano())
	return c
}
func (c *fakeClock) Now() time.Time          { return time.Unix(0, c.nanos.Load()).UTC() }
func (c *fakeClock) Advance(d time.Duration) { c.nanos.Add(int64(d)) }

var t0 = time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)

func TestCluster_NewLeaderTicksPromotionsAndExpiries(t *testing.T) {
	clock := newFakeClock(t0)
	c := clustertest.New(t, 3, clustertest.WithConfig(func(_ int, cfg *cluster.Config) {
		cfg.Clock = clock.Now
	}))
	li := c.WaitLeader()
	leader := c.Node(li)
	ctx := ctxT(t, 10*time.Second)
	sched := job("q", 1)
	sched.ScheduledAt = t0.Add(10 * time.Second)
	scheduled, err := cluster.Do(ctx, leader, engine.EnqueueOp{Params: sched})
	if err != nil {
		t.Fatal(err)
	}
	if scheduled.State != engine.StateScheduled {
		t.Fatalf("job scheduled 10s ahead is %v, want scheduled", scheduled.State)
	}
	if _, err := cluster.Do(ctx, leader, engine.EnqueueOp{Params: job("q", 2)}); err != nil {
		t.Fatal(err)
	}
	ds, err := cluster.Do(ctx, leader, engine.ReserveOp{Params: engine.ReserveParams{Queue: "q", WorkerID: "w", N: 1, Lease: 5 * time.Second}})
	if err != nil || len(ds) != 1 {
		t.Fatalf("reserve: %v, %d deliveries", err, len(ds))
	}
	leased := ds[0].Job.ID

	c.Kill(li)
	nl := c.Node(c.WaitLeaderAmong(others(c, li)))
	clock.Advance(30 * time.Second) // past the schedule, the lease and the grace
	clustertest.WaitFor(t, 10*time.Second, "the new leader to promote and expire", func() bool {
		ok := false
		_ = nl.Read(ctx, false, func(e engine.View) error {
			a, errA := e.GetJob(scheduled.JobID)
			b, errB := e.GetJob(leased)
			ok = errA == nil && errB == nil && a.State == engine.StateReady && b.State == engine.StateReady
			return nil
		})
		return ok
	})
	// And the cluster goes quiet: with nothing pending, no more ticks.
	var pending bool
	_ = nl.Read(ctx, false, func(e engine.View) error { _, pending = e.NextDeadline(); return nil })
	if pending {
		return // retention or idempotency deadlines remain; quietness is covered below
	}
	before := nl.RaftStats()["last_log_index"]
	clock.Advance(time.Hour)
	if _, err := cluster.Do(ctx, nl, engine.ReserveOp{Params: engine.ReserveParams{Queue: "none", WorkerID: "w", N: 1}}); err != nil && !errors.Is(err, engine.ErrNotFound) {
		t.Fatal(err)
	}
	after := nl.RaftStats()["last_log_index"]
	b, _ := strconv.Atoi(before)
	a, _ := strconv.Atoi(after)
	if a-b != 1 {
		t.Fatalf("idle cluster wrote %d entries for one reserve, want 1 (no ticks with nothing pending)", a-b)
	}
}

func TestCluster_TimeNeverRunsBackwardsAcrossFailover(t *testing.T) {
	base := newFakeClock(t0)
	var skew [3]atomic.Int64
	c := clustertest.New(t, 3, clustertest.WithConfig(func(i int, cfg *cluster.Config) {
		cfg.Clock = func() time.Time { return base.Now().Add(time.Duration(skew[i].Load())) }
	}))
	li := c.WaitLeader()
	skew[li].Store(int64(time.Hour)) // the first leader's clock runs an hour ahead
	ctx := ctxT(t, 10*time.Second)
	first, err := cluster.Do(ctx, c.Node(li), engine.EnqueueOp{Params: job("q", 1)})
	if err != nil {
		t.Fatal(err)
	}
	firstNow := c.Node(li).FSM().Now()
	if firstNow.Before(t0.Add(time.Hour)) {
		t.Fatalf("state machine time %s, want the leader's stamp >= %s", firstNow, t0.Add(time.Hour))
	}
	c.Kill(li)
	nl := c.Node(c.WaitLeaderAmong(others(c, li)))
	second, err := cluster.Do(ctx, nl, engine.EnqueueOp{Params: job("q", 2)})
	if err != nil {
		t.Fatal(err)
	}
	if now := nl.FSM().Now(); now.Before(firstNow) {
		t.Fatalf("time ran backwards across the failover: %s after %s", now, firstNow)
	}
	_ = nl.Read(ctx, false, func(e engine.View) error {
		a, _ := e.GetJob(first.JobID)
		b, _ := e.GetJob(second.JobID)
		if b.EnqueuedAt.Before(a.EnqueuedAt) {
			t.Errorf("second job enqueued at %s, before the first at %s", b.EnqueuedAt, a.EnqueuedAt)
		}
		return nil
	})
}

func TestCluster_FollowerRedirectsToLeader(t *testing.T) {
	c := clustertest.New(t, 3)
	li := c.WaitLeader()
	f := c.Node(others(c, li)[0])
	want := c.Node(li).Self()
	clustertest.WaitFor(t, 5*time.Second, "the follower to know the leader's metadata", func() bool {
		return f.Leader().GRPCAddr == want.GRPCAddr
	})

	_, err := cluster.Do(ctxT(t, time.Second), f, engine.EnqueueOp{Params: job("q", 1)})
	var nle *cluster.NotLeaderError
	if !errors.As(err, &nle) || !errors.Is(err, cluster.ErrNotLeader) {
		t.Fatalf("follower enqueue: err %v, want *NotLeaderError", err)
	}
	if nle.Leader.ID != want.ID || nle.Leader.GRPCAddr != want.GRPCAddr {
		t.Fatalf("follower names leader %+v, want %+v", nle.Leader, want)
	}
	if err := f.Read(ctxT(t, time.Second), false, func(engine.View) error { return nil }); !errors.As(err, &nle) {
		t.Fatalf("follower linearizable read: err %v, want *NotLeaderError", err)
	}
	if err := f.Read(ctxT(t, time.Second), true, func(engine.View) error { return nil }); err != nil {
		t.Fatalf("follower stale read: %v", err)
	}
	st, err := f.Status(ctxT(t, time.Second))
	if err != nil || st.Leader.ID != want.ID || len(st.Members) != 3 || st.State != "Follower" {
		t.Fatalf("status %+v, err %v", st, err)
	}
}

func TestCluster_GroupCommitMergesConcurrentCommands(t *testing.T) {
	c := clustertest.New(t, 3)
	leader := c.Node(c.WaitLeader())
	e0, c0 := leader.ProposerStats()
	enqueueN(t, leader, 2000, 128)
	e1, c1 := leader.ProposerStats()
	entries, cmds := e1-e0, c1-c0
	if cmds != 2000 {
		t.Fatalf("proposer counted %d commands, want 2000", cmds)
	}
	if entries*4 > cmds {
		t.Fatalf("%d commands took %d entries: fewer than 4 commands per entry under 128 concurrent callers", cmds, entries)
	}
	t.Logf("group commit: %d commands in %d entries (%.1f per entry)", cmds, entries, float64(cmds)/float64(entries))
}

func TestCluster_SingleNodeBootstrapsItselfAndRestarts(t *testing.T) {
	c := clustertest.New(t, 1)
	ids := enqueueN(t, c.Node(0), 20, 2)
	if len(c.Config(0).Peers) != 0 {
		t.Fatal("single-node test cluster has peers")
	}
	c.Kill(0)
	c.Restart(0)
	requireJobs(t, c.Node(c.WaitLeader()), ids)
}

func TestCluster_JoinAndRemove(t *testing.T) {
	c := clustertest.New(t, 1)
	leader := c.Node(0)
	ids := enqueueN(t, leader, 20, 2)
	j := c.AddNode()
	if err := leader.Join(ctxT(t, 10*time.Second), c.Node(j).Self()); err != nil {
		t.Fatalf("join: %v", err)
	}
	c.RequireSameDigest()
	if err := c.Node(j).Read(ctxT(t, time.Second), true, func(e engine.View) error {
		_, err := e.GetJob(ids[0])
		return err
	}); err != nil {
		t.Fatalf("joined node lacks earlier jobs: %v", err)
	}
	st, err := leader.Status(ctxT(t, time.Second))
	if err != nil || len(st.Members) != 2 {
		t.Fatalf("status after join: %d members, err %v", len(st.Members), err)
	}
	if m, ok := c.Node(j).FSM().Node(c.Node(j).Self().ID); !ok || m.GRPCAddr != c.Node(j).Self().GRPCAddr {
		t.Fatalf("joined node's metadata not replicated: %+v", m)
	}
	// Joining twice is harmless.
	if err := leader.Join(ctxT(t, 10*time.Second), c.Node(j).Self()); err != nil {
		t.Fatalf("second join: %v", err)
	}
	if err := leader.Remove(ctxT(t, 10*time.Second), c.Node(j).Self().ID); err != nil {
		t.Fatalf("remove: %v", err)
	}
	st, err = leader.Status(ctxT(t, time.Second))
	if err != nil || len(st.Members) != 1 {
		t.Fatalf("status after remove: %d members, err %v", len(st.Members), err)
	}
}

func TestCluster_TransferLeadership(t *testing.T) {
	c := clustertest.New(t, 3)
	li := c.WaitLeader()
	target := c.Node(others(c, li)[0])
	// A node id of no voter is a definite "no such member", not a failure.
	if err := c.Node(li).TransferLeadership(ctxT(t, 5*time.Second), "sepp-9"); !errors.Is(err, cluster.ErrUnknownMember) {
		t.Fatalf("transfer to an unknown node: %v, want ErrUnknownMember", err)
	}
	if err := c.Node(li).TransferLeadership(ctxT(t, 5*time.Second), target.Self().ID); err != nil {
		t.Fatalf("transfer: %v", err)
	}
	clustertest.WaitFor(t, 5*time.Second, "the target to lead", target.IsLeader)
	clustertest.WaitFor(t, 5*time.Second, "an enqueue on the new leader", func() bool {
		_, err := cluster.Do(context.Background(), target, engine.EnqueueOp{Params: job("q", 1)})
		return err == nil
	})
	// The old leader answers with a redirect, never a success.
	if _, err := cluster.Do(ctxT(t, time.Second), c.Node(li), engine.EnqueueOp{Params: job("q", 2)}); err == nil {
		t.Fatal("the former leader accepted a write after the transfer")
	}
}

func TestCluster_ShutdownHandsOverLeadership(t *testing.T) {
	c := clustertest.New(t, 3)
	li := c.WaitLeader()
	ids := enqueueN(t, c.Node(li), 20, 4)
	c.Stop(li) // graceful: transfers leadership, then stops
	nl := c.Node(c.WaitLeaderAmong(others(c, li)))
	requireJobs(t, nl, ids)
}

func TestCluster_StalledDiskLeaderStepsDown(t *testing.T) {
	var stalled [3]atomic.Bool
	release := make(chan struct{})
	c := clustertest.New(t, 3, clustertest.WithConfig(func(i int, cfg *cluster.Config) {
		cfg.LogStoreWriteTimeout = 300 * time.Millisecond
		cfg.LogStoreWrapper = func(s raft.LogStore) raft.LogStore {
			return &stallingStore{LogStore: s, stalled: &stalled[i], release: release}
		}
	}))
	t.Cleanup(func() { close(release) }) // runs before the nodes' shutdown
	li := c.WaitLeader()
	stalled[li].Store(true)
	_, err := cluster.Do(ctxT(t, 5*time.Second), c.Node(li), engine.EnqueueOp{Params: job("q", 1)})
	if err == nil {
		t.Fatal("a leader with a stalled disk reported a committed enqueue")
	}
	nl := c.WaitLeaderAmong(others(c, li))
	if _, err := cluster.Do(ctxT(t, 5*time.Second), c.Node(nl), engine.EnqueueOp{Params: job("q", 2)}); err != nil {
		t.Fatalf("new leader: %v", err)
	}
}

// stallingStore blocks writes while stalled is set, until release closes.
type stallingStore struct {
	raft.LogStore
	stalled *atomic.Bool
	release chan struct{}
}

func (s *stallingStore) StoreLogs(logs []*raft.Log) error {
	if s.stalled.Load() {
		<-s.release
	}
	return s.LogStore.StoreLogs(logs)
}

func (s *stallingStore) StoreLog(l *raft.Log) error { return s.StoreLogs([]*raft.Log{l}) }

// AckBatch acks each delivery on its own: good refs complete their jobs on
// every replica, a stale or repeated ref fails alone with the engine's
// error, and a follower refuses the whole call.
func TestAckBatch_PerItemOutcomes(t *testing.T) {
	c := clustertest.New(t, 3)
	li := c.WaitLeader()
	leader := c.Node(li)
	ctx := ctxT(t, 20*time.Second)
	ids := enqueueN(t, leader, 6, 3)
	ds, err := cluster.Do(ctx, leader, engine.ReserveOp{Params: engine.ReserveParams{Queue: "q", WorkerID: "w", N: len(ids), Lease: time.Minute}})
	if err != nil || len(ds) != len(ids) {
		t.Fatalf("reserve: %d deliveries, %v", len(ds), err)
	}
	ref := func(d engine.Delivery) engine.LeaseRef {
		return engine.LeaseRef{JobID: d.Job.ID, LeaseToken: d.LeaseToken}
	}
	stale := ref(ds[1])
	stale.LeaseToken++
	refs := []engine.LeaseRef{ref(ds[0]), stale, ref(ds[2]), ref(ds[0]), ref(ds[3])}
	errs, err := leader.AckBatch(ctx, refs)
	if err != nil {
		t.Fatalf("AckBatch: %v", err)
	}
	wantLost := map[int]bool{1: true, 3: true} // a wrong token; an ack of a job already acked
	for i, e := range errs {
		switch {
		case wantLost[i] && !errors.Is(e, engine.ErrLeaseLost) && !errors.Is(e, engine.ErrNotFound):
			t.Errorf("item %d: got %v, want lease lost or not found", i, e)
		case !wantLost[i] && e != nil:
			t.Errorf("item %d: got %v, want acked", i, e)
		}
	}
	err = leader.Read(ctx, false, func(e engine.View) error {
		for _, d := range []engine.Delivery{ds[0], ds[2], ds[3]} {
			if _, err := e.GetJob(d.Job.ID); !errors.Is(err, engine.ErrNotFound) {
				return fmt.Errorf("acked job %d still live: %v", d.Job.ID, err)
			}
		}
		for _, d := range []engine.Delivery{ds[1], ds[4], ds[5]} {
			if _, err := e.GetJob(d.Job.ID); err != nil {
				return fmt.Errorf("unacked job %d: %w", d.Job.ID, err)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	c.RequireSameDigest()

	follower := c.Node(others(c, li)[0])
	if _, err := follower.AckBatch(ctx, []engine.LeaseRef{ref(ds[4])}); !errors.Is(err, cluster.ErrNotLeader) && !errors.Is(err, cluster.ErrNoLeader) {
		t.Fatalf("AckBatch on a follower: got %v, want not leader", err)
	}
}
