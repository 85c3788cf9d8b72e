package rpc

import (
	"context"
	"errors"
	"go.opentelemetry.io/otel/trace"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/experimental"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/reflection"
	"google.golang.org/grpc/status"

	"github.com/sepp-io/sepp/cluster"
	"github.com/sepp-io/sepp/internal/grpcbuf"
	seppv1 "github.com/sepp-io/sepp/proto/sepp/v1"
)

// Defaults of Options; a zero field takes these.
const (
	DefaultMaxMessageBytes        = 16 << 20 // a full batch of small jobs, or one max payload with room
	DefaultMaxReserveWait         = 30 * time.Second
	DefaultMaxConcurrentLongPolls = 1024
	DefaultLeaderWait             = 500 * time.Millisecond // a few election timeouts
	DefaultMaxResultBytes         = 64 << 10               // config.DefaultMaxResultBytes
)

// Options configure NewGRPCServer. The zero value is usable.
type Options struct {
	// Logger receives internal errors and warnings; nil discards.
	Logger hclog.Logger
	// MaxMessageBytes bounds a request (and a response) on the wire; a
	// larger request fails with ResourceExhausted before it is decoded.
	MaxMessageBytes int
	// MaxReserveWait caps the long-poll wait a Reserve may ask for.
	MaxReserveWait time.Duration
	// MaxResultBytes bounds an Ack's result (advertised); a larger one
	// fails with InvalidArgument naming result and the limit.
	MaxResultBytes int
	// MaxConcurrentLongPolls caps the Reserves waiting at once on this
	// server; one more fails with ResourceExhausted.
	MaxConcurrentLongPolls int
	// NowFunc is the clock read-only engine calls are stamped with (queue
	// stats, oldest-ready ages); nil uses time.Now.
	NowFunc func() time.Time
	// Version is reported by GetServerInfo.
	Version string
	// Registerer receives the metrics (metrics.go); nil registers none. The
	// collectors carry a constant node label, so several nodes of one
	// process (sepp dev) can share a registry.
	Registerer prometheus.Registerer
	// UnaryInterceptors run after the metrics and before validation (auth
	// goes here).
	UnaryInterceptors []grpc.UnaryServerInterceptor
	// ServerOptions are appended to the grpc.Server's own (TLS credentials,
	// keepalive).
	ServerOptions []grpc.ServerOption
	// LeaderWait is how long a call that finds no leader (an election or a
	// leadership transfer under way) waits for one before it answers, so
	// that it can name the new leader instead of leaving the client to
	// poll. Zero takes DefaultLeaderWait; negative answers at once.
	LeaderWait time.Duration
	// Forwarder, when set, sends calls this node answers with NotLeader to
	// the leader (forward.go); nil leaves clients to follow the redirect.
	Forwarder *Forwarder
	// TracerProvider, when set, receives the spans of the Enqueue, Reserve,
	// Ack and Nack calls of jobs that carry a trace context (tracing.go);
	// nil (the default) records none and costs nothing.
	TracerProvider trace.TracerProvider
}

func (o Options) withDefaults() Options {
	if o.Logger == nil {
		o.Logger = hclog.NewNullLogger()
	}
	if o.MaxMessageBytes <= 0 {
		o.MaxMessageBytes = DefaultMaxMessageBytes
	}
	if o.MaxReserveWait <= 0 {
		o.MaxReserveWait = DefaultMaxReserveWait
	}
	if o.MaxResultBytes <= 0 {
		o.MaxResultBytes = DefaultMaxResultBytes
	}
	if o.MaxConcurrentLongPolls <= 0 {
		o.MaxConcurrentLongPolls = DefaultMaxConcurrentLongPolls
	}
	if o.NowFunc == nil {
		o.NowFunc = time.Now
	}
	if o.LeaderWait == 0 {
		o.LeaderWait = DefaultLeaderWait
	}
	return o
}

// server holds what the three services share.
type server struct {
	b         Backend
	opts      Options
	log       hclog.Logger
	longPolls chan struct{} // semaphore of waiting Reserves
	polls     *pollClaims   // what the waiting Reserves are proposing for
	tracer    trace.Tracer  // nil: tracing off (tracing.go)
}

