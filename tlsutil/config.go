package tlsutil

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
)

// MinVersion is the oldest protocol sepp accepts on any listener.
const MinVersion = tls.VersionTLS12

// ServerConfig returns the tls.Config of a listener serving r's
// certificate. With requireClientCert every client must present a
// certificate signed by a CA of r's pool (mutual TLS); r must then have a
// CAFile. Each handshake reads r's current certificate and pool, so Reload
// takes effect for new connections without a restart.
func ServerConfig(r *Reloadable, requireClientCert bool) (*tls.Config, error) {
	if r.Certificate() == nil {
		return nil, errors.New("tls: a server needs a certificate and key")
	}
	if requireClientCert && r.Pool() == nil {
		return nil, errors.New("tls: requiring client certificates needs a client CA file")
	}
	return &tls.Config{
		MinVersion: MinVersion,
		GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) {
			cfg := &tls.Config{
				MinVersion:   MinVersion,
				Certificates: []tls.Certificate{*r.Certificate()},
				NextProtos:   []string{"h2", "http/1.1"},
			}
			if requireClientCert {
				cfg.ClientAuth = tls.RequireAndVerifyClientCert
				cfg.ClientCAs = r.Pool()
			}
			return cfg, nil
		},
	}, nil
}

// ClientConfig returns the tls.Config of a client (the CLI, the Go SDK)
// that trusts the CAs of caFile (empty: the system roots) and, when certFile
// is set, presents that certificate for mutual TLS. serverName overrides the
// name checked in the server's certificate (empty: the dialled host).
func ClientConfig(caFile, certFile, keyFile, serverName string) (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: MinVersion, ServerName: serverName}
	if caFile != "" {
		pool, err := LoadCAPool(caFile)
		if err != nil {
			return nil, err
		}
		cfg.RootCAs = pool
	}
	if (certFile == "") != (keyFile == "") {
		return nil, fmt.Errorf("tls: a client certificate needs both a cert file and a key file (got cert %q, key %q)", certFile, keyFile)
	}
	if certFile != "" {
		cert, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			return nil, fmt.Errorf("tls: load client certificate %s with key %s: %w", certFile, keyFile, err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	return cfg, nil
}

// peerConfigs are the two sides of a cluster link: both present the node's
// cluster certificate and both require the other's to chain to the cluster
// CA. Node addresses are often bare IPs that change, so the peer's identity
// is "holds a certificate the cluster CA signed", not a host name: the
// dialler verifies the chain itself instead of the name.
func peerServerConfig(r *Reloadable) *tls.Config {
	return &tls.Config{
		MinVersion: MinVersion,
		GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) {
			return &tls.Config{
				MinVersion:   MinVersion,
				Certificates: []tls.Certificate{*r.Certificate()},
				ClientAuth:   tls.RequireAndVerifyClientCert,
				ClientCAs:    r.Pool(),
			}, nil
		},
	}
}

func peerClientConfig(r *Reloadable) *tls.Config {
	return &tls.Config{
		MinVersion: MinVersion,
		GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
			return r.Certificate(), nil
		},
		// The name check is replaced by VerifyConnection's chain check.
		InsecureSkipVerify: true, //nolint:gosec // chain verified in VerifyConnection
		VerifyConnection: func(cs tls.ConnectionState) error {
			return verifyPeerChain(cs.PeerCertificates, r.Pool(), x509.ExtKeyUsageServerAuth)
		},
	}
}

// verifyPeerChain checks that the peer presented a certificate chaining to
// pool, valid now, for usage.
func verifyPeerChain(certs []*x509.Certificate, pool *x509.CertPool, usage x509.ExtKeyUsage) error {
	if len(certs) == 0 {
		return errors.New("tls: peer presented no certificate")
	}
	inter := x509.NewCertPool()
	for _, c := range certs[1:] {
		inter.AddCert(c)
	}
	if _, err := certs[0].Verify(x509.VerifyOptions{Roots: pool, Intermediates: inter, KeyUsages: []x509.ExtKeyUsage{usage}}); err != nil {
		return fmt.Errorf("tls: peer certificate %q is not signed by the cluster CA: %w", certs[0].Subject.CommonName, err)
	}
	return nil
}
