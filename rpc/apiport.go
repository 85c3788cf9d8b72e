package rpc

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"connectrpc.com/connect"
	connectcors "connectrpc.com/cors"
	"connectrpc.com/vanguard"
	"connectrpc.com/vanguard/vanguardgrpc"
	"github.com/hashicorp/go-hclog"
	"github.com/rs/cors"
	"golang.org/x/net/http2"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/protobuf/proto"
)

// The API port answers gRPC, Connect (JSON and binary) and gRPC-Web on one
// listener. Connect and gRPC-Web are transcoded by vanguard into gRPC calls
// on the same *grpc.Server, so they pass the same interceptors (auth, limits,
// forwarding, error mapping) and carry the same error details.
//
// grpc.Server.ServeHTTP, the only way vanguard can reach the services, is
// much slower than grpc.Server.Serve's own HTTP/2 transport. So gRPC clients
// keep the native transport: each accepted connection is routed once, at
// its start, by what it speaks.
//   - Cleartext: a connection that opens with the HTTP/2 client preface
//     (prior knowledge, which is how every gRPC client speaks h2c) goes to
//     grpc.Server.Serve; anything else (HTTP/1.1: curl, fetch, browsers) to
//     an http.Server running vanguard.
//   - TLS: the server prefers "http/1.1" in ALPN, so a client that offers it
//     (browsers, curl, Node's fetch) gets HTTP/1.1 and vanguard, and a gRPC
//     client, which offers only "h2", gets the native transport. A client
//     that offers no ALPN is sniffed as on cleartext.
//
// The price: a non-gRPC client speaking HTTP/2 (h2c prior knowledge, or TLS
// offering only h2) reaches grpc-go's native transport, which answers any
// content type but application/grpc with HTTP 415. Connect and gRPC-Web
// clients use HTTP/1.1 here.

// apiNextProtos is the API port's ALPN preference.
var apiNextProtos = []string{"http/1.1", http2.NextProtoTLS}

// APIOptions configure NewAPIServer.
type APIOptions struct {
	// TLS, when set, is the server's TLS config; the grpc.Server must then
	// have been built with HandshakenTLS credentials instead of its own, as
	// the handshake happens here, before the connection is routed.
	TLS *tls.Config
	// MaxMessageBytes bounds a Connect or gRPC-Web message vanguard buffers
	// (zero: DefaultMaxMessageBytes); the grpc.Server then applies its own.
	MaxMessageBytes int
	// HandshakeTimeout bounds the TLS handshake and the first bytes of a
	// connection (zero: 10 s), so an idle connection cannot hold a goroutine.
	HandshakeTimeout time.Duration
	// Logger receives accept and HTTP server errors; nil discards.
	Logger hclog.Logger
	// CORSAllowedOrigins, when not empty, lets web pages of exactly these
	// origins call the Connect and gRPC-Web side (see withCORS); empty
	// leaves CORS off.
	CORSAllowedOrigins []string
	// CORSAllowCredentials lets those pages send cookies and TLS client
	// certificates (Access-Control-Allow-Credentials).
	CORSAllowCredentials bool
}

// APIServer serves a grpc.Server's services on one listener as gRPC,
// Connect and gRPC-Web.
type APIServer struct {
	gs      *grpc.Server
	hs      *http.Server
	opts    APIOptions
	grpcLis *chanListener
	httpLis *chanListener

	mu      sync.Mutex
	lis     net.Listener
	closing bool
}

