package main

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/sepp-io/sepp/cluster"
	"github.com/sepp-io/sepp/engine"
	"github.com/sepp-io/sepp/fsm"
	"github.com/sepp-io/sepp/rpc"
	"github.com/sepp-io/sepp/rpc/rpctest"
)

// TestAskMemberFacts: a node of this binary answers GetMemberFacts with
// its report; a binary older than the call (one that serves only the
// health service) gives cluster.ErrFactsUnsupported, on which the leader
// asks the health-name question, and that question still works.
func TestAskMemberFacts(t *testing.T) {
	dial := []grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())}
	ask := askMemberFacts(dial)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	backend, err := rpctest.NewLocalBackend(engine.DefaultConfig(), cluster.NodeInfo{ID: "n1"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	addr := rpctest.Serve(t, backend, rpc.Options{})
	f, err := ask(ctx, cluster.NodeInfo{ID: "n1", GRPCAddr: addr})
	if err != nil {
		t.Fatal(err)
	}
	if want := backend.SelfFacts(); f.NodeID != "n1" || f.BinaryVersion != want.BinaryVersion ||
		f.MinCommandVersion != 1 || f.MaxCommandVersion != fsm.CommandVersion || f.GOMAXPROCS != want.GOMAXPROCS || f.Legacy {
		t.Fatalf("facts %+v, want %+v", f, want)
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	old := grpc.NewServer()
	healthpb.RegisterHealthServer(old, health.NewServer())
	go func() { _ = old.Serve(ln) }()
	t.Cleanup(old.Stop)
	oldInfo := cluster.NodeInfo{ID: "old", GRPCAddr: ln.Addr().String()}
	if _, err := ask(ctx, oldInfo); !errors.Is(err, cluster.ErrFactsUnsupported) {
		t.Fatalf("older binary: %v, want ErrFactsUnsupported", err)
	}
	if v, err := askCommandVersion(dial)(ctx, oldInfo); err != nil || v != 1 {
		t.Fatalf("older binary's health names: version %d, %v; want 1", v, err)
	}
}
