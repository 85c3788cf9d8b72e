package client

import (
	"context"
	crand "crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/experimental"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/sepp-io/sepp/internal/grpcbuf"
	seppv1 "github.com/sepp-io/sepp/proto/sepp/v1"
)

// Defaults of the options.
const (
	DefaultRetryTimeout   = 15 * time.Second
	DefaultAttemptTimeout = 10 * time.Second
	DefaultBackoffBase    = 5 * time.Millisecond
	DefaultBackoffMax     = 100 * time.Millisecond
	DefaultLeaderProbe    = 300 * time.Millisecond
)

// Option configures a Client.
type Option func(*options)

type options struct {
	retryTimeout   time.Duration
	attemptTimeout time.Duration
	backoffBase    time.Duration
	backoffMax     time.Duration
	dialOptions    []grpc.DialOption
	callOptions    []grpc.CallOption
	leaderProbe    time.Duration
	tracing        Tracing
}

// WithRetryTimeout bounds how long one call keeps retrying through a
// failover (default 15s; the caller's context may end it sooner). Zero
// disables retries: every call makes exactly one attempt.
func WithRetryTimeout(d time.Duration) Option { return func(o *options) { o.retryTimeout = d } }

// WithAttemptTimeout bounds one attempt of a call (default 10s), so a node
// that hangs without closing its connection is left for another. A long-poll
// reserve gets its wait on top.
func WithAttemptTimeout(d time.Duration) Option { return func(o *options) { o.attemptTimeout = d } }

// WithLeaderProbe sets how long an attempt may go unanswered before the
// client asks the other nodes who leads (default 300ms, then again at that
// interval; a long-poll reserve's wait comes first). When another node
// names a different leader, the attempt is abandoned (its outcome unknown,
// as after a timeout) and the call retried there: a leader that froze or
// was cut off costs about an election, not the attempt timeout. Calls that
// are not safe to retry (DrainDeadLetters, TransferLeadership) are never
// abandoned this way. Zero turns probing off.
func WithLeaderProbe(d time.Duration) Option { return func(o *options) { o.leaderProbe = d } }

// WithBackoff sets the jittered exponential backoff between retries: the
// n-th wait is drawn from [d/2, d] with d = min(base·2ⁿ, max).
func WithBackoff(base, max time.Duration) Option {
	return func(o *options) { o.backoffBase, o.backoffMax = base, max }
}

// WithDialOptions adds gRPC dial options (transport credentials, per-RPC
// credentials, interceptors). Without credentials the client dials in
// plaintext.
func WithDialOptions(opts ...grpc.DialOption) Option {
	return func(o *options) { o.dialOptions = append(o.dialOptions, opts...) }
}

// WithCallOptions adds gRPC call options to every call.
func WithCallOptions(opts ...grpc.CallOption) Option {
	return func(o *options) { o.callOptions = append(o.callOptions, opts...) }
}

// Client talks to a sepp cluster. It is safe for concurrent use; create one
// per process and Close it when done.
type Client struct {
	opts  options
	seeds []string

	mu     sync.Mutex
	conns  map[string]*grpc.ClientConn
	leader string // the address believed to lead; "" when unknown
	// forwarders maps a node that answered by forwarding to the leader
	// (leaderHeader) to that leader: a success from it does not make it
	// the leader in the client's eyes.
	forwarders map[string]string
	next       int // rotation over the known addresses when the leader is unknown
	known      []string
	closed     bool

	acks acker // coalesces concurrent Acks
}

// New returns a client for the cluster whose nodes listen on addrs
// (host:port). It connects lazily: no node needs to be up yet; the first
// call finds the leader.
func New(ctx context.Context, addrs []string, opts ...Option) (*Client, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	o := options{
		retryTimeout:   DefaultRetryTimeout,
		attemptTimeout: DefaultAttemptTimeout,
		backoffBase:    DefaultBackoffBase,
		backoffMax:     DefaultBackoffMax,
		leaderProbe:    DefaultLeaderProbe,
	}
	for _, opt := range opts {
		opt(&o)
	}
	c := &Client{opts: o, conns: make(map[string]*grpc.ClientConn), forwarders: make(map[string]string)}
	c.acks.c = c
	for _, a := range addrs {
		a = strings.TrimSpace(a)
		if a == "" || contains(c.seeds, a) {
			continue
		}
		c.seeds = append(c.seeds, a)
	}
	if len(c.seeds) == 0 {
		return nil, &FieldError{Field: "addrs", Description: "addrs: at least one node address (host:port) is required"}
	}
	c.known = append([]string(nil), c.seeds...)
	for _, a := range c.seeds {
		if _, err := c.connLocked(a); err != nil {
			c.Close()
			return nil, err
		}
	}
	return c, nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// Close closes every connection. Calls in flight fail.
func (c *Client) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil
	}
	c.closed = true
	var errs []error
	for _, cc := range c.conns {
		errs = append(errs, cc.Close())
	}
	return errors.Join(errs...)
}

