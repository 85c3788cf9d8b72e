package cli

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"os"
	"strings"

	"github.com/spf13/pflag"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	"github.com/sepp-io/sepp/client"
	"github.com/sepp-io/sepp/tlsutil"
)

// Environment variables the security flags default to, so a token need not
// appear on a command line (where ps would show it).
const (
	EnvToken      = "SEPP_TOKEN"
	EnvCA         = "SEPP_CA"
	EnvCert       = "SEPP_CERT"
	EnvKey        = "SEPP_KEY"
	EnvServerName = "SEPP_SERVER_NAME"
)

// securityFlags are the global TLS and token flags.
type securityFlags struct {
	token      string
	ca         string
	cert       string
	key        string
	serverName string
	tls        bool
}

func (s *securityFlags) register(pf *pflag.FlagSet) {
	pf.StringVar(&s.token, "token", "", "API bearer token (default $"+EnvToken+"); prefer the variable: flags show in ps")
	pf.StringVar(&s.ca, "ca", "", "PEM CA that signed the server certificate; turns TLS on (default $"+EnvCA+")")
	pf.StringVar(&s.cert, "cert", "", "PEM client certificate for mutual TLS; turns TLS on (default $"+EnvCert+")")
	pf.StringVar(&s.key, "key", "", "PEM key of --cert (default $"+EnvKey+")")
	pf.StringVar(&s.serverName, "server-name", "", "name to verify in the server certificate (default: the host of --addr; $"+EnvServerName+")")
	pf.BoolVar(&s.tls, "tls", false, "use TLS with the system's CAs (implied by --ca and --cert)")
}

func orEnv(v, env string) string {
	if v != "" {
		return v
	}
	return os.Getenv(env)
}

// clientOptionsTLS turns the flags (and their variables) into client
// options, and returns the TLS config (nil without TLS) for diagnosing a
// failed handshake (diagnoseTLS). A token is sent only over TLS, or to
// loopback addresses.
func (s *securityFlags) clientOptionsTLS(addrs []string) ([]client.Option, *tls.Config, error) {
	token := strings.TrimSpace(orEnv(s.token, EnvToken))
	ca, cert, key := orEnv(s.ca, EnvCA), orEnv(s.cert, EnvCert), orEnv(s.key, EnvKey)
	useTLS := s.tls || ca != "" || cert != ""
	var (
		opts   []client.Option
		tlsCfg *tls.Config
	)
	if useTLS {
		cfg, err := tlsutil.ClientConfig(ca, cert, key, orEnv(s.serverName, EnvServerName))
		if err != nil {
			return nil, nil, err
		}
		tlsCfg = cfg
		opts = append(opts, client.WithDialOptions(grpc.WithTransportCredentials(credentials.NewTLS(cfg))))
	}
	if token != "" {
		if !useTLS {
			for _, a := range addrs {
				if !loopbackAddr(a) {
					return nil, nil, fmt.Errorf("--token: refusing to send a token in plaintext to %s; use --ca (or --tls) so the connection is encrypted", a)
				}
			}
		}
		opts = append(opts, client.WithDialOptions(grpc.WithPerRPCCredentials(bearerToken{token: token, tls: useTLS})))
	}
	return opts, tlsCfg, nil
}

func loopbackAddr(addr string) bool {
	host, _, err := net.SplitHostPort(strings.TrimSpace(addr))
	if err != nil {
		return false
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// bearerToken sends "authorization: Bearer <token>" with every call.
type bearerToken struct {
	token string
	tls   bool
}

func (b bearerToken) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	return map[string]string{"authorization": "Bearer " + b.token}, nil
}

// RequireTransportSecurity is false only for the loopback case that
// clientOptions allowed.
func (b bearerToken) RequireTransportSecurity() bool { return b.tls }

// String keeps the token out of any %v of the credentials.
func (b bearerToken) String() string { return "bearerToken{redacted}" }
