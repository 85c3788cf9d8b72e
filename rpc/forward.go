package rpc

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"

	"github.com/sepp-io/sepp/internal/grpcbuf"
	seppv1 "github.com/sepp-io/sepp/proto/sepp/v1"
)

// ForwardedFromHeader marks a call a follower forwarded to the leader, with
// the follower's node id. A call carrying it is never forwarded again, so a
// leader change while the call travels ends in NotLeader, not in a loop.
const ForwardedFromHeader = "sepp-forwarded-from"

// LeaderAddrHeader is set on the answer to a forwarded call: the leader's
// gRPC address, so that a client that knows it can skip the extra hop next
// time (the Go client does).
const LeaderAddrHeader = "sepp-leader-grpc-addr"

// Forwarder lets a follower serve what only the leader can: a QueueService
// or AdminService call that the follower answers with NotLeader (nothing
// was applied, so sending it on is safe) is sent to the leader it names,
// and the leader's answer goes back to the caller. Clients behind a load
// balancer, or pinned to one node, then need no redirect.
//
// Not forwarded: long-poll reserves and WaitJob calls (a waiting call
// would hold a slot of the leader's per-connection limit on the
// follower's one connection; the client is redirected instead), ClusterService calls, and calls that
// already were forwarded. The caller's metadata (its bearer token among
// it) goes along, so the leader authorizes the caller, not the follower.
//
// An answer the leader gave is returned as it is. A forwarded call that
// fails in transport returns Unavailable without a NotLeader detail, which
// clients read as "may have been applied" — true, once it was sent.
type Forwarder struct {
	self     string
	dialOpts []grpc.DialOption
	maxMsg   int

	mu     sync.Mutex
	conns  map[string]*grpc.ClientConn
	closed bool

	outputs sync.Map // full method name → protoreflect.MessageType of its response
}

// NewForwarder returns a Forwarder for the node named self, dialing leaders
// with dialOpts (transport credentials at least). Close it after the server
// stops.
func NewForwarder(self string, dialOpts ...grpc.DialOption) *Forwarder {
	return &Forwarder{self: self, dialOpts: dialOpts, conns: make(map[string]*grpc.ClientConn)}
}

// Close closes the connections to leaders.
func (f *Forwarder) Close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.closed = true
	var errs []error
	for addr, cc := range f.conns {
		errs = append(errs, cc.Close())
		delete(f.conns, addr)
	}
	return errors.Join(errs...)
}

func (f *Forwarder) conn(addr string) (*grpc.ClientConn, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return nil, errors.New("forwarder closed")
	}
	if cc, ok := f.conns[addr]; ok {
		return cc, nil
	}
	opts := append([]grpc.DialOption{
		grpc.WithInitialWindowSize(grpcbuf.StreamWindow),
		grpc.WithInitialConnWindowSize(grpcbuf.ConnectionWindow),
	}, f.dialOpts...)
	cc, err := grpc.NewClient(addr, opts...)
	if err != nil {
		return nil, err
	}
	f.conns[addr] = cc
	return cc, nil
}

// forwardable reports whether a call of method with req may be forwarded.
func forwardable(method string, req any) bool {
	if !strings.HasPrefix(method, "/"+seppv1.QueueService_ServiceDesc.ServiceName+"/") &&
		!strings.HasPrefix(method, "/"+seppv1.AdminService_ServiceDesc.ServiceName+"/") {
		return false
	}
	if r, ok := req.(*seppv1.ReserveRequest); ok && r.GetWait().AsDuration() > 0 {
		return false
	}
	if _, ok := req.(*seppv1.WaitJobRequest); ok {
		return false
	}
	return true
}

// intercept runs the call here and forwards it when this node answered
// NotLeader naming another leader.
func (f *Forwarder) intercept(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	resp, err := handler(ctx, req)
	if err == nil || !forwardable(info.FullMethod, req) {
		return resp, err
	}
	leaderAddr, ok := notLeaderAddr(err)
	if !ok {
		return resp, err
	}
	md, _ := metadata.FromIncomingContext(ctx)
	if len(md.Get(ForwardedFromHeader)) > 0 {
		return resp, err
	}
	fresp, ferr := f.forward(ctx, md, info.FullMethod, req, leaderAddr)
	if ferr != nil && errors.Is(ferr, errNotSent) {
		return resp, err // nothing left here: the NotLeader answer stands
	}
	return fresp, ferr
}

// errNotSent: the call could not be forwarded and was not sent.
var errNotSent = errors.New("not forwarded")

