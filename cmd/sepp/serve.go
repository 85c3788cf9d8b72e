package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/spf13/cobra"

	"github.com/sepp-io/sepp/cluster"
	"github.com/sepp-io/sepp/config"
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
HTTP listener with /metrics, /healthz and the admin UI.

With no --config it is a cluster of one with every default. With a config file it
joins the static cluster its [cluster] peers name; see deploy/sepp.example.toml for
every key. Flags override the file's [server] keys.

SIGTERM or Ctrl-C stops it gracefully: a leader hands leadership to another node
first, so clients see milliseconds of unavailability, not an election.`,
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
	nc.SnapshotInterval = ms(cl.SnapshotIntervalMS)
	nc.TrailingLogs = uint64(cl.TrailingLogs)
	nc.SnapshotRetain = cl.SnapshotsRetained
	nc.MaxCommandsPerEntry = cl.MaxCommandsPerEntry
	nc.MaxEntriesInFlight = cl.MaxEntriesInFlight
	nc.LeaseGrace = ms(cl.LeaseGraceMS)
	nc.LogStoreWriteTimeout = ms(cl.StoreWriteTimeoutMS)
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

// serve runs a node until ctx ends, then stops it gracefully.
func serve(ctx context.Context, cfg config.Config) error {
	log := newLogger(cfg.Server)
	if err := os.MkdirAll(cfg.Server.DataDir, 0o750); err != nil {
		return fmt.Errorf("data dir: %w", err)
	}
	nc, err := nodeConfig(cfg, log)
	if err != nil {
		return err
	}
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
	if nc.Transport, err = sec.raftTransport(cfg.Server, log); err != nil {
		return err
	}
	if sec.httpTLS != nil {
		httpLis = tls.NewListener(httpLis, sec.httpTLS)
	}

	node, err := cluster.NewNode(nc)
	if err != nil {
		if c, ok := nc.Transport.(io.Closer); ok {
			_ = c.Close()
		}
		return fmt.Errorf("start node: %w", err)
	}
	reloadStop := make(chan struct{})
	defer close(reloadStop)
	sec.reloadOnSIGHUP(reloadStop, log)

	gs := rpc.NewGRPCServer(node, rpc.Options{
		Logger:                 log.Named("rpc"),
		MaxMessageBytes:        cfg.Server.MaxMessageBytes,
		MaxReserveWait:         time.Duration(cfg.Server.MaxLongPollMS) * time.Millisecond,
		MaxConcurrentLongPolls: cfg.Server.MaxLongPolls,
		Version:                version,
		Registerer:             reg,
		UnaryInterceptors:      sec.unaryInterceptors,
		ServerOptions:          sec.grpcOptions,
	})
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
	if err := mountAdminUI(mux, node, cfg, sec, log); err != nil {
		node.Close()
		return err
	}
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}

	errc := make(chan error, 2)
	go func() { errc <- gs.Serve(grpcLis) }()
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
	go func() { gs.GracefulStop(); close(stopped) }()
	select {
	case <-stopped:
	case <-sctx.Done():
		gs.Stop()
	}
	_ = hs.Shutdown(sctx)
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
