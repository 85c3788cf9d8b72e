package clientcheck_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/sepp-io/sepp/client"
	"github.com/sepp-io/sepp/cluster"
	"github.com/sepp-io/sepp/cluster/clustertest"
	"github.com/sepp-io/sepp/rpc"
	"github.com/sepp-io/sepp/rpc/rpctest"
)

// grpcCluster is an in-process three-node Raft cluster with each node
// served over gRPC on loopback, as `sepp serve` would (rpctest.ServeCluster).
type grpcCluster struct {
	t     *testing.T
	nodes *rpctest.ServedCluster
	addrs []string
}

func startGRPCCluster(t *testing.T) *grpcCluster {
	t.Helper()
	nodes := rpctest.ServeCluster(t, 3, func(int) rpc.Options { return rpc.Options{MaxReserveWait: 200 * time.Millisecond} })
	return &grpcCluster{t: t, nodes: nodes, addrs: nodes.Addrs()}
}

// kill crashes node i: its gRPC server drops every connection and the Raft
// node stops without handing over leadership.
func (gc *grpcCluster) kill(i int) { gc.nodes.Kill(i) }

// failoverRun drives a producer and a worker through disrupt and checks
// that every acknowledged enqueue was handled and acked, none twice except
// after a real redelivery.
func failoverRun(t *testing.T, disrupt func(gc *grpcCluster, c *client.Client)) {
	t.Helper()
	if testing.Short() {
		t.Skip("starts a three-node cluster")
	}
	gc := startGRPCCluster(t)
	c := newClient(t, gc.addrs, client.WithRetryTimeout(20*time.Second), client.WithBackoff(5*time.Millisecond, 100*time.Millisecond))
	ctx := testContext(t)

	const (
		producers   = 4
		perProducer = 60
		disruptAt   = producers * perProducer / 3
	)
	var (
		mu        sync.Mutex
		acked     = make(map[uint64]bool)     // job ids the producer was told about
		handled   = make(map[uint64][]uint32) // job id → attempts the handler saw
		ackErrors []error
	)
	w := client.NewWorker(c, client.WorkerOptions{
		Concurrency: 8, Lease: 3 * time.Second, Wait: 100 * time.Millisecond,
		OnError: func(err error) {
			t.Logf("worker: %v", err)
			if errors.Is(err, client.ErrLeaseLost) {
				mu.Lock()
				ackErrors = append(ackErrors, err)
				mu.Unlock()
			}
		},
	})
	w.Handle("orders", "", func(ctx context.Context, d *client.Delivery) error {
		mu.Lock()
		handled[d.Ctx.JobID] = append(handled[d.Ctx.JobID], d.Ctx.Attempt)
		mu.Unlock()
		return nil
	})
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = w.Stop(context.Background()) }()

	var wg sync.WaitGroup
	errs := make(chan error, producers)
	for p := range producers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range perProducer {
				res, err := c.Enqueue(ctx, client.NewEnqueueRequest("orders", "ship").WithPayload([]byte(fmt.Sprintf("%d-%d", p, i))))
				if err != nil {
					errs <- fmt.Errorf("producer %d job %d: %w", p, i, err)
					return
				}
				mu.Lock()
				if acked[res.JobID] {
					errs <- fmt.Errorf("job id %d returned for two enqueues", res.JobID)
				}
				acked[res.JobID] = true
				mu.Unlock()
			}
		}()
	}
	waitFor(t, "a third of the jobs enqueued", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(acked) >= disruptAt
	})
	disrupt(gc, c)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}

	waitFor(t, "every acknowledged job handled", func() bool {
		mu.Lock()
		defer mu.Unlock()
		for id := range acked {
			if len(handled[id]) == 0 {
				return false
			}
		}
		return true
	})
	waitFor(t, "the queue to drain", func() bool {
		st := queueStats(t, c, "orders")
		return st.Ready == 0 && st.Reserved == 0 && st.Scheduled == 0 && st.AckedTotal == st.EnqueuedTotal
	})
	st := queueStats(t, c, "orders")
	mu.Lock()
	defer mu.Unlock()
	if want := uint64(producers * perProducer); st.EnqueuedTotal != want || uint64(len(acked)) != want {
		t.Fatalf("server added %d jobs, producer was told about %d, want %d each: a retry duplicated or lost a job", st.EnqueuedTotal, len(acked), want)
	}
	redelivered := 0
	for id, attempts := range handled {
		if !acked[id] {
			t.Errorf("handler saw job %d, which no producer was told about", id)
		}
		for k := 1; k < len(attempts); k++ {
			// A second run of a job is allowed only as a redelivery after
			// its lease expired, which the server numbers as a new attempt.
			if attempts[k] <= attempts[k-1] {
				t.Errorf("job %d was delivered twice as the same attempt: %v", id, attempts)
			}
		}
		redelivered += len(attempts) - 1
	}
	t.Logf("%d jobs, %d redeliveries after lease expiry, %d lease-lost answers", len(acked), redelivered, len(ackErrors))
}

