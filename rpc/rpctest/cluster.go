package rpctest

import (
	"errors"
	"sync"
	"testing"

	"google.golang.org/grpc"

	"github.com/sepp-io/sepp/cluster/clustertest"
	"github.com/sepp-io/sepp/rpc"
)

// ServedCluster is an in-process cluster (clustertest) whose every node
// serves the gRPC API on its own loopback listener, as `sepp serve` would:
// the test harness for packages that drive a cluster through the API (rpc,
// client, the CLI).
type ServedCluster struct {
	*clustertest.Cluster
	t       testing.TB
	mu      sync.Mutex
	servers []*grpc.Server
	served  []chan error
}

// ServeCluster starts an n-node cluster with clustertest.New (and its
// options; WithGRPCListeners is implied), serves the gRPC API of node i with
// nodeOpts(i) (nil: rpc.Options{}; a zero Logger logs to t.Log), and stops
// every server at cleanup, before the nodes stop.
func ServeCluster(t testing.TB, n int, nodeOpts func(i int) rpc.Options, clusterOpts ...clustertest.Option) *ServedCluster {
	t.Helper()
	nodes := clustertest.New(t, n, append([]clustertest.Option{clustertest.WithGRPCListeners()}, clusterOpts...)...)
	sc := &ServedCluster{Cluster: nodes, t: t, servers: make([]*grpc.Server, n), served: make([]chan error, n)}
	for i := range n {
		var opts rpc.Options
		if nodeOpts != nil {
			opts = nodeOpts(i)
		}
		if opts.Logger == nil {
			opts.Logger = TestLogger(t)
		}
		srv := rpc.NewGRPCServer(nodes.Node(i), opts)
		done := make(chan error, 1)
		lis := nodes.Listener(i)
		go func() { done <- srv.Serve(lis) }()
		sc.servers[i], sc.served[i] = srv, done
	}
	t.Cleanup(func() {
		for i := range n {
			sc.StopServer(i)
		}
	})
	return sc
}

// Addrs returns the nodes' API addresses, by node index.
func (sc *ServedCluster) Addrs() []string { return sc.GRPCAddrs() }

// StopServer stops node i's API server (dropping its connections) and
// leaves the node running; a second call does nothing.
func (sc *ServedCluster) StopServer(i int) {
	sc.mu.Lock()
	srv, done := sc.servers[i], sc.served[i]
	sc.servers[i] = nil
	sc.mu.Unlock()
	if srv == nil {
		return
	}
	srv.Stop()
	if err := <-done; err != nil && !errors.Is(err, grpc.ErrServerStopped) {
		sc.t.Errorf("rpctest: serve n%d: %v", i, err)
	}
}

// Kill crashes node i: its API server drops every connection and the Raft
// node stops without handing over leadership.
func (sc *ServedCluster) Kill(i int) {
	sc.t.Helper()
	sc.StopServer(i)
	sc.Cluster.Kill(i)
}
