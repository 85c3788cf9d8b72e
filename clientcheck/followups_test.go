package clientcheck_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sepp-io/sepp/client"
	"github.com/sepp-io/sepp/cluster"
	"github.com/sepp-io/sepp/cluster/clustertest"
	"github.com/sepp-io/sepp/fsm"
	"github.com/sepp-io/sepp/rpc"
	"github.com/sepp-io/sepp/rpc/rpctest"
)

// followUpsCluster is a three-node cluster over gRPC whose members say
// they apply this binary's command versions, as sepp serve's do.
func followUpsCluster(t *testing.T) *client.Client {
	t.Helper()
	if testing.Short() {
		t.Skip("starts a three-node cluster")
	}
	nodes := rpctest.ServeCluster(t, 3, func(int) rpc.Options { return rpc.Options{MaxReserveWait: 200 * time.Millisecond} },
		clustertest.WithConfig(func(_ int, cfg *cluster.Config) {
			cfg.PeerCommandVersion = func(context.Context, cluster.NodeInfo) (uint32, error) { return fsm.CommandVersion, nil }
			// A lease that lapses is taken back at once (the leader's
			// expiry tick), so the lost-lease case needs no long wait.
			cfg.Engine.Limits.DefaultLease = time.Second
			cfg.Engine.Limits.RetryDelay = 10 * time.Millisecond // a refused follow-up's job runs again at once
		}))
	return newClient(t, nodes.Addrs(), client.WithRetryTimeout(20*time.Second), client.WithBackoff(5*time.Millisecond, 100*time.Millisecond))
}