func TestFailover_LeaderKilled(t *testing.T) {
	failoverRun(t, func(gc *grpcCluster, c *client.Client) {
		old := gc.nodes.WaitLeader()
		gc.t.Logf("killing leader n%d", old)
		gc.kill(old)
		gc.t.Logf("new leader n%d", gc.nodes.WaitLeader())
	})
}

func TestFailover_LeadershipTransferred(t *testing.T) {
	failoverRun(t, func(gc *grpcCluster, c *client.Client) {
		old := gc.nodes.WaitLeader()
		if err := c.TransferLeadership(testContext(gc.t), ""); err != nil {
			gc.t.Fatalf("transfer leadership: %v", err)
		}
		clustertest.WaitFor(gc.t, 10*time.Second, "leadership to move", func() bool {
			n := gc.nodes.Node(old)
			return n == nil || !n.IsLeader()
		})
		gc.t.Logf("leadership moved from n%d to n%d", old, gc.nodes.WaitLeader())
	})
}

// TestCall_LeaderGoneSilentIsLeftForTheNewOne: the node the client sends to
// stops answering without closing its connection (frozen, or cut off) and
// another node names a new leader: the client abandons the attempt and
// retries there instead of waiting out its attempt timeout (an hour here,
// so without the probe the call could only fail with the test's deadline).
func TestCall_LeaderGoneSilentIsLeftForTheNewOne(t *testing.T) {
	silent := startNode(t, "silent", nil)
	follower := startNode(t, "follower", nil)
	leader := startNode(t, "leader", nil)
	// The follower knows the new leader; the silent node and the leader
	// each lead in their own eyes.
	follower.backend.SetLeader(cluster.NodeInfo{ID: "leader", GRPCAddr: leader.addr})
	silent.backend.setBefore(func(ctx context.Context, op string) error {
		<-ctx.Done() // never answers while the caller waits
		return ctx.Err()
	})

	c := newClient(t, []string{silent.addr, follower.addr, leader.addr},
		client.WithAttemptTimeout(time.Hour), client.WithLeaderProbe(50*time.Millisecond))
	res, err := c.Enqueue(testContext(t), client.NewEnqueueRequest("q", "t").WithIdempotencyKey("k1"))
	if err != nil {
		t.Fatalf("enqueue with a silent first node: %v", err)
	}
	if got := leader.backend.count("Enqueue"); got != 1 {
		t.Fatalf("the named leader served %d enqueues, want 1", got)
	}
	if c.Leader() != leader.addr {
		t.Fatalf("client believes %q leads, want %q", c.Leader(), leader.addr)
	}
	if res.JobID == 0 {
		t.Fatal("no job id")
	}

	// A drain is never abandoned for another leader: what the silent node
	// drained would be lost to the caller. It waits on its node.
	drainer := newClient(t, []string{silent.addr, follower.addr, leader.addr},
		client.WithAttemptTimeout(time.Hour), client.WithLeaderProbe(50*time.Millisecond))
	dctx, dcancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer dcancel()
	if _, err := drainer.DrainDeadLetters(dctx, client.DrainOptions{Queue: "q", Max: 10}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("drain through a silent node: %v, want the caller's deadline (the attempt left alone)", err)
	}
	if got := leader.backend.count("DrainDeadLetters") + follower.backend.count("DrainDeadLetters"); got != 0 {
		t.Fatalf("the drain was retried on another node %d times after being abandoned", got)
	}

	// With probing off, the same call waits on the silent node until the
	// caller gives up.
	off := newClient(t, []string{silent.addr}, client.WithAttemptTimeout(time.Hour), client.WithLeaderProbe(0))
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if _, err := off.Enqueue(ctx, client.NewEnqueueRequest("q", "t")); err == nil {
		t.Fatal("a silent node answered")
	}
}