// NewGRPCServer returns a grpc.Server serving sepp's QueueService,
// AdminService and ClusterService over b, with the standard health service
// (SERVING while the node runs; NOT_SERVING once it shuts down) and server
// reflection, so grpcurl works without .proto files. The caller owns the
// returned server: Serve it on a listener and GracefulStop it. It starts no
// goroutines of its own.
func NewGRPCServer(b Backend, opts Options) *grpc.Server {
	opts = opts.withDefaults()
	s := &server{
		b:         b,
		opts:      opts,
		log:       opts.Logger.Named("rpc"),
		longPolls: make(chan struct{}, opts.MaxConcurrentLongPolls),
		tracer:    tracerOf(opts.TracerProvider),
		polls:     newPollClaims(),
	}
	codec := newUTF8Codec()
	rpcMetrics := newRPCMetrics()
	interceptors := append([]grpc.UnaryServerInterceptor{rpcMetrics.intercept}, opts.UnaryInterceptors...)
	if opts.Forwarder != nil {
		opts.Forwarder.maxMsg = opts.MaxMessageBytes
		interceptors = append(interceptors, opts.Forwarder.intercept)
	}
	interceptors = append(interceptors, codec.rejectInvalidUTF8, s.mapErrors)
	grpcOpts := append([]grpc.ServerOption{
		experimental.BufferPool(grpcbuf.Pool),
		grpc.ForceServerCodecV2(codec),
		grpc.MaxRecvMsgSize(opts.MaxMessageBytes),
		grpc.MaxSendMsgSize(opts.MaxMessageBytes),
		grpc.InitialWindowSize(grpcbuf.StreamWindow),
		grpc.InitialConnWindowSize(grpcbuf.ConnectionWindow),
		grpc.ChainUnaryInterceptor(interceptors...),
	}, opts.ServerOptions...)
	gs := grpc.NewServer(grpcOpts...)
	seppv1.RegisterQueueServiceServer(gs, &queueService{server: s})
	seppv1.RegisterAdminServiceServer(gs, &adminService{server: s})
	seppv1.RegisterClusterServiceServer(gs, &clusterService{server: s})
	healthpb.RegisterHealthServer(gs, &healthService{b: b})
	reflection.Register(gs)
	if opts.Registerer != nil {
		reg := prometheus.WrapRegistererWith(prometheus.Labels{"node": b.Self().ID}, opts.Registerer)
		for _, c := range []prometheus.Collector{rpcMetrics, newStateCollector(b, opts.NowFunc, s.log), newActivityCollector(b, s.log)} {
			if err := reg.Register(c); err != nil {
				s.log.Warn("metrics not registered", "error", err)
			}
		}
	}
	return gs
}

// mapErrors is the innermost interceptor: every error a handler returns goes
// through statusFor once, and internal errors are logged with the method.
func (s *server) mapErrors(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	resp, err := handler(ctx, req)
	if err == nil {
		return resp, nil
	}
	if errors.Is(err, cluster.ErrNoLeader) {
		// Nothing was proposed. Rather than have the client poll with
		// backoff through an election or a leadership transfer, wait here
		// for a leader and name it: the client goes straight there.
		if leader, ok := s.awaitLeader(ctx, errors.Is(err, cluster.ErrHandingOver)); ok {
			err = &cluster.NotLeaderError{Leader: leader}
		}
	}
	st := statusFor(err)
	if st.Code() == codes.Internal {
		s.log.Error("internal error", "method", info.FullMethod, "error", err)
	}
	return nil, st.Err()
}

