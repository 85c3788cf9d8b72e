package main

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/spf13/cobra"

	"github.com/sepp-io/sepp/auth"
	"github.com/sepp-io/sepp/config"
	"github.com/sepp-io/sepp/rpc"
	"github.com/sepp-io/sepp/rpc/adminui"
)

// mountAdminUI serves the admin UI at / on the HTTP listener. With auth off
// it answers loopback clients only unless the config allows otherwise.
func mountAdminUI(ctx context.Context, mux *http.ServeMux, b rpc.Backend, cfg config.Config, sec *security, log hclog.Logger) error {
	opts := adminui.Options{
		Auth:       cfg.Admin.Auth,
		SessionKey: []byte(cfg.Admin.SessionKey),
		SessionTTL: time.Duration(cfg.Admin.SessionTTLMS) * time.Millisecond,
		Logger:     log.Named("adminui"),
		Rates:      adminui.NewRateRing(adminui.DefaultSampleEvery, adminui.DefaultSampleKeep),
		Version:    version,
		StartedAt:  time.Now(),
	}
	if sec != nil && sec.httpTLS != nil {
		// Over HTTPS the session cookie never leaves TLS, and a follower
		// forwards actions to the leader's HTTPS listener.
		opts.SecureCookies = true
		opts.ForwardScheme = "https"
		opts.ForwardClient = sec.forwardClient
	}
	for _, u := range cfg.Admin.Users {
		opts.Users = append(opts.Users, adminui.User{Name: u.Name, PasswordHash: u.PasswordHash, Role: adminui.Role(u.Role)})
	}
	h, err := adminui.New(b, opts)
	if err != nil {
		return err
	}
	// Every node samples its own applied state for the UI's rates and
	// charts, until the node stops.
	go opts.Rates.Run(ctx, b, nil)
	if !cfg.Admin.Auth && !cfg.Admin.AllowUnauthenticatedRemote {
		h = loopbackOnly(h)
	}
	mux.Handle("/", h)
	return nil
}

// loopbackOnly refuses every client that does not connect from loopback.
func loopbackOnly(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		host, _, err := net.SplitHostPort(r.RemoteAddr)
		ip := net.ParseIP(host)
		if err != nil || ip == nil || !ip.IsLoopback() {
			http.Error(w, "the admin UI without sign-in answers loopback clients only: turn on [admin] auth, or set admin.allow_unauthenticated_remote", http.StatusForbidden)
			return
		}
		next.ServeHTTP(w, r)
	})
}

func hashPasswordCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "hash-password",
		Short: "Read a password on stdin and print its bcrypt hash for [admin] users",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			line, err := bufio.NewReader(cmd.InOrStdin()).ReadString('\n')
			if err != nil && line == "" {
				return usageError{fmt.Errorf("no password on stdin")}
			}
			h, err := adminui.HashPassword(strings.TrimRight(line, "\r\n"))
			if err != nil {
				return usageError{err}
			}
			fmt.Fprintln(cmd.OutOrStdout(), h)
			return nil
		},
	}
}

func hashTokenCommand() *cobra.Command {
	var generate bool
	cmd := &cobra.Command{
		Use:   "hash-token",
		Short: "Print the SHA-256 of an API token for [[auth.tokens]] (read on stdin, or --generate a new one)",
		Long: `hash-token prints the sha256 value an [[auth.tokens]] entry stores. The server keeps
only this hash, never the token.

With --generate it makes a new random token and prints both: give the token to the
client (sepp --token, or SEPP_TOKEN) and put the hash in the config. Without it, it
reads a token (at least 16 bytes, no spaces) from stdin.`,
		Example: "  sepp hash-token --generate\n  printf '%s' \"$SEPP_TOKEN\" | sepp hash-token",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			out := cmd.OutOrStdout()
			var token string
			if generate {
				t, err := auth.GenerateToken()
				if err != nil {
					return err
				}
				token = t
			} else {
				line, err := bufio.NewReader(cmd.InOrStdin()).ReadString('\n')
				if err != nil && line == "" {
					return usageError{fmt.Errorf("no token on stdin (or use --generate)")}
				}
				token = strings.TrimRight(line, "\r\n")
			}
			h, err := auth.HashToken(token)
			if err != nil {
				return usageError{err}
			}
			if generate {
				fmt.Fprintf(out, "token:  %s\nsha256: %s\n", token, h)
				return nil
			}
			fmt.Fprintln(out, h)
			return nil
		},
	}
	cmd.Flags().BoolVar(&generate, "generate", false, "make a new random token and print it with its hash")
	return cmd
}
