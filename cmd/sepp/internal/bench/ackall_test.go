package bench

import (
	"context"
	"errors"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/sepp-io/sepp/client"
	"github.com/sepp-io/sepp/cluster"
	"github.com/sepp-io/sepp/engine"
	"github.com/sepp-io/sepp/rpc"
	"github.com/sepp-io/sepp/rpc/rpctest"
)

// ackAll reports each delivery that took effect, counts the ones whose
// lost answer was retried into "lease lost" as done, and returns the first
// real failure only after every other delivery had its answer.
func TestRunner_AckAll(t *testing.T) {
	t.Parallel()
	const n = 6
	tests := []struct {
		name string
		// loseFirstAnswer applies the first AckBatch and answers
		// Unavailable, as a connection lost after the commit would.
		loseFirstAnswer bool
		stale           []int
		wantErr         error
		wantRetried     int64
	}{
		{name: "AllAcked"},
		{name: "StaleDeliveryFailsAlone", stale: []int{2}, wantErr: client.ErrLeaseLost},
		{name: "LostAnswerCountsAsAcked", loseFirstAnswer: true, wantRetried: n},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var batches atomic.Int32
			intercept := func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
				resp, err := handler(ctx, req)
				if info.FullMethod == "/sepp.v1.QueueService/AckBatch" && batches.Add(1) == 1 && tt.loseFirstAnswer {
					return nil, status.Error(codes.Unavailable, "answer lost")
				}
				return resp, err
			}
			ctx, cli := serveQueue(t, intercept, n)
			ds, err := cli.Reserve(ctx, "q", client.ReserveOptions{Max: n, Lease: time.Minute})
			if err != nil || len(ds) != n {
				t.Fatalf("reserve: %d deliveries, %v", len(ds), err)
			}
			for _, i := range tt.stale {
				ds[i].Ctx.LeaseToken++
			}

			r := &runner{cli: cli}
			var reported []uint64
			err = r.ackAll(ctx, ds, func(d client.Delivery) { reported = append(reported, d.Ctx.JobID) })
			if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil && err != nil) {
				t.Errorf("ackAll: err = %v, want %v", err, tt.wantErr)
			}
			var want []uint64
			for i, d := range ds {
				if !slices.Contains(tt.stale, i) {
					want = append(want, d.Ctx.JobID)
				}
			}
			if !slices.Equal(reported, want) {
				t.Errorf("onAck saw jobs %v, want %v", reported, want)
			}
			if got := r.retriedAcks.Load(); got != tt.wantRetried {
				t.Errorf("retriedAcks = %d, want %d", got, tt.wantRetried)
			}
		})
	}
}

// ackBehind keeps one batch's AckBatch in flight at a time, has every batch
// acked by the time wait returns, and after a batch fails reports it and
// says so through failed.
func TestAckBehind(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name       string
		staleBatch int // -1: none
	}{
		{"every batch acked, one at a time", -1},
		{"a failed batch stops the worker", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var inFlight, maxInFlight atomic.Int32
			intercept := func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
				if info.FullMethod != "/sepp.v1.QueueService/AckBatch" {
					return handler(ctx, req)
				}
				n := inFlight.Add(1)
				defer inFlight.Add(-1)
				for m := maxInFlight.Load(); n > m && !maxInFlight.CompareAndSwap(m, n); m = maxInFlight.Load() {
				}
				return handler(ctx, req)
			}
			const batches, perBatch = 4, 10
			ctx, cli := serveQueue(t, intercept, batches*perBatch)

			r := &runner{cli: cli}
			acks := r.newAckBehind()
			var acked atomic.Int64
			var failures atomic.Int32
			for b := 0; b < batches && !acks.failed.Load(); b++ {
				ds, err := cli.Reserve(ctx, "q", client.ReserveOptions{Max: perBatch, Lease: time.Minute})
				if err != nil || len(ds) != perBatch {
					t.Fatalf("reserve %d: %d deliveries, %v", b, len(ds), err)
				}
				if b == tc.staleBatch {
					ds[0].Ctx.LeaseToken++
				}
				acks.ack(ctx, ds, func(n int) { acked.Add(int64(n)) }, func(error) { failures.Add(1) })
				if b == tc.staleBatch {
					acks.wait() // let the failure land before the loop looks
					<-acks.slot
				}
			}
			acks.wait()

			if got := maxInFlight.Load(); got != 1 {
				t.Errorf("%d AckBatch calls were in flight at once, want 1", got)
			}
			if tc.staleBatch < 0 {
				if acked.Load() != batches*perBatch || failures.Load() != 0 || acks.failed.Load() {
					t.Fatalf("acked %d with %d failures (failed=%v), want all %d and none", acked.Load(), failures.Load(), acks.failed.Load(), batches*perBatch)
				}
				return
			}
			if failures.Load() != 1 || !acks.failed.Load() {
				t.Fatalf("%d failures reported, failed=%v; want the stale batch's one", failures.Load(), acks.failed.Load())
			}
			if want := int64(tc.staleBatch * perBatch); acked.Load() != want {
				t.Fatalf("acked %d before the failure, want the %d of the batches before it", acked.Load(), want)
			}
		})
	}
}

// serveQueue serves a one-node engine through intercept, holding n jobs on
// queue "q", and returns a client of it with a context that ends with t.
func serveQueue(t *testing.T, intercept grpc.UnaryServerInterceptor, n int) (context.Context, *client.Client) {
	t.Helper()
	backend, err := rpctest.NewLocalBackend(engine.DefaultConfig(), cluster.NodeInfo{ID: "n1"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	addr := rpctest.Serve(t, backend, rpc.Options{UnaryInterceptors: []grpc.UnaryServerInterceptor{intercept}})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	cli, err := client.New(ctx, []string{addr}, client.WithBackoff(time.Millisecond, 10*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close() })
	reqs := make([]*client.EnqueueRequest, n)
	for i := range reqs {
		reqs[i] = client.NewEnqueueRequest("q", "t")
	}
	if _, err := cli.EnqueueBatch(ctx, reqs); err != nil {
		t.Fatal(err)
	}
	return ctx, cli
}
