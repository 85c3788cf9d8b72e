package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/sepp-io/sepp/client"
	"github.com/sepp-io/sepp/config"
)

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// TestServe_SingleNodeDefaults starts a node the way `sepp serve` does
// (a cluster of one from the defaults), drives it through the Go client,
// reads /healthz, /metrics and the admin UI, and stops it by cancelling
// its context as SIGTERM does.
func TestServe_SingleNodeDefaults(t *testing.T) {
	cfg := config.Default()
	cfg.Server.GRPCAddr = freeAddr(t)
	cfg.Server.HTTPAddr = freeAddr(t)
	cfg.Server.RaftAddr = freeAddr(t)
	cfg.Server.DataDir = filepath.Join(t.TempDir(), "data")
	cfg.Server.LogLevel = "warn"
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- serve(ctx, cfg) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("serve returned %v", err)
			}
		case <-time.After(30 * time.Second):
			t.Error("serve did not stop within 30s of its context ending")
		}
	})

	cctx, ccancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer ccancel()
	c, err := client.New(cctx, []string{cfg.Server.GRPCAddr})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	res, err := c.Enqueue(cctx, client.NewEnqueueRequest("emails", "welcome").WithPayload([]byte("ada")))
	if err != nil {
		t.Fatalf("enqueue: %v", err)
	}
	ds, err := c.Reserve(cctx, "emails", client.ReserveOptions{Max: 1})
	if err != nil || len(ds) != 1 || ds[0].Ctx.JobID != res.JobID {
		t.Fatalf("reserve: %v %+v", err, ds)
	}
	if err := c.Ack(cctx, ds[0].Ctx); err != nil {
		t.Fatalf("ack: %v", err)
	}
	info, err := c.ServerInfo(cctx)
	if err != nil || info.NodeID != "sepp-1" || info.LeaderID != "sepp-1" {
		t.Fatalf("server info: %v %+v", err, info)
	}

	get := func(path string) (int, string) {
		resp, err := http.Get("http://" + cfg.Server.HTTPAddr + path)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := get("/healthz"); code != 200 || !strings.Contains(body, "Leader") {
		t.Errorf("/healthz: %d %q", code, body)
	}
	// The node has served writes, so it leads with its term's first
	// commands applied: ready.
	if code, body := get("/readyz"); code != 200 || !strings.HasPrefix(body, "ready\n") || !strings.Contains(body, "state=Leader leader=sepp-1") {
		t.Errorf("/readyz: %d %q", code, body)
	}
	if code, body := get("/metrics"); code != 200 || !strings.Contains(body, "sepp_") {
		t.Errorf("/metrics: %d, no sepp_ metrics", code)
	} else {
		// The node's own timings, labelled like the rpc metrics.
		for _, want := range []string{`sepp_raft_log_write_seconds_count{node="`, `sepp_raft_commit_seconds_count{node="`} {
			if !strings.Contains(body, want) {
				t.Errorf("/metrics: no %s...", want)
			}
		}
	}
	if code, body := get("/queues"); code != 200 || !strings.Contains(body, "emails") {
		t.Errorf("admin UI /queues: %d, queue emails not shown", code)
	}
}