// Addrs are the addresses the client knows: the seeds plus leaders it was
// pointed at.
func (c *Client) Addrs() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.known...)
}

// Leader is the address the client currently sends writes to ("" when it
// does not know yet).
func (c *Client) Leader() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.leader
}

// maxRecvMessageBytes is the largest server.max_message_bytes sepp serve
// accepts, so the client takes any answer a valid server sends.
const maxRecvMessageBytes = 256 << 20

// connLocked returns the connection to addr, creating it (lazily
// connecting) on first use. c.mu must be held, or the client unpublished.
func (c *Client) connLocked(addr string) (*grpc.ClientConn, error) {
	if cc, ok := c.conns[addr]; ok {
		return cc, nil
	}
	dial := []grpc.DialOption{
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithChainUnaryInterceptor(c.noteForwarding(addr)),
		experimental.WithBufferPool(grpcbuf.Pool),
		// gRPC's default of 4 MiB would refuse a reserve's answer of a few
		// large jobs; the server bounds its answers by its own
		// max_message_bytes (at most 256 MiB), so accept up to that.
		grpc.WithDefaultCallOptions(grpc.ForceCodecV2(protoCodec{}), grpc.MaxCallRecvMsgSize(maxRecvMessageBytes)),
		grpc.WithInitialWindowSize(grpcbuf.StreamWindow),
		grpc.WithInitialConnWindowSize(grpcbuf.ConnectionWindow),
	}
	dial = append(dial, c.opts.dialOptions...)
	cc, err := grpc.NewClient(addr, dial...)
	if err != nil {
		return nil, &FieldError{Field: "addrs", Description: fmt.Sprintf("addrs: cannot use %q: %v", addr, err)}
	}
	c.conns[addr] = cc
	if !contains(c.known, addr) {
		c.known = append(c.known, addr)
	}
	return cc, nil
}

// target picks the node for the next attempt: the leader when known, else
// the next address in rotation.
func (c *Client) target() (string, *grpc.ClientConn, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return "", nil, ErrClosed
	}
	addr := c.leader
	if addr == "" {
		addr = c.known[c.next%len(c.known)]
	}
	cc, err := c.connLocked(addr)
	return addr, cc, err
}

// followLeader records a leader hint; an empty hint forgets the leader.
func (c *Client) followLeader(from, leaderAddr string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if leaderAddr == "" || leaderAddr == from {
		c.forgetLocked(from)
		return
	}
	c.leader = leaderAddr
}

// forget moves on from a node that failed: the next attempt tries another.
func (c *Client) forget(addr string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.forgetLocked(addr)
}

func (c *Client) forgetLocked(addr string) {
	if c.leader == addr {
		c.leader = ""
	}
	if len(c.known) > 0 && c.known[c.next%len(c.known)] == addr {
		c.next++
	}
}

// confirmLeader records that addr answered a leader-only call: addr leads,
// or, when it forwarded the call, the leader it named does.
func (c *Client) confirmLeader(addr string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if l, ok := c.forwarders[addr]; ok {
		c.leader = l
		return
	}
	c.leader = addr
}

// leaderHeader is the response header a follower sets when it forwarded
// the call to the leader: the leader's gRPC address (rpc.LeaderAddrHeader).
const leaderHeader = "sepp-leader-grpc-addr"

// noteForwarding records, for every answer from addr, whether addr served
// it itself or forwarded it to the leader, so that the next calls go to the
// leader directly and skip the extra hop.
func (c *Client) noteForwarding(addr string) grpc.UnaryClientInterceptor {
	return func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		var md metadata.MD
		err := invoker(ctx, method, req, reply, cc, append(opts, grpc.Header(&md))...)
		if err != nil {
			return err
		}
		c.mu.Lock()
		defer c.mu.Unlock()
		if v := md.Get(leaderHeader); len(v) > 0 && v[0] != "" && v[0] != addr {
			c.forwarders[addr] = v[0]
		} else {
			delete(c.forwarders, addr)
		}
		return nil
	}
}

// retryPolicy says which failures a call may retry.
type retryPolicy uint8

const (
	// retrySafe: the call is idempotent or fenced (enqueue with a key,
	// reserve with a request id, ack/nack/extend/release with a lease
	// token, reads): retry whatever did not certainly fail for good.
	retrySafe retryPolicy = iota
	// retryNotSent: the call is destructive (drain, transfer): retry only
	// when the server said nothing was applied (NotLeader).
	retryNotSent
)

