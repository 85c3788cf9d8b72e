package cluster_test

import (
	"context"
	"errors"
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sepp-io/sepp/cluster"
	"github.com/sepp-io/sepp/cluster/clustertest"
	"github.com/sepp-io/sepp/engine"
)

// The benchmarks run a real 3-node cluster in this process: loopback TCP,
// raft-boltdb with fsync on every write, DefaultConfig's LAN timeouts.
//
//	go test -run '^$' -bench . -benchtime 20000x ./cluster/   (Enqueue)
//	SEPP_BENCH_LOG_STORE=bolt go test ...                       (on raft-boltdb)
//	go test -run '^$' -bench 'Failover|Transfer' -benchtime 5x ./cluster/

func productionTimeouts(_ int, cfg *cluster.Config) {
	d := cluster.DefaultConfig()
	cfg.HeartbeatTimeout = d.HeartbeatTimeout
	cfg.ElectionTimeout = d.ElectionTimeout
	cfg.LeaderLeaseTimeout = d.LeaderLeaseTimeout
	cfg.LeaseGrace = d.LeaseGrace
	cfg.TickMaxWait = d.TickMaxWait
	cfg.SnapshotInterval = d.SnapshotInterval
	cfg.LogStore = os.Getenv("SEPP_BENCH_LOG_STORE")
}

var benchPayload = make([]byte, 100)

func BenchmarkEnqueue(b *testing.B) {
	c := clustertest.New(b, 3, clustertest.WithConfig(productionTimeouts))
	var leader atomic.Pointer[cluster.Node]
	leader.Store(c.Node(c.WaitLeader()))
	for _, conc := range []int{1, 16, 256} {
		b.Run("c="+strconv.Itoa(conc), func(b *testing.B) {
			latencies := make([][]time.Duration, conc)
			var next atomic.Int64
			e0, c0, w0 := proposerStats(c)
			b.ResetTimer()
			start := time.Now()
			var wg sync.WaitGroup
			for w := 0; w < conc; w++ {
				wg.Add(1)
				go func(w int) {
					defer wg.Done()
					for next.Add(1) <= int64(b.N) {
						t := time.Now()
						if err := enqueueOnLeader(c, &leader); err != nil {
							b.Error(err)
							return
						}
						latencies[w] = append(latencies[w], time.Since(t))
					}
				}(w)
			}
			wg.Wait()
			elapsed := time.Since(start)
			b.StopTimer()
			e1, c1, w1 := proposerStats(c)
			if r := retries.Swap(0); r > 0 {
				b.Logf("%d enqueues retried after a leader change (load average may be high)", r)
			}
			all := slices.Concat(latencies...)
			slices.Sort(all)
			b.ReportMetric(float64(b.N)/elapsed.Seconds(), "enqueues/s")
			b.ReportMetric(1000*float64(e1-e0)/float64(c1-c0), "entries/1000ops")
			// Every replica writes: this is the three nodes' writes together.
			b.ReportMetric(1000*float64(w1-w0)/float64(c1-c0), "disk-writes/1000ops")
			b.ReportMetric(float64(all[len(all)/2].Microseconds())/1000, "p50-ms")
			b.ReportMetric(float64(all[len(all)*99/100].Microseconds())/1000, "p99-ms")
		})
	}
}

var retries atomic.Int64

// enqueueOnLeader enqueues on the current leader; when leadership moves (a
// loaded machine can miss a heartbeat) it finds the new leader and retries
// as a client would (a benchmark job may land twice; it does not matter here).
func enqueueOnLeader(c *clustertest.Cluster, leader *atomic.Pointer[cluster.Node]) error {
	p := engine.EnqueueParams{Queue: "bench", JobType: "t", Payload: benchPayload}
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, err := cluster.Do(context.Background(), leader.Load(), engine.EnqueueOp{Params: p})
		if err == nil || time.Now().After(deadline) {
			return err
		}
		if !errors.Is(err, cluster.ErrNotLeader) && !errors.Is(err, cluster.ErrNoLeader) && !errors.Is(err, cluster.ErrUnknownOutcome) {
			return err
		}
		retries.Add(1)
		for _, i := range c.Alive() {
			if n := c.Node(i); n != nil && n.IsLeader() {
				leader.Store(n)
			}
		}
		time.Sleep(time.Millisecond) // an election is running
	}
}

func proposerStats(c *clustertest.Cluster) (entries, commands, writes uint64) {
	for _, i := range c.Alive() {
		e, n := c.Node(i).ProposerStats()
		entries, commands, writes = entries+e, commands+n, writes+c.Node(i).LogWrites()
	}
	return entries, commands, writes
}

// BenchmarkFailover kills the leader b.N times and measures the time from
// the kill to the first enqueue committed by the new leader, as a client
// that tries every node would see it.
func BenchmarkFailover(b *testing.B) {
	c := clustertest.New(b, 3, clustertest.WithConfig(productionTimeouts))
	var worst, total time.Duration
	for i := 0; i < b.N; i++ {
		li := c.WaitLeader()
		c.RequireSameDigest()
		start := time.Now()
		c.Kill(li)
		d := firstCommit(b, c, start)
		total += d
		worst = max(worst, d)
		c.Restart(li)
	}
	b.ReportMetric(total.Seconds()/float64(b.N), "failover-mean-s")
	b.ReportMetric(worst.Seconds(), "failover-max-s")
}

// BenchmarkTransfer hands leadership to a follower b.N times and measures
// the time from the request to the first enqueue committed by the new
// leader.
func BenchmarkTransfer(b *testing.B) {
	c := clustertest.New(b, 3, clustertest.WithConfig(productionTimeouts))
	var worst, total time.Duration
	for i := 0; i < b.N; i++ {
		li := c.WaitLeader()
		c.RequireSameDigest()
		start := time.Now()
		if err := c.Node(li).TransferLeadership(context.Background(), ""); err != nil {
			b.Fatal(err)
		}
		d := firstCommit(b, c, start)
		total += d
		worst = max(worst, d)
	}
	b.ReportMetric(total.Seconds()/float64(b.N), "transfer-mean-s")
	b.ReportMetric(worst.Seconds(), "transfer-max-s")
}

// firstCommit tries an enqueue on every running node until one commits and
// returns the time since start.
func firstCommit(b *testing.B, c *clustertest.Cluster, start time.Time) time.Duration {
	b.Helper()
	deadline := start.Add(10 * time.Second)
	for time.Now().Before(deadline) {
		for _, i := range c.Alive() {
			n := c.Node(i)
			if n == nil || !n.IsLeader() {
				continue
			}
			ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
			_, err := cluster.Do(ctx, n, engine.EnqueueOp{Params: engine.EnqueueParams{Queue: "failover", JobType: "t"}})
			cancel()
			if err == nil {
				return time.Since(start)
			}
			if !errors.Is(err, cluster.ErrNoLeader) && !errors.Is(err, cluster.ErrNotLeader) && !errors.Is(err, cluster.ErrUnknownOutcome) {
				b.Fatalf("enqueue during failover: %v", err)
			}
		}
		// A leader is being elected: spin on the loop, yielding the CPU.
		time.Sleep(100 * time.Microsecond)
	}
	b.Fatal("no node committed an enqueue within 10s")
	return 0
}