// TestClient_AckWithFollowUps: the ack and its follow-ups through a real
// cluster: the follow-ups' results (a generated key, a duplicate of a held
// key), the follow-ups readable and the acked job gone; a bad follow-up is
// ErrInvalidArgument naming follow_ups[i] with the job still reserved; a
// lease lost before the ack is ErrLeaseLost and no follow-up exists.
func TestClient_AckWithFollowUps(t *testing.T) {
	c := followUpsCluster(t)
	ctx := testContext(t)

	held, err := c.Enqueue(ctx, client.NewEnqueueRequest("next", "t").WithIdempotencyKey("held"))
	if err != nil {
		t.Fatal(err)
	}
	first, err := c.Enqueue(ctx, client.NewEnqueueRequest("work", "t"))
	if err != nil {
		t.Fatal(err)
	}
	ds, err := c.Reserve(ctx, "work", client.ReserveOptions{WorkerID: "w", Lease: time.Minute, Wait: 5 * time.Second})
	if err != nil || len(ds) != 1 {
		t.Fatalf("reserve: %v, %v", ds, err)
	}
	bad := []*client.EnqueueRequest{client.NewEnqueueRequest("next", "t"), client.NewEnqueueRequest("next", "t").WithPriority(client.Priority(10))}
	if _, err := c.AckWithFollowUps(ctx, ds[0].Ctx, nil, bad); !errors.Is(err, client.ErrInvalidArgument) || !strings.Contains(err.Error(), "follow_ups[1]") {
		t.Fatalf("a bad follow-up: %v, want ErrInvalidArgument naming follow_ups[1]", err)
	}
	if job, err := c.GetJob(ctx, first.JobID, false); err != nil || job.State != client.StateReserved {
		t.Fatalf("the job after a refused ack: %+v, %v: want reserved", job.State, err)
	}

	res, err := c.AckWithFollowUps(ctx, ds[0].Ctx, nil, []*client.EnqueueRequest{
		client.NewEnqueueRequest("next", "step-2").WithPayload([]byte("p")),
		client.NewEnqueueRequest("next", "t").WithIdempotencyKey("held"),
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 2 || res[0].Duplicate || res[0].IdempotencyKey == "" || res[0].State != client.StateReady ||
		!res[1].Duplicate || res[1].JobID != held.JobID {
		t.Fatalf("follow-ups %+v: want a new job with a generated key and a duplicate of %d", res, held.JobID)
	}
	if job, err := c.GetJob(ctx, res[0].JobID, false); err != nil || job.Type != "step-2" || string(job.Payload) != "p" {
		t.Fatalf("follow-up 0: %+v, %v", job, err)
	}
	if _, err := c.GetJob(ctx, first.JobID, false); !errors.Is(err, client.ErrNotFound) {
		t.Fatalf("the acked job: %v, want ErrNotFound", err)
	}

	// A lease lost before the ack: the lease lapses (a second), the job
	// is taken back; the ack with follow-ups fails and enqueues nothing.
	if _, err := c.Enqueue(ctx, client.NewEnqueueRequest("work", "t")); err != nil {
		t.Fatal(err)
	}
	ds, err = c.Reserve(ctx, "work", client.ReserveOptions{WorkerID: "w", Lease: time.Second, Wait: 5 * time.Second})
	if err != nil || len(ds) != 1 {
		t.Fatalf("reserve: %v, %v", ds, err)
	}
	waitFor(t, "the lease to lapse", func() bool {
		job, err := c.GetJob(ctx, ds[0].Ctx.JobID, false)
		return err == nil && job.State != client.StateReserved
	})
	before := queueStats(t, c, "next")
	_, err = c.AckWithFollowUps(ctx, ds[0].Ctx, nil, []*client.EnqueueRequest{client.NewEnqueueRequest("next", "never")})
	if !errors.Is(err, client.ErrLeaseLost) {
		t.Fatalf("ack after the lease lapsed: %v, want ErrLeaseLost", err)
	}
	if after := queueStats(t, c, "next"); after.Ready != before.Ready || after.Ready != 2 {
		t.Fatalf("queue next holds %d ready jobs after the lost lease's ack, want %d", after.Ready, before.Ready)
	}
}

// TestWorker_FollowUps: a Worker's handler adds follow-ups to its delivery
// and they are enqueued with its ack: a chain of steps runs through one
// worker. A follow-up the server refuses (a unique key another job holds,
// with refuse) leaves the job uncompleted: the refusal is reported and the
// job runs again, this time without it.
func TestWorker_FollowUps(t *testing.T) {
	c := followUpsCluster(t)
	ctx := testContext(t)
	if _, err := c.Enqueue(ctx, client.NewEnqueueRequest("chain", "holder").WithUnique(client.UniqueOptions{Key: "taken"}).WithScheduledAt(time.Now().Add(time.Hour))); err != nil {
		t.Fatal(err)
	}

	var (
		mu       sync.Mutex
		reported []error
		attempts = map[string]int{}
	)
	done := make(chan string, 4)
	w := client.NewWorker(c, client.WorkerOptions{WorkerID: "w", OnError: func(err error) {
		mu.Lock()
		defer mu.Unlock()
		reported = append(reported, err)
		t.Logf("reported: %v", err)
	}})
	w.Handle("chain", "step-1", func(_ context.Context, d *client.Delivery) error {
		mu.Lock()
		attempts["step-1"]++
		n := attempts["step-1"]
		mu.Unlock()
		d.AddFollowUp(client.NewEnqueueRequest("chain", "step-2").WithPayload([]byte("from step 1")))
		if n == 1 {
			d.AddFollowUp(client.NewEnqueueRequest("chain", "t").WithUnique(client.UniqueOptions{Key: "taken", Refuse: true}))
		}
		return nil
	})
	w.Handle("chain", "step-2", func(_ context.Context, d *client.Delivery) error {
		done <- string(d.Job.Payload)
		return nil
	})
	if _, err := c.Enqueue(ctx, client.NewEnqueueRequest("chain", "step-1")); err != nil {
		t.Fatal(err)
	}
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	select {
	case got := <-done:
		if got != "from step 1" {
			t.Fatalf("step 2 got payload %q", got)
		}
	case <-ctx.Done():
		t.Fatal("step 2 never ran")
	}
	if err := w.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if attempts["step-1"] != 2 {
		t.Fatalf("step 1 ran %d times, want 2 (its first follow-ups refused)", attempts["step-1"])
	}
	if len(reported) != 1 || !errors.Is(reported[0], client.ErrAlreadyExists) || !strings.Contains(reported[0].Error(), "follow-ups refused") {
		t.Fatalf("reported %v, want the one refusal", reported)
	}
	if len(done) != 0 {
		t.Fatalf("step 2 ran %d more times: the refused ack enqueued it", len(done))
	}
}

// TestClient_AckWithFollowUps_Traced: a client's Tracing gets one send for
// an ack's follow-ups, and each follow-up without a trace context of its
// own carries the one it returned; one with its own keeps it.
func TestClient_AckWithFollowUps_Traced(t *testing.T) {
	t.Parallel()
	n := startNode(t, "n1", nil)
	rec := &recordingTracing{processed: map[uint64]*client.TraceContext{}, outcomes: map[uint64]string{}}
	c := newClient(t, []string{n.addr}, client.WithTracing(rec))
	ctx := testContext(t)
	plain := newClient(t, []string{n.addr})
	if _, err := plain.Enqueue(ctx, client.NewEnqueueRequest("work", "t")); err != nil {
		t.Fatal(err)
	}
	ds, err := plain.Reserve(ctx, "work", client.ReserveOptions{WorkerID: "w"})
	if err != nil || len(ds) != 1 {
		t.Fatalf("reserve: %v, %v", ds, err)
	}
	own := &client.TraceContext{Traceparent: "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}
	res, err := c.AckWithFollowUps(ctx, ds[0].Ctx, nil, []*client.EnqueueRequest{
		client.NewEnqueueRequest("next", "t"),
		client.NewEnqueueRequest("next", "t").WithTraceContext(*own),
	})
	if err != nil {
		t.Fatal(err)
	}
	rec.mu.Lock()
	sends := len(rec.sends)
	rec.mu.Unlock()
	if sends != 1 {
		t.Fatalf("%d sends traced, want 1 for the follow-ups", sends)
	}
	for i, want := range []string{"00-00000000000000000000000000000001-0000000000000001-01", own.Traceparent} {
		job, err := c.GetJob(ctx, res[i].JobID, false)
		if err != nil || job.TraceContext == nil || job.TraceContext.Traceparent != want {
			t.Fatalf("follow-up %d: trace context %+v (%v), want %s", i, job.TraceContext, err, want)
		}
	}
}
