package integration

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// Containers: three nodes of the sepp image on a private docker network,
// so a node can be cut off (docker network disconnect) while the test,
// on the host, still reaches the others by their container addresses.
// Only containers, networks and images these tests create are touched;
// every name carries a random suffix and is removed in t.Cleanup.

// skipOrFail skips t saying why, except in CI (SEPP_REQUIRE_ALL set), where
// a missing tool must fail the run instead of hiding the test.
func skipOrFail(t *testing.T, why string) {
	t.Helper()
	if os.Getenv("SEPP_REQUIRE_ALL") != "" {
		t.Fatal("SEPP_REQUIRE_ALL is set (CI) but " + why)
	}
	t.Skip(why)
}

// requireDocker skips t, saying why, when no Docker engine answers.
func requireDocker(t *testing.T) {
	t.Helper()
	requireLong(t)
	if _, err := exec.LookPath("docker"); err != nil {
		skipOrFail(t, "docker CLI not found: container tests skipped")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if out, err := exec.CommandContext(ctx, "docker", "info").CombinedOutput(); err != nil {
		skipOrFail(t, fmt.Sprintf("no Docker engine answers (`docker info`: %v: %s): container tests skipped", err, lastLine(out)))
	}
}

func lastLine(b []byte) string {
	s := strings.TrimSpace(string(b))
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		s = s[i+1:]
	}
	return s
}

// docker runs one docker command and returns its trimmed output.
func docker(ctx context.Context, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, "docker", args...).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("docker %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return strings.TrimSpace(string(out)), nil
}

func randomSuffix() string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

var image struct {
	once sync.Once
	tag  string
	err  error
}

// seppImage builds the image once per run as `make image` does
// (deploy/Dockerfile FROM scratch around the static binary), under a tag of
// its own; TestMain removes it when the run ends.
func seppImage(t *testing.T) string {
	t.Helper()
	image.once.Do(func() {
		dir := t.TempDir()
		for _, f := range []string{"Dockerfile", "docker-single.toml"} {
			b, err := os.ReadFile(filepath.Join(repoRoot, "deploy", f))
			if err != nil {
				image.err = err
				return
			}
			if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
				image.err = err
				return
			}
		}
		bin, err := os.ReadFile(seppBinary)
		if err != nil {
			image.err = err
			return
		}
		if err := os.WriteFile(filepath.Join(dir, "sepp"), bin, 0o755); err != nil {
			image.err = err
			return
		}
		tag := "sepp:it-" + randomSuffix()
		if _, err := docker(context.Background(), "build", "-q", "-t", tag, dir); err != nil {
			image.err = err
			return
		}
		image.tag = tag
	})
	if image.err != nil {
		t.Fatalf("build the sepp image: %v", image.err)
	}
	return image.tag
}

// removeImage drops the test image; TestMain calls it after every test
// (a test's own cleanup would remove it while others still need it).
func removeImage() {
	if image.tag != "" {
		_, _ = docker(context.Background(), "rmi", "-f", image.tag)
	}
}

// dockerCluster is three containers with fixed addresses on a network of
// their own.
type dockerCluster struct {
	network    string
	containers []string
	ips        []string
	ids        []string
}

func (c *dockerCluster) Addrs() []string {
	var out []string
	for _, ip := range c.ips {
		out = append(out, net.JoinHostPort(ip, "50051"))
	}
	return out
}

func (c *dockerCluster) IDs() []string { return c.ids }

func (c *dockerCluster) LogTail(i int) string {
	out, err := exec.Command("docker", "logs", "--tail", "40", c.containers[i]).CombinedOutput()
	if err != nil {
		return err.Error()
	}
	return string(out)
}

func startDockerCluster(t *testing.T) *dockerCluster {
	t.Helper()
	return startDockerClusterWith(t, nil, clusterTOML)
}