func TestLoopbackOnly(t *testing.T) {
	cases := []struct {
		remote string
		want   int
	}{
		{"127.0.0.1:5555", http.StatusOK},
		{"[::1]:5555", http.StatusOK},
		{"10.1.2.3:5555", http.StatusForbidden},
		{"192.168.0.9:5555", http.StatusForbidden},
		{"garbage", http.StatusForbidden},
	}
	h := loopbackOnly(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	for _, c := range cases {
		t.Run(c.remote, func(t *testing.T) {
			r, _ := http.NewRequest("GET", "/", nil)
			r.RemoteAddr = c.remote
			w := &statusRecorder{header: http.Header{}}
			h.ServeHTTP(w, r)
			if w.code == 0 {
				w.code = http.StatusOK
			}
			if w.code != c.want {
				t.Fatalf("remote %s: %d, want %d", c.remote, w.code, c.want)
			}
		})
	}
}

type statusRecorder struct {
	header http.Header
	code   int
}

func (s *statusRecorder) Header() http.Header         { return s.header }
func (s *statusRecorder) Write(b []byte) (int, error) { return len(b), nil }
func (s *statusRecorder) WriteHeader(code int)        { s.code = code }

func TestNodeConfig_MapsTheFile(t *testing.T) {
	cfg, err := config.Parse([]byte(`
[server]
node_id = "b"
grpc_addr = "127.0.0.1:6002"
grpc_advertise = "b.example:6002"
[cluster]
heartbeat_timeout_ms = 400
election_timeout_ms = 500
leader_lease_timeout_ms = 300
peers = [
  { id = "a", raft_addr = "127.0.0.1:7001", grpc_addr = "127.0.0.1:6001" },
  { id = "b", raft_addr = "127.0.0.1:7002", grpc_addr = "127.0.0.1:6002" },
]
[storage]
dead_letter_retention_ms = 1000
`))
	if err != nil {
		t.Fatal(err)
	}
	nc, err := nodeConfig(cfg, newLogger(cfg.Server))
	if err != nil {
		t.Fatal(err)
	}
	got := fmt.Sprintf("%s %s %v %v %d %s", nc.NodeID, nc.GRPCAddr, nc.HeartbeatTimeout, nc.ElectionTimeout, len(nc.Peers), nc.Engine.Limits.DeadLetterRetention)
	want := "b b.example:6002 400ms 500ms 1 1s"
	if got != want {
		t.Fatalf("node config %q, want %q", got, want)
	}
	if err := nc.Validate(); err != nil {
		t.Fatalf("mapped config does not validate: %v", err)
	}
}

func TestDecideMemorySettings(t *testing.T) {
	noEnv := func(string) (string, bool) { return "", false }
	env := func(vars ...string) func(string) (string, bool) {
		return func(k string) (string, bool) {
			for _, v := range vars {
				if v == k {
					return "x", true
				}
			}
			return "", false
		}
	}
	noCgroup := func() (int64, bool) { return 0, false }
	cgroupOf := func(limit int64) func() (int64, bool) { return func() (int64, bool) { return limit, true } }
	cgroup := cgroupOf(1000 << 20)
	server := func(limit string, gc int) config.Server {
		s := config.Default().Server
		s.MemoryLimit, s.GCPercent = limit, gc
		return s
	}
	tests := []struct {
		name      string
		s         config.Server
		env       func(string) (string, bool)
		cgroup    func() (int64, bool)
		wantLimit int64 // -1: left to GOMEMLIMIT
		wantGC    int   // 0: left to GOGC
	}{
		{"defaults outside a cgroup", config.Default().Server, noEnv, noCgroup, 0, config.DefaultGCPercent},
		{"auto takes 90% of a large cgroup", server("auto", 80), noEnv, cgroup, 900 << 20, 80},
		{"auto leaves 64 MiB of a small cgroup", server("auto", 80), noEnv, cgroupOf(256 << 20), 192 << 20, 80},
		{"auto leaves a quarter of a tiny cgroup", server("auto", 80), noEnv, cgroupOf(128 << 20), 96 << 20, 80},
		{"explicit size", server("512MiB", 100), noEnv, cgroup, 512 << 20, 100},
		{"off ignores the cgroup", server("off", 100), noEnv, cgroup, 0, 100},
		{"GOMEMLIMIT wins", server("512MiB", 100), env("GOMEMLIMIT"), cgroup, -1, 100},
		{"GOGC wins", server("auto", 100), env("GOGC"), noCgroup, 0, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m, err := decideMemorySettings(tc.s, tc.env, tc.cgroup)
			if err != nil {
				t.Fatal(err)
			}
			if m.limit != tc.wantLimit || m.gcPercent != tc.wantGC {
				t.Fatalf("limit %d gc %d, want %d %d (%+v)", m.limit, m.gcPercent, tc.wantLimit, tc.wantGC, m)
			}
		})
	}
}