// awaitLeader waits, up to LeaderWait or ctx, until this node knows of a
// leader other than itself. A node that leads itself and was elected a
// moment ago answers at once as it was: its duties finish within a commit,
// and the client's short backoff brings the call back. One handing its
// leadership over (handingOver) waits for the new leader and names it:
// otherwise the client, told only that there is no leader, would try the
// other nodes in turn, one of which may not know the new leader yet.
func (s *server) awaitLeader(ctx context.Context, handingOver bool) (cluster.NodeInfo, bool) {
	if s.opts.LeaderWait <= 0 {
		return cluster.NodeInfo{}, false
	}
	deadline := time.NewTimer(s.opts.LeaderWait)
	defer deadline.Stop()
	poll := time.NewTicker(leaderPoll)
	defer poll.Stop()
	self := s.b.Self().ID
	for {
		switch l := s.b.Leader(); {
		case l.ID == self && !handingOver:
			return cluster.NodeInfo{}, false
		case l.ID != "" && l.ID != self:
			return l, true
		}
		select {
		case <-poll.C:
		case <-deadline.C:
			return cluster.NodeInfo{}, false
		case <-ctx.Done():
			return cluster.NodeInfo{}, false
		}
	}
}

// leaderPoll is how often awaitLeader looks (an atomic read in raft).
const leaderPoll = 2 * time.Millisecond

// now stamps read-only engine calls.
func (s *server) now() time.Time { return s.opts.NowFunc() }

// healthService answers the standard gRPC health protocol. A node is SERVING
// while it runs, leader or follower (a follower still answers and redirects);
// NOT_SERVING once its Raft node has shut down.
type healthService struct {
	healthpb.UnimplementedHealthServer
	b Backend
}

// healthWatchPoll bounds how long Watch may miss a change when nothing is
// applied (for example a shutdown of an idle node).
const healthWatchPoll = time.Second

func (h *healthService) servingStatus(ctx context.Context) healthpb.HealthCheckResponse_ServingStatus {
	st, err := h.b.Status(ctx)
	if err != nil || st.State == "Shutdown" {
		return healthpb.HealthCheckResponse_NOT_SERVING
	}
	return healthpb.HealthCheckResponse_SERVING
}

func (h *healthService) known(service string) bool {
	switch service {
	case "", seppv1.QueueService_ServiceDesc.ServiceName, seppv1.AdminService_ServiceDesc.ServiceName,
		seppv1.ClusterService_ServiceDesc.ServiceName:
		return true
	}
	// A leader asks its members which command versions their binaries
	// apply (cluster/versions.go); an older binary answers NotFound.
	return cluster.IsCommandVersionService(service)
}

func (h *healthService) Check(ctx context.Context, req *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error) {
	if !h.known(req.GetService()) {
		return nil, status.Errorf(codes.NotFound, "unknown service %q", req.GetService())
	}
	return &healthpb.HealthCheckResponse{Status: h.servingStatus(ctx)}, nil
}

func (h *healthService) Watch(req *healthpb.HealthCheckRequest, stream healthpb.Health_WatchServer) error {
	ctx := stream.Context()
	last := healthpb.HealthCheckResponse_UNKNOWN
	if !h.known(req.GetService()) {
		last = healthpb.HealthCheckResponse_SERVICE_UNKNOWN
		return stream.Send(&healthpb.HealthCheckResponse{Status: last})
	}
	ticker := time.NewTicker(healthWatchPoll)
	defer ticker.Stop()
	for {
		if cur := h.servingStatus(ctx); cur != last {
			if err := stream.Send(&healthpb.HealthCheckResponse{Status: cur}); err != nil {
				return err
			}
			last = cur
		}
		select {
		case <-ctx.Done():
			return status.FromContextError(ctx.Err()).Err()
		case <-h.b.Applied():
		case <-ticker.C:
		}
	}
}

func (h *healthService) List(ctx context.Context, _ *healthpb.HealthListRequest) (*healthpb.HealthListResponse, error) {
	cur := &healthpb.HealthCheckResponse{Status: h.servingStatus(ctx)}
	return &healthpb.HealthListResponse{Statuses: map[string]*healthpb.HealthCheckResponse{
		"": cur,
		seppv1.QueueService_ServiceDesc.ServiceName:   cur,
		seppv1.AdminService_ServiceDesc.ServiceName:   cur,
		seppv1.ClusterService_ServiceDesc.ServiceName: cur,
	}}, nil
}
