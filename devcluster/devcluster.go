// Package devcluster starts a local sepp cluster of real processes on
// loopback: each node is a `sepp serve` child with its own config file and
// data dir. `sepp dev`, `sepp bench` and the integration tests use it to get
// nodes they can kill, pause and restart like an operator would.
package devcluster

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	mrand "math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/sepp-io/sepp/config"
	"github.com/sepp-io/sepp/tlsutil"
)

// Options shape a cluster.
type Options struct {
	// Binary is the sepp executable to run; empty uses this process's own.
	Binary string
	// Nodes is the number of nodes (default 3).
	Nodes int
	// Dir holds one sub-folder per node (config, data, log); empty makes a
	// temporary folder that Stop removes.
	Dir string
	// ExtraTOML is appended to every node's config ([limits], [[queues]] ...).
	ExtraTOML string
	// DeadLetterRetention, when positive, keeps dead letters this long
	// ([storage] dead_letter_retention_ms) unless ExtraTOML sets the key
	// itself; zero leaves the server's default (dead jobs dropped).
	DeadLetterRetention time.Duration
	// Output, when set, receives the nodes' logs line by line, prefixed.
	Output io.Writer
	// Host is the loopback address to bind (default 127.0.0.1).
	Host string
	// TLS generates a throwaway CA under Dir/tls and runs every listener
	// over TLS: the gRPC API with client certificates required, the HTTP
	// listener, and mutual TLS between nodes. Cluster.PKI names the files.
	TLS bool
	// GoMaxProcs is each node's GOMAXPROCS. Zero splits the host's
	// CPUs among the nodes (at least one each) unless GOMAXPROCS is set in
	// the environment, which the nodes then inherit; negative leaves every
	// node the Go default (all CPUs). See nodeGoMaxProcs.
	GoMaxProcs int
	// NodeHosts, when set, gives each node its own address (one per node,
	// overriding Host) on which it listens at the fixed ports NodePorts:
	// nodes that each run in their own network namespace (see Launch)
	// cannot have free ports probed from this one, and need none.
	NodeHosts []string
	// Launch, when set, turns a node's command line into the one started
	// (e.g. prefixed by `ip netns exec NS`). The program it names must exec
	// the node in place, so that signals sent to the process reach it.
	Launch func(node int, argv []string) []string
}

// NodePorts are the gRPC, HTTP and Raft ports of every node with
// Options.NodeHosts.
var NodePorts = [3]int{7401, 7402, 7403}

// Node is one member process.
type Node struct {
	ID       string
	GRPCAddr string
	HTTPAddr string
	RaftAddr string
	Dir      string
	Config   string // path of its config file

	// extraTOML is appended to this node's config after the cluster's
	// ExtraTOML (SetNodeTOML).
	extraTOML string

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{}
	err  error
}

// Cluster is a set of running nodes.
type Cluster struct {
	Nodes  []*Node
	opts   Options
	tmpDir bool
	// sessionKey is shared by every node's admin UI.
	sessionKey string
	// PKI holds the generated certificates when Options.TLS is set.
	PKI *tlsutil.DevPKI
	// Restarted is true when Dir held this cluster from an earlier run,
	// whose addresses and data it kept.
	Restarted bool
}

