package cli

import (
	"crypto/tls"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/sepp-io/sepp/cluster"
	"github.com/sepp-io/sepp/engine"
	"github.com/sepp-io/sepp/rpc"
	"github.com/sepp-io/sepp/rpc/rpctest"
	"github.com/sepp-io/sepp/tlsutil"
)

// startBackend serves a real engine and returns its address and backend,
// whose FailWith hook the test may set.
func startBackend(t *testing.T) (string, *rpctest.LocalBackend) {
	t.Helper()
	b, err := rpctest.NewLocalBackend(engine.DefaultConfig(), cluster.NodeInfo{ID: "n1", RaftAddr: "127.0.0.1:7000"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	return rpctest.Serve(t, b, rpc.Options{Version: "test"}), b
}

// startTLSServer serves the API over TLS requiring a client certificate,
// as `sepp dev --tls` does, and returns its address and the dev PKI.
func startTLSServer(t *testing.T) (string, tlsutil.DevPKI) {
	t.Helper()
	pki, err := tlsutil.WriteDevPKI(filepath.Join(t.TempDir(), "pki"), nil, time.Now(), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	r, err := tlsutil.NewReloadable(tlsutil.Files{CertFile: pki.NodeCertFile, KeyFile: pki.NodeKeyFile, CAFile: pki.CAFile})
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := tlsutil.ServerConfig(r, true)
	if err != nil {
		t.Fatal(err)
	}
	b, err := rpctest.NewLocalBackend(engine.DefaultConfig(), cluster.NodeInfo{ID: "n1", RaftAddr: "127.0.0.1:7000"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	return serveTLS(t, b, cfg), pki
}

func serveTLS(t *testing.T, b rpc.Backend, cfg *tls.Config) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	opts := rpc.Options{Version: "test", Logger: rpctest.TestLogger(t)}
	srv, err := rpc.NewAPIServer(rpc.NewGRPCServer(b, opts), rpc.APIOptions{TLS: cfg, Logger: opts.Logger})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { defer close(done); _ = srv.Serve(lis) }()
	t.Cleanup(func() { srv.Stop(); <-done })
	return lis.Addr().String()
}

func deadAddr(t *testing.T) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := lis.Addr().String()
	lis.Close()
	return addr
}

// Every failure prints one "sepp:" prefix (main's), then its class, and
// exits with the documented code. "unknown outcome" appears only for a
// write the server may have applied.
func TestCLI_ErrorClasses(t *testing.T) {
	clearContextEnv(t)
	addr, backend := startBackend(t)
	tlsAddr, pki := startTLSServer(t)
	otherPKI, err := tlsutil.WriteDevPKI(filepath.Join(t.TempDir(), "other"), nil, time.Now(), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	dead := deadAddr(t)
	short := []string{"--timeout", "1s"}
	tests := []struct {
		name     string
		addr     string
		args     []string
		fail     func(op string) error // the backend's hook for this case
		class    string
		code     int
		contains string
	}{
		{name: "RefusedRead", addr: dead, args: []string{"queues"}, class: ClassUnreachable, code: ExitUnavailable, contains: "connection refused"},
		{name: "RefusedWrite", addr: dead, args: []string{"enqueue", "q", "t"}, class: ClassUnreachable, code: ExitUnavailable, contains: "connection refused"},
		{name: "MissingClientCertificate", addr: tlsAddr, args: []string{"queues", "--ca", pki.CAFile}, class: ClassTLS, code: ExitError, contains: "certificate"},
		{name: "UnknownCA", addr: tlsAddr, args: []string{"info", "--ca", otherPKI.CAFile, "--cert", pki.ClientCertFile, "--key", pki.ClientKeyFile}, class: ClassTLS, code: ExitError, contains: "x509"},
		{name: "NotFound", addr: addr, args: []string{"jobs", "get", "999"}, class: ClassNotFound, code: ExitNotFound, contains: "999"},
		{name: "TransferToUnknownNode", addr: addr, args: []string{"cluster", "transfer", "sepp-9"}, class: ClassNotFound, code: ExitNotFound, contains: "sepp-9"},
		{name: "Invalid", addr: addr, args: []string{"enqueue", "q", "t", "--scheduled-at", time.Now().Add(60 * 24 * time.Hour).UTC().Format(time.RFC3339)}, class: ClassInvalid, code: ExitRejected, contains: "scheduled_at"},
		{name: "LeaseLost", addr: addr, args: []string{"nack", "1", "1"}, class: ClassNotFound, code: ExitNotFound},
		{name: "Permission", addr: addr, args: []string{"pause", "q"}, fail: func(string) error { return status.Error(codes.PermissionDenied, "operator role needed") },
			class: ClassPermission, code: ExitError, contains: "operator role needed"},
		{name: "WriteUnknownOutcome", addr: addr, args: []string{"enqueue", "q", "t"}, fail: func(op string) error { return cluster.ErrUnknownOutcome },
			class: ClassUnknownOutcome, code: ExitUnavailable, contains: "may have taken effect"},
		{name: "ReadWithoutLeaderIsUnavailableNotUnknown", addr: addr, args: []string{"queues"}, fail: func(string) error { return cluster.ErrNoLeader },
			class: ClassUnavailable, code: ExitUnavailable, contains: "deadline exceeded"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			backend.FailWith(tt.fail)
			defer backend.FailWith(nil)
			_, code, err := seppErr(t, tt.addr, append(tt.args, short...)...)
			if code != tt.code {
				t.Errorf("exit %d, want %d", code, tt.code)
			}
			if err == nil {
				t.Fatal("no error")
			}
			msg := err.Error()
			if !strings.HasPrefix(msg, tt.class+": ") {
				t.Errorf("message %q does not start with %q", msg, tt.class+": ")
			}
			if strings.Contains(msg, "sepp:") {
				t.Errorf("message %q repeats the sepp: prefix main prints", msg)
			}
			if tt.class != ClassUnknownOutcome && strings.Contains(msg, "outcome unknown") {
				t.Errorf("message %q claims an unknown outcome", msg)
			}
			if !strings.Contains(msg, tt.contains) {
				t.Errorf("message %q does not contain %q", msg, tt.contains)
			}
		})
	}
	// With the right files the TLS server answers.
	mustRun(t, tlsAddr, "queues", "--ca", pki.CAFile, "--cert", pki.ClientCertFile, "--key", pki.ClientKeyFile)
}

func TestDescribe_StripsPrefixesAndTransportWrapping(t *testing.T) {
	tests := []struct{ in, want string }{
		{`sepp: list queues: connection error: desc = "transport: Error while dialing: dial tcp 127.0.0.1:5: connect: connection refused"`,
			"list queues: dial tcp 127.0.0.1:5: connect: connection refused"},
		{`sepp: ack: outcome unknown (an attempt may have taken effect): sepp: ack: no leader`, "ack: outcome unknown (an attempt may have taken effect): ack: no leader"},
		{"plain", "plain"},
	}
	for _, tt := range tests {
		if got := describe(errorString(tt.in)); got != tt.want {
			t.Errorf("describe(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

type errorString string

func (e errorString) Error() string { return string(e) }

// clearContextEnv keeps the tests off the user's own contexts and variables.
func clearContextEnv(t *testing.T) {
	t.Helper()
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	for _, v := range []string{EnvAddr, EnvContext, EnvToken, EnvCA, EnvCert, EnvKey, EnvServerName} {
		t.Setenv(v, "")
	}
}
