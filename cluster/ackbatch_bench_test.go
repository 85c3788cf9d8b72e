package cluster_test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sepp-io/sepp/cluster"
	"github.com/sepp-io/sepp/cluster/clustertest"
	"github.com/sepp-io/sepp/engine"
)

// BenchmarkAckBatch acks b.N reserved jobs with AckBatch calls of 100 refs
// from conc callers, on a real 3-node cluster (loopback TCP, fsync on every
// write). The enqueues and reserves are set up untimed. mode=per-ack runs
// while only the first leader has said that it applies a JobAckBatch (as
// during a rolling upgrade: one JobAck command per ref); mode=batch after
// every node has led and said so (one JobAckBatch per call).
//
//	go test -run '^$' -bench AckBatch -benchtime 20000x ./cluster/
//
// The cluster keeps clustertest's election timeouts rather than the LAN
// defaults of BenchmarkEnqueue: a leader change in the middle of a run would
// fail it, and the timeouts do not pace a healthy leader's commits.
func BenchmarkAckBatch(b *testing.B) {
	c := clustertest.New(b, 3, clustertest.WithConfig(func(_ int, cfg *cluster.Config) {
		cfg.LogStore = os.Getenv("SEPP_BENCH_LOG_STORE")
	}))
	for _, mode := range []string{"per-ack", "batch"} {
		if mode == "batch" {
			leadEach(b, c)
		}
		for _, conc := range []int{1, 16} {
			b.Run("mode="+mode+"/c="+strconv.Itoa(conc), func(b *testing.B) {
				benchAcks(b, c, conc)
			})
		}
	}
}

var benchAckRuns atomic.Int64

func benchAcks(b *testing.B, c *clustertest.Cluster, conc int) {
	b.Helper()
	const chunk = 100
	leader := c.Node(c.WaitLeader())
	// A queue of its own, so that what a failed run left behind does not
	// count against the next one.
	queue := fmt.Sprintf("bench-acks-%d", benchAckRuns.Add(1))
	refs := leaseJobs(b, leader, queue, b.N, 500)
	var next atomic.Int64
	e0, c0, w0 := proposerStats(c)
	b.ResetTimer()
	start := time.Now()
	var wg sync.WaitGroup
	for range conc {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				end := int(next.Add(chunk))
				lo := end - chunk
				if lo >= len(refs) {
					return
				}
				errs, err := leader.AckBatch(context.Background(), refs[lo:min(end, len(refs))])
				if err != nil {
					b.Error(err)
					return
				}
				for _, err := range errs {
					if err != nil {
						b.Error(err)
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	e1, c1, w1 := proposerStats(c)
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "acks/s")
	b.ReportMetric(1000*float64(c1-c0)/float64(b.N), "commands/1000acks")
	b.ReportMetric(1000*float64(e1-e0)/float64(b.N), "entries/1000acks")
	b.ReportMetric(1000*float64(w1-w0)/float64(b.N), "disk-writes/1000acks")
	var left int
	now := leader.FSM().Now()
	_ = leader.Read(context.Background(), true, func(e engine.View) error {
		st, err := e.QueueStats(now, queue)
		left = st.Reserved
		return err
	})
	if left != 0 {
		b.Fatalf("%d jobs still reserved after the acks", left)
	}
}
