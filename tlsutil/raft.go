package tlsutil

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/hashicorp/raft"
)

// StreamLayer is a raft.StreamLayer over mutual TLS: it accepts only peers
// presenting a certificate signed by the cluster CA, and dials only peers
// that do. Wrap it with raft.NewNetworkTransport.
type StreamLayer struct {
	net.Listener // the TLS listener
	advertise    net.Addr
	client       *tls.Config
}

var _ raft.StreamLayer = (*StreamLayer)(nil)

// NewStreamLayer listens on bind. advertise, when non-nil, is the address
// peers dial (it must not be a wildcard); r holds the node's cluster
// certificate and the cluster CA, and must have both.
func NewStreamLayer(bind string, advertise net.Addr, r *Reloadable) (*StreamLayer, error) {
	if r.Certificate() == nil || r.Pool() == nil {
		return nil, errors.New("tls: the raft transport needs a cluster certificate, key and CA file")
	}
	lis, err := net.Listen("tcp", bind)
	if err != nil {
		return nil, fmt.Errorf("tls: raft listener on %q: %w", bind, err)
	}
	addr := advertise
	if addr == nil {
		addr = lis.Addr()
	}
	if tcp, ok := addr.(*net.TCPAddr); ok && tcp.IP.IsUnspecified() {
		lis.Close()
		return nil, fmt.Errorf("tls: raft address %s is not advertisable: set raft_advertise", addr)
	}
	return &StreamLayer{
		Listener:  tls.NewListener(lis, peerServerConfig(r)),
		advertise: addr,
		client:    peerClientConfig(r),
	}, nil
}

// Addr is the advertised address.
func (s *StreamLayer) Addr() net.Addr { return s.advertise }

// Accept is the TLS listener's: the handshake, and so the check of the
// peer's certificate, runs on the first read in raft's per-connection
// goroutine, so a slow or refused peer never holds up the next one.

// Dial opens a mutual-TLS connection to a peer.
func (s *StreamLayer) Dial(address raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	d := &net.Dialer{Timeout: timeout}
	conn, err := tls.DialWithDialer(d, "tcp", string(address), s.client)
	if err != nil {
		return nil, fmt.Errorf("tls: dial raft peer %s: %w", address, err)
	}
	return conn, nil
}
