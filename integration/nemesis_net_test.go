package integration

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// nodeNet puts each node of a local cluster in its own network namespace,
// all joined by veth pairs to a bridge in a hub namespace, and the test's
// namespace to the same bridge, so that a partition between real processes
// is a routing fact, not a mock: node i gets a blackhole route to node j's
// address (and j one to i's), and the TCP connections between them go
// silent. The test still reaches every node, as clients on both sides of a
// partition would.
//
// The bridge lives in a namespace of its own because where br_netfilter is
// loaded (Docker loads it, and sets FORWARD to DROP) bridged frames meet
// the namespace's iptables; the hub's are empty, and the host's firewall is
// left alone.
//
// It needs root and iproute2 (`ip netns`, veth, bridge). Every name carries
// this process's pid and a counter; the addresses come from 198.18.0.0/15
// (RFC 2544, benchmarking), and namespaces left by a test process that died
// are removed on the next setup.
type nodeNet struct {
	hub  string // the bridge's namespace
	ns   []string
	ips  []string
	mu   sync.Mutex
	cuts map[[2]int]int // blackholed pairs (i < j), counted: partitions overlap
}

var netSeq atomic.Int64

const netPrefix = "sepp-nem-"

// netnsUnavailable says why nodeNet cannot be set up here ("" when it can).
func netnsUnavailable() string {
	if os.Geteuid() != 0 {
		return "not root: network namespaces for partitions need root"
	}
	if _, err := exec.LookPath("ip"); err != nil {
		return "iproute2 `ip` not found: network namespaces for partitions need it (apt-get install iproute2)"
	}
	return ""
}

func ipCmd(ctx context.Context, args ...string) error {
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "ip", args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("ip %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// removeStaleNets deletes the namespaces (with their veths and bridge) of
// earlier test processes that are gone.
func removeStaleNets(ctx context.Context) {
	alive := func(name, prefix string) bool {
		rest, ok := strings.CutPrefix(name, prefix)
		if !ok {
			return true // not ours
		}
		pid, err := strconv.Atoi(strings.SplitN(rest, "-", 2)[0])
		if err != nil {
			return true
		}
		_, err = os.Stat(fmt.Sprintf("/proc/%d", pid))
		return err == nil
	}
	if out, err := exec.CommandContext(ctx, "ip", "netns", "list").Output(); err == nil {
		for line := range strings.SplitSeq(string(out), "\n") {
			if f := strings.Fields(line); len(f) > 0 && !alive(f[0], netPrefix) {
				_ = ipCmd(ctx, "netns", "del", f[0])
			}
		}
	}
}

// newNodeNet makes n node namespaces on a fresh hub.
func newNodeNet(ctx context.Context, n int) (_ *nodeNet, err error) {
	removeStaleNets(ctx)
	pid, seq := os.Getpid(), netSeq.Add(1)
	nn := &nodeNet{hub: fmt.Sprintf("%s%d-%d-hub", netPrefix, pid, seq), cuts: map[[2]int]int{}}
	defer func() {
		if err != nil {
			nn.Close()
		}
	}()
	prefix, err := freeSubnet(pid, int(seq))
	if err != nil {
		return nil, err
	}
	// The test's end: a veth pair from here to the hub (deleted with it).
	root := fmt.Sprintf("snr%d-%d", pid%10_000_000, seq%100)
	steps := [][]string{
		{"netns", "add", nn.hub},
		{"-n", nn.hub, "link", "add", "br0", "type", "bridge"},
		{"-n", nn.hub, "link", "set", "br0", "up"},
		{"link", "add", root, "type", "veth", "peer", "name", "up0", "netns", nn.hub},
		{"-n", nn.hub, "link", "set", "up0", "master", "br0", "up"},
		{"addr", "add", prefix + ".1/24", "dev", root},
		{"link", "set", root, "up"},
	}
	for i := range n {
		ns, ip := fmt.Sprintf("%s%d-%d-%d", netPrefix, pid, seq, i), fmt.Sprintf("%s.%d", prefix, i+2)
		port := fmt.Sprintf("p%d", i)
		nn.ns, nn.ips = append(nn.ns, ns), append(nn.ips, ip)
		steps = append(steps,
			[]string{"netns", "add", ns},
			[]string{"link", "add", "eth0", "netns", ns, "type", "veth", "peer", "name", port, "netns", nn.hub},
			[]string{"-n", nn.hub, "link", "set", port, "master", "br0", "up"},
			[]string{"-n", ns, "addr", "add", ip + "/24", "dev", "eth0"},
			[]string{"-n", ns, "link", "set", "eth0", "up"},
			[]string{"-n", ns, "link", "set", "lo", "up"},
		)
	}
	for _, s := range steps {
		if err := ipCmd(ctx, s...); err != nil {
			return nil, err
		}
	}
	return nn, nil
}

// freeSubnet picks a /24 of 198.18.0.0/15 no interface here uses.
func freeSubnet(pid, seq int) (string, error) {
	out, err := exec.Command("ip", "-4", "-o", "addr", "show").Output()
	if err != nil {
		return "", fmt.Errorf("ip -4 addr show: %w", err)
	}
	for k := range 512 {
		idx := (pid*7 + seq*131 + k) % 512
		prefix := fmt.Sprintf("198.%d.%d", 18+idx/256, idx%256)
		if !strings.Contains(string(out), " "+prefix+".") {
			return prefix, nil
		}
	}
	return "", errors.New("no free /24 in 198.18.0.0/15")
}

// Launch runs node i inside its namespace: `ip netns exec` execs the node
// in place, so the process devcluster signals is the node.
func (nn *nodeNet) Launch(i int, argv []string) []string {
	return append([]string{"ip", "netns", "exec", nn.ns[i]}, argv...)
}

// Cut blackholes the traffic between node a and every node of others, both
// ways, on top of any cut already in force.
func (nn *nodeNet) Cut(ctx context.Context, a int, others []int) error {
	return nn.change(ctx, a, others, +1)
}

// Heal undoes one Cut.
func (nn *nodeNet) Heal(ctx context.Context, a int, others []int) error {
	return nn.change(ctx, a, others, -1)
}

func (nn *nodeNet) change(ctx context.Context, a int, others []int, delta int) error {
	nn.mu.Lock()
	defer nn.mu.Unlock()
	var errs []error
	for _, b := range others {
		pair := [2]int{min(a, b), max(a, b)}
		before := nn.cuts[pair]
		nn.cuts[pair] = max(0, before+delta)
		verb := ""
		switch {
		case before == 0 && delta > 0:
			verb = "add"
		case before == 1 && delta < 0:
			verb = "del"
		default:
			continue // still cut by another partition, or already healed
		}
		errs = append(errs,
			ipCmd(ctx, "-n", nn.ns[a], "route", verb, "blackhole", nn.ips[b]+"/32"),
			ipCmd(ctx, "-n", nn.ns[b], "route", verb, "blackhole", nn.ips[a]+"/32"))
	}
	return errors.Join(errs...)
}

// Close deletes the namespaces, and with them the veth pairs and the
// bridge. The nodes must have stopped.
func (nn *nodeNet) Close() {
	ctx := context.Background()
	for _, ns := range append(nn.ns, nn.hub) {
		_ = ipCmd(ctx, "netns", "del", ns)
	}
}
