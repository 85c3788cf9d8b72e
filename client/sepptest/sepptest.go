package sepptest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	"google.golang.org/grpc"

	"github.com/sepp-io/sepp/client"
	"github.com/sepp-io/sepp/cluster"
	"github.com/sepp-io/sepp/cluster/clustertest"
	"github.com/sepp-io/sepp/config"
	"github.com/sepp-io/sepp/engine"
	"github.com/sepp-io/sepp/rpc"
)

// Option changes how Start and NewServer run the server.
type Option func(*options)

type options struct {
	toml    string
	log     io.Writer
	dataDir string
}

// WithConfig configures the server with TOML as in a `sepp serve` config
// file: [limits], [storage] and [[queues]] (the node's own keys, such as
// its addresses and data dir, are the server's). For example, to keep dead
// letters and give a queue its own retry policy:
//
//	sepptest.Start(t, sepptest.WithConfig(`
//	[storage]
//	dead_letter_retention_ms = 3600000
//
//	[[queues]]
//	name = "emails"
//	default_max_attempts = 3
//	`))
func WithConfig(toml string) Option { return func(o *options) { o.toml = toml } }

// WithLog sends the server's log to w; Start logs to t.Log by default
// (shown for failing tests and with -v), NewServer discards it.
func WithLog(w io.Writer) Option { return func(o *options) { o.log = w } }

// Server is a single sepp node running in this process.
type Server struct {
	addr    string
	node    *cluster.Node
	grpc    *grpc.Server
	served  chan error
	client  *client.Client
	removeD string // the data dir to remove on Close, if NewServer made it

	closeOnce sync.Once
	closeErr  error
}

// Start runs a server for the test and returns it once it serves; it is
// stopped, and its data removed, when the test ends. Start fails the test
// if the server cannot start (a bad WithConfig, say).
func Start(t testing.TB, opts ...Option) *Server {
	t.Helper()
	tl := &testLog{t: t}
	opts = append([]Option{WithLog(tl), func(o *options) { o.dataDir = t.TempDir() }}, opts...)
	s, err := NewServer(opts...)
	if err != nil {
		t.Fatalf("sepptest: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("sepptest: %v", err)
		}
		tl.close()
	})
	return s
}

// NewServer runs a server and returns it once it serves; Close stops it and
// removes its data. It is Start for code without a testing.T.
func NewServer(opts ...Option) (*Server, error) {
	var o options
	for _, fn := range opts {
		fn(&o)
	}
	ecfg, err := engineConfig(o.toml)
	if err != nil {
		return nil, err
	}
	s := &Server{}
	if o.dataDir == "" {
		dir, err := os.MkdirTemp("", "sepptest-")
		if err != nil {
			return nil, fmt.Errorf("data dir: %w", err)
		}
		o.dataDir, s.removeD = dir, dir
	}
	logOut := o.log
	if logOut == nil {
		logOut = io.Discard
	}
	logger := hclog.New(&hclog.LoggerOptions{Name: "sepp", Level: hclog.Info, Output: logOut})

	lis, err := listen()
	if err != nil {
		s.removeData()
		return nil, err
	}
	s.addr = lis.Addr().String()

	// A cluster of one: Raft, the log store and the state machine are the
	// production ones; only the transport is in memory, as a single node
	// sends nothing over it.
	cfg := clustertest.TestConfig()
	cfg.HeartbeatTimeout, cfg.ElectionTimeout, cfg.LeaderLeaseTimeout = 50*time.Millisecond, 50*time.Millisecond, 50*time.Millisecond
	cfg.DetectLeaderCrash = false
	cfg.NodeID = "sepptest"
	cfg.RaftBindAddr = "sepptest"
	_, cfg.Transport = raft.NewInmemTransport(raft.ServerAddress(cfg.RaftBindAddr))
	cfg.GRPCAddr = s.addr
	cfg.DataDir = o.dataDir
	cfg.Bootstrap = true
	cfg.Engine = ecfg
	cfg.Logger = logger.Named("node")
	node, err := cluster.NewNode(cfg)
	if err != nil {
		_ = lis.Close()
		s.removeData()
		return nil, fmt.Errorf("start node: %w", err)
	}
	s.node = node
	if err := waitLeader(node); err != nil {
		_ = lis.Close()
		_ = s.shutdownNode()
		s.removeData()
		return nil, err
	}
	s.grpc = rpc.NewGRPCServer(node, rpc.Options{Logger: logger.Named("rpc")})
	s.served = make(chan error, 1)
	go func() { s.served <- s.grpc.Serve(lis) }()
	s.client, err = client.New(context.Background(), []string{s.addr})
	if err != nil {
		_ = s.Close()
		return nil, fmt.Errorf("connect: %w", err)
	}
	return s, nil
}

// Addr is the server's gRPC address (127.0.0.1:port), for client.New.
func (s *Server) Addr() string { return s.addr }

// Client is a client connected to the server, closed with it. Tests that
// need client options of their own call client.New with Addr.
func (s *Server) Client() *client.Client { return s.client }

// Close stops the server and removes the data NewServer made; later calls
// return the first call's result. Start's cleanup calls it.
func (s *Server) Close() error {
	s.closeOnce.Do(func() {
		var errs []error
		if s.client != nil {
			_ = s.client.Close()
		}
		if s.grpc != nil {
			s.grpc.Stop()
			if err := <-s.served; err != nil && !errors.Is(err, grpc.ErrServerStopped) {
				errs = append(errs, fmt.Errorf("serve: %w", err))
			}
		}
		if err := s.shutdownNode(); err != nil {
			errs = append(errs, err)
		}
		s.removeData()
		s.closeErr = errors.Join(errs...)
	})
	return s.closeErr
}

func (s *Server) shutdownNode() error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.node.Shutdown(ctx); err != nil {
		return fmt.Errorf("stop node: %w", err)
	}
	return nil
}

func (s *Server) removeData() {
	if s.removeD != "" {
		_ = os.RemoveAll(s.removeD)
	}
}

func listen() (net.Listener, error) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("listen: %w", err)
	}
	return lis, nil
}

// engineConfig reads the queue configuration out of sepp.toml-style TOML.
func engineConfig(toml string) (engine.Config, error) {
	cfg, err := config.Parse([]byte(toml))
	if err != nil {
		return engine.Config{}, fmt.Errorf("WithConfig: %w", err)
	}
	ecfg, err := cfg.EngineConfig()
	if err != nil {
		return engine.Config{}, fmt.Errorf("WithConfig: %w", err)
	}
	return ecfg, nil
}

// waitLeader waits until the node leads and serves linearizable reads.
func waitLeader(node *cluster.Node) error {
	deadline := time.Now().Add(20 * time.Second)
	for {
		if node.IsLeader() {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			err := node.Read(ctx, false, func(engine.View) error { return nil })
			cancel()
			if err == nil {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return errors.New("the node did not become leader within 20s")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// testLog writes the server's log to t.Log until the test's cleanup ends;
// later lines from stopping goroutines are dropped.
type testLog struct {
	mu     sync.Mutex
	t      testing.TB
	closed bool
}

func (l *testLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.closed {
		l.t.Log(strings.TrimRight(string(p), "\n"))
	}
	return len(p), nil
}

func (l *testLog) close() {
	l.mu.Lock()
	l.closed = true
	l.mu.Unlock()
}