// Start writes the configs and starts every node. It returns once every
// process has started; use WaitServing to wait for the gRPC and HTTP listeners.
func Start(opts Options) (*Cluster, error) {
	if opts.Nodes <= 0 {
		opts.Nodes = 3
	}
	if opts.Host == "" {
		opts.Host = "127.0.0.1"
	}
	if opts.Binary == "" {
		exe, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("devcluster: find own binary: %w", err)
		}
		opts.Binary = exe
	}
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		return nil, fmt.Errorf("devcluster: session key: %w", err)
	}
	c := &Cluster{opts: opts, sessionKey: hex.EncodeToString(key)}
	if opts.Dir == "" {
		d, err := os.MkdirTemp("", "sepp-dev-")
		if err != nil {
			return nil, fmt.Errorf("devcluster: %w", err)
		}
		c.opts.Dir, c.tmpDir = d, true
	}
	earlier, earlierKey, err := earlierNodes(c.opts.Dir, opts.Nodes)
	if err != nil {
		return nil, err
	}
	if earlier != nil {
		// The nodes' raft logs name their peers' addresses, so a cluster
		// restarted in the same folder must listen where it did before.
		c.Nodes, c.Restarted = earlier, true
		if earlierKey != "" {
			c.sessionKey = earlierKey
		}
	} else if len(opts.NodeHosts) > 0 {
		if len(opts.NodeHosts) != opts.Nodes {
			return nil, fmt.Errorf("devcluster: %d node hosts for %d nodes", len(opts.NodeHosts), opts.Nodes)
		}
		for i, h := range opts.NodeHosts {
			id := nodeID(i)
			c.Nodes = append(c.Nodes, &Node{
				ID:       id,
				GRPCAddr: net.JoinHostPort(h, fmt.Sprint(NodePorts[0])),
				HTTPAddr: net.JoinHostPort(h, fmt.Sprint(NodePorts[1])),
				RaftAddr: net.JoinHostPort(h, fmt.Sprint(NodePorts[2])),
				Dir:      filepath.Join(c.opts.Dir, id),
			})
		}
	} else {
		ports, err := freePorts(opts.Host, 3*opts.Nodes)
		if err != nil {
			return nil, err
		}
		for i := 0; i < opts.Nodes; i++ {
			id := nodeID(i)
			c.Nodes = append(c.Nodes, &Node{
				ID:       id,
				GRPCAddr: net.JoinHostPort(opts.Host, fmt.Sprint(ports[3*i])),
				HTTPAddr: net.JoinHostPort(opts.Host, fmt.Sprint(ports[3*i+1])),
				RaftAddr: net.JoinHostPort(opts.Host, fmt.Sprint(ports[3*i+2])),
				Dir:      filepath.Join(c.opts.Dir, id),
			})
		}
	}
	if opts.TLS {
		pki, err := tlsutil.WriteDevPKI(filepath.Join(c.opts.Dir, "tls"), []string{opts.Host}, time.Now(), 30*24*time.Hour)
		if err != nil {
			return nil, fmt.Errorf("devcluster: %w", err)
		}
		c.PKI = &pki
	}
	for _, n := range c.Nodes {
		if err := os.MkdirAll(n.Dir, 0o755); err != nil {
			return nil, fmt.Errorf("devcluster: %w", err)
		}
		n.Config = filepath.Join(n.Dir, "sepp.toml")
		if err := os.WriteFile(n.Config, []byte(c.configFor(n)), 0o644); err != nil {
			return nil, fmt.Errorf("devcluster: %w", err)
		}
	}
	for i := range c.Nodes {
		if err := c.StartNode(i); err != nil {
			_ = c.Stop() // the start error is the one to report
			return nil, err
		}
	}
	return c, nil
}

// nodeGoMaxProcs is the GOMAXPROCS to start a node with, 0 to leave it to
// the environment (see Options.GoMaxProcs and CPUShare).
func nodeGoMaxProcs(asked, nodes, cpus int, env string) int {
	switch {
	case asked > 0:
		return asked
	case asked < 0, env != "":
		return 0
	}
	return CPUShare(cpus, nodes)
}

// CPUShare is the GOMAXPROCS for each of processes Go programs sharing a
// machine of cpus CPUs: an even split, at least one each. By default every
// Go process takes all the CPUs, and processes sharing a machine then fight
// over them: each keeps up to GOMAXPROCS threads spinning for work whenever
// a goroutine wakes. On a 2-core machine three nodes and a client spent a
// fifth of their CPU in the schedulers (findRunnable, futex) and waited on
// each other; with one each, `sepp bench` measured 10-20% more produce and
// mixed throughput and 15-20% less CPU per job. A node deployed alone on
// its machine keeps the default: `sepp serve` does not use this.
func CPUShare(cpus, processes int) int {
	return max(1, cpus/max(processes, 1))
}

func nodeID(i int) string { return fmt.Sprintf("sepp-%d", i+1) }

// earlierNodes reads the nodes of a cluster that ran in dir before, and its
// admin session key, from the configs it left there; nil when dir holds
// none. A folder holding some of the nodes' configs, or more nodes than
// asked for, is an error: fresh nodes beside old ones could not elect.
func earlierNodes(dir string, nodes int) ([]*Node, string, error) {
	var out []*Node
	var missing []string
	var sessionKey string
	for i := 0; i < nodes; i++ {
		id := nodeID(i)
		cfg, err := config.Load(filepath.Join(dir, id, "sepp.toml"))
		if errors.Is(err, fs.ErrNotExist) {
			missing = append(missing, id)
			continue
		}
		if err != nil {
			return nil, "", fmt.Errorf("devcluster: %s holds an earlier cluster's config that does not load: %w", dir, err)
		}
		out = append(out, &Node{
			ID: id, GRPCAddr: cfg.Server.GRPCAddr, HTTPAddr: cfg.Server.HTTPAddr, RaftAddr: cfg.Server.RaftAddr,
			Dir: filepath.Join(dir, id),
		})
		sessionKey = cfg.Admin.SessionKey
	}
	if _, err := os.Stat(filepath.Join(dir, nodeID(nodes), "sepp.toml")); err == nil {
		return nil, "", fmt.Errorf("devcluster: %s holds an earlier cluster of more than %d nodes; start it with its own node count or use another folder", dir, nodes)
	}
	switch {
	case len(out) == 0:
		return nil, "", nil
	case len(missing) > 0:
		return nil, "", fmt.Errorf("devcluster: %s holds an earlier cluster without %s; start it with its own node count or use another folder", dir, strings.Join(missing, ", "))
	}
	return out, sessionKey, nil
}

