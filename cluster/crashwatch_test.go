package cluster_test

import (
	"net"
	"testing"
	"time"

	"github.com/sepp-io/sepp/cluster"
	"github.com/sepp-io/sepp/cluster/clustertest"
	"github.com/sepp-io/sepp/tlsutil"
)

// killLeaderForCrashElection kills leader li of c after raising the
// followers' heartbeat and election timeouts to a minute, far beyond the
// test's deadline, so that only a follower that saw the leader's
// connections end and its raft address refuse can call the election. It
// waits for that election and returns the new leader.
func killLeaderForCrashElection(t *testing.T, c *clustertest.Cluster, li int) int {
	t.Helper()
	survivors := others(c, li)
	setTimeouts := func(d func(i int) time.Duration) {
		for _, i := range survivors {
			if err := cluster.SetRaftTimeoutsForTest(c.Node(i), d(i)); err != nil {
				t.Fatal(err)
			}
		}
	}
	setTimeouts(func(int) time.Duration { return time.Minute })
	c.Kill(li)
	clustertest.WaitFor(t, 20*time.Second, "an election called for the crashed leader", func() bool {
		var sum uint64
		for _, i := range survivors {
			sum += c.Node(i).CrashElections()
		}
		return sum > 0
	})
	// Back to the test timeouts: a leader heartbeats every tenth of its
	// heartbeat timeout and must hear from a quorum within its lease,
	// which a one-minute timeout would not allow.
	setTimeouts(func(i int) time.Duration { return c.Config(i).HeartbeatTimeout })
	return c.WaitLeaderAmong(survivors)
}

// A killed leader is replaced by crash detection, not by raft's heartbeat
// timeout (see killLeaderForCrashElection), and every committed job
// survives.
func TestCrashWatch_KilledLeaderReplacedWithoutHeartbeatTimeout(t *testing.T) {
	for _, store := range logStores {
		t.Run(store, func(t *testing.T) {
			c := clustertest.New(t, 3, withLogStore(store, nil))
			li := c.WaitLeader()
			ids := enqueueN(t, c.Node(li), 100, 8)
			term := cluster.CurrentTermForTest(c.Node(li))
			nl := killLeaderForCrashElection(t, c, li)
			if got := cluster.CurrentTermForTest(c.Node(nl)); got <= term {
				t.Fatalf("term %d after the crash, want above %d", got, term)
			}
			requireJobs(t, c.Node(nl), ids)
			more := enqueueN(t, c.Node(nl), 20, 4)
			c.Restart(li)
			c.RequireSameDigest()
			requireJobs(t, c.Node(nl), more)
		})
	}
}

// Over the mutual-TLS stream layer that sepp serve uses between nodes, a
// killed leader is replaced by crash detection too.
func TestCrashWatch_OverMutualTLS(t *testing.T) {
	pki, err := tlsutil.WriteDevPKI(t.TempDir(), nil, time.Now(), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	certs, err := tlsutil.NewReloadable(tlsutil.Files{CertFile: pki.NodeCertFile, KeyFile: pki.NodeKeyFile, CAFile: pki.CAFile})
	if err != nil {
		t.Fatal(err)
	}
	c := clustertest.New(t, 3, clustertest.WithConfig(func(_ int, cfg *cluster.Config) {
		stream, err := tlsutil.NewStreamLayer(cfg.RaftBindAddr, nil, certs)
		if err != nil {
			t.Fatal(err)
		}
		cfg.StreamLayer = stream
	}))
	li := c.WaitLeader()
	ids := enqueueN(t, c.Node(li), 50, 4)
	nl := killLeaderForCrashElection(t, c, li)
	requireJobs(t, c.Node(nl), ids)
}

// An inbound connection that ends while the leader lives (a leader closing
// a pooled connection, a reset) costs one dial: no election, no new term.
func TestCrashWatch_LiveLeaderIsLeftAlone(t *testing.T) {
	c := clustertest.New(t, 3)
	li := c.WaitLeader()
	term := cluster.CurrentTermForTest(c.Node(li))
	for _, f := range others(c, li) {
		// A follower checks only a leader it knows of: one that has not
		// heard from the new leader yet skips the check (an election is
		// under way, as far as it knows).
		clustertest.WaitFor(t, 10*time.Second, "the follower to know the leader", func() bool {
			return c.Node(f).Leader().ID == c.Node(li).Leader().ID
		})
		cluster.SignalConnectionEndedForTest(c.Node(f))
		clustertest.WaitFor(t, 10*time.Second, "the crash check on a follower", func() bool {
			return cluster.CrashChecksFoundAliveForTest(c.Node(f)) > 0
		})
		if n := c.Node(f).CrashElections(); n != 0 {
			t.Fatalf("follower n%d called %d elections against a live leader", f, n)
		}
	}
	if got := cluster.CurrentTermForTest(c.Node(li)); got != term || !c.Node(li).IsLeader() {
		t.Fatalf("leader n%d: term %d (was %d), leads %v: a live leader was disturbed", li, got, term, c.Node(li).IsLeader())
	}
}

// A wrong verdict (here forced) costs one election and nothing else: every
// committed job survives and the replicas agree.
func TestCrashWatch_WrongVerdictCostsOneElectionNotData(t *testing.T) {
	c := clustertest.New(t, 3)
	li := c.WaitLeader()
	ids := enqueueN(t, c.Node(li), 100, 8)
	term := cluster.CurrentTermForTest(c.Node(li))
	f := others(c, li)[0]
	cluster.StubCrashProbeForTest(c.Node(f), func(string) bool { return true })
	cluster.SignalConnectionEndedForTest(c.Node(f))
	clustertest.WaitFor(t, 10*time.Second, "the wrongly called election", func() bool {
		return c.Node(f).CrashElections() > 0
	})
	clustertest.WaitFor(t, 10*time.Second, "a leader in a later term", func() bool {
		for _, i := range c.Alive() {
			if n := c.Node(i); n.IsLeader() && cluster.CurrentTermForTest(n) > term {
				return true
			}
		}
		return false
	})
	nl := c.WaitLeader()
	requireJobs(t, c.Node(nl), ids)
	enqueueN(t, c.Node(nl), 20, 4)
	c.RequireSameDigest()
}

func TestProcessGone(t *testing.T) {
	listen := func(t *testing.T) net.Listener {
		t.Helper()
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ln.Close() })
		return ln
	}
	tests := []struct {
		name  string
		setup func(t *testing.T) string
		gone  bool
	}{
		{"nothing listens", func(t *testing.T) string {
			t.Helper()
			ln := listen(t)
			addr := ln.Addr().String()
			ln.Close()
			return addr
		}, true},
		{"a live server that waits for a request", func(t *testing.T) string {
			t.Helper()
			ln := listen(t)
			go func() {
				for {
					c, err := ln.Accept()
					if err != nil {
						return
					}
					t.Cleanup(func() { c.Close() })
				}
			}()
			return ln.Addr().String()
		}, false},
		{"a listener that dies with the connection in its backlog", func(t *testing.T) string {
			t.Helper()
			ln := listen(t)
			go func() {
				if c, err := ln.Accept(); err == nil {
					c.Close()
				}
			}()
			return ln.Addr().String()
		}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			addr := tt.setup(t)
			if got := cluster.ProcessGoneForTest(addr); got != tt.gone {
				t.Fatalf("processGone(%s) = %v, want %v", addr, got, tt.gone)
			}
		})
	}
}
