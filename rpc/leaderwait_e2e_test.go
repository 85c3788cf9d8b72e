package rpc_test

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/sepp-io/sepp/cluster"
	"github.com/sepp-io/sepp/engine"
	seppv1 "github.com/sepp-io/sepp/proto/sepp/v1"
	"github.com/sepp-io/sepp/rpc"
	"github.com/sepp-io/sepp/rpc/rpctest"
)

// electingBackend knows no leader until the test names one, and counts
// how often the server asked.
type electingBackend struct {
	*rpctest.LocalBackend
	asked atomic.Int64
}

func (b *electingBackend) Leader() cluster.NodeInfo {
	b.asked.Add(1)
	return b.LocalBackend.Leader()
}

// waitAsked waits until the server has asked for the leader n times.
func (b *electingBackend) waitAsked(t *testing.T, n int64) {
	t.Helper()
	deadline := time.Now().Add(testTimeout)
	for b.asked.Load() < n {
		if time.Now().After(deadline) {
			t.Fatalf("the call asked for the leader %d times, want %d", b.asked.Load(), n)
		}
		time.Sleep(time.Millisecond)
	}
}

// A call that finds no leader waits for the election and then names the
// new leader, so the client goes straight there instead of polling.
func TestNoLeader_WaitsAndNamesTheNewLeader(t *testing.T) {
	lb, err := rpctest.NewLocalBackend(engine.DefaultConfig(), cluster.NodeInfo{ID: "n1"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	lb.SetLeader(cluster.NodeInfo{})
	b := &electingBackend{LocalBackend: lb}
	addr := rpctest.Serve(t, b, rpc.Options{LeaderWait: testTimeout})
	qc := seppv1.NewQueueServiceClient(rpctest.Dial(t, addr))

	errc := make(chan error, 1)
	go func() {
		_, err := qc.Enqueue(ctxT(t), &seppv1.EnqueueRequest{Queue: "q", JobType: "t"})
		errc <- err
	}()
	b.waitAsked(t, 1)
	elected := cluster.NodeInfo{ID: "n2", GRPCAddr: "127.0.0.1:1"}
	lb.SetLeader(elected)
	st := requireCode(t, <-errc, codes.Unavailable)
	nl, ok := detail[*seppv1.NotLeader](st)
	if !ok || nl.GetLeaderId() != elected.ID || nl.GetLeaderGrpcAddr() != elected.GRPCAddr {
		t.Fatalf("NotLeader detail = %v, want leader %s at %s", nl, elected.ID, elected.GRPCAddr)
	}
}

// With LeaderWait negative a call that finds no leader answers at once,
// with no leader to name.
func TestNoLeader_NoWaitAnswersAtOnce(t *testing.T) {
	lb, err := rpctest.NewLocalBackend(engine.DefaultConfig(), cluster.NodeInfo{ID: "n1"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	lb.SetLeader(cluster.NodeInfo{})
	addr := rpctest.Serve(t, lb, rpc.Options{LeaderWait: -1})
	qc := seppv1.NewQueueServiceClient(rpctest.Dial(t, addr))
	_, err = qc.Enqueue(ctxT(t), &seppv1.EnqueueRequest{Queue: "q", JobType: "t"})
	st := requireCode(t, err, codes.Unavailable)
	if nl, ok := detail[*seppv1.NotLeader](st); ok {
		t.Fatalf("NotLeader detail %v, want none", nl)
	}
}

// A leader handing its leadership over (a planned transfer) holds a call it
// cannot propose until the new leader is known, and names it; a leader
// elected a moment ago, still busy with its first duties, answers at once.
func TestHandingOver_WaitsAndNamesTheNewLeader(t *testing.T) {
	self := cluster.NodeInfo{ID: "n1"}
	tests := []struct {
		name     string
		err      error
		wantWait bool
	}{
		{"handing over", fmt.Errorf("%w, not proposed", cluster.ErrHandingOver), true},
		{"not ready yet", fmt.Errorf("%w: leader not ready", cluster.ErrNoLeader), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lb, err := rpctest.NewLocalBackend(engine.DefaultConfig(), self, nil)
			if err != nil {
				t.Fatal(err)
			}
			lb.FailWith(func(op string) error {
				if op == "Enqueue" {
					return tt.err
				}
				return nil
			})
			b := &electingBackend{LocalBackend: lb}
			addr := rpctest.Serve(t, b, rpc.Options{LeaderWait: testTimeout})
			qc := seppv1.NewQueueServiceClient(rpctest.Dial(t, addr))

			errc := make(chan error, 1)
			go func() {
				_, err := qc.Enqueue(ctxT(t), &seppv1.EnqueueRequest{Queue: "q", JobType: "t"})
				errc <- err
			}()
			if !tt.wantWait {
				st := requireCode(t, <-errc, codes.Unavailable)
				if nl, ok := detail[*seppv1.NotLeader](st); ok {
					t.Fatalf("NotLeader detail %v, want none: this node still leads", nl)
				}
				return
			}
			// The call waits while this node still leads...
			b.waitAsked(t, 2)
			select {
			case err := <-errc:
				t.Fatalf("answered %v while this node still led", err)
			default:
			}
			// ...and names the new leader once the transfer is done.
			next := cluster.NodeInfo{ID: "n2", GRPCAddr: "127.0.0.1:1"}
			lb.SetLeader(next)
			st := requireCode(t, <-errc, codes.Unavailable)
			nl, ok := detail[*seppv1.NotLeader](st)
			if !ok || nl.GetLeaderId() != next.ID || nl.GetLeaderGrpcAddr() != next.GRPCAddr {
				t.Fatalf("NotLeader detail = %v, want leader %s at %s", nl, next.ID, next.GRPCAddr)
			}
		})
	}
}
