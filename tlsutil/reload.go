package tlsutil

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"sync"
)

// ErrNoCertificates is returned when a CA file holds no PEM certificate.
var ErrNoCertificates = errors.New("no PEM certificates found")

// Files names the PEM files of one TLS identity. CertFile and KeyFile are
// this side's certificate chain and private key; CAFile, when set, is the
// pool of CAs whose certificates the other side must present.
type Files struct {
	CertFile string
	KeyFile  string
	CAFile   string
}

// Reloadable holds a certificate and a CA pool read from Files. Reload
// rereads them; a failed reload keeps the previous ones, so a half-written
// file on disk never takes a running server down. Its methods are safe for
// concurrent use: the tls.Configs built over it read the current pair on
// every handshake.
type Reloadable struct {
	files Files

	mu   sync.RWMutex
	cert *tls.Certificate
	pool *x509.CertPool
}

// NewReloadable loads files once and returns the holder; it fails when a
// file is missing or unreadable, naming it.
func NewReloadable(files Files) (*Reloadable, error) {
	r := &Reloadable{files: files}
	if err := r.Reload(); err != nil {
		return nil, err
	}
	return r, nil
}

// Files returns the paths the holder reads.
func (r *Reloadable) Files() Files { return r.files }

// Reload rereads the files. On error nothing changes.
func (r *Reloadable) Reload() error {
	var cert *tls.Certificate
	if r.files.CertFile != "" || r.files.KeyFile != "" {
		c, err := tls.LoadX509KeyPair(r.files.CertFile, r.files.KeyFile)
		if err != nil {
			return fmt.Errorf("tls: load certificate %s with key %s: %w", r.files.CertFile, r.files.KeyFile, err)
		}
		if c.Leaf == nil && len(c.Certificate) > 0 {
			if leaf, err := x509.ParseCertificate(c.Certificate[0]); err == nil {
				c.Leaf = leaf
			}
		}
		cert = &c
	}
	var pool *x509.CertPool
	if r.files.CAFile != "" {
		p, err := LoadCAPool(r.files.CAFile)
		if err != nil {
			return err
		}
		pool = p
	}
	r.mu.Lock()
	r.cert, r.pool = cert, pool
	r.mu.Unlock()
	return nil
}

// Certificate is the current certificate (nil when Files has none).
func (r *Reloadable) Certificate() *tls.Certificate {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.cert
}

// Pool is the current CA pool (nil when Files has no CAFile).
func (r *Reloadable) Pool() *x509.CertPool {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.pool
}

// LoadCAPool reads a PEM bundle of CA certificates.
func LoadCAPool(path string) (*x509.CertPool, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("tls: read CA file: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(data) {
		return nil, fmt.Errorf("tls: CA file %s: %w", path, ErrNoCertificates)
	}
	return pool, nil
}
