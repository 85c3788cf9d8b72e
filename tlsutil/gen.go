package tlsutil

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// CA is a certificate authority that can issue certificates.
type CA struct {
	Cert    *x509.Certificate
	Key     *ecdsa.PrivateKey
	CertPEM []byte
}

// Issued is one certificate and its key in PEM.
type Issued struct {
	CertPEM []byte
	KeyPEM  []byte
}

// CertSpec describes a certificate to issue.
type CertSpec struct {
	CommonName string
	// Hosts are DNS names and IP addresses for the subject alternative names.
	Hosts []string
	// Server and Client select the extended key usages.
	Server, Client bool
	NotBefore      time.Time
	NotAfter       time.Time
}

// NewCA makes a self-signed ECDSA P-256 CA valid from notBefore to notAfter.
func NewCA(commonName string, notBefore, notAfter time.Time) (*CA, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("tls: CA key: %w", err)
	}
	serial, err := newSerial()
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: commonName, Organization: []string{"sepp"}},
		NotBefore:             notBefore,
		NotAfter:              notAfter,
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, fmt.Errorf("tls: create CA certificate: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("tls: parse CA certificate: %w", err)
	}
	return &CA{Cert: cert, Key: key, CertPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}, nil
}

// Issue signs a new ECDSA P-256 certificate per spec.
func (ca *CA) Issue(spec CertSpec) (Issued, error) {
	if !spec.Server && !spec.Client {
		return Issued{}, errors.New("tls: a certificate needs server or client usage")
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return Issued{}, fmt.Errorf("tls: key: %w", err)
	}
	serial, err := newSerial()
	if err != nil {
		return Issued{}, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: spec.CommonName, Organization: []string{"sepp"}},
		NotBefore:    spec.NotBefore,
		NotAfter:     spec.NotAfter,
		KeyUsage:     x509.KeyUsageDigitalSignature,
	}
	if spec.Server {
		tmpl.ExtKeyUsage = append(tmpl.ExtKeyUsage, x509.ExtKeyUsageServerAuth)
	}
	if spec.Client {
		tmpl.ExtKeyUsage = append(tmpl.ExtKeyUsage, x509.ExtKeyUsageClientAuth)
	}
	for _, h := range spec.Hosts {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, &key.PublicKey, ca.Key)
	if err != nil {
		return Issued{}, fmt.Errorf("tls: create certificate %q: %w", spec.CommonName, err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return Issued{}, fmt.Errorf("tls: encode key: %w", err)
	}
	return Issued{
		CertPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		KeyPEM:  pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}),
	}, nil
}

func newSerial() (*big.Int, error) {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, fmt.Errorf("tls: serial: %w", err)
	}
	return n, nil
}

// DevPKI is what WriteDevPKI wrote: the paths of a throwaway CA, one node
// certificate (server and client usage, for the API, HTTP and Raft) and one
// client certificate for the CLI.
type DevPKI struct {
	CAFile         string
	NodeCertFile   string
	NodeKeyFile    string
	ClientCertFile string
	ClientKeyFile  string
}

// WriteDevPKI generates a CA valid for validity from now and certificates
// for hosts (the node certificate also names localhost, 127.0.0.1 and ::1),
// and writes them to dir: ca.pem, node.pem, node-key.pem, client.pem,
// client-key.pem. Keys are written mode 0600. For development only: the CA
// key is discarded, so nothing more can be issued.
func WriteDevPKI(dir string, hosts []string, now time.Time, validity time.Duration) (DevPKI, error) {
	notBefore, notAfter := now.Add(-time.Hour), now.Add(validity)
	ca, err := NewCA("sepp dev CA", notBefore, notAfter)
	if err != nil {
		return DevPKI{}, err
	}
	all := append([]string{"localhost", "127.0.0.1", "::1"}, hosts...)
	node, err := ca.Issue(CertSpec{CommonName: "sepp node", Hosts: all, Server: true, Client: true, NotBefore: notBefore, NotAfter: notAfter})
	if err != nil {
		return DevPKI{}, err
	}
	cli, err := ca.Issue(CertSpec{CommonName: "sepp client", Client: true, NotBefore: notBefore, NotAfter: notAfter})
	if err != nil {
		return DevPKI{}, err
	}
	p := DevPKI{
		CAFile:         filepath.Join(dir, "ca.pem"),
		NodeCertFile:   filepath.Join(dir, "node.pem"),
		NodeKeyFile:    filepath.Join(dir, "node-key.pem"),
		ClientCertFile: filepath.Join(dir, "client.pem"),
		ClientKeyFile:  filepath.Join(dir, "client-key.pem"),
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return DevPKI{}, fmt.Errorf("tls: %w", err)
	}
	for _, f := range []struct {
		path string
		data []byte
		mode os.FileMode
	}{
		{p.CAFile, ca.CertPEM, 0o644},
		{p.NodeCertFile, node.CertPEM, 0o644},
		{p.NodeKeyFile, node.KeyPEM, 0o600},
		{p.ClientCertFile, cli.CertPEM, 0o644},
		{p.ClientKeyFile, cli.KeyPEM, 0o600},
	} {
		if err := os.WriteFile(f.path, f.data, f.mode); err != nil {
			return DevPKI{}, fmt.Errorf("tls: write %s: %w", f.path, err)
		}
	}
	return p, nil
}
