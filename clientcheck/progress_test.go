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

// TestReportProgress_LeaderKilled: progress reported through the Go
// client is replicated state: after the leader that took the report is
// killed, the new leader's GetJob shows it, the worker keeps reporting
// there, and the ack clears it.
func TestReportProgress_LeaderKilled(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a three-node cluster")
	}
	// The members say they apply this binary's command versions, as
	// sepp serve's members answer the leader's facts call.
	nodes := rpctest.ServeCluster(t, 3, func(int) rpc.Options { return rpc.Options{MaxReserveWait: 200 * time.Millisecond} },
		clustertest.WithConfig(func(_ int, cfg *cluster.Config) {
			cfg.PeerCommandVersion = func(context.Context, cluster.NodeInfo) (uint32, error) { return fsm.CommandVersion, nil }
		}))
	c := newClient(t, nodes.Addrs(), client.WithRetryTimeout(20*time.Second), client.WithBackoff(5*time.Millisecond, 100*time.Millisecond))
	ctx := testContext(t)

	if _, err := c.Enqueue(ctx, client.NewEnqueueRequest("progress", "t")); err != nil {
		t.Fatal(err)
	}
	ds, err := c.Reserve(ctx, "progress", client.ReserveOptions{WorkerID: "w", Lease: time.Minute, Wait: 5 * time.Second})
	if err != nil || len(ds) != 1 {
		t.Fatalf("reserve: %v, %v", ds, err)
	}
	jc := ds[0].Ctx
	if ds[0].Job.Progress != nil {
		t.Fatalf("a fresh delivery has progress %+v", ds[0].Job.Progress)
	}
	deadline, err := c.ReportProgress(ctx, jc, 40, "2 of 5 files")
	if err != nil || deadline.IsZero() {
		t.Fatalf("ReportProgress: %v, %v", deadline, err)
	}
	want := client.Progress{Percent: 40, Message: "2 of 5 files"}
	requireProgress(t, c, jc.JobID, &want)

	old := nodes.WaitLeader()
	nodes.Kill(old)
	t.Logf("killed leader n%d; new leader n%d", old, nodes.WaitLeader())
	requireProgress(t, c, jc.JobID, &want)

	want = client.Progress{Percent: 80, Message: "4 of 5 files"}
	if _, err := c.ExtendLeaseWithProgress(ctx, jc, time.Minute, want); err != nil {
		t.Fatalf("a report to the new leader: %v", err)
	}
	requireProgress(t, c, jc.JobID, &want)
	if _, err := c.ExtendLease(ctx, jc, time.Minute); err != nil {
		t.Fatal(err)
	}
	requireProgress(t, c, jc.JobID, &want) // a plain extension keeps it

	if _, err := c.ReportProgress(ctx, jc, 101, ""); !errors.Is(err, client.ErrInvalidArgument) || !strings.Contains(err.Error(), "progress.percent") {
		t.Fatalf("101%%: %v, want ErrInvalidArgument naming progress.percent", err)
	}
	if _, err := c.Nack(ctx, jc, client.DefaultRetry(), "again"); err != nil {
		t.Fatal(err)
	}
	requireProgress(t, c, jc.JobID, nil) // the retry starts without
}

func requireProgress(t *testing.T, c *client.Client, id uint64, want *client.Progress) {
	t.Helper()
	j, err := c.GetJob(testContext(t), id, false)
	if err != nil {
		t.Fatal(err)
	}
	if (j.Progress == nil) != (want == nil) || (want != nil && *j.Progress != *want) {
		t.Fatalf("job %d (%v) progress %+v, want %+v", id, j.State, j.Progress, want)
	}
}

// TestWorker_DeliveryProgress: a handler's Delivery.Progress reaches the
// server with the worker's next lease extension, brought forward to
// ProgressInterval, long before the regular one (Lease/3).
// TestWorker_DeliveryProgressRefused: a server that refuses progress (a
// rolling upgrade) costs the worker its reports, never its lease: each
// refused report is followed by a plain extension, every report is still
// tried, and the refusal is reported once.
func TestWorker_DeliveryProgressRefused(t *testing.T) {
	n := startNode(t, "n1", nil)
	n.backend.setBefore(func(_ context.Context, op string) error {
		if op == "ExtendLease+progress" {
			return cluster.ErrProgressUnsupported
		}
		return nil
	})
	c := newClient(t, []string{n.addr})
	ctx := testContext(t)
	if _, err := c.Enqueue(ctx, client.NewEnqueueRequest("work", "t")); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var refusals []error
	w := client.NewWorker(c, client.WorkerOptions{Lease: time.Minute, ProgressInterval: 5 * time.Millisecond, OnError: func(err error) {
		mu.Lock()
		defer mu.Unlock()
		refusals = append(refusals, err)
	}})
	w.Handle("work", "t", func(ctx context.Context, d *client.Delivery) error {
		for i := range 3 {
			if err := d.Progress(10*(i+1), ""); err != nil {
				return err
			}
			before := n.backend.count("ExtendLease")
			waitFor(t, "a plain extension after the refused report", func() bool { return n.backend.count("ExtendLease") > before })
		}
		return nil
	})
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the job acked", func() bool { return n.backend.count("Ack") == 1 })
	if err := w.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if n.backend.count("ExtendLease+progress") != 3 || len(refusals) != 1 || !errors.Is(refusals[0], client.ErrUnsupported) {
		t.Fatalf("%d reports tried, refusals reported %v: want 3 tried, one ErrUnsupported reported", n.backend.count("ExtendLease+progress"), refusals)
	}
}

func TestWorker_DeliveryProgress(t *testing.T) {
	n := startNode(t, "n1", nil)
	c := newClient(t, []string{n.addr})
	ctx := testContext(t)
	job, err := c.Enqueue(ctx, client.NewEnqueueRequest("work", "t"))
	if err != nil {
		t.Fatal(err)
	}
	seen := make(chan struct{})
	w := client.NewWorker(c, client.WorkerOptions{Lease: time.Minute, ProgressInterval: 10 * time.Millisecond})
	w.Handle("work", "t", func(ctx context.Context, d *client.Delivery) error {
		for pct := 10; pct <= 50; pct += 10 {
			if err := d.Progress(pct, "step"); err != nil {
				return err
			}
		}
		if err := d.Progress(200, ""); !errors.Is(err, client.ErrInvalidArgument) {
			t.Errorf("Progress(200): %v, want ErrInvalidArgument", err)
		}
		select {
		case <-seen:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	})
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = w.Stop(context.Background()) })
	waitFor(t, "the handler's last report on the server", func() bool {
		j, err := c.GetJob(ctx, job.JobID, false)
		return err == nil && j.Progress != nil && *j.Progress == client.Progress{Percent: 50, Message: "step"}
	})
	close(seen)
	if d := (client.Delivery{}); !errors.Is(d.Progress(1, ""), client.ErrUnsupported) {
		t.Fatal("Progress outside a Worker should say to use ReportProgress")
	}
}
