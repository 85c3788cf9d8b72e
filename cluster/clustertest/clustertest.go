// Package clustertest runs in-process sepp clusters for tests: real
// cluster.Nodes with their log stores in t.TempDir(), on loopback TCP or
// on raft's in-memory transport where a test needs to cut the network.
// Helpers fail through t and log through t.Log, so only failing tests print.
package clustertest

import (
	"context"
	"fmt"
	"net"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"

	"github.com/sepp-io/sepp/cluster"
	"github.com/sepp-io/sepp/engine"
)

// Option changes how New builds a cluster.
type Option func(*options)

type options struct {
	inmem     bool
	listen    bool
	configure func(i int, cfg *cluster.Config)
}

// WithInmemTransport connects the nodes with raft's in-memory transport, so
// that Partition and Heal can cut and restore links.
func WithInmemTransport() Option { return func(o *options) { o.inmem = true } }

// WithGRPCListeners opens a loopback listener for every node before the
// nodes start and names its address as the node's gRPC address in every
// node's configuration, so a test can serve the API on Listener(i) and a
// follower names the leader's real address. rpctest.ServeCluster serves on
// them. WithConfig still runs after, and may change the addresses.
func WithGRPCListeners() Option { return func(o *options) { o.listen = true } }

// WithConfig lets a test adjust node i's configuration before it starts.
func WithConfig(fn func(i int, cfg *cluster.Config)) Option {
	return func(o *options) { o.configure = fn }
}

// Cluster is a set of in-process nodes.
type Cluster struct {
	t     testing.TB
	opts  options
	log   *testLog
	mu    sync.Mutex
	slots []*slot
	// listeners are the gRPC listeners of WithGRPCListeners, by node.
	listeners []net.Listener
}

type slot struct {
	cfg       cluster.Config
	node      *cluster.Node // nil while killed
	transport *raft.InmemTransport
	addr      raft.ServerAddress
	isolated  bool
	// held is the raft listener opened when the address was chosen, kept
	// open until the node's first start takes it (TCP transport only).
	held net.Listener
}

// TestConfig is DefaultConfig with timeouts that survive a loaded CI machine
// running with -race, small snapshot thresholds, and a leader that asks its
// members their facts again within a fraction of a second (the tests of
// upgrades and memory budgets would otherwise wait out seconds per round).
func TestConfig() cluster.Config {
	cfg := cluster.DefaultConfig()
	cfg.HeartbeatTimeout = 300 * time.Millisecond
	cfg.ElectionTimeout = 300 * time.Millisecond
	cfg.LeaderLeaseTimeout = 300 * time.Millisecond
	cfg.LeaseGrace = time.Second
	cfg.TickMaxWait = 20 * time.Millisecond
	cfg.SnapshotInterval = 50 * time.Millisecond
	cfg.MemberQuestions.Retry = 100 * time.Millisecond
	cfg.MemberQuestions.Recheck = 250 * time.Millisecond
	return cfg
}