// attempt is the state a call's closure sees.
type attempt struct {
	addr string
	cc   *grpc.ClientConn
	// maybeApplied is true when an earlier attempt of this call may have
	// taken effect.
	maybeApplied bool
	// extraTimeout lengthens this attempt's deadline (long-poll wait).
	extraTimeout time.Duration
}

// outcome classifies one failed attempt.
type outcome uint8

const (
	outcomeFinal        outcome = iota // a real answer: return it
	outcomeNotApplied                  // the server said nothing applied: retry
	outcomeMaybeApplied                // may have applied: retry only if safe
)

func classify(err error) (outcome, *NotLeaderError) {
	st, ok := status.FromError(err)
	if !ok {
		return outcomeFinal, nil
	}
	for _, d := range st.Details() {
		if nl, ok := d.(*seppv1.NotLeader); ok {
			return outcomeNotApplied, &NotLeaderError{LeaderID: nl.GetLeaderId(), LeaderAddr: nl.GetLeaderGrpcAddr()}
		}
	}
	switch st.Code() {
	case codes.Unavailable:
		if notSent(st) {
			return outcomeNotApplied, nil
		}
		// Unavailable without a NotLeader detail is the server's "no leader"
		// or a transport failure; the two cannot be told apart, and a
		// transport failure may come after the request was sent.
		return outcomeMaybeApplied, nil
	case codes.Aborted:
		return outcomeMaybeApplied, nil
	case codes.DeadlineExceeded:
		// Only reached for our own attempt deadline (the caller's context
		// is checked first): the request may have been applied.
		return outcomeMaybeApplied, nil
	default:
		return outcomeFinal, nil
	}
}

// notSent reports an Unavailable that grpc-go raised while picking a
// connection for the call, before any stream existed: the dial, or the TLS
// handshake, failed (refused, no route, a bad certificate). grpc-go's picker
// fails such calls with the connection's error, "connection error: desc =
// ...", verbatim; a transport that breaks after a stream was opened reports
// only the description, without that prefix. A call that failed this way
// never reached a server, so its outcome is known: nothing applied.
func notSent(st *status.Status) bool {
	return strings.HasPrefix(st.Message(), "connection error: desc = ")
}

// call runs fn against the leader, retrying per policy with jittered
// exponential backoff until it succeeds, fails for good, or the retry budget
// (WithRetryTimeout, the caller's context) runs out.
func (c *Client) call(ctx context.Context, op string, policy retryPolicy, extra time.Duration, fn func(ctx context.Context, a *attempt) error) error {
	start := time.Now()
	var (
		a         attempt
		backoffN  int
		redirects int
		lastErr   error
	)
	a.extraTimeout = extra
	for {
		if err := ctx.Err(); err != nil {
			if lastErr != nil {
				err = fmt.Errorf("%w (last failure: %v)", err, lastErr)
			}
			if a.maybeApplied {
				return &unknownOutcomeError{op: op, last: err}
			}
			return err
		}
		addr, cc, err := c.target()
		if err != nil {
			return err
		}
		a.addr, a.cc = addr, cc
		actx, cancel := ctx, context.CancelFunc(func() {})
		if c.opts.attemptTimeout > 0 {
			actx, cancel = context.WithTimeout(ctx, c.opts.attemptTimeout+a.extraTimeout)
		}
		if policy == retryNotSent {
			// Abandoning the attempt could lose what it returns (a drain's
			// records): it runs to its own end.
			err = fn(actx, &a)
		} else {
			err = c.watchedAttempt(actx, &a, fn)
		}
		cancel()
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			continue // reported at the top of the loop
		}
		kind, notLeader := classify(err)
		var moved *leaderMovedError
		if errors.As(err, &moved) {
			// Abandoned for a leader another node named: the request was
			// sent, so its outcome is unknown, and the hint is fresh.
			kind, notLeader = outcomeMaybeApplied, &NotLeaderError{LeaderAddr: moved.to}
		}
		lastErr = err
		switch {
		case kind == outcomeFinal:
			if a.maybeApplied && errors.Is(fromStatus(op, err), ErrLeaseLost) {
				// A fenced retry finding the lease gone: the first attempt
				// may have taken effect, or the lease expired meanwhile.
				return &unknownOutcomeError{op: op, last: fromStatus(op, err)}
			}
			return fromStatus(op, err)
		case kind == outcomeMaybeApplied && policy == retryNotSent:
			return &unknownOutcomeError{op: op, last: fromStatus(op, err)}
		}
		if kind == outcomeMaybeApplied {
			a.maybeApplied = true
		}
		if c.opts.retryTimeout <= 0 || time.Since(start) >= c.opts.retryTimeout {
			if a.maybeApplied {
				return &unknownOutcomeError{op: op, last: fromStatus(op, err)}
			}
			return fromStatus(op, err)
		}
		if notLeader != nil && notLeader.LeaderAddr != "" && notLeader.LeaderAddr != addr && redirects < 3 {
			// A fresh hint: follow it at once.
			c.followLeader(addr, notLeader.LeaderAddr)
			redirects++
			continue
		}
		redirects = 0
		if notLeader != nil {
			c.followLeader(addr, notLeader.LeaderAddr)
		} else {
			c.forget(addr)
		}
		wait := c.backoff(backoffN)
		backoffN++
		if remaining := c.opts.retryTimeout - time.Since(start); wait > remaining {
			wait = max(remaining, 0)
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
		case <-t.C:
		}
	}
}

