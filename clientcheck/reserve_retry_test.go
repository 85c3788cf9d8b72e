package clientcheck_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/sepp-io/sepp/client"
	"github.com/sepp-io/sepp/cluster"
	"github.com/sepp-io/sepp/engine"
	"github.com/sepp-io/sepp/rpc"
	"github.com/sepp-io/sepp/rpc/rpctest"
)

// A Worker's reserve applies but its answer is lost, and the retry (same
// request id) reaches the server only after the leases it handed out
// lapsed. The job must still reach a handler, on the attempt it lost,
// and a job on its last attempt must not be dead-lettered unseen.
func TestWorker_ReserveRetriedAfterItsLeasesLapsed(t *testing.T) {
	const lease = 10 * time.Second
	for _, tc := range []struct {
		name        string
		maxAttempts uint32
	}{
		{name: "a job on its last attempt is not dead-lettered unseen", maxAttempts: 1},
		{name: "a job with attempts left does not lose one", maxAttempts: 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clock := rpctest.NewClock(time.Now())
			cfg := engine.DefaultConfig()
			cfg.Limits.DeadLetterRetention = time.Hour
			b, err := rpctest.NewLocalBackend(cfg, cluster.NodeInfo{ID: "n1"}, clock.Now)
			if err != nil {
				t.Fatal(err)
			}
			h := &hookedBackend{LocalBackend: b, calls: make(map[string]int)}
			addr := rpctest.Serve(t, h, rpc.Options{MaxReserveWait: 200 * time.Millisecond, NowFunc: clock.Now})
			c := newClient(t, []string{addr})
			ctx := testContext(t)
			res, err := c.Enqueue(ctx, client.NewEnqueueRequest("q", "t").WithMaxAttempts(tc.maxAttempts))
			if err != nil {
				t.Fatal(err)
			}

			// The first reserve applies; its answer is lost, and the
			// server's clock passes the lease before the retry arrives.
			var once sync.Once
			h.setAfter(func(op string) error {
				var err error
				if op == "Reserve" {
					once.Do(func() {
						clock.Advance(lease + time.Second)
						err = fmt.Errorf("leadership lost after append: %w", cluster.ErrUnknownOutcome)
					})
				}
				return err
			})
			handled := make(chan uint32, 1)
			w := client.NewWorker(c, client.WorkerOptions{Concurrency: 1, Lease: lease, OnError: func(error) {}})
			w.Handle("q", "t", func(ctx context.Context, d *client.Delivery) error {
				if d.Ctx.JobID == res.JobID {
					select {
					case handled <- d.Ctx.Attempt:
					default:
					}
				}
				return nil
			})
			if err := w.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = w.Stop(context.Background()) })

			var attempt uint32
			waitFor(t, "the job to reach the handler or the dead-letter store", func() bool {
				select {
				case attempt = <-handled:
					return true
				default:
				}
				st := queueStats(t, c, "q")
				return st.Dead > 0
			})
			if attempt == 0 {
				t.Fatalf("the job was dead-lettered (%+v) without any handler seeing it", queueStats(t, c, "q"))
			}
			if attempt != 1 {
				t.Fatalf("the handler saw attempt %d, want 1: the lost delivery used up an attempt", attempt)
			}
			if got := h.count("Reserve"); got < 2 {
				t.Fatalf("reserve calls = %d, want the lost one and its retry", got)
			}
		})
	}
}