// New starts an n-node cluster bootstrapped from static peers and waits for
// a leader. Nodes are named n0..n(n-1); every node is shut down at cleanup.
func New(t testing.TB, n int, opts ...Option) *Cluster {
	t.Helper()
	c := &Cluster{t: t, log: newTestLog(t)}
	for _, o := range opts {
		o(&c.opts)
	}
	t.Cleanup(c.log.close) // runs after the nodes' cleanup below
	addrs := make([]string, n)
	held := make([]net.Listener, n)
	for i := range addrs {
		if c.opts.inmem {
			addrs[i] = fmt.Sprintf("inmem-n%d", i)
		} else {
			held[i], addrs[i] = holdLoopbackAddr(t)
		}
	}
	grpcAddrs := make([]string, n)
	for i := range grpcAddrs {
		grpcAddrs[i] = fmt.Sprintf("grpc-n%d:7000", i)
	}
	if c.opts.listen {
		c.listeners = make([]net.Listener, n)
		for i := range c.listeners {
			l, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatalf("clustertest: listen: %v", err)
			}
			c.listeners[i], grpcAddrs[i] = l, l.Addr().String()
		}
		// A listener no server took is closed here; closing one a server
		// already stopped only returns an error.
		t.Cleanup(func() {
			for _, l := range c.listeners {
				_ = l.Close()
			}
		})
	}
	for i := 0; i < n; i++ {
		cfg := TestConfig()
		cfg.NodeID = fmt.Sprintf("n%d", i)
		cfg.RaftBindAddr = addrs[i]
		cfg.GRPCAddr = grpcAddrs[i]
		cfg.HTTPAddr = fmt.Sprintf("http-n%d:8000", i)
		cfg.DataDir = t.TempDir()
		cfg.Bootstrap = true
		for j := 0; j < n; j++ {
			if j != i {
				cfg.Peers = append(cfg.Peers, cluster.NodeInfo{
					ID: fmt.Sprintf("n%d", j), RaftAddr: addrs[j],
					GRPCAddr: grpcAddrs[j], HTTPAddr: fmt.Sprintf("http-n%d:8000", j),
				})
			}
		}
		held[i] = c.configure(i, &cfg, held[i])
		c.slots = append(c.slots, &slot{cfg: cfg, addr: raft.ServerAddress(addrs[i]), held: held[i]})
	}
	t.Cleanup(c.shutdownAll)
	for i := range c.slots {
		c.start(i)
	}
	c.WaitLeader()
	return c
}

// AddNode starts a node that is not part of the static configuration
// (Bootstrap off), ready to be joined; it returns its index.
func (c *Cluster) AddNode() int {
	c.t.Helper()
	i := len(c.slots)
	cfg := TestConfig()
	cfg.NodeID = fmt.Sprintf("n%d", i)
	var held net.Listener
	if c.opts.inmem {
		cfg.RaftBindAddr = fmt.Sprintf("inmem-n%d", i)
	} else {
		held, cfg.RaftBindAddr = holdLoopbackAddr(c.t)
	}
	cfg.GRPCAddr = fmt.Sprintf("grpc-n%d:7000", i)
	cfg.DataDir = c.t.TempDir()
	cfg.Bootstrap = false
	held = c.configure(i, &cfg, held)
	c.mu.Lock()
	c.slots = append(c.slots, &slot{cfg: cfg, addr: raft.ServerAddress(cfg.RaftBindAddr), held: held})
	c.mu.Unlock()
	c.start(i)
	return i
}

func (c *Cluster) start(i int) {
	c.t.Helper()
	c.mu.Lock()
	s := c.slots[i]
	cfg := s.cfg
	cfg.Logger = hclog.New(&hclog.LoggerOptions{
		Name:   "",
		Level:  testLogLevel(),
		Output: c.log,
	})
	if c.opts.inmem {
		_, tr := raft.NewInmemTransport(s.addr)
		s.transport = tr
		for _, other := range c.slots {
			if other != s && other.node != nil && other.transport != nil && !other.isolated {
				tr.Connect(other.addr, other.transport)
				other.transport.Connect(s.addr, tr)
			}
		}
		cfg.Transport = tr
	}
	if ln := s.held; ln != nil {
		s.held = nil
		if cfg.Transport == nil && cfg.StreamLayer == nil && cfg.RaftBindAddr == ln.Addr().String() {
			cfg.StreamLayer = heldStream{ln}
		} else {
			_ = ln.Close() // the test's configure chose another transport
		}
	}
	c.mu.Unlock()
	node, err := cluster.NewNode(cfg)
	if err != nil {
		c.t.Fatalf("clustertest: start n%d: %v", i, err)
	}
	c.mu.Lock()
	s.node = node
	c.mu.Unlock()
}

// Listener returns node i's gRPC listener (WithGRPCListeners only).
func (c *Cluster) Listener(i int) net.Listener {
	c.t.Helper()
	if i >= len(c.listeners) {
		c.t.Fatalf("clustertest: no gRPC listener for n%d: start the cluster WithGRPCListeners", i)
	}
	return c.listeners[i]
}