// NewAPIServer wraps gs. gs must have all its services registered.
func NewAPIServer(gs *grpc.Server, opts APIOptions) (*APIServer, error) {
	if opts.MaxMessageBytes <= 0 {
		opts.MaxMessageBytes = DefaultMaxMessageBytes
	}
	if opts.HandshakeTimeout <= 0 {
		opts.HandshakeTimeout = 10 * time.Second
	}
	if opts.Logger == nil {
		opts.Logger = hclog.NewNullLogger()
	}
	tc, err := vanguardgrpc.NewTranscoder(gs,
		vanguard.WithDefaultServiceOptions(vanguard.WithMaxMessageBufferBytes(uint32(opts.MaxMessageBytes))),
		vanguard.WithCodec(func(res vanguard.TypeResolver) vanguard.Codec {
			c := vanguard.NewJSONCodec(res)
			// Strict, as the TOML config is: a misspelt or newer field
			// ("prio" for "priority") would otherwise be dropped and the
			// request served without it, silently.
			c.UnmarshalOptions.DiscardUnknown = false
			return badInputCodec{c}
		}),
	)
	if err != nil {
		return nil, fmt.Errorf("connect transcoder: %w", err)
	}
	if opts.TLS != nil {
		opts.TLS = opts.TLS.Clone()
		// http/1.1 first: Go's TLS server picks its own preference among
		// what the client offers, which is how browsers and gRPC clients
		// part (see the comment at the top).
		opts.TLS.NextProtos = apiNextProtos
		if get := opts.TLS.GetConfigForClient; get != nil {
			opts.TLS.GetConfigForClient = func(hello *tls.ClientHelloInfo) (*tls.Config, error) {
				cfg, err := get(hello)
				if cfg != nil {
					cfg = cfg.Clone()
					cfg.NextProtos = apiNextProtos
				}
				return cfg, err
			}
		}
	}
	a := &APIServer{
		gs:   gs,
		opts: opts,
		hs: &http.Server{
			Handler:           withCORS(connectByDefault(tc), opts),
			ReadHeaderTimeout: opts.HandshakeTimeout,
			IdleTimeout:       5 * time.Minute,
			ErrorLog:          opts.Logger.Named("connect").StandardLogger(&hclog.StandardLoggerOptions{InferLevels: true}),
		},
	}
	return a, nil
}

// Serve accepts on lis until lis fails or the server stops. It returns nil
// after GracefulStop or Stop.
func (a *APIServer) Serve(lis net.Listener) error {
	a.mu.Lock()
	if a.closing {
		a.mu.Unlock()
		_ = lis.Close()
		return nil
	}
	a.lis = lis
	a.grpcLis = newChanListener(lis.Addr())
	a.httpLis = newChanListener(lis.Addr())
	a.mu.Unlock()

	errc := make(chan error, 2)
	go func() { errc <- a.gs.Serve(a.grpcLis) }()
	go func() {
		if err := a.hs.Serve(a.httpLis); !errors.Is(err, http.ErrServerClosed) && !errors.Is(err, net.ErrClosed) {
			errc <- err
			return
		}
		errc <- nil
	}()
	acceptErr := a.accept(lis)
	a.mu.Lock()
	stopping := a.closing
	a.mu.Unlock()
	if !stopping {
		// The listener failed by itself: stop serving what it brought.
		a.grpcLis.Close()
		a.httpLis.Close()
		a.gs.Stop()
		_ = a.hs.Close()
	}
	err1, err2 := <-errc, <-errc
	if stopping {
		return nil
	}
	return errors.Join(acceptErr, err1, err2)
}

func (a *APIServer) accept(lis net.Listener) error {
	var backoff time.Duration
	for {
		c, err := lis.Accept()
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				// EMFILE and the like: wait, as net/http does.
				backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
				time.Sleep(backoff)
				continue
			}
			a.mu.Lock()
			closing := a.closing
			a.mu.Unlock()
			if closing {
				return nil
			}
			return err
		}
		backoff = 0
		go a.route(c)
	}
}

// route handshakes c (TLS), finds out what it speaks and hands it to the
// gRPC or the HTTP side.
func (a *APIServer) route(c net.Conn) {
	_ = c.SetDeadline(time.Now().Add(a.opts.HandshakeTimeout))
	var conn net.Conn = c
	toGRPC := false
	decided := false
	if a.opts.TLS != nil {
		tc := tls.Server(c, a.opts.TLS)
		ctx, cancel := context.WithTimeout(context.Background(), a.opts.HandshakeTimeout)
		err := tc.HandshakeContext(ctx)
		cancel()
		if err != nil {
			a.opts.Logger.Debug("api tls handshake failed", "remote", c.RemoteAddr().String(), "error", err)
			_ = c.Close()
			return
		}
		conn = tc
		switch tc.ConnectionState().NegotiatedProtocol {
		case http2.NextProtoTLS:
			toGRPC, decided = true, true
		case "http/1.1":
			decided = true
		}
	}
	if !decided {
		isH2, peeked, err := sniffPreface(conn)
		if err != nil && len(peeked) == 0 {
			_ = conn.Close()
			return
		}
		toGRPC = isH2
		conn = &peekedConn{Conn: conn, pending: peeked}
	}
	_ = c.SetDeadline(time.Time{})
	if toGRPC {
		a.grpcLis.push(conn)
	} else {
		a.httpLis.push(conn)
	}
}

