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
// joined to the test's namespace by a veth pair on a bridge there, so that
// a partition between real processes is a routing fact, not a mock: node i
// gets a blackhole route to node j's address (and j one to i's), and the
// TCP connections between them go silent. The test, on the bridge, still
// reaches every node, as clients on both sides of a partition would.
//
// It needs root and iproute2 (`ip netns`, veth, bridge). Every name carries
// this process's pid and a counter; the addresses come from 198.18.0.0/15
// (RFC 2544, benchmarking), and namespaces and bridges left by a test
// process that died are removed on the next setup.
type nodeNet struct {
	bridge string
	ns     []string
	ips    []string
	mu     sync.Mutex
	cuts   map[[2]int]int // blackholed pairs (i < j), counted: partitions overlap
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

// removeStaleNets deletes the namespaces and bridges of earlier test
// processes that are gone.
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
	if out, err := exec.CommandContext(ctx, "ip", "-o", "link", "show", "type", "bridge").Output(); err == nil {
		for line := range strings.SplitSeq(string(out), "\n") {
			f := strings.Fields(line)
			if len(f) > 1 {
				if name := strings.TrimSuffix(f[1], ":"); !alive(name, "snb") {
					_ = ipCmd(ctx, "link", "del", name)
				}
			}
		}
	}
}

// newNodeNet makes n namespaces on a fresh bridge.
func newNodeNet(ctx context.Context, n int) (_ *nodeNet, err error) {
	removeStaleNets(ctx)
	pid, seq := os.Getpid(), netSeq.Add(1)
	nn := &nodeNet{bridge: fmt.Sprintf("snb%d-%d", pid, seq), cuts: map[[2]int]int{}}
	defer func() {
		if err != nil {
			nn.Close()
		}
	}()
	prefix, err := freeSubnet(pid, int(seq))
	if err != nil {
		return nil, err
	}
	// nf_call_iptables 0: where br_netfilter is loaded (Docker loads it and
	// sets FORWARD to DROP) bridged frames would otherwise meet iptables.
	if err := ipCmd(ctx, "link", "add", nn.bridge, "type", "bridge", "nf_call_iptables", "0", "nf_call_ip6tables", "0", "nf_call_arptables", "0"); err != nil {
		return nil, err
	}
	if err := ipCmd(ctx, "addr", "add", prefix+".1/24", "dev", nn.bridge); err != nil {
		return nil, err
	}
	if err := ipCmd(ctx, "link", "set", nn.bridge, "up"); err != nil {
		return nil, err
	}
	for i := range n {
		ns, veth, ip := fmt.Sprintf("%s%d-%d-%d", netPrefix, pid, seq, i), fmt.Sprintf("snv%d-%d-%d", pid, seq, i), fmt.Sprintf("%s.%d", prefix, i+2)
		if len(veth) > 15 { // IFNAMSIZ
			veth = fmt.Sprintf("snv%d-%d", seq%1000, i) + strconv.Itoa(pid%100000)
		}
		nn.ns, nn.ips = append(nn.ns, ns), append(nn.ips, ip)
		steps := [][]string{
			{"netns", "add", ns},
			{"link", "add", veth, "type", "veth", "peer", "name", "eth0", "netns", ns},
			{"link", "set", veth, "master", nn.bridge, "up"},
			{"-n", ns, "addr", "add", ip + "/24", "dev", "eth0"},
			{"-n", ns, "link", "set", "eth0", "up"},
			{"-n", ns, "link", "set", "lo", "up"},
		}
		for _, s := range steps {
			if err := ipCmd(ctx, s...); err != nil {
				return nil, err
			}
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

// Close deletes the namespaces (and with them the veth pairs) and the
// bridge. The nodes must have stopped.
func (nn *nodeNet) Close() {
	ctx := context.Background()
	for _, ns := range nn.ns {
		_ = ipCmd(ctx, "netns", "del", ns)
	}
	_ = ipCmd(ctx, "link", "del", nn.bridge)
}
