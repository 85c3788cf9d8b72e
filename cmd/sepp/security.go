package main

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/sepp-io/sepp/auth"
	"github.com/sepp-io/sepp/config"
	"github.com/sepp-io/sepp/rpc"
	"github.com/sepp-io/sepp/rpc/connlimit"
	"github.com/sepp-io/sepp/tlsutil"
)

// security is what [tls] and [auth] turn into for one node.
type security struct {
	api  *tlsutil.Reloadable // gRPC and HTTP server certificate; nil: plaintext
	raft *tlsutil.Reloadable // cluster certificate and CA; nil: plaintext

	grpcOptions       []grpc.ServerOption
	apiTLS            *tls.Config // the API port's (gRPC and Connect); nil: plaintext
	unaryInterceptors []grpc.UnaryServerInterceptor
	httpTLS           *tls.Config // nil: plain HTTP
	forwardClient     *http.Client

	// grpcForwardDial dials the leader's gRPC API for a follower's
	// forwarded calls; nil, with the reason in grpcForwardOff, when this
	// node cannot.
	grpcForwardDial []grpc.DialOption
	grpcForwardOff  string
}

// newSecurity loads the certificates and tokens of cfg. A missing or bad
// file fails the start, naming it.
func newSecurity(cfg config.Config, reg prometheus.Registerer, log hclog.Logger) (*security, error) {
	s := &security{}
	t := cfg.TLS
	if t.APIEnabled() {
		r, err := tlsutil.NewReloadable(tlsutil.Files{CertFile: t.CertFile, KeyFile: t.KeyFile, CAFile: t.ClientCAFile})
		if err != nil {
			return nil, fmt.Errorf("[tls] cert_file/key_file/client_ca_file: %w", err)
		}
		s.api = r
		gcfg, err := tlsutil.ServerConfig(r, t.ClientCAFile != "")
		if err != nil {
			return nil, err
		}
		// The API port runs the handshake itself, before it routes a
		// connection to gRPC or to Connect (rpc.APIServer); gRPC gets the
		// connection already secured.
		s.apiTLS = gcfg
		s.grpcOptions = append(s.grpcOptions, grpc.Creds(rpc.HandshakenTLS()))
		if t.HTTP {
			if s.httpTLS, err = tlsutil.ServerConfig(r, false); err != nil {
				return nil, err
			}
		}
	}
	if t.RaftEnabled() {
		r, err := tlsutil.NewReloadable(tlsutil.Files{CertFile: t.RaftCertFile, KeyFile: t.RaftKeyFile, CAFile: t.RaftCAFile})
		if err != nil {
			return nil, fmt.Errorf("[tls] raft_cert_file/raft_key_file/raft_ca_file: %w", err)
		}
		s.raft = r
	}
	if t.APIEnabled() {
		// A follower forwards admin actions to the leader's HTTPS listener
		// and leader-only calls to its gRPC API: trust the system roots and
		// this deployment's own CAs.
		roots, err := x509.SystemCertPool()
		if err != nil || roots == nil {
			roots = x509.NewCertPool()
		}
		for _, f := range []string{t.RaftCAFile, t.ClientCAFile} {
			if f == "" {
				continue
			}
			data, err := os.ReadFile(f)
			if err != nil {
				return nil, fmt.Errorf("[tls] %s: %w", f, err)
			}
			roots.AppendCertsFromPEM(data)
		}
		peerTLS := &tls.Config{MinVersion: tlsutil.MinVersion, RootCAs: roots}
		if s.httpTLS != nil {
			s.forwardClient = &http.Client{
				Timeout:   10 * time.Second,
				Transport: &http.Transport{TLSClientConfig: peerTLS},
			}
		}
		if t.ClientCAFile != "" {
			s.grpcForwardOff = "the API requires client certificates ([tls] client_ca_file), which a node has none of"
		} else {
			s.grpcForwardDial = []grpc.DialOption{grpc.WithTransportCredentials(credentials.NewTLS(peerTLS.Clone()))}
		}
	} else {
		s.grpcForwardDial = []grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())}
	}

	s.unaryInterceptors = append(s.unaryInterceptors, connlimit.NewLongPolls(cfg.Server.MaxLongPollsPerConn).UnaryInterceptor())
	if cfg.Auth.Enabled {
		tokens := make([]auth.Token, 0, len(cfg.Auth.Tokens))
		for i, ct := range cfg.Auth.Tokens {
			h, err := auth.ParseHash(ct.SHA256)
			if err != nil {
				return nil, fmt.Errorf("auth.tokens[%d].sha256: %w", i, err)
			}
			tok := auth.Token{Name: ct.Name, SHA256: h}
			for j, rn := range ct.Roles {
				r, err := auth.ParseRole(rn)
				if err != nil {
					return nil, fmt.Errorf("auth.tokens[%d].roles[%d]: %w", i, j, err)
				}
				tok.Roles = append(tok.Roles, r)
			}
			tokens = append(tokens, tok)
		}
		a, err := auth.New(tokens, auth.Options{Logger: log.Named("auth"), Registerer: reg})
		if err != nil {
			return nil, err
		}
		// Authorization runs before the per-connection cap, so an unknown
		// caller cannot hold long-poll slots.
		s.unaryInterceptors = append([]grpc.UnaryServerInterceptor{a.UnaryInterceptor()}, s.unaryInterceptors...)
		s.grpcOptions = append(s.grpcOptions, grpc.ChainStreamInterceptor(a.StreamInterceptor()))
	}
	return s, nil
}

// raftStreamLayer returns the mutual-TLS stream the Raft transport runs on,
// or nil when [tls] has no cluster certificate (the node then uses plain
// TCP).
func (s *security) raftStreamLayer(cfg config.Server) (raft.StreamLayer, error) {
	if s.raft == nil {
		return nil, nil
	}
	var advertise net.Addr
	if cfg.RaftAdvertise != "" {
		a, err := net.ResolveTCPAddr("tcp", cfg.RaftAdvertise)
		if err != nil {
			return nil, fmt.Errorf("server.raft_advertise %q: %w", cfg.RaftAdvertise, err)
		}
		advertise = a
	}
	stream, err := tlsutil.NewStreamLayer(cfg.RaftAddr, advertise, s.raft)
	if err != nil {
		return nil, err
	}
	return stream, nil
}

// reloadOnSIGHUP rereads every certificate on SIGHUP until stop is closed.
// A failed reload keeps the certificates in use and says why.
func (s *security) reloadOnSIGHUP(stop <-chan struct{}, log hclog.Logger) {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	go func() {
		defer signal.Stop(hup)
		for {
			select {
			case <-stop:
				return
			case <-hup:
				s.reload(log)
			}
		}
	}()
}

func (s *security) reload(log hclog.Logger) {
	for _, r := range []struct {
		what string
		r    *tlsutil.Reloadable
	}{{"api", s.api}, {"raft", s.raft}} {
		if r.r == nil {
			continue
		}
		if err := r.r.Reload(); err != nil {
			log.Error("certificate reload failed; still serving the previous certificate", "listener", r.what, "error", err)
			continue
		}
		attrs := []any{"listener", r.what, "cert_file", r.r.Files().CertFile}
		if c := r.r.Certificate(); c != nil && c.Leaf != nil {
			attrs = append(attrs, "not_after", c.Leaf.NotAfter.UTC().Format(time.RFC3339))
		}
		log.Info("certificate reloaded", attrs...)
	}
}