// startDockerClusterWith is startDockerCluster with more `docker run`
// flags for every container and extraTOML in place of clusterTOML.
func startDockerClusterWith(t *testing.T, runFlags []string, extraTOML string) *dockerCluster {
	t.Helper()
	tag := seppImage(t)
	ctx := context.Background()
	suffix := randomSuffix()
	c := &dockerCluster{network: "sepp-it-" + suffix}
	// Fixed container addresses need a subnet of our own: try a few random
	// /24s of 172.30.0.0/16 until one does not overlap an existing network.
	var prefix netip.Prefix
	var createErr error
	for try := 0; try < 8; try++ {
		var b [1]byte
		_, _ = rand.Read(b[:])
		prefix = netip.MustParsePrefix(fmt.Sprintf("172.30.%d.0/24", b[0]))
		if _, createErr = docker(ctx, "network", "create", "--subnet", prefix.String(), c.network); createErr == nil {
			break
		}
	}
	if createErr != nil {
		t.Fatal(createErr)
	}
	t.Cleanup(func() {
		for _, name := range c.containers {
			_, _ = docker(ctx, "rm", "-f", "-v", name)
		}
		_, _ = docker(ctx, "network", "rm", c.network)
	})
	base := prefix.Masked().Addr().As4()
	for i := 0; i < 3; i++ {
		ip := base
		ip[3] = byte(11 + i)
		c.ips = append(c.ips, netip.AddrFrom4(ip).String())
		c.ids = append(c.ids, fmt.Sprintf("sepp-%d", i+1))
	}
	dir := t.TempDir()
	for i := range c.ids {
		var b strings.Builder
		fmt.Fprintf(&b, "[server]\nnode_id = %q\ngrpc_addr = \"0.0.0.0:50051\"\ngrpc_advertise = \"%s:50051\"\nhttp_addr = \"0.0.0.0:8080\"\nraft_addr = \"0.0.0.0:7050\"\nraft_advertise = \"%s:7050\"\ndata_dir = \"/data\"\n\n[cluster]\npeers = [\n", c.ids[i], c.ips[i], c.ips[i])
		for j := range c.ids {
			fmt.Fprintf(&b, "  { id = %q, raft_addr = \"%s:7050\", grpc_addr = \"%s:50051\", http_addr = \"%s:8080\" },\n", c.ids[j], c.ips[j], c.ips[j], c.ips[j])
		}
		b.WriteString("]\n\n")
		b.WriteString(extraTOML)
		cfg := filepath.Join(dir, c.ids[i]+".toml")
		if err := os.WriteFile(cfg, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		name := c.network + "-" + c.ids[i]
		c.containers = append(c.containers, name)
		args := append([]string{"run", "-d", "--name", name, "--network", c.network, "--ip", c.ips[i]}, runFlags...)
		args = append(args, "-v", cfg+":/etc/sepp/node.toml:ro", tag, "serve", "--config", "/etc/sepp/node.toml")
		if _, err := docker(ctx, args...); err != nil {
			t.Fatal(err)
		}
	}
	return c
}

// TestPartitionLeader cuts the leader's container off the network (from
// the followers and from the clients alike) for several election timeouts,
// then reconnects it: the majority elects a new leader and goes on; the old
// leader must step down, drop whatever it could not commit, and catch up.
func TestPartitionLeader(t *testing.T) {
	t.Parallel()
	requireDocker(t)
	c := startDockerCluster(t)
	runFault(t, "partition_leader", c, func(ctx context.Context, env *faultEnv) (int, time.Time) {
		name, ip := c.containers[env.leader], c.ips[env.leader]
		if _, err := docker(ctx, "network", "disconnect", c.network, name); err != nil {
			env.t.Fatal(err)
		}
		cut := time.Now()
		waitLeader(ctx, env.t, env.insp, env.tc, 15*time.Second, env.leader)
		report(env.t, "partition_leader election", ms(time.Since(cut)), "ms")
		pause(ctx, 2*time.Second-time.Since(cut)) // hold the partition at least 2s
		if _, err := docker(ctx, "network", "connect", "--ip", ip, c.network, name); err != nil {
			env.t.Fatal(err)
		}
		report(env.t, "partition_leader held", ms(time.Since(cut)), "ms")
		return env.leader, time.Now()
	})
}

// compose runs docker compose (the plugin, or the standalone
// docker-compose) with the project's own name.
type compose struct {
	cmd     []string
	file    string
	project string
	env     []string
}

func findCompose(ctx context.Context) ([]string, error) {
	if err := exec.CommandContext(ctx, "docker", "compose", "version").Run(); err == nil {
		return []string{"docker", "compose"}, nil
	}
	if p, err := exec.LookPath("docker-compose"); err == nil {
		return []string{p}, nil
	}
	return nil, fmt.Errorf("neither `docker compose` nor docker-compose is installed")
}

func (c *compose) run(ctx context.Context, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	all := append(append(append([]string{}, c.cmd[1:]...), "-f", c.file, "-p", c.project), args...)
	cmd := exec.CommandContext(ctx, c.cmd[0], all...)
	cmd.Env = append(os.Environ(), c.env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("%s %s: %w: %s", strings.Join(c.cmd, " "), strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return strings.TrimSpace(string(out)), nil
}

// composeCluster is deploy/compose.yaml's cluster seen from the host.
type composeCluster struct {
	c *compose
}

func (cc *composeCluster) Addrs() []string {
	return []string{"127.0.0.1:50051", "127.0.0.1:50052", "127.0.0.1:50053"}
}

func (cc *composeCluster) IDs() []string { return []string{"sepp-1", "sepp-2", "sepp-3"} }

func (cc *composeCluster) LogTail(i int) string {
	out, err := cc.c.run(context.Background(), "logs", "--no-color", "--tail", "40", cc.IDs()[i])
	if err != nil {
		return err.Error()
	}
	return out
}

// waitPortFree waits until addr can be listened on, or returns the last
// error after timeout: another test's connection may hold a port of the
// ephemeral range for a moment.
func waitPortFree(addr string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		l, err := net.Listen("tcp", addr)
		if err == nil {
			return l.Close()
		}
		if time.Now().After(deadline) {
			return err
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestComposeCluster brings up deploy/compose.yaml as shipped, works jobs
// through it from the host, kills the leader's container, sees the cluster
// fail over, starts the container again and sees it rejoin and catch up.
func TestComposeCluster(t *testing.T) {
	t.Parallel()
	requireDocker(t)
	ctx := context.Background()
	cmd, err := findCompose(ctx)
	if err != nil {
		skipOrFail(t, err.Error()+": compose test skipped")
	}
	for _, port := range []string{"50051", "50052", "50053", "8081", "8082", "8083"} {
		if err := waitPortFree("127.0.0.1:"+port, 10*time.Second); err != nil {
			skipOrFail(t, fmt.Sprintf("deploy/compose.yaml publishes 127.0.0.1:%s, which is in use here: %v", port, err))
		}
	}
	c := &compose{cmd: cmd, file: filepath.Join(repoRoot, "deploy", "compose.yaml"), project: "sepp-it-" + randomSuffix(),
		env: []string{"SEPP_IMAGE=" + seppImage(t)}}
	t.Cleanup(func() {
		if _, err := c.run(ctx, "down", "-v", "--remove-orphans"); err != nil {
			t.Logf("compose down: %v", err)
		}
	})
	up := time.Now()
	if _, err := c.run(ctx, "up", "-d"); err != nil {
		t.Fatal(err)
	}
	cc := &composeCluster{c: c}
	// The health checks run `sepp probe` of each node's /readyz inside its container.
	if err := waitFor(ctx, 60*time.Second, func(ctx context.Context) (bool, error) {
		out, err := c.run(ctx, "ps")
		if err != nil {
			return false, err
		}
		return strings.Count(out, "(healthy)") == 3, fmt.Errorf("not all healthy:\n%s", out)
	}); err != nil {
		t.Fatal(err)
	}
	report(t, "compose healthy_after_up", ms(time.Since(up)), "ms")
	runFault(t, "compose_kill_leader", cc, func(ctx context.Context, env *faultEnv) (int, time.Time) {
		svc := cc.IDs()[env.leader]
		asked := time.Now()
		if _, err := c.run(ctx, "kill", svc); err != nil {
			env.t.Fatal(err)
		}
		// `compose kill` returns once the container is gone, which on a
		// busy engine takes seconds; the election is timed from then (the
		// writes' gap, "unavailable", is the figure a client sees).
		killed := time.Now()
		report(env.t, "compose_kill_leader kill_command", ms(killed.Sub(asked)), "ms")
		waitLeader(ctx, env.t, env.insp, env.tc, 15*time.Second, env.leader)
		report(env.t, "compose_kill_leader election", ms(time.Since(killed)), "ms")
		if _, err := c.run(ctx, "start", svc); err != nil {
			env.t.Fatal(err)
		}
		return env.leader, time.Now()
	})
}
