package integration

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sepp-io/sepp/client"
	"github.com/sepp-io/sepp/devcluster"
	"github.com/sepp-io/sepp/integration/history"
)

// clusterTOML is appended to every node's config. The [cluster] timings
// stay at their defaults (devcluster offers no way to set them): a new
// leader extends live leases by lease_grace_ms (5s), so jobs abandoned
// around a failover come back that much later and the drain waits for them.
const clusterTOML = `[limits]
default_max_attempts = 3

[storage]
dead_letter_retention_ms = 3600000 # keep dead letters, so the final read sees every one

[[queues]]
name = "faults"
default_max_attempts = 3
`

// electionTimeout is the cluster's (deploy/sepp.example.toml's default).
const electionTimeout = 500 * time.Millisecond

// localCluster is a devcluster of real processes on loopback.
type localCluster struct{ *devcluster.Cluster }

func (c localCluster) IDs() []string {
	var ids []string
	for _, n := range c.Nodes {
		ids = append(ids, n.ID)
	}
	return ids
}

func (c localCluster) LogTail(i int) string {
	return tail(filepath.Join(c.Nodes[i].Dir, "sepp.log"), 40)
}

func tail(path string, lines int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	ls := bytes.Split(bytes.TrimRight(b, "\n"), []byte("\n"))
	return string(bytes.Join(ls[max(0, len(ls)-lines):], []byte("\n")))
}

func startLocal(t *testing.T) localCluster {
	t.Helper()
	c, err := devcluster.Start(devcluster.Options{Binary: seppBinary, Nodes: 3, Dir: t.TempDir(), ExtraTOML: clusterTOML})
	if err != nil {
		t.Fatalf("start cluster: %v", err)
	}
	t.Cleanup(func() { _ = c.Stop() })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	lc := localCluster{c}
	if err := c.WaitServing(ctx); err != nil {
		t.Fatalf("%v\n%s", err, lc.LogTail(0))
	}
	return lc
}

// faultEnv is what a fault's inject function works with.
type faultEnv struct {
	t      *testing.T
	tc     testCluster
	insp   *client.Client
	leader int // the leader when the fault began
}

// injectFunc applies a fault and heals it. It returns the node that was
// hit (the one whose catching up is the convergence time) and when the
// heal happened.
type injectFunc func(ctx context.Context, env *faultEnv) (healed int, healAt time.Time)

// runFault drives the workload through one fault and checks everything.
// faultJobBudget is the most jobs a fault test's producers enqueue: at
// their pace (3 producers, producerPace apart) about two minutes' worth.
const faultJobBudget = 40_000

func runFault(t *testing.T, name string, tc testCluster, inject injectFunc) {
	t.Helper()
	defer dumpLogs(t, tc)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute+lastAttemptHold)
	defer cancel()
	insp := newClient(ctx, t, tc.Addrs())
	leader := waitLeader(ctx, t, insp, tc, 20*time.Second, -1)

	// The job budget outlasts any fault: a slow fault (a container engine
	// that takes seconds to kill and start one) must not leave the
	// producers without jobs before the check that writes resumed.
	w := startWorkload(ctx, t, workloadOptions{Addrs: tc.Addrs(), Producers: 3, Workers: 3, MaxJobs: faultJobBudget, Backlog: 60})
	stopped := false
	defer w.stopUnlessStopped(cancel, &stopped) // a t.Fatal below: end the goroutines before returning
	w.awaitGoing(ctx, t)

	injectAt := time.Now()
	healed, healAt := inject(ctx, &faultEnv{t: t, tc: tc, insp: insp, leader: leader})
	if t.Failed() {
		return
	}
	if err := waitCaughtUp(ctx, insp, tc, healed, 30*time.Second); err != nil {
		t.Fatalf("%s did not catch up after the heal: %v", tc.IDs()[healed], err)
	}
	converged := time.Since(healAt)
	caughtUp := time.Now()
	if err := waitFor(ctx, 20*time.Second, func(context.Context) (bool, error) {
		return w.okCount(history.KindEnqueue, caughtUp) >= 150, nil
	}); err != nil {
		if w.produced.Load() >= faultJobBudget {
			t.Fatalf("writes did not resume after the heal: the producers spent their budget of %d jobs: %v", faultJobBudget, err)
		}
		t.Fatalf("writes did not resume after the heal: %v", err)
	}
	loadEnd := time.Now()
	w.stop(ctx, t, insp, 30*time.Second)
	stopped = true

	final := readFinal(ctx, t, insp)
	r := checkHistory(t, name, w, final)
	agree, err := waitReplicasAgree(ctx, tc, 20*time.Second)
	if err != nil {
		t.Errorf("replicas did not agree once quiet: %v", err)
	}

	report(t, name+" unavailable", ms(history.LongestGap(w.rec.Ops(), injectAt, loadEnd)), "ms")
	report(t, name+" lost", len(r.Lost), "jobs")
	report(t, name+" duplicates", len(r.Duplicates), "jobs")
	report(t, name+" double_leases", len(r.DoubleLeases), "jobs")
	report(t, name+" converge", ms(converged), "ms")
	report(t, name+" replicas_agree", ms(agree), "ms")
	report(t, name+" acknowledged", r.EnqueueOK, "jobs")
	report(t, name+" unknown_outcomes", r.EnqueueUnknown+r.UnknownReserves, "calls")
}

