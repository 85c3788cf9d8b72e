package cluster_test

import (
	"strconv"
	"testing"
	"time"

	"github.com/sepp-io/sepp/cluster"
	"github.com/sepp-io/sepp/cluster/clustertest"
	"github.com/sepp-io/sepp/engine"
)

// Idempotency keys enqueued 10 ms apart expire 10 ms apart, a window later.
// The leader used to propose a tick at each expiry: once the traffic
// stopped, the cluster kept writing a tick every few milliseconds for a
// whole window (the hour's soak found its replicas never still long enough
// to compare digests). With SweepDelay, one tick drops a second's worth;
// and the keys are still dropped.
func TestCluster_ExpiringKeysTickOncePerSweepDelay(t *testing.T) {
	clock := newFakeClock(t0)
	c := clustertest.New(t, 3, clustertest.WithConfig(func(_ int, cfg *cluster.Config) {
		cfg.Clock = clock.Now
	}))
	li := c.WaitLeader()
	leader := c.Node(li)
	if d := c.Config(li).SweepDelay; d != time.Second {
		t.Fatalf("SweepDelay %s, want the default 1s", d)
	}
	ctx := ctxT(t, 30*time.Second)
	const keys = 100
	for i := range keys {
		p := job("q", i)
		p.IdempotencyKey = "k" + strconv.Itoa(i)
		if _, err := cluster.Do(ctx, leader, engine.EnqueueOp{Params: p}); err != nil {
			t.Fatal(err)
		}
		clock.Advance(10 * time.Millisecond)
	}
	remembered := func() int {
		var n int
		if err := leader.Read(ctx, false, func(e engine.View) error { n = e.RememberedKeys().IdempotencyKeys; return nil }); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := remembered(); n != keys {
		t.Fatalf("%d keys remembered, want %d", n, keys)
	}
	window := c.Config(li).Engine.Limits.IdempotencyWindow
	lastIndex := func() int {
		n, _ := strconv.Atoi(leader.RaftStats()["last_log_index"])
		return n
	}
	before := lastIndex()
	// The keys' expiries go by in 10 ms steps of the leader's clock, each
	// step long enough for the ticker (TickMaxWait 20ms here) to see it.
	clock.Advance(window - keys*10*time.Millisecond)
	for range keys + 150 { // the keys' second, and SweepDelay and a half on
		clock.Advance(10 * time.Millisecond)
		time.Sleep(25 * time.Millisecond)
	}
	clustertest.WaitFor(t, 5*time.Second, "the expired keys to be dropped", func() bool { return remembered() == 0 })
	if written := lastIndex() - before; written > 10 {
		t.Fatalf("the idle cluster wrote %d entries while %d keys expired over one second, want a few (one tick per SweepDelay)", written, keys)
	}
	t.Logf("entries written while %d keys expired: %d", keys, lastIndex()-before)
}
