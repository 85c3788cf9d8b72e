package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/sepp-io/sepp/cmd/sepp/internal/cli"
	"github.com/sepp-io/sepp/devcluster"
)

func devCommand() *cobra.Command {
	var (
		nodes   int
		dir     string
		extra   string
		verbose bool
		useTLS  bool
		keepDL  time.Duration
	)
	cmd := &cobra.Command{
		Use:   "dev",
		Short: "Start a local cluster of sepp processes on loopback (default three nodes)",
		Long: `dev starts a local cluster of real sepp processes on 127.0.0.1, each with its own
config, data dir and log under --dir, and prints their addresses and process ids so
you can try failover by hand (kill -9 the leader and watch a follower take over).
It prints the export line that points the CLI at the cluster. Dead letters are
kept for --dead-letter-retention (7 days) so that a failed job can be looked at;
--dead-letter-retention 0 drops them as a server does by default.
Ctrl-C stops every node.`,
		Example: "  sepp dev --nodes 3\n  sepp dev --nodes 3 --dir ./sepp-dev --extra retention.toml\n  sepp dev --tls",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if nodes < 1 || nodes > 9 {
				return usageError{fmt.Errorf("--nodes must be 1..9, got %d", nodes)}
			}
			extraTOML := ""
			if extra != "" {
				data, err := os.ReadFile(extra)
				if err != nil {
					return fmt.Errorf("--extra: %w", err)
				}
				extraTOML = string(data)
			}
			if keepDL < 0 {
				return usageError{fmt.Errorf("--dead-letter-retention must not be negative, got %s", keepDL)}
			}
			opts := devcluster.Options{Nodes: nodes, Dir: dir, ExtraTOML: extraTOML, TLS: useTLS, DeadLetterRetention: keepDL}
			if verbose {
				opts.Output = cmd.ErrOrStderr()
			}
			if dir != "" {
				abs, err := filepath.Abs(dir)
				if err != nil {
					return err
				}
				opts.Dir = abs
			}
			c, err := devcluster.Start(opts)
			if err != nil {
				return err
			}
			defer func() { _ = c.Stop() }()
			ctx, cancel := context.WithTimeout(cmd.Context(), 30*time.Second)
			err = c.WaitServing(ctx)
			cancel()
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if c.Restarted {
				fmt.Fprintf(out, "sepp dev: the %d-node cluster in %s restarted, with its data, on its earlier addresses\n", nodes, c.Dir())
			} else {
				fmt.Fprintf(out, "sepp dev: %d nodes running (data and logs in %s)\n", nodes, c.Dir())
			}
			for i, n := range c.Nodes {
				fmt.Fprintf(out, "  %s  grpc %s  http %s  raft %s  pid %d\n", n.ID, n.GRPCAddr, n.HTTPAddr, n.RaftAddr, c.Pid(i))
			}
			if p := c.PKI; p != nil {
				fmt.Fprintf(out, "\nTLS on every listener (throwaway CA in %s; the API requires a client certificate).\n", filepath.Dir(p.CAFile))
				fmt.Fprintf(out, "point the CLI at it:\n  export %s=%s %s=%s %s=%s %s=%s\n", cli.EnvAddr, joinAddrs(c.Addrs()), cli.EnvCA, p.CAFile, cli.EnvCert, p.ClientCertFile, cli.EnvKey, p.ClientKeyFile)
				fmt.Fprintf(out, "  sepp info\n")
				fmt.Fprintf(out, "or: sepp info --addr %s --ca %s --cert %s --key %s\n", joinAddrs(c.Addrs()), p.CAFile, p.ClientCertFile, p.ClientKeyFile)
				fmt.Fprintf(out, "admin UI and /metrics: https://%s (trust %s)\n", c.Nodes[0].HTTPAddr, p.CAFile)
			} else {
				fmt.Fprintf(out, "\npoint the CLI at it:\n  export %s=%s\n  sepp info\n", cli.EnvAddr, joinAddrs(c.Addrs()))
			}
			if keepDL > 0 {
				fmt.Fprintf(out, "dead letters are kept for %s (--dead-letter-retention)\n", cli.HumanDuration(keepDL))
			} else {
				fmt.Fprintln(out, "dead letters are dropped (--dead-letter-retention 0): a dead job leaves no record")
			}
			fmt.Fprintln(out, "Ctrl-C stops the cluster.")
			sig := make(chan os.Signal, 1)
			signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
			defer signal.Stop(sig)
			<-sig
			fmt.Fprintln(out, "stopping...")
			return nil
		},
	}
	cmd.Flags().IntVar(&nodes, "nodes", 3, "number of nodes")
	cmd.Flags().StringVar(&dir, "dir", "", "folder for configs, data and logs, kept; a folder a cluster ran in before restarts that cluster with its jobs (default: a temporary folder removed on exit)")
	cmd.Flags().StringVar(&extra, "extra", "", "a TOML file appended to every node's config ([limits], [storage], [[queues]] ...)")
	cmd.Flags().BoolVarP(&verbose, "verbose", "v", false, "print the nodes' logs")
	cmd.Flags().DurationVar(&keepDL, "dead-letter-retention", 7*24*time.Hour, "keep dead letters this long so they can be listed; 0 drops them (an --extra [storage] dead_letter_retention_ms wins)")
	cmd.Flags().BoolVar(&useTLS, "tls", false, "generate a throwaway CA and run every listener over TLS (client certificates required)")
	return cmd
}

func joinAddrs(addrs []string) string {
	s := ""
	for i, a := range addrs {
		if i > 0 {
			s += ","
		}
		s += a
	}
	return s
}

// usageError makes main exit with code 2, as for bad flags.
type usageError struct{ error }

func (usageError) ExitCode() int { return 2 }

func (u usageError) Unwrap() error { return u.error }
