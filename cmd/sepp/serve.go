package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"math"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"os/signal"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/spf13/cobra"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	"github.com/sepp-io/sepp/cluster"
	"github.com/sepp-io/sepp/config"
	"github.com/sepp-io/sepp/fsm"
	"github.com/sepp-io/sepp/internal/cgroupmem"
	seppv1 "github.com/sepp-io/sepp/proto/sepp/v1"
	"github.com/sepp-io/sepp/rpc"
)

func serveCommand() *cobra.Command {
	var (
		configPath string
		over       config.Server
	)
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Serve a sepp node (with no flags: a single node, data in ./sepp-data, gRPC on localhost:50051)",
		Long: `serve runs one sepp node: the gRPC API, the Raft replication between nodes, and an
HTTP listener with /metrics, /healthz (liveness), /readyz (readiness) and the
admin UI.

With no --config it is a cluster of one with every default. With a config file it
joins the static cluster its [cluster] peers name; see deploy/sepp.example.toml for
every key. Flags override the file's [server] keys.

SIGTERM or Ctrl-C stops it gracefully: a leader hands leadership to another node
first, so clients see milliseconds of unavailability, not an election.

Memory: [server] memory_limit (default auto: the cgroup's limit less the larger
of 10% and 64 MiB, or a quarter below 256 MiB) and
gc_percent (default 50) tune the Go collector; the GOMEMLIMIT and GOGC
environment variables, when set, win over both.

Environment:
  SEPP_PPROF_ADDR   serve net/http/pprof on this address (e.g. 127.0.0.1:0; the
                    address is logged). Off when unset. Profiles expose memory
                    contents: bind it to loopback only.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg := config.Default()
			if configPath != "" {
				var err error
				if cfg, err = config.Load(configPath); err != nil {
					return err
				}
			}
			f := cmd.Flags()
			if f.Changed("node-id") {
				cfg.Server.NodeID = over.NodeID
			}
			if f.Changed("grpc-addr") {
				cfg.Server.GRPCAddr = over.GRPCAddr
			}
			if f.Changed("http-addr") {
				cfg.Server.HTTPAddr = over.HTTPAddr
			}
			if f.Changed("raft-addr") {
				cfg.Server.RaftAddr = over.RaftAddr
			}
			if f.Changed("data-dir") {
				cfg.Server.DataDir = over.DataDir
			}
			if f.Changed("log-level") {
				cfg.Server.LogLevel = over.LogLevel
			}
			if err := cfg.Validate(); err != nil {
				return fmt.Errorf("config: %w", err)
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return serve(ctx, cfg)
		},
	}
	f := cmd.Flags()
	f.StringVarP(&configPath, "config", "c", "", "TOML config file (see deploy/sepp.example.toml)")
	f.StringVar(&over.NodeID, "node-id", "", "override server.node_id")
	f.StringVar(&over.GRPCAddr, "grpc-addr", "", "override server.grpc_addr")
	f.StringVar(&over.HTTPAddr, "http-addr", "", "override server.http_addr")
	f.StringVar(&over.RaftAddr, "raft-addr", "", "override server.raft_addr")
	f.StringVar(&over.DataDir, "data-dir", "", "override server.data_dir")
	f.StringVar(&over.LogLevel, "log-level", "", "override server.log_level")
	return cmd
}

func newLogger(cfg config.Server) hclog.Logger {
	return hclog.New(&hclog.LoggerOptions{
		Name:       "sepp",
		Level:      hclog.LevelFromString(cfg.LogLevel),
		JSONFormat: cfg.LogJSON,
		Output:     os.Stderr,
	})
}

// nodeConfig turns the file into the Raft node's settings.
func nodeConfig(cfg config.Config, log hclog.Logger) (cluster.Config, error) {
	ec, err := cfg.EngineConfig()
	if err != nil {
		return cluster.Config{}, err
	}
	s, cl := cfg.Server, cfg.Cluster
	nc := cluster.DefaultConfig()
	nc.NodeID = s.NodeID
	nc.RaftBindAddr = s.RaftAddr
	nc.RaftAdvertiseAddr = s.RaftAdvertise
	nc.GRPCAddr = firstNonEmpty(s.GRPCAdvertise, s.GRPCAddr)
	nc.HTTPAddr = firstNonEmpty(s.HTTPAdvertise, s.HTTPAddr)
	nc.DataDir = s.DataDir
	nc.PayloadsOffHeap = cfg.Limits.PayloadBudget == "disk"
	nc.Bootstrap = cl.Bootstrap == nil || *cl.Bootstrap
	for _, p := range cl.Peers {
		if p.ID == s.NodeID {
			continue
		}
		nc.Peers = append(nc.Peers, cluster.NodeInfo{ID: p.ID, RaftAddr: p.RaftAddr, GRPCAddr: p.GRPCAddr, HTTPAddr: p.HTTPAddr})
	}
	ms := func(v int64) time.Duration { return time.Duration(v) * time.Millisecond }
	nc.HeartbeatTimeout = ms(cl.HeartbeatTimeoutMS)
	nc.ElectionTimeout = ms(cl.ElectionTimeoutMS)
	nc.LeaderLeaseTimeout = ms(cl.LeaderLeaseTimeoutMS)
	nc.CommitTimeout = ms(cl.CommitTimeoutMS)
	nc.SnapshotThreshold = uint64(cl.SnapshotThreshold)
	nc.SnapshotCommandThreshold = uint64(cl.SnapshotCommandThreshold)
	nc.SnapshotInterval = ms(cl.SnapshotIntervalMS)
	nc.TrailingLogs = uint64(cl.TrailingLogs)
	nc.SnapshotRetain = cl.SnapshotsRetained
	nc.MaxCommandsPerEntry = cl.MaxCommandsPerEntry
	nc.MaxEntriesInFlight = cl.MaxEntriesInFlight
	nc.MaxEntryBytes = cl.MaxEntryBytes
	// Every command carries at most one request the gRPC server accepted.
	nc.MaxCommandBytes = max(cfg.Server.MaxMessageBytes+cluster.CommandOverheadBytes, nc.MaxEntryBytes)
	nc.LeaseGrace = ms(cl.LeaseGraceMS)
	nc.MaxClockSkew = ms(cl.MaxClockSkewMS)
	nc.LogStoreWriteTimeout = ms(cl.StoreWriteTimeoutMS)
	nc.DetectLeaderCrash = cl.DetectLeaderCrash
	nc.LogStore = cfg.Storage.LogStore
	nc.WALSegmentSize = cfg.Storage.WALSegmentMB << 20
	nc.Engine = ec
	nc.Logger = log
	return nc, nil
}

func firstNonEmpty(vs ...string) string {
	for _, v := range vs {
		if v != "" {
			return v
		}
	}
	return ""
}

// exitStoreFailure is sepp serve's exit code after the disk failed a write
// to the Raft store (sysexits' EX_IOERR).
const exitStoreFailure = 74

// serve runs a node until ctx ends, then stops it gracefully.
func serve(ctx context.Context, cfg config.Config) error {
	log := newLogger(cfg.Server)
	if l, ok := cgroupmem.Find(os.DirFS("/"), "proc/self"); ok {
		log.Info("cgroup memory limit", "bytes", l.Bytes, "file", "/"+l.File)
	}
	mem := applyMemorySettings(cfg.Server, os.LookupEnv, cgroupMemoryLimit, log)
	if headroom, err := cfg.Server.GCMinHeadroomBytes(); err == nil {
		startGCTuner(ctx, mem, uint64(headroom), log) // gctune.go
	}
	if addr := os.Getenv("SEPP_PPROF_ADDR"); addr != "" {
		stopPprof, err := startPprof(addr, log)
		if err != nil {
			return err
		}
		defer stopPprof()
	}
	if err := os.MkdirAll(cfg.Server.DataDir, 0o750); err != nil {
		return fmt.Errorf("data dir: %w", err)
	}
	nc, err := nodeConfig(cfg, log)
	if err != nil {
		return err
	}
	limit, limitFrom := nodeMemoryLimit(mem, cgroupMemoryLimit, physicalMemory)
	budget, budgetFrom := cfg.Limits.MemoryBudget(limit)
	// An explicit limits.max_memory_bytes is the cluster's budget; else,
	// when this node leads, the share of the smallest member's memory
	// limit (cluster/facts.go: a member in less memory than this node must
	// be able to restart with the state it holds).
	nc.Engine.Limits.MaxMemoryBytes = cfg.Limits.MaxMemoryBytes
	if cfg.Limits.MaxMemoryBytes <= 0 {
		nc.MemoryShare = cfg.Limits.MemoryShare()
	}
	// A write the disk failed (not a full disk) ends the process at once,
	// with a code a supervisor sees: the restart recovers from what the
	// disk holds (cluster/failstop.go).
	nc.OnStoreFailure = func(err error) {
		log.Error("exiting: the disk failed a write to the node's store", "error", err, "exit_code", exitStoreFailure)
		os.Exit(exitStoreFailure)
	}
	nc.Facts = cluster.MemberFacts{BinaryVersion: version, MemoryLimitBytes: limit, MemoryLimitFrom: limitFrom,
		GOMAXPROCS: runtime.GOMAXPROCS(0), Started: time.Now()}
	log.Info("memory budget", "max_memory_bytes", budget, "from", budgetFrom, "node_memory_limit", limit, "limit_from", limitFrom,
		"note", "as leader, the share applies to the smallest member's memory limit")
	grpcLis, err := net.Listen("tcp", cfg.Server.GRPCAddr)
	if err != nil {
		return fmt.Errorf("grpc listener: %w", err)
	}
	defer grpcLis.Close()
	httpLis, err := net.Listen("tcp", cfg.Server.HTTPAddr)
	if err != nil {
		return fmt.Errorf("http listener: %w", err)
	}
	defer httpLis.Close()

	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	sec, err := newSecurity(cfg, reg, log)
	if err != nil {
		return err
	}
	if nc.StreamLayer, err = sec.raftStreamLayer(cfg.Server); err != nil {
		return err
	}
	if sec.grpcForwardDial != nil {
		nc.PeerFacts = askMemberFacts(sec.grpcForwardDial)
		nc.PeerCommandVersion = askCommandVersion(sec.grpcForwardDial) // legacy: members that serve no facts call
	}
	if sec.httpTLS != nil {
		httpLis = tls.NewListener(httpLis, sec.httpTLS)
	}

	// Raft times the phases of its commits through one process-wide sink
	// (cluster.RaftPhases); it must be in place before raft starts.
	raftPhases := cluster.NewRaftPhases()
	if err := cluster.InstallRaftPhases(raftPhases); err != nil {
		return fmt.Errorf("raft phase metrics: %w", err)
	}
	opening := time.Now()
	node, err := cluster.NewNode(nc)
	if err != nil {
		if nc.StreamLayer != nil {
			_ = nc.StreamLayer.Close()
		}
		return fmt.Errorf("start node: %w", err)
	}
	go logReplay(ctx, node, opening, log)
	prometheus.WrapRegistererWith(prometheus.Labels{"node": node.Self().ID}, reg).MustRegister(append(node.Metrics(), raftPhases.Collector())...)
	reloadStop := make(chan struct{})
	defer close(reloadStop)
	sec.reloadOnSIGHUP(reloadStop, log)

	var forwarder *rpc.Forwarder
	switch {
	case !cfg.Server.ForwardToLeader:
		log.Info("followers answer leader-only calls with NotLeader (server.forward_to_leader = false)")
	case sec.grpcForwardDial == nil:
		log.Warn("followers answer leader-only calls with NotLeader: cannot forward to the leader", "reason", sec.grpcForwardOff)
	default:
		forwarder = rpc.NewForwarder(cfg.Server.NodeID, sec.grpcForwardDial...)
		defer forwarder.Close()
	}
	tracerProvider, stopTracing, err := startTracing(cfg.Tracing, cfg.Server.NodeID, log.Named("tracing"))
	if err != nil {
		node.Close()
		return fmt.Errorf("tracing: %w", err)
	}
	gs := rpc.NewGRPCServer(node, rpc.Options{
		TracerProvider:         tracerProvider,
		Forwarder:              forwarder,
		Logger:                 log.Named("rpc"),
		MaxMessageBytes:        cfg.Server.MaxMessageBytes,
		MaxReserveWait:         time.Duration(cfg.Server.MaxLongPollMS) * time.Millisecond,
		MaxResultBytes:         cfg.Limits.MaxResultBytes,
		MaxConcurrentLongPolls: cfg.Server.MaxLongPolls,
		Version:                version,
		Registerer:             reg,
		UnaryInterceptors:      sec.unaryInterceptors,
		ServerOptions:          sec.grpcOptions,
	})
	api, err := rpc.NewAPIServer(gs, rpc.APIOptions{
		TLS:                  sec.apiTLS,
		MaxMessageBytes:      cfg.Server.MaxMessageBytes,
		Logger:               log.Named("api"),
		CORSAllowedOrigins:   cfg.API.CORSAllowedOrigins,
		CORSAllowCredentials: cfg.API.CORSAllowCredentials,
	})
	if err != nil {
		node.Close()
		return err
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", rpc.MetricsHandler(reg))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) {
		st, err := node.Status(r.Context())
		if err != nil || st.State == "Shutdown" {
			http.Error(w, "not serving", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintf(w, "ok %s %s leader=%s\n", st.Self.ID, st.State, st.Leader.ID)
	})
	mux.HandleFunc("/readyz", readyzHandler(node, cfg.Server.ReadyMaxApplyLag))
	if err := mountAdminUI(ctx, mux, node, cfg, sec, log); err != nil {
		node.Close()
		return err
	}
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}

	errc := make(chan error, 2)
	go func() {
		if err := api.Serve(grpcLis); err != nil {
			errc <- err
		}
	}()
	go func() {
		if err := hs.Serve(httpLis); !errors.Is(err, http.ErrServerClosed) {
			errc <- err
		}
	}()
	log.Info("sepp serving", "node", cfg.Server.NodeID, "grpc", grpcLis.Addr().String(),
		"http", httpLis.Addr().String(), "raft", cfg.Server.RaftAddr, "data_dir", cfg.Server.DataDir,
		"peers", len(cfg.Cluster.Peers), "version", version)
	warnInsecure(cfg, log)
	if !cfg.Admin.Auth && !isLoopback(cfg.Server.HTTPAddr) {
		log.Warn("admin auth is OFF and the HTTP listener is not on loopback: the admin UI answers loopback clients only",
			"http_addr", cfg.Server.HTTPAddr)
	}

	var serveErr error
	select {
	case <-ctx.Done():
		log.Info("shutting down")
	case serveErr = <-errc:
		log.Error("listener failed", "error", serveErr)
	}
	wait := time.Duration(cfg.Cluster.ShutdownTransferWaitMS) * time.Millisecond
	sctx, cancel := context.WithTimeout(context.Background(), wait+5*time.Second)
	defer cancel()
	// Leadership moves first, so clients retry against the new leader while
	// this node drains its in-flight calls.
	tctx, tcancel := context.WithTimeout(sctx, wait)
	shutdownErr := node.Shutdown(tctx)
	tcancel()
	stopped := make(chan struct{})
	go func() { api.GracefulStop(); close(stopped) }()
	select {
	case <-stopped:
	case <-sctx.Done():
		api.Stop()
	}
	_ = hs.Shutdown(sctx)
	stopTracing(sctx)
	if shutdownErr != nil {
		log.Warn("node shutdown", "error", shutdownErr)
	}
	log.Info("stopped")
	return serveErr
}

// warnInsecure says loudly, at start, what a node listening beyond loopback
// leaves open.
func warnInsecure(cfg config.Config, log hclog.Logger) {
	if !isLoopback(cfg.Server.GRPCAddr) {
		if !cfg.Auth.Enabled {
			log.Warn("!!! API AUTH IS OFF: the gRPC API listens beyond loopback and anyone who reaches it can enqueue, reserve, drain and change the cluster; set [auth] enabled = true with [[auth.tokens]]",
				"grpc_addr", cfg.Server.GRPCAddr)
		}
		if !cfg.TLS.APIEnabled() {
			log.Warn("!!! gRPC API TLS IS OFF: calls, payloads and tokens cross the network in plaintext; set [tls] cert_file and key_file",
				"grpc_addr", cfg.Server.GRPCAddr)
		}
	}
	if !isLoopback(cfg.Server.RaftAddr) && !cfg.TLS.RaftEnabled() {
		log.Warn("!!! RAFT TLS IS OFF: anyone who reaches the raft port can read the replicated log or pose as a node; set [tls] raft_cert_file, raft_key_file and raft_ca_file",
			"raft_addr", cfg.Server.RaftAddr)
	}
}

func isLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// memorySettings is what applyMemorySettings decided: a limit in bytes (0 for
// none) and a GC percent, each with where it came from.
type memorySettings struct {
	limit       int64
	limitFrom   string
	gcPercent   int
	percentFrom string
}

// autoSoftLimit is server.memory_limit = "auto" for a cgroup limited to
// limit bytes: the limit less what the node needs outside the Go heap,
// which is a tenth of it but at least 64 MiB (a quarter of a cgroup
// under 256 MiB). In a cgroup, the page cache of the files the node
// writes and reads (its Raft log, its store, the binary itself) is charged
// beside the heap. At 90% of a 256 MiB cgroup the heap rode up to the
// soft limit (gc_min_headroom), left 26 MiB for those pages, and a node
// restarting there stalled for over a minute while the kernel reclaimed
// them; from 640 MiB up the rule is 90%.
func autoSoftLimit(limit int64) int64 {
	const outsideHeap = 64 << 20
	return limit - max(limit/10, min(limit/4, outsideHeap))
}

// decideMemorySettings turns server.memory_limit and server.gc_percent into
// runtime settings. An environment variable GOMEMLIMIT or GOGC, when set,
// wins (the runtime has applied it already); "auto" takes autoSoftLimit of
// the cgroup's memory limit when cgroupLimit reports one.
func decideMemorySettings(s config.Server, env func(string) (string, bool), cgroupLimit func() (int64, bool)) (memorySettings, error) {
	var m memorySettings
	if _, ok := env("GOMEMLIMIT"); ok {
		m.limit, m.limitFrom = -1, "GOMEMLIMIT"
	} else {
		limit, auto, err := s.MemoryLimitBytes()
		if err != nil {
			return m, fmt.Errorf("server.memory_limit: %w", err)
		}
		m.limit, m.limitFrom = limit, "server.memory_limit"
		if auto {
			m.limitFrom = "server.memory_limit = auto (no cgroup limit)"
			if cg, ok := cgroupLimit(); ok {
				m.limit, m.limitFrom = autoSoftLimit(cg), "server.memory_limit = auto (the cgroup limit less max(10%, 64 MiB))"
			}
		}
	}
	if _, ok := env("GOGC"); ok {
		m.gcPercent, m.percentFrom = 0, "GOGC"
	} else {
		m.gcPercent, m.percentFrom = s.GCPercent, "server.gc_percent"
	}
	return m, nil
}

// applyMemorySettings sets the collector's memory limit and GC percent from
// the config (see decideMemorySettings) and logs them.
func applyMemorySettings(s config.Server, env func(string) (string, bool), cgroupLimit func() (int64, bool), log hclog.Logger) memorySettings {
	m, err := decideMemorySettings(s, env, cgroupLimit)
	if err != nil { // Validate refuses such a config before serve starts
		log.Warn("memory settings", "error", err)
		return memorySettings{}
	}
	if m.limit > 0 {
		debug.SetMemoryLimit(m.limit)
	}
	if m.gcPercent != 0 {
		debug.SetGCPercent(m.gcPercent)
	}
	limit := "none"
	if l := debug.SetMemoryLimit(-1); l != 1<<63-1 {
		limit = strconv.FormatInt(l>>20, 10) + " MiB"
	}
	gc := debug.SetGCPercent(-1)
	debug.SetGCPercent(gc)
	log.Info("go runtime memory", "memory_limit", limit, "from", m.limitFrom, "gc_percent", gc, "gc_percent_from", m.percentFrom)
	return m
}

// nodeMemoryLimit is the smallest memory limit the node knows of, for the
// default memory budget: its cgroup's (the kernel kills above it), the Go
// runtime's soft limit when one was set explicitly (GOMEMLIMIT or a size in
// server.memory_limit; "auto" is derived from the cgroup's), else physical
// memory. 0 when none is known. The budget this gives is only what the node
// proposes when it leads: the replicas apply the one in the log (fsm
// DESIGN.md, "Memory budget").
func nodeMemoryLimit(m memorySettings, cgroupLimit, physical func() (int64, bool)) (int64, string) {
	var limit int64
	var from string
	consider := func(v int64, what string) {
		if v > 0 && (limit == 0 || v < limit) {
			limit, from = v, what
		}
	}
	if cg, ok := cgroupLimit(); ok {
		consider(cg, "cgroup memory limit")
	}
	switch {
	case m.limit < 0: // GOMEMLIMIT: the runtime applied it
		if l := debug.SetMemoryLimit(-1); l != math.MaxInt64 {
			consider(l, "GOMEMLIMIT")
		}
	case m.limit > 0 && m.limitFrom == "server.memory_limit":
		consider(m.limit, "server.memory_limit")
	}
	if limit == 0 {
		if p, ok := physical(); ok {
			consider(p, "physical memory")
		}
	}
	return limit, from
}

// physicalMemory is MemTotal of /proc/meminfo; false off Linux.
func physicalMemory() (int64, bool) {
	data, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0, false
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "MemTotal:"); ok {
			f := strings.Fields(rest)
			if len(f) == 2 && f[1] == "kB" {
				if kb, err := strconv.ParseInt(f[0], 10, 64); err == nil && kb > 0 {
					return kb << 10, true
				}
			}
		}
	}
	return 0, false
}

// cgroupMemoryLimit is the memory limit the kernel enforces on this
// process: the smallest of its own cgroup's and every ancestor's, cgroup v1
// or v2 (internal/cgroupmem); false when there is none.
func cgroupMemoryLimit() (int64, bool) {
	l, ok := cgroupmem.Find(os.DirFS("/"), "proc/self")
	return l.Bytes, ok
}

// startPprof serves net/http/pprof on addr (SEPP_PPROF_ADDR) and returns a
// function that stops it.
func startPprof(addr string, log hclog.Logger) (func(), error) {
	lis, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("SEPP_PPROF_ADDR: %w", err)
	}
	if !isLoopback(lis.Addr().String()) {
		log.Warn("pprof listens beyond loopback: profiles expose memory contents", "addr", lis.Addr().String())
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(lis) }()
	log.Info("pprof serving", "addr", "http://"+lis.Addr().String()+"/debug/pprof/")
	return func() { _ = srv.Close() }, nil
}

// logReplay logs how long the node took to open (verify its data, restore
// its snapshot) and then to apply what its own log held at start: the
// restart time, in two parts.
func logReplay(ctx context.Context, node *cluster.Node, opening time.Time, log hclog.Logger) {
	opened := time.Since(opening)
	st, err := node.Status(ctx)
	if err != nil {
		return
	}
	target := st.LastLogIndex
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(10 * time.Minute)
	for st.AppliedIndex < target {
		select {
		case <-ctx.Done():
			return
		case <-deadline:
			log.Warn("local log not applied after 10 minutes", "applied_index", st.AppliedIndex, "last_log_index", target)
			return
		case <-tick.C:
		}
		if st, err = node.Status(ctx); err != nil {
			return
		}
	}
	log.Info("restart: state rebuilt", "open", opened.Round(time.Millisecond),
		"total", time.Since(opening).Round(time.Millisecond), "applied_index", st.AppliedIndex)
}

// askMemberFacts asks a member's ClusterService.GetMemberFacts, open to
// any caller, for its facts; a member whose binary predates the call
// (Unimplemented) gives cluster.ErrFactsUnsupported, and the leader asks
// askCommandVersion's question instead.
func askMemberFacts(dial []grpc.DialOption) func(context.Context, cluster.NodeInfo) (cluster.MemberFacts, error) {
	return func(ctx context.Context, m cluster.NodeInfo) (cluster.MemberFacts, error) {
		cc, err := grpc.NewClient(m.GRPCAddr, dial...)
		if err != nil {
			return cluster.MemberFacts{}, err
		}
		defer cc.Close()
		resp, err := seppv1.NewClusterServiceClient(cc).GetMemberFacts(ctx, &seppv1.GetMemberFactsRequest{})
		switch {
		case status.Code(err) == codes.Unimplemented:
			return cluster.MemberFacts{}, fmt.Errorf("%s: %w", m.ID, cluster.ErrFactsUnsupported)
		case err != nil:
			return cluster.MemberFacts{}, err
		}
		f := resp.GetFacts()
		out := cluster.MemberFacts{NodeID: m.ID, BinaryVersion: f.GetBinaryVersion(),
			MinCommandVersion: f.GetMinCommandVersion(), MaxCommandVersion: f.GetMaxCommandVersion(),
			MemoryLimitBytes: f.GetMemoryLimitBytes(), MemoryLimitFrom: f.GetMemoryLimitFrom(),
			GOMAXPROCS: int(f.GetGomaxprocs())}
		if f.GetStartTime() != nil {
			out.Started = f.GetStartTime().AsTime()
		}
		if resp.GetClock() != nil {
			out.Clock = resp.GetClock().AsTime() // the clock checks (cluster/clock.go)
		}
		return out, nil
	}
}

// askCommandVersion asks a member's gRPC health service, open to any
// caller, for the highest command version its binary applies
// (cluster.CommandVersionService); 1 when it serves none newer. Legacy:
// only for a member that serves no GetMemberFacts; to be removed after the
// next release.
func askCommandVersion(dial []grpc.DialOption) func(context.Context, cluster.NodeInfo) (uint32, error) {
	return func(ctx context.Context, m cluster.NodeInfo) (uint32, error) {
		cc, err := grpc.NewClient(m.GRPCAddr, dial...)
		if err != nil {
			return 0, err
		}
		defer cc.Close()
		h := healthpb.NewHealthClient(cc)
		for v := uint32(fsm.CommandVersion); v >= 2; v-- {
			resp, err := h.Check(ctx, &healthpb.HealthCheckRequest{Service: cluster.CommandVersionService(v)})
			switch {
			case status.Code(err) == codes.NotFound:
				continue
			case err != nil:
				return 0, err
			case resp.GetStatus() == healthpb.HealthCheckResponse_SERVING:
				return v, nil
			}
		}
		return 1, nil
	}
}
