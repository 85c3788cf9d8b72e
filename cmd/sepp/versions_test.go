package main

import (
	"context"
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

func TestAskCommandVersion(t *testing.T) {
	ask := askCommandVersion([]grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	// A sepp node of this binary serves every version it applies.
	backend, err := rpctest.NewLocalBackend(engine.DefaultConfig(), cluster.NodeInfo{ID: "n1"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	addr := rpctest.Serve(t, backend, rpc.Options{})
	if v, err := ask(ctx, cluster.NodeInfo{ID: "n1", GRPCAddr: addr}); err != nil || v != fsm.CommandVersion {
		t.Fatalf("this binary: version %d, %v; want %d", v, err, fsm.CommandVersion)
	}

	// A binary older than command versions answers NotFound for them.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	old := grpc.NewServer()
	healthpb.RegisterHealthServer(old, health.NewServer())
	go func() { _ = old.Serve(ln) }()
	t.Cleanup(old.Stop)
	if v, err := ask(ctx, cluster.NodeInfo{ID: "old", GRPCAddr: ln.Addr().String()}); err != nil || v != 1 {
		t.Fatalf("older binary: version %d, %v; want 1", v, err)
	}

	// Nothing listening: an error, so the leader asks again later.
	ln2, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gone := ln2.Addr().String()
	ln2.Close()
	short, cancel2 := context.WithTimeout(ctx, time.Second)
	defer cancel2()
	if v, err := ask(short, cluster.NodeInfo{ID: "gone", GRPCAddr: gone}); err == nil {
		t.Fatalf("unreachable member: version %d and no error", v)
	}
}