// GRPCAddrs returns every node's gRPC address as the configurations name
// it, by node index.
func (c *Cluster) GRPCAddrs() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	addrs := make([]string, len(c.slots))
	for i, s := range c.slots {
		addrs[i] = s.cfg.GRPCAddr
	}
	return addrs
}

// Node returns node i (nil while killed).
func (c *Cluster) Node(i int) *cluster.Node {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.slots[i].node
}

// Config returns node i's configuration.
func (c *Cluster) Config(i int) cluster.Config {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.slots[i].cfg
}

// Len is the number of nodes, killed ones included.
func (c *Cluster) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.slots)
}

// Alive returns the indexes of running nodes.
func (c *Cluster) Alive() []int {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []int
	for i, s := range c.slots {
		if s.node != nil {
			out = append(out, i)
		}
	}
	return out
}

// WaitLeader waits (up to 10s) until a running, reachable node leads and
// serves linearizable reads, and returns its index.
func (c *Cluster) WaitLeader() int {
	c.t.Helper()
	return c.WaitLeaderAmong(c.Alive())
}

// WaitLeaderAmong is WaitLeader restricted to the given nodes (the majority
// side of a partition).
func (c *Cluster) WaitLeaderAmong(candidates []int) int {
	c.t.Helper()
	leader := -1
	WaitFor(c.t, 10*time.Second, "a leader among "+fmt.Sprint(candidates), func() bool {
		for _, i := range candidates {
			n := c.Node(i)
			if n == nil || !n.IsLeader() {
				continue
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			err := n.Read(ctx, false, nilRead)
			cancel()
			if err == nil {
				leader = i
				return true
			}
		}
		return false
	})
	return leader
}

// Kill stops node i without handing over leadership, as a crash would.
func (c *Cluster) Kill(i int) {
	c.t.Helper()
	c.mu.Lock()
	n := c.slots[i].node
	c.slots[i].node = nil
	c.mu.Unlock()
	if n == nil {
		c.t.Fatalf("clustertest: kill n%d: not running", i)
	}
	if err := n.Close(); err != nil {
		c.t.Logf("clustertest: kill n%d: %v", i, err)
	}
}

// Stop shuts node i down gracefully (a leader hands over leadership first).
func (c *Cluster) Stop(i int) {
	c.t.Helper()
	c.mu.Lock()
	n := c.slots[i].node
	c.slots[i].node = nil
	c.mu.Unlock()
	if n == nil {
		c.t.Fatalf("clustertest: stop n%d: not running", i)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := n.Shutdown(ctx); err != nil {
		c.t.Logf("clustertest: stop n%d: %v", i, err)
	}
}

// Restart starts a killed node again from its data directory.
func (c *Cluster) Restart(i int) {
	c.t.Helper()
	if c.Node(i) != nil {
		c.t.Fatalf("clustertest: restart n%d: still running", i)
	}
	c.start(i)
}

// Partition cuts every link between the given nodes and the rest (in-memory
// transport only). The isolated nodes keep running.
func (c *Cluster) Partition(isolated ...int) {
	c.t.Helper()
	if !c.opts.inmem {
		c.t.Fatal("clustertest: Partition needs WithInmemTransport")
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, i := range isolated {
		c.slots[i].isolated = true
	}
	for _, a := range c.slots {
		for _, b := range c.slots {
			if a != b && a.isolated != b.isolated && a.transport != nil {
				a.transport.Disconnect(b.addr)
			}
		}
	}
}

// Heal restores every link between running nodes.
func (c *Cluster) Heal() {
	c.t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, s := range c.slots {
		s.isolated = false
	}
	for _, a := range c.slots {
		for _, b := range c.slots {
			if a != b && a.node != nil && b.node != nil && a.transport != nil && b.transport != nil {
				a.transport.Connect(b.addr, b.transport)
			}
		}
	}
}

// RequireSameDigest waits (up to 10s) until every running node has applied
// the same state, and fails naming each node's digest if they never agree.
func (c *Cluster) RequireSameDigest() {
	c.t.Helper()
	var last string
	ok := poll(10*time.Second, func() bool {
		var digests []string
		same := true
		for _, i := range c.Alive() {
			n := c.Node(i)
			if n == nil {
				continue
			}
			d := fmt.Sprintf("n%d=%x@%d", i, n.FSM().Digest(), n.FSM().AppliedIndex())
			digests = append(digests, d)
			if len(digests) > 1 && digestOf(d) != digestOf(digests[0]) {
				same = false
			}
		}
		last = strings.Join(digests, " ")
		return same
	})
	if !ok {
		c.t.Fatalf("clustertest: replicas never converged: %s", last)
	}
}

func digestOf(s string) string {
	s = s[strings.Index(s, "=")+1:]
	return s[:strings.Index(s, "@")]
}

func (c *Cluster) shutdownAll() {
	for _, i := range c.Alive() {
		if n := c.Node(i); n != nil {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			_ = n.Shutdown(ctx)
			cancel()
		}
	}
}

// WaitFor polls cond every few milliseconds until it holds or timeout
// passes, then fails the test naming what it waited for.
func WaitFor(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	if !poll(timeout, cond) {
		t.Fatalf("clustertest: timed out after %s waiting for %s", timeout, what)
	}
}

func poll(timeout time.Duration, cond func() bool) bool {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for {
		if cond() {
			return true
		}
		select {
		case <-deadline.C:
			return cond()
		case <-tick.C:
		}
	}
}

// holdLoopbackAddr opens a raft listener on a free loopback port and keeps
// it open for the node's first start. Every node's address must be known
// before any starts (each names the others in its bootstrap peers); a port
// picked, closed and bound again later was taken in between by another
// package's test running beside it, one CI run in a few ("bind: address
// already in use"). A restarted node binds its address again, as a real one
// does.
func holdLoopbackAddr(t testing.TB) (net.Listener, string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("clustertest: reserve a port: %v", err)
	}
	t.Cleanup(func() { _ = ln.Close() }) // a no-op once the node closed it
	return ln, ln.Addr().String()
}

// configure runs the test's configure option, if any, on node i's config
// and returns the raft listener to hold for the node's start. The configure
// may bind the address itself (a TLS stream layer), so held is let go for
// that moment and the address held again only if the node is to listen on
// it plainly after all; nil if it is gone (the node's start then binds it
// and says so if it cannot).
func (c *Cluster) configure(i int, cfg *cluster.Config, held net.Listener) net.Listener {
	c.t.Helper()
	if c.opts.configure == nil {
		return held
	}
	addr := cfg.RaftBindAddr
	if held != nil {
		_ = held.Close()
	}
	c.opts.configure(i, cfg)
	if c.opts.inmem || cfg.Transport != nil || cfg.StreamLayer != nil || cfg.RaftBindAddr != addr {
		return nil
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil
	}
	c.t.Cleanup(func() { _ = ln.Close() })
	return ln
}

// heldStream is a raft stream layer over a listener opened in advance; it
// dials as the node's own TCP stream layer does.
type heldStream struct{ net.Listener }

func (h heldStream) Dial(address raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	return net.DialTimeout("tcp", string(address), timeout)
}

// testLog writes hclog output to t.Log until the test's cleanup ends, after
// which late lines from stopping goroutines are dropped instead of panicking.
type testLog struct {
	mu     sync.Mutex
	t      testing.TB
	closed bool
}

func newTestLog(t testing.TB) *testLog {
	t.Helper()
	return &testLog{t: t}
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

// testLogLevel is Info unless SEPP_TEST_LOG names another hclog level.
func testLogLevel() hclog.Level {
	if v := os.Getenv("SEPP_TEST_LOG"); v != "" {
		return hclog.LevelFromString(v)
	}
	return hclog.Info
}

func nilRead(engine.View) error { return nil }