// DataDir is the node's server.data_dir: its Raft log, stable store,
// snapshots and payload store.
func (n *Node) DataDir() string { return filepath.Join(n.Dir, "data") }

// SetNodeTOML rewrites node i's config with extra appended to the
// cluster's ExtraTOML, for its next start (StartNode); "" restores the
// cluster's config. TOML allows a table once: extra must not repeat a
// table the cluster's ExtraTOML has ([cluster] in either gets the peers).
func (c *Cluster) SetNodeTOML(i int, extra string) error {
	n := c.Nodes[i]
	n.extraTOML = extra
	if err := os.WriteFile(n.Config, []byte(c.configFor(n)), 0o644); err != nil {
		return fmt.Errorf("devcluster: %w", err)
	}
	return nil
}

func (c *Cluster) configFor(n *Node) string {
	var b strings.Builder
	fmt.Fprintf(&b, "[server]\nnode_id = %q\ngrpc_addr = %q\nhttp_addr = %q\nraft_addr = %q\ndata_dir = %q\n\n",
		n.ID, n.GRPCAddr, n.HTTPAddr, n.RaftAddr, n.DataDir())
	var peers strings.Builder
	peers.WriteString("peers = [\n")
	for _, p := range c.Nodes {
		fmt.Fprintf(&peers, "  { id = %q, raft_addr = %q, grpc_addr = %q, http_addr = %q },\n", p.ID, p.RaftAddr, p.GRPCAddr, p.HTTPAddr)
	}
	peers.WriteString("]\n")
	// An extra [cluster] table (other raft timings, say) gets the peers
	// inside it: TOML allows a table only once.
	extra := ""
	for _, e := range []string{c.opts.ExtraTOML, n.extraTOML} {
		if e != "" && !strings.HasSuffix(e, "\n") {
			e += "\n"
		}
		extra += e
	}
	if i := tableBody(extra, "cluster"); i >= 0 {
		extra = extra[:i] + peers.String() + extra[i:]
	} else {
		b.WriteString("[cluster]\n" + peers.String() + "\n")
	}
	// Dead-letter retention goes into an extra [storage] table when there
	// is one (TOML allows a table only once); the extra's own key wins.
	if r := c.opts.DeadLetterRetention; r > 0 && !strings.Contains(extra, "dead_letter_retention_ms") {
		line := fmt.Sprintf("dead_letter_retention_ms = %d\n", r.Milliseconds())
		if i := tableBody(extra, "storage"); i >= 0 {
			extra = extra[:i] + line + extra[i:]
		} else {
			b.WriteString("[storage]\n" + line + "\n")
		}
	}
	// One sign-in for every node, and a follower can forward admin actions
	// to the leader, when the nodes share a session key.
	if !strings.Contains(c.opts.ExtraTOML, "[admin]") {
		fmt.Fprintf(&b, "[admin]\nsession_key = %q\n\n", c.sessionKey)
	}
	if p := c.PKI; p != nil {
		fmt.Fprintf(&b, "[tls]\ncert_file = %q\nkey_file = %q\nclient_ca_file = %q\nraft_cert_file = %q\nraft_key_file = %q\nraft_ca_file = %q\n\n",
			p.NodeCertFile, p.NodeKeyFile, p.CAFile, p.NodeCertFile, p.NodeKeyFile, p.CAFile)
	}
	b.WriteString(extra)
	return b.String()
}

// tableBody is the offset in toml just past the header line of [name],
// -1 when toml has no such table.
func tableBody(toml, name string) int {
	header := "[" + name + "]"
	off := 0
	for line := range strings.SplitAfterSeq(toml, "\n") {
		off += len(line)
		if strings.TrimSpace(line) == header {
			return off
		}
	}
	return -1
}