// GracefulStop stops accepting, lets in-flight calls of both sides finish,
// then returns.
func (a *APIServer) GracefulStop() {
	a.stop(true)
}

// Stop closes every connection at once.
func (a *APIServer) Stop() {
	a.stop(false)
}

func (a *APIServer) stop(graceful bool) {
	a.mu.Lock()
	a.closing = true
	lis := a.lis
	a.mu.Unlock()
	if lis == nil {
		a.gs.Stop()
		return
	}
	_ = lis.Close()
	a.grpcLis.Close()
	a.httpLis.Close()
	if !graceful {
		a.gs.Stop()
		_ = a.hs.Close()
		return
	}
	// HTTP first: grpc.Server.GracefulStop closes the ServeHTTP streams
	// under way (its handler transport's Drain is a Close), so the Connect
	// calls in flight must have finished before it runs. Native gRPC
	// connections keep serving their calls meanwhile.
	_ = a.hs.Shutdown(context.Background())
	a.gs.GracefulStop()
}

// CORSMaxAge is how long a browser may cache a preflight's answer: two
// hours, Connect's recommendation and Chromium's own cap.
const CORSMaxAge = 2 * time.Hour

// withCORS answers CORS preflights (OPTIONS with Origin and
// Access-Control-Request-Method) and adds the CORS response headers for
// the origins opts allows, with the methods and headers Connect's CORS
// guidance lists for the Connect and gRPC-Web protocols
// (connectrpc.com/cors), plus Authorization for API tokens and, exposed,
// LeaderAddrHeader, which the SDKs follow after a forwarded call. A
// request from any other origin passes through without CORS headers, so
// the browser keeps its page from reading the answer (or, after a
// refused preflight, from sending the call at all). With no origins the
// handler is next itself: the port answers preflights 404, as before.
//
// Only the HTTP side needs it: browsers speak HTTP/1.1 here (see the top
// of this file), never native gRPC.
func withCORS(next http.Handler, opts APIOptions) http.Handler {
	if len(opts.CORSAllowedOrigins) == 0 {
		return next
	}
	c := cors.New(cors.Options{
		AllowedOrigins:   opts.CORSAllowedOrigins,
		AllowedMethods:   connectcors.AllowedMethods(),
		AllowedHeaders:   append(connectcors.AllowedHeaders(), "Authorization"),
		ExposedHeaders:   append(connectcors.ExposedHeaders(), LeaderAddrHeader),
		AllowCredentials: opts.CORSAllowCredentials,
		MaxAge:           int(CORSMaxAge / time.Second),
	})
	return c.Handler(next)
}

// connectByDefault marks a unary POST of JSON or protobuf without a
// Connect-Protocol-Version header as Connect, as connect-go's own servers
// accept it: vanguard would take it for REST, which sepp does not map, and
// answer 404. So a plain `curl -H 'Content-Type: application/json' -d ...`
// works.
func connectByDefault(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && r.Header.Get("Connect-Protocol-Version") == "" {
			ct, _, _ := strings.Cut(r.Header.Get("Content-Type"), ";")
			switch strings.TrimSpace(strings.ToLower(ct)) {
			case "application/json", "application/proto":
				r.Header.Set("Connect-Protocol-Version", "1")
			}
		}
		next.ServeHTTP(w, r)
	})
}

// badInputCodec is vanguard's JSON codec whose decode errors are the
// caller's: malformed JSON and a field the request message does not have
// are InvalidArgument (HTTP 400), where vanguard would answer unknown (500).
type badInputCodec struct{ *vanguard.JSONCodec }