// The pprof listener (SEPP_PPROF_ADDR) serves the profile index.
func TestStartPprof(t *testing.T) {
	var logged strings.Builder
	log := hclog.New(&hclog.LoggerOptions{Output: &logged, Level: hclog.Info})
	stop, err := startPprof("127.0.0.1:0", log)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	_, url, ok := strings.Cut(logged.String(), "addr=")
	if !ok {
		t.Fatalf("no address logged: %q", logged.String())
	}
	resp, err := http.Get(strings.TrimSpace(url) + "heap?debug=1")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "heap profile") {
		t.Fatalf("status %d, body %.100q", resp.StatusCode, body)
	}
}

// TestNodeMemoryLimit: the limit the default memory budget is a share of
// is the smallest the node knows, physical memory only without another.
// The auto soft limit leaves room outside the heap for the page cache a
// cgroup charges: 64 MiB, a quarter of a smaller cgroup, a tenth of a
// larger one.
func TestAutoSoftLimit(t *testing.T) {
	const mib = 1 << 20
	tests := []struct{ cgroup, want int64 }{
		{64 * mib, 48 * mib},
		{128 * mib, 96 * mib},
		{256 * mib, 192 * mib},
		{512 * mib, 448 * mib},
		{640 * mib, 576 * mib},
		{1024 * mib, 1024*mib - 1024*mib/10},
		{24 << 30, 24<<30 - (24<<30)/10},
	}
	for _, tc := range tests {
		got := autoSoftLimit(tc.cgroup)
		if got != tc.want {
			t.Errorf("autoSoftLimit(%d MiB) = %d MiB, want %d MiB", tc.cgroup/mib, got/mib, tc.want/mib)
		}
	}
	// It never falls as the cgroup grows.
	for l := int64(16 * mib); l < 4<<30; l += 8 * mib {
		if autoSoftLimit(l+8*mib) < autoSoftLimit(l) {
			t.Fatalf("autoSoftLimit falls from %d to %d MiB", l/mib, (l+8*mib)/mib)
		}
	}
}

func TestNodeMemoryLimit(t *testing.T) {
	some := func(v int64) func() (int64, bool) { return func() (int64, bool) { return v, true } }
	none := func() (int64, bool) { return 0, false }
	tests := []struct {
		name     string
		m        memorySettings
		cgroup   func() (int64, bool)
		physical func() (int64, bool)
		want     int64
		from     string
	}{
		{name: "Cgroup", cgroup: some(512 << 20), physical: some(16 << 30), want: 512 << 20, from: "cgroup memory limit"},
		{name: "AutoSoftLimitIsNotALimitOfItsOwn", m: memorySettings{limit: 460 << 20, limitFrom: "server.memory_limit = auto (the cgroup limit less max(10%, 64 MiB))"},
			cgroup: some(512 << 20), physical: some(16 << 30), want: 512 << 20, from: "cgroup memory limit"},
		{name: "ExplicitSoftLimitBelowCgroup", m: memorySettings{limit: 300 << 20, limitFrom: "server.memory_limit"},
			cgroup: some(512 << 20), physical: some(16 << 30), want: 300 << 20, from: "server.memory_limit"},
		{name: "PhysicalWithoutOther", cgroup: none, physical: some(8 << 30), want: 8 << 30, from: "physical memory"},
		{name: "NothingKnown", cgroup: none, physical: none, want: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, from := nodeMemoryLimit(tt.m, tt.cgroup, tt.physical)
			if got != tt.want || from != tt.from {
				t.Fatalf("nodeMemoryLimit = %d (%q), want %d (%q)", got, from, tt.want, tt.from)
			}
		})
	}
	if p, ok := physicalMemory(); ok && p < 64<<20 {
		t.Fatalf("physical memory read as %d bytes", p)
	}
}
