package devcluster

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sepp-io/sepp/config"
)

// writeEarlierCluster leaves configs in dir as a cluster of the given nodes
// that ran there would have; only the node ids in keep get theirs.
func writeEarlierCluster(t *testing.T, dir string, nodes int, keep map[string]bool) *Cluster {
	t.Helper()
	c := &Cluster{sessionKey: strings.Repeat("k", 64)}
	for i := 0; i < nodes; i++ {
		id := nodeID(i)
		c.Nodes = append(c.Nodes, &Node{
			ID:       id,
			GRPCAddr: fmt.Sprintf("127.0.0.1:%d", 11001+10*i),
			HTTPAddr: fmt.Sprintf("127.0.0.1:%d", 11002+10*i),
			RaftAddr: fmt.Sprintf("127.0.0.1:%d", 11003+10*i),
			Dir:      filepath.Join(dir, id),
		})
	}
	for _, n := range c.Nodes {
		if keep != nil && !keep[n.ID] {
			continue
		}
		if err := os.MkdirAll(n.Dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(n.Dir, "sepp.toml"), []byte(c.configFor(n)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return c
}

func TestEarlierNodes(t *testing.T) {
	for _, tc := range []struct {
		name    string
		prepare func(t *testing.T, dir string) *Cluster // the earlier cluster, if any
		wantErr string                                  // empty: no error
	}{
		{name: "an empty folder starts a new cluster", prepare: func(*testing.T, string) *Cluster { return nil }},
		{name: "a folder that does not exist yet starts a new cluster", prepare: func(t *testing.T, dir string) *Cluster {
			t.Helper()
			if err := os.Remove(dir); err != nil {
				t.Fatal(err)
			}
			return nil
		}},
		{name: "every node's config is reused", prepare: func(t *testing.T, dir string) *Cluster {
			t.Helper()
			return writeEarlierCluster(t, dir, 3, nil)
		}},
		{name: "a missing node is named", wantErr: "without sepp-2", prepare: func(t *testing.T, dir string) *Cluster {
			t.Helper()
			writeEarlierCluster(t, dir, 3, map[string]bool{"sepp-1": true, "sepp-3": true})
			return nil
		}},
		{name: "a larger earlier cluster is refused", wantErr: "more than 3 nodes", prepare: func(t *testing.T, dir string) *Cluster {
			t.Helper()
			writeEarlierCluster(t, dir, 5, nil)
			return nil
		}},
		{name: "a config that does not load is reported", wantErr: "does not load", prepare: func(t *testing.T, dir string) *Cluster {
			t.Helper()
			writeEarlierCluster(t, dir, 3, nil)
			if err := os.WriteFile(filepath.Join(dir, "sepp-2", "sepp.toml"), []byte("[server\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			return nil
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			want := tc.prepare(t, dir)
			got, key, err := earlierNodes(dir, 3)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if want == nil {
				if got != nil {
					t.Fatalf("got %d earlier nodes in a folder without a cluster", len(got))
				}
				return
			}
			if key != want.sessionKey {
				t.Errorf("session key %q, want the earlier %q", key, want.sessionKey)
			}
			if len(got) != len(want.Nodes) {
				t.Fatalf("got %d nodes, want %d", len(got), len(want.Nodes))
			}
			for i, n := range got {
				w := want.Nodes[i]
				if n.ID != w.ID || n.GRPCAddr != w.GRPCAddr || n.HTTPAddr != w.HTTPAddr || n.RaftAddr != w.RaftAddr || n.Dir != w.Dir {
					t.Errorf("node %d = %+v, want %+v", i, n, w)
				}
			}
		})
	}
}

func TestNodeGoMaxProcs(t *testing.T) {
	for _, tc := range []struct {
		name               string
		asked, nodes, cpus int
		env                string
		want               int
	}{
		{"three nodes on two CPUs get one each", 0, 3, 2, "", 1},
		{"three nodes on eight CPUs get two each", 0, 3, 8, "", 2},
		{"one node gets the machine", 0, 1, 4, "", 4},
		{"GOMAXPROCS in the environment is inherited", 0, 3, 8, "6", 0},
		{"an explicit setting wins over the environment", 3, 3, 8, "6", 3},
		{"negative leaves the Go default", -1, 3, 8, "", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := nodeGoMaxProcs(tc.asked, tc.nodes, tc.cpus, tc.env); got != tc.want {
				t.Fatalf("nodeGoMaxProcs(%d, %d, %d, %q) = %d, want %d", tc.asked, tc.nodes, tc.cpus, tc.env, got, tc.want)
			}
		})
	}
}

// With NodeHosts every node listens on its own host at NodePorts, its
// config and every peer list say so, and Launch shapes the command each
// node is started with (here one that exits at once: nothing listens).
func TestStart_NodeHostsAndLaunch(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh to launch")
	}
	hosts := []string{"198.18.7.2", "198.18.7.3", "198.18.7.4"}
	var mu sync.Mutex
	launched := map[int][]string{}
	c, err := Start(Options{Binary: "/nonexistent/sepp", Nodes: 3, Dir: t.TempDir(), NodeHosts: hosts,
		Launch: func(i int, argv []string) []string {
			mu.Lock()
			launched[i] = argv
			mu.Unlock()
			return []string{sh, "-c", "exit 0"}
		}})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c.Stop() }()
	for i, n := range c.Nodes {
		want := fmt.Sprintf("%s:%d", hosts[i], NodePorts[0])
		if n.GRPCAddr != want || n.RaftAddr != fmt.Sprintf("%s:%d", hosts[i], NodePorts[2]) {
			t.Errorf("node %d at grpc %s raft %s, want %s and port %d", i, n.GRPCAddr, n.RaftAddr, want, NodePorts[2])
		}
		cfg, err := os.ReadFile(n.Config)
		if err != nil {
			t.Fatal(err)
		}
		for _, h := range hosts {
			if !strings.Contains(string(cfg), fmt.Sprintf("raft_addr = \"%s:%d\"", h, NodePorts[2])) {
				t.Errorf("%s's config does not name peer %s:\n%s", n.ID, h, cfg)
			}
		}
		mu.Lock()
		argv := launched[i]
		mu.Unlock()
		if want := []string{"/nonexistent/sepp", "serve", "--config", n.Config}; !slices.Equal(argv, want) {
			t.Errorf("Launch got %q for node %d, want %q", argv, i, want)
		}
	}
	if _, err := Start(Options{Nodes: 3, Dir: t.TempDir(), NodeHosts: hosts[:2]}); err == nil {
		t.Error("two node hosts for three nodes: no error")
	}
}

// An extra [cluster] table gets the generated peers inside it, so a dev
// cluster can run with other raft timings; without one, the config has its
// own. Either way the config parses.
func TestConfigForMergesAnExtraClusterTable(t *testing.T) {
	tests := []struct {
		name, extra string
	}{
		{"no extra", ""},
		{"other tables", "[limits]\nmax_payload_bytes = 2048\n"},
		{"a cluster table", "[limits]\nmax_payload_bytes = 2048\n\n[cluster]\ncommit_timeout_ms = 7\n"},
		{"a cluster table without a final newline", "[cluster]\ncommit_timeout_ms = 7"},
		{"an indented header", "  [cluster]  \ncommit_timeout_ms = 7\n"},
		{"a storage table", "[storage]\nlog_store = \"wal\"\n"},
		{"its own retention", "[storage]\ndead_letter_retention_ms = 1000\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			c := &Cluster{opts: Options{ExtraTOML: tt.extra, Dir: dir, DeadLetterRetention: 7 * 24 * time.Hour}, sessionKey: strings.Repeat("k", 64)}
			for i := range 3 {
				c.Nodes = append(c.Nodes, &Node{ID: nodeID(i), GRPCAddr: fmt.Sprintf("127.0.0.1:%d", 5000+i),
					HTTPAddr: fmt.Sprintf("127.0.0.1:%d", 6000+i), RaftAddr: fmt.Sprintf("127.0.0.1:%d", 7000+i), Dir: filepath.Join(dir, nodeID(i))})
			}
			path := filepath.Join(dir, "sepp.toml")
			if err := os.WriteFile(path, []byte(c.configFor(c.Nodes[0])), 0o600); err != nil {
				t.Fatal(err)
			}
			cfg, err := config.Load(path)
			if err != nil {
				t.Fatalf("config does not load: %v\n%s", err, c.configFor(c.Nodes[0]))
			}
			if len(cfg.Cluster.Peers) != 3 {
				t.Fatalf("%d peers, want 3", len(cfg.Cluster.Peers))
			}
			wantRetention := int64(7 * 24 * time.Hour / time.Millisecond)
			if strings.Contains(tt.extra, "dead_letter_retention_ms = 1000") {
				wantRetention = 1000
			}
			if cfg.Storage.DeadLetterRetentionMS != wantRetention {
				t.Fatalf("dead_letter_retention_ms %d, want %d", cfg.Storage.DeadLetterRetentionMS, wantRetention)
			}
			if strings.Contains(tt.extra, "commit_timeout_ms = 7") && cfg.Cluster.CommitTimeoutMS != 7 {
				t.Fatalf("commit_timeout_ms %d, want the extra's 7", cfg.Cluster.CommitTimeoutMS)
			}
		})
	}
}

// SetNodeTOML rewrites one node's config for its next start, beside the
// cluster's extra; "" gives it the cluster's config back.
func TestSetNodeTOML(t *testing.T) {
	dir := t.TempDir()
	c := &Cluster{opts: Options{ExtraTOML: "[limits]\nmax_payload_bytes = 2048\n", Dir: dir}, sessionKey: strings.Repeat("k", 64)}
	for i := range 3 {
		c.Nodes = append(c.Nodes, &Node{ID: nodeID(i), GRPCAddr: fmt.Sprintf("127.0.0.1:%d", 5000+i),
			HTTPAddr: fmt.Sprintf("127.0.0.1:%d", 6000+i), RaftAddr: fmt.Sprintf("127.0.0.1:%d", 7000+i), Dir: filepath.Join(dir, nodeID(i)),
			Config: filepath.Join(dir, nodeID(i)+".toml")})
	}
	load := func(i int) config.Config {
		t.Helper()
		cfg, err := config.Load(c.Nodes[i].Config)
		if err != nil {
			t.Fatalf("config does not load: %v", err)
		}
		return cfg
	}
	if err := c.SetNodeTOML(1, "[cluster]\nsnapshot_threshold = 1\nsnapshot_interval_ms = 500"); err != nil {
		t.Fatal(err)
	}
	cfg := load(1)
	if cfg.Cluster.SnapshotThreshold != 1 || cfg.Cluster.SnapshotIntervalMS != 500 {
		t.Errorf("snapshot_threshold %d, interval %d ms: want the node's 1 and 500", cfg.Cluster.SnapshotThreshold, cfg.Cluster.SnapshotIntervalMS)
	}
	if len(cfg.Cluster.Peers) != 3 || cfg.Limits.MaxPayloadBytes != 2048 {
		t.Errorf("%d peers, max_payload_bytes %d: want 3 and the cluster's 2048", len(cfg.Cluster.Peers), cfg.Limits.MaxPayloadBytes)
	}
	if got := c.Nodes[1].DataDir(); cfg.Server.DataDir != got {
		t.Errorf("data_dir %q, DataDir() %q", cfg.Server.DataDir, got)
	}
	if err := c.SetNodeTOML(1, ""); err != nil {
		t.Fatal(err)
	}
	if cfg := load(1); cfg.Cluster.SnapshotThreshold != config.Default().Cluster.SnapshotThreshold {
		t.Errorf("snapshot_threshold %d after reset, want the default", cfg.Cluster.SnapshotThreshold)
	}
}

// WaitServing returns only once a node's HTTP port accepts as well as its
// gRPC port: a node binds them one after the other, and a caller that
// reads /metrics right after WaitServing must not find it refused.
func TestWaitServing_WaitsForTheHTTPPortToo(t *testing.T) {
	t.Parallel()
	grpcLis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer grpcLis.Close()
	// A port that accepts nothing yet: taken, then released, then bound
	// again below once WaitServing is waiting.
	held, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	httpAddr := held.Addr().String()
	held.Close()
	n := &Node{ID: "sepp-1", GRPCAddr: grpcLis.Addr().String(), HTTPAddr: httpAddr, Dir: t.TempDir(), done: make(chan struct{})}
	c := &Cluster{Nodes: []*Node{n}}

	served := make(chan error, 1)
	go func() { served <- c.WaitServing(t.Context()) }()
	select {
	case err := <-served:
		t.Fatalf("WaitServing returned %v while only the gRPC port accepted", err)
	case <-time.After(300 * time.Millisecond):
	}
	httpLis, err := net.Listen("tcp", httpAddr)
	if err != nil {
		t.Skipf("the released port %s was taken meanwhile: %v", httpAddr, err)
	}
	defer httpLis.Close()
	select {
	case err := <-served:
		if err != nil {
			t.Fatalf("WaitServing: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("WaitServing did not return once both ports accepted")
	}
}