func (c badInputCodec) Unmarshal(data []byte, msg proto.Message) error {
	if err := c.JSONCodec.Unmarshal(data, msg); err != nil {
		if strings.Contains(err.Error(), "unknown field") {
			// protojson names the field and its position; say whose it is
			// not, and why the request is refused rather than served.
			return connect.NewError(connect.CodeInvalidArgument, fmt.Errorf("request body: %w: %s has no such field (unknown fields are refused, not ignored; check the spelling, or the server is older than the client)", err, msg.ProtoReflect().Descriptor().FullName()))
		}
		return connect.NewError(connect.CodeInvalidArgument, fmt.Errorf("request body: %w", err))
	}
	return nil
}

// sniffPreface reads until the bytes read either are the whole HTTP/2
// client preface or stop matching it. An HTTP/1.1 request line differs
// from it by the third byte ("POST" vs "PRI "), so this never waits on an
// HTTP/1.1 client.
func sniffPreface(c net.Conn) (bool, []byte, error) {
	preface := []byte(http2.ClientPreface)
	buf := make([]byte, len(preface))
	n := 0
	for n < len(buf) {
		m, err := c.Read(buf[n:])
		n += m
		if !bytes.HasPrefix(preface, buf[:n]) {
			return false, buf[:n], nil
		}
		if err != nil {
			return false, buf[:n], err
		}
	}
	return true, buf, nil
}

// peekedConn gives back the bytes sniffPreface read before reading on.
type peekedConn struct {
	net.Conn
	pending []byte
}

func (p *peekedConn) Read(b []byte) (int, error) {
	if len(p.pending) > 0 {
		n := copy(b, p.pending)
		p.pending = p.pending[n:]
		return n, nil
	}
	return p.Conn.Read(b)
}

// ConnectionState lets HandshakenTLS see a sniffed TLS connection's state.
func (p *peekedConn) ConnectionState() (tls.ConnectionState, bool) {
	if tc, ok := p.Conn.(*tls.Conn); ok {
		return tc.ConnectionState(), true
	}
	return tls.ConnectionState{}, false
}

// chanListener is a net.Listener fed by APIServer.route.
type chanListener struct {
	addr   net.Addr
	conns  chan net.Conn
	done   chan struct{}
	closed sync.Once
}

func newChanListener(addr net.Addr) *chanListener {
	return &chanListener{addr: addr, conns: make(chan net.Conn), done: make(chan struct{})}
}

func (l *chanListener) push(c net.Conn) {
	select {
	case l.conns <- c:
	case <-l.done:
		_ = c.Close()
	}
}

func (l *chanListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *chanListener) Close() error {
	l.closed.Do(func() { close(l.done) })
	return nil
}

func (l *chanListener) Addr() net.Addr { return l.addr }

// HandshakenTLS returns gRPC server credentials for connections an
// APIServer has already run the TLS handshake on: they hand the connection
// through and report its TLS state as the peer's AuthInfo, as
// credentials.NewTLS would. A connection that is not TLS is refused, so a
// misconfigured server cannot serve plaintext by accident.
func HandshakenTLS() credentials.TransportCredentials { return handshakenTLS{} }

type handshakenTLS struct{}

func (handshakenTLS) ClientHandshake(context.Context, string, net.Conn) (net.Conn, credentials.AuthInfo, error) {
	return nil, nil, errors.New("rpc: HandshakenTLS is server-side only")
}

func (handshakenTLS) ServerHandshake(c net.Conn) (net.Conn, credentials.AuthInfo, error) {
	var st tls.ConnectionState
	switch tc := c.(type) {
	case *tls.Conn:
		st = tc.ConnectionState()
	case *peekedConn:
		s, ok := tc.ConnectionState()
		if !ok {
			return nil, nil, errors.New("rpc: plaintext connection on a TLS API port")
		}
		st = s
	default:
		return nil, nil, errors.New("rpc: plaintext connection on a TLS API port")
	}
	return c, credentials.TLSInfo{State: st, CommonAuthInfo: credentials.CommonAuthInfo{SecurityLevel: credentials.PrivacyAndIntegrity}}, nil
}

func (handshakenTLS) Info() credentials.ProtocolInfo {
	return credentials.ProtocolInfo{SecurityProtocol: "tls"}
}

func (h handshakenTLS) Clone() credentials.TransportCredentials { return h }

func (handshakenTLS) OverrideServerName(string) error { return nil }
