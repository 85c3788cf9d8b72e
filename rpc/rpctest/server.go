package rpctest

import (
	"errors"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/sepp-io/sepp/cluster"
	"github.com/sepp-io/sepp/engine"
	seppv1 "github.com/sepp-io/sepp/proto/sepp/v1"
	"github.com/sepp-io/sepp/rpc"
)

// Serve starts an API server (gRPC, Connect, gRPC-Web) for b on 127.0.0.1:0 and returns its address.
// The server stops (and its Serve goroutine ends) when the test cleans up.
// A zero opts.Logger logs to t.Log, so only failing tests print.
func Serve(t testing.TB, b rpc.Backend, opts rpc.Options) string {
	t.Helper()
	if opts.Logger == nil {
		opts.Logger = TestLogger(t)
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("rpctest: listen: %v", err)
	}
	// The API port as sepp serve runs it: gRPC natively, Connect and
	// gRPC-Web through vanguard.
	srv, err := rpc.NewAPIServer(rpc.NewGRPCServer(b, opts), rpc.APIOptions{MaxMessageBytes: opts.MaxMessageBytes, Logger: opts.Logger})
	if err != nil {
		t.Fatalf("rpctest: %v", err)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(lis) }()
	t.Cleanup(func() {
		srv.Stop()
		if err := <-served; err != nil && !errors.Is(err, grpc.ErrServerStopped) {
			t.Errorf("rpctest: serve: %v", err)
		}
	})
	return lis.Addr().String()
}

// Dial connects to addr without TLS; the connection closes at cleanup.
func Dial(t testing.TB, addr string) *grpc.ClientConn {
	t.Helper()
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatalf("rpctest: dial %s: %v", addr, err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return conn
}

// Env is a served LocalBackend with a manual clock and connected clients.
type Env struct {
	Backend *LocalBackend
	Clock   *Clock
	Addr    string
	Conn    *grpc.ClientConn
	Queue   seppv1.QueueServiceClient
	Admin   seppv1.AdminServiceClient
	Cluster seppv1.ClusterServiceClient
}

// Epoch is where an Env's clock starts.
var Epoch = time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)

// Start serves a fresh LocalBackend running cfg (nil: engine.DefaultLimits
// and no queues) with a manual clock at Epoch. opts.NowFunc, when nil, is
// set to the same clock.
func Start(t testing.TB, cfg *engine.Config, opts rpc.Options) *Env {
	t.Helper()
	c := engine.Config{Limits: engine.DefaultLimits()}
	if cfg != nil {
		c = *cfg
	}
	clock := NewClock(Epoch)
	b, err := NewLocalBackend(c, cluster.NodeInfo{ID: "node-1", RaftAddr: "127.0.0.1:7000"}, clock.Now)
	if err != nil {
		t.Fatal(err)
	}
	if opts.NowFunc == nil {
		opts.NowFunc = clock.Now
	}
	addr := Serve(t, b, opts)
	conn := Dial(t, addr)
	return &Env{
		Backend: b,
		Clock:   clock,
		Addr:    addr,
		Conn:    conn,
		Queue:   seppv1.NewQueueServiceClient(conn),
		Admin:   seppv1.NewAdminServiceClient(conn),
		Cluster: seppv1.NewClusterServiceClient(conn),
	}
}

// TestLogger returns an hclog.Logger writing to t.Log.
func TestLogger(t testing.TB) hclog.Logger {
	t.Helper()
	return hclog.New(&hclog.LoggerOptions{
		Name:   t.Name(),
		Level:  hclog.Debug,
		Output: testWriter{t},
	})
}

type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Helper()
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

var _ io.Writer = testWriter{}