// followerOf is a node other than the leader.
func followerOf(leader int) int { return (leader + 1) % 3 }

func TestFaults(t *testing.T) {
	t.Parallel()
	requireLong(t)
	tests := []struct {
		name   string
		inject func(c localCluster) injectFunc
	}{
		{
			// The leader dies without a word; a follower takes over; the
			// old leader restarts from its data and rejoins as a follower.
			name: "kill_leader",
			inject: func(c localCluster) injectFunc {
				return func(ctx context.Context, env *faultEnv) (int, time.Time) {
					killed := time.Now()
					if err := c.Kill(env.leader); err != nil {
						env.t.Fatal(err)
					}
					waitLeader(ctx, env.t, env.insp, env.tc, 10*time.Second, env.leader)
					report(env.t, "kill_leader election", ms(time.Since(killed)), "ms")
					restart(ctx, env.t, c, env.leader)
					return env.leader, time.Now()
				}
			},
		},
		{
			// A follower dies for a measured second under load, then
			// restarts and catches up.
			name: "kill_follower",
			inject: func(c localCluster) injectFunc {
				return func(ctx context.Context, env *faultEnv) (int, time.Time) {
					f := followerOf(env.leader)
					if err := c.Kill(f); err != nil {
						env.t.Fatal(err)
					}
					pause(ctx, time.Second)
					restart(ctx, env.t, c, f)
					return f, time.Now()
				}
			},
		},
		{
			// The leader freezes (a GC pause, a stalled VM) for longer than
			// the election timeout: the others elect a new leader; when it
			// thaws it must step down, not serve stale or conflicting state.
			name: "pause_leader",
			inject: func(c localCluster) injectFunc {
				return func(ctx context.Context, env *faultEnv) (int, time.Time) {
					if err := c.Signal(env.leader, syscall.SIGSTOP); err != nil {
						env.t.Fatal(err)
					}
					stoppedAt := time.Now()
					waitLeader(ctx, env.t, env.insp, env.tc, 10*time.Second, env.leader)
					report(env.t, "pause_leader election", ms(time.Since(stoppedAt)), "ms")
					pause(ctx, 5*electionTimeout-time.Since(stoppedAt)) // hold at least 5 election timeouts
					if err := c.Signal(env.leader, syscall.SIGCONT); err != nil {
						env.t.Fatal(err)
					}
					report(env.t, "pause_leader held", ms(time.Since(stoppedAt)), "ms")
					return env.leader, time.Now()
				}
			},
		},
		{
			// A follower's disk is lost: it is killed, removed from the
			// configuration, its data dir wiped, and it comes back empty
			// (bootstrap = false) and is joined again through
			// ClusterService; the leader sends it everything.
			name: "wipe_rejoin",
			inject: func(c localCluster) injectFunc {
				return func(ctx context.Context, env *faultEnv) (int, time.Time) {
					f := followerOf(env.leader)
					n := c.Nodes[f]
					if err := c.Kill(f); err != nil {
						env.t.Fatal(err)
					}
					if err := env.insp.RemoveNode(ctx, n.ID); err != nil {
						env.t.Fatalf("remove %s: %v", n.ID, err)
					}
					if err := os.RemoveAll(filepath.Join(n.Dir, "data")); err != nil {
						env.t.Fatal(err)
					}
					cfg, err := os.ReadFile(n.Config)
					if err != nil {
						env.t.Fatal(err)
					}
					joined := strings.Replace(string(cfg), "[cluster]\n", "[cluster]\nbootstrap = false\n", 1)
					if err := os.WriteFile(n.Config, []byte(joined), 0o644); err != nil {
						env.t.Fatal(err)
					}
					restart(ctx, env.t, c, f)
					if err := env.insp.JoinNode(ctx, client.NodeInfo{ID: n.ID, RaftAddr: n.RaftAddr, GRPCAddr: n.GRPCAddr, HTTPAddr: n.HTTPAddr}); err != nil {
						env.t.Fatalf("join %s: %v", n.ID, err)
					}
					return f, time.Now()
				}
			},
		},
		{
			// Every node in turn stops gracefully and starts again, the
			// leader too: a planned restart hands leadership over first.
			name: "rolling_restart",
			inject: func(c localCluster) injectFunc {
				return func(ctx context.Context, env *faultEnv) (int, time.Time) {
					order := []int{followerOf(env.leader), followerOf(followerOf(env.leader)), env.leader}
					for _, i := range order {
						if err := c.StopNode(i, 10*time.Second); err != nil {
							env.t.Fatalf("graceful stop of %s: %v", c.Nodes[i].ID, err)
						}
						restart(ctx, env.t, c, i)
						if err := waitCaughtUp(ctx, env.insp, env.tc, i, 30*time.Second); err != nil {
							env.t.Fatalf("%s did not catch up: %v", c.Nodes[i].ID, err)
						}
					}
					return env.leader, time.Now()
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := startLocal(t)
			runFault(t, tt.name, c, tt.inject(c))
		})
	}
}

func restart(ctx context.Context, t *testing.T, c localCluster, i int) {
	t.Helper()
	if err := c.StartNode(i); err != nil {
		t.Fatalf("restart %s: %v", c.Nodes[i].ID, err)
	}
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := c.WaitServing(wctx); err != nil {
		t.Fatalf("restart %s: %v", c.Nodes[i].ID, err)
	}
}