func (f *Forwarder) forward(ctx context.Context, md metadata.MD, method string, req any, addr string) (any, error) {
	out, err := f.output(method)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errNotSent, err)
	}
	cc, err := f.conn(addr)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errNotSent, err)
	}
	// Send only over a connection that is up: a leader this node cannot
	// reach (an address only clients can use, a node just gone) leaves the
	// caller the NotLeader answer, which is certain, instead of an
	// Unavailable that would read as "may have been applied".
	if err := awaitReady(ctx, cc, connectWait); err != nil {
		return nil, fmt.Errorf("%w: leader %s: %v", errNotSent, addr, err)
	}
	resp := out.New().Interface()
	callCtx := metadata.NewOutgoingContext(ctx, forwardedMetadata(md, f.self))
	opts := []grpc.CallOption{}
	if f.maxMsg > 0 {
		opts = append(opts, grpc.MaxCallRecvMsgSize(f.maxMsg), grpc.MaxCallSendMsgSize(f.maxMsg))
	}
	if err := cc.Invoke(callCtx, method, req, resp, opts...); err != nil {
		if _, ok := status.FromError(err); !ok {
			err = status.Error(codes.Unavailable, err.Error())
		}
		return nil, err
	}
	// Best effort: a header that cannot be set costs the client a hop.
	_ = grpc.SetHeader(ctx, metadata.Pairs(LeaderAddrHeader, addr))
	return resp, nil
}

// connectWait bounds how long a forward waits for its connection to the
// leader to come up.
const connectWait = 250 * time.Millisecond

// awaitReady waits, up to d, for cc to be connected; it fails at once when
// the last connection attempt failed.
func awaitReady(ctx context.Context, cc *grpc.ClientConn, d time.Duration) error {
	cc.Connect()
	wctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	for {
		switch st := cc.GetState(); st {
		case connectivity.Ready:
			return nil
		case connectivity.TransientFailure, connectivity.Shutdown:
			return fmt.Errorf("connection %s", st)
		default:
			if !cc.WaitForStateChange(wctx, st) {
				return fmt.Errorf("not connected within %s", d)
			}
		}
	}
}

// output finds the response type of a method in the registry of the
// generated code, once per method.
func (f *Forwarder) output(method string) (protoreflect.MessageType, error) {
	if t, ok := f.outputs.Load(method); ok {
		return t.(protoreflect.MessageType), nil
	}
	svc, name, ok := strings.Cut(strings.TrimPrefix(method, "/"), "/")
	if !ok {
		return nil, fmt.Errorf("method %q has no service", method)
	}
	d, err := protoregistry.GlobalFiles.FindDescriptorByName(protoreflect.FullName(svc))
	if err != nil {
		return nil, err
	}
	sd, ok := d.(protoreflect.ServiceDescriptor)
	if !ok {
		return nil, fmt.Errorf("%s is not a service", svc)
	}
	md := sd.Methods().ByName(protoreflect.Name(name))
	if md == nil {
		return nil, fmt.Errorf("%s has no method %s", svc, name)
	}
	t, err := protoregistry.GlobalTypes.FindMessageByName(md.Output().FullName())
	if err != nil {
		return nil, err
	}
	f.outputs.Store(method, t)
	return t, nil
}

// forwardedMetadata is the caller's metadata without the transport's own
// headers, marked as forwarded by self.
// httpOnlyHeaders are HTTP/1.1 request headers that must not ride on a
// forwarded gRPC call (RFC 9113 8.2.2 forbids the connection-specific ones).
var httpOnlyHeaders = map[string]bool{
	"connection": true, "keep-alive": true, "proxy-connection": true, "transfer-encoding": true,
	"upgrade": true, "host": true, "content-length": true, "accept-encoding": true, "x-grpc-web": true,
}

func forwardedMetadata(in metadata.MD, self string) metadata.MD {
	out := metadata.MD{}
	for k, v := range in {
		switch {
		case strings.HasPrefix(k, ":"), strings.HasPrefix(k, "grpc-"),
			k == "content-type", k == "user-agent", k == "te":
			continue
		case httpOnlyHeaders[k], strings.HasPrefix(k, "connect-"):
			// A Connect or gRPC-Web call arrives over HTTP/1.1 and its
			// headers become metadata; HTTP/2 forbids the connection
			// headers (the leader resets the stream) and the protocol's
			// own mean nothing on the gRPC hop.
			continue
		}
		out[k] = v
	}
	out.Set(ForwardedFromHeader, self)
	return out
}

// notLeaderAddr returns the leader's gRPC address of a NotLeader answer.
func notLeaderAddr(err error) (string, bool) {
	st, ok := status.FromError(err)
	if !ok || st.Code() != codes.Unavailable {
		return "", false
	}
	for _, d := range st.Details() {
		if nl, ok := d.(*seppv1.NotLeader); ok && nl.GetLeaderGrpcAddr() != "" {
			return nl.GetLeaderGrpcAddr(), true
		}
	}
	return "", false
}