// leaderMovedError: an attempt abandoned because another node named a
// different leader while the attempt's node stayed silent.
type leaderMovedError struct {
	from, to string
	err      error
}

func (e *leaderMovedError) Error() string {
	return fmt.Sprintf("%s stopped answering and %s leads now: %v", e.from, e.to, e.err)
}

func (e *leaderMovedError) Unwrap() error { return e.err }

// watchedAttempt runs one attempt. If it has no answer after the probe
// delay, a timer (no goroutine until then) asks the other nodes who leads,
// and repeats; when one names another leader with its address, the attempt
// is cancelled and returns *leaderMovedError.
func (c *Client) watchedAttempt(ctx context.Context, a *attempt, fn func(ctx context.Context, a *attempt) error) error {
	if c.opts.leaderProbe <= 0 {
		return fn(ctx, a)
	}
	actx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		mu    sync.Mutex
		moved string
		timer *time.Timer
		done  bool
	)
	from := a.addr
	probe := func() {
		leader := c.probeLeader(actx, from)
		mu.Lock()
		defer mu.Unlock()
		if done {
			return
		}
		if leader != "" && leader != from {
			moved = leader
			cancel()
			return
		}
		timer.Reset(c.opts.leaderProbe)
	}
	mu.Lock()
	timer = time.AfterFunc(a.extraTimeout+c.opts.leaderProbe, probe)
	mu.Unlock()
	err := fn(actx, a)
	mu.Lock()
	done = true
	timer.Stop()
	to := moved
	mu.Unlock()
	if err != nil && to != "" {
		return &leaderMovedError{from: from, to: to, err: err}
	}
	return err
}

// probeLeader asks the known nodes other than from, one at a time with a
// short deadline, who leads; "" when none names a leader's address.
func (c *Client) probeLeader(ctx context.Context, from string) string {
	c.mu.Lock()
	var ccs []*grpc.ClientConn
	for _, addr := range c.known {
		if addr == from {
			continue
		}
		if cc, err := c.connLocked(addr); err == nil {
			ccs = append(ccs, cc)
		}
	}
	c.mu.Unlock()
	for _, cc := range ccs {
		pctx, cancel := context.WithTimeout(ctx, c.opts.leaderProbe)
		resp, err := seppv1.NewClusterServiceClient(cc).Status(pctx, &seppv1.StatusRequest{}, c.opts.callOptions...)
		cancel()
		if err != nil {
			continue
		}
		if addr := resp.GetLeader().GetGrpcAddr(); addr != "" {
			return addr
		}
	}
	return ""
}

func (c *Client) backoff(n int) time.Duration {
	d := c.opts.backoffBase
	for i := 0; i < n && d < c.opts.backoffMax; i++ {
		d *= 2
	}
	d = min(d, c.opts.backoffMax)
	if d <= 1 {
		return d
	}
	return d/2 + rand.N(d/2+1)
}

// newKey returns a random idempotency key or request id: 16 bytes from
// crypto/rand, hex encoded. The bytes are read 4 KiB at a time, so a
// producer does not pay a system call per job.
func newKey() string {
	var b [32]byte
	keyPool.Lock()
	if keyPool.off == len(keyPool.buf) {
		_, _ = crand.Read(keyPool.buf[:]) // crypto/rand.Read never fails on supported platforms
		keyPool.off = 0
	}
	hex.Encode(b[:], keyPool.buf[keyPool.off:keyPool.off+16])
	keyPool.off += 16
	keyPool.Unlock()
	return string(b[:])
}

var keyPool = struct {
	sync.Mutex
	buf [4096]byte
	off int
}{off: 4096}
