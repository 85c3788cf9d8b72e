package main

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/sepp-io/sepp/cluster"
)

// readiness is the part of *cluster.Node /readyz asks.
type readiness interface {
	Readiness(maxLag uint64) cluster.Readiness
}

// readyzHandler answers 200 when the node is ready to serve (it knows a
// leader of the current term and has applied the log to within maxLag
// entries of the commit index), else 503; the body says which, and why
// not. /healthz stays the liveness check: a node can be alive and not
// ready (a candidate, a node replaying its log), and restarting it then
// would only make things worse.
func readyzHandler(n readiness, maxLag uint64) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		r := n.Readiness(maxLag)
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		if !r.Ready {
			w.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprintf(w, "not ready: %s\n", r.Reason)
		} else {
			fmt.Fprintln(w, "ready")
		}
		fmt.Fprintf(w, "state=%s leader=%s term=%d commit_index=%d applied_index=%d\n",
			r.State, orNone(r.Leader), r.Term, r.CommitIndex, r.AppliedIndex)
	}
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// probeCommand is `sepp probe URL`: GET the URL and exit 0 on 200, 1
// otherwise, printing the body. The image holds no shell and no curl, so
// the compose health check runs the binary itself against /readyz.
func probeCommand() *cobra.Command {
	var timeout time.Duration
	var insecure bool
	cmd := &cobra.Command{
		Use:     "probe URL",
		Short:   "GET a node's /readyz (or any URL) and exit 0 only on 200, for health checks",
		Example: "  sepp probe http://127.0.0.1:8080/readyz",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, cancel := context.WithTimeout(cmd.Context(), timeout)
			defer cancel()
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, args[0], nil)
			if err != nil {
				return usageError{err}
			}
			client := &http.Client{}
			if insecure {
				// For a node's own loopback probe over HTTPS with a
				// certificate for its public name.
				client.Transport = &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}} //nolint:gosec // opt-in, loopback probes
			}
			resp, err := client.Do(req)
			if err != nil {
				return err
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
			fmt.Fprint(cmd.OutOrStdout(), string(body))
			if resp.StatusCode != http.StatusOK {
				return fmt.Errorf("%s: %s", args[0], strings.TrimSpace(resp.Status))
			}
			return nil
		},
	}
	cmd.Flags().DurationVar(&timeout, "timeout", 2*time.Second, "give up after this long")
	cmd.Flags().BoolVar(&insecure, "insecure", false, "do not verify an HTTPS server's certificate (a node probing itself on loopback)")
	return cmd
}