// Addrs lists the nodes' gRPC addresses.
func (c *Cluster) Addrs() []string {
	out := make([]string, len(c.Nodes))
	for i, n := range c.Nodes {
		out[i] = n.GRPCAddr
	}
	return out
}

// StartNode (re)starts node i with its existing config and data.
func (c *Cluster) StartNode(i int) error {
	n := c.Nodes[i]
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.cmd != nil && n.done != nil {
		select {
		case <-n.done:
		default:
			return fmt.Errorf("devcluster: %s is already running", n.ID)
		}
	}
	logf, err := os.OpenFile(filepath.Join(n.Dir, "sepp.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("devcluster: %w", err)
	}
	argv := []string{c.opts.Binary, "serve", "--config", n.Config}
	if c.opts.Launch != nil {
		argv = c.opts.Launch(i, argv)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	var out io.Writer = logf
	if c.opts.Output != nil {
		out = io.MultiWriter(logf, &prefixWriter{prefix: "[" + n.ID + "] ", w: c.opts.Output})
	}
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = nodeProcAttr() // procattr_linux.go
	if n := nodeGoMaxProcs(c.opts.GoMaxProcs, len(c.Nodes), runtime.NumCPU(), os.Getenv("GOMAXPROCS")); n > 0 {
		cmd.Env = append(os.Environ(), fmt.Sprintf("GOMAXPROCS=%d", n))
	}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return fmt.Errorf("devcluster: start %s: %w", n.ID, err)
	}
	done := make(chan struct{})
	n.cmd, n.done = cmd, done
	go func() {
		err := cmd.Wait()
		logf.Close()
		n.mu.Lock()
		n.err = err
		n.mu.Unlock()
		close(done)
	}()
	return nil
}

// Pid is node i's process id (0 when not running).
func (c *Cluster) Pid(i int) int {
	n := c.Nodes[i]
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.cmd == nil || n.cmd.Process == nil {
		return 0
	}
	return n.cmd.Process.Pid
}

// Signal sends sig to node i.
func (c *Cluster) Signal(i int, sig syscall.Signal) error {
	n := c.Nodes[i]
	n.mu.Lock()
	cmd := n.cmd
	n.mu.Unlock()
	if cmd == nil || cmd.Process == nil {
		return fmt.Errorf("devcluster: %s is not running", n.ID)
	}
	return cmd.Process.Signal(sig)
}

// Kill SIGKILLs node i and waits for it to exit.
func (c *Cluster) Kill(i int) error {
	if err := c.Signal(i, syscall.SIGKILL); err != nil {
		return err
	}
	<-c.Nodes[i].done
	return nil
}

// StopNode sends SIGTERM and waits up to timeout, then SIGKILLs.
func (c *Cluster) StopNode(i int, timeout time.Duration) error {
	n := c.Nodes[i]
	n.mu.Lock()
	done := n.done
	n.mu.Unlock()
	if done == nil {
		return nil
	}
	select {
	case <-done:
		return nil
	default:
	}
	_ = c.Signal(i, syscall.SIGTERM)
	select {
	case <-done:
		return nil
	case <-time.After(timeout):
		_ = c.Signal(i, syscall.SIGKILL)
		<-done
		return fmt.Errorf("devcluster: %s did not stop within %s; killed", n.ID, timeout)
	}
}

// Running reports whether node i's process is alive.
func (c *Cluster) Running(i int) bool {
	n := c.Nodes[i]
	n.mu.Lock()
	done := n.done
	n.mu.Unlock()
	if done == nil {
		return false
	}
	select {
	case <-done:
		return false
	default:
		return true
	}
}

// WaitServing waits until every running node accepts TCP on its gRPC and
// its HTTP port. A node binds the two one after the other, so a caller that
// saw only the gRPC port accept could still find the HTTP port (metrics,
// health, the admin UI) refused; and a node that could not bind one of them
// exits, which is reported with the node's log rather than as a refusal.
func (c *Cluster) WaitServing(ctx context.Context) error {
	for i, n := range c.Nodes {
		if !c.Running(i) {
			continue
		}
		for _, addr := range []string{n.GRPCAddr, n.HTTPAddr} {
			if err := c.waitAccepting(ctx, i, addr); err != nil {
				return err
			}
		}
	}
	return nil
}

// waitAccepting waits until addr, a listener of node i, accepts TCP.
func (c *Cluster) waitAccepting(ctx context.Context, i int, addr string) error {
	n := c.Nodes[i]
	for {
		conn, err := (&net.Dialer{Timeout: 200 * time.Millisecond}).DialContext(ctx, "tcp", addr)
		if err == nil {
			conn.Close()
			return nil
		}
		if !c.Running(i) {
			return fmt.Errorf("devcluster: %s exited before serving on %s; see %s", n.ID, addr, filepath.Join(n.Dir, "sepp.log"))
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("devcluster: %s not serving on %s: %w", n.ID, addr, ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// Stop stops every node (SIGTERM, then SIGKILL) and removes a temporary dir.
func (c *Cluster) Stop() error {
	var errs []error
	var wg sync.WaitGroup
	var mu sync.Mutex
	for i := range c.Nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := c.StopNode(i, 10*time.Second); err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if c.tmpDir {
		if err := os.RemoveAll(c.opts.Dir); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Dir is the folder holding the nodes' configs, data and logs.
func (c *Cluster) Dir() string { return c.opts.Dir }

// freePorts picks n ports that are free on host now. They come from below
// the kernel's ephemeral range: the kernel hands out ports from that range
// for every outgoing connection and every listen on port 0, so a port picked
// there and released could be taken by any socket on the machine before the
// node binds it (a clustertest run once lost its raft port that way). Below
// the range only a program asking for that very port can take it. The scan
// starts at a random port so that clusters started side by side (test
// packages, a `sepp dev` beside them) seldom probe the same ones.
func freePorts(host string, n int) ([]int, error) {
	lo, hi := ephemeralRange("/proc/sys/net/ipv4/ip_local_port_range")
	first, last := pickRange(lo, hi, n)
	if first == 0 {
		return kernelPorts(host, n)
	}
	return scanPorts(host, first, last, mrand.IntN(last-first+1), n)
}

// scanPorts binds n ports of first-last on host, from first+start round to
// where it began, skipping any it cannot bind, and releases them on return.
func scanPorts(host string, first, last, start, n int) ([]int, error) {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	ports := make([]int, 0, n)
	span := last - first + 1
	for i := 0; i < span && len(ports) < n; i++ {
		port := first + (start+i)%span
		l, err := net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(port)))
		if err != nil {
			continue // in use, or refused: the next one
		}
		ls = append(ls, l)
		ports = append(ports, port)
	}
	if len(ports) < n {
		return nil, fmt.Errorf("devcluster: find %d free ports in %d-%d on %s: found %d", n, first, last, host, len(ports))
	}
	return ports, nil
}

// lowestPickedPort is where freePorts' range starts: above the ports that
// well-known services are configured on.
const lowestPickedPort = 20000

// pickRange is the range freePorts scans for n ports given the kernel's
// ephemeral range lo-hi: below it when there is room, above it otherwise,
// 0, 0 when neither has room for four times n.
func pickRange(lo, hi, n int) (first, last int) {
	switch {
	case lo-lowestPickedPort >= 4*n:
		return lowestPickedPort, lo - 1
	case 65535-hi >= 4*n:
		return hi + 1, 65535
	}
	return 0, 0
}

// ephemeralRange reads the kernel's ephemeral port range from path (Linux's
// ip_local_port_range); elsewhere, or unreadable, it is the IANA range that
// BSDs, macOS and Windows use.
func ephemeralRange(path string) (lo, hi int) {
	lo, hi = 49152, 65535
	b, err := os.ReadFile(path)
	if err != nil {
		return lo, hi
	}
	var l, h int
	if _, err := fmt.Sscan(string(b), &l, &h); err != nil || l < 1 || h < l || h > 65535 {
		return lo, hi
	}
	return l, h
}

// kernelPorts lets the kernel choose, for a machine whose ephemeral range
// leaves no room outside it.
func kernelPorts(host string, n int) ([]int, error) {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	ports := make([]int, 0, n)
	for i := 0; i < n; i++ {
		l, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
		if err != nil {
			return nil, fmt.Errorf("devcluster: find a free port: %w", err)
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

type prefixWriter struct {
	mu     sync.Mutex
	prefix string
	w      io.Writer
	buf    []byte
}

func (p *prefixWriter) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.buf = append(p.buf, b...)
	for {
		i := strings.IndexByte(string(p.buf), '\n')
		if i < 0 {
			break
		}
		if _, err := fmt.Fprintf(p.w, "%s%s\n", p.prefix, p.buf[:i]); err != nil {
			return len(b), err
		}
		p.buf = p.buf[i+1:]
	}
	return len(b), nil
}
