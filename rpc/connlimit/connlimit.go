// Package connlimit caps the long-poll reserves one client connection may
// hold open at once, so one misbehaving client cannot take every slot of
// the per-server cap (rpc.Options.MaxConcurrentLongPolls) from the others.
// It is a gRPC unary interceptor keyed by the connection's remote address;
// it imports only gRPC and the public API.
package connlimit

import (
	"context"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"

	seppv1 "github.com/sepp-io/sepp/proto/sepp/v1"
)

// LongPolls counts waiting reserves per connection.
type LongPolls struct {
	max int

	mu   sync.Mutex
	open map[string]int // remote address of the connection → reserves waiting
}

// NewLongPolls allows max waiting reserves per connection (max >= 1).
func NewLongPolls(max int) *LongPolls {
	if max < 1 {
		max = 1
	}
	return &LongPolls{max: max, open: make(map[string]int)}
}

// Open reports the reserves that may wait, now, on the connection from addr.
func (l *LongPolls) Open(addr string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.open[addr]
}

func (l *LongPolls) acquire(key string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.open[key] >= l.max {
		return false
	}
	l.open[key]++
	return true
}

func (l *LongPolls) release(key string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.open[key]--; l.open[key] <= 0 {
		delete(l.open, key)
	}
}

// UnaryInterceptor refuses a Reserve that asks to wait when its connection
// already holds max waiting reserves, with ResourceExhausted naming the
// limit. Reserves that do not wait, and every other call, pass untouched.
func (l *LongPolls) UnaryInterceptor() grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		r, ok := req.(*seppv1.ReserveRequest)
		if !ok || info.FullMethod != seppv1.QueueService_Reserve_FullMethodName || r.GetWait().AsDuration() <= 0 {
			return handler(ctx, req)
		}
		p, ok := peer.FromContext(ctx)
		if !ok || p.Addr == nil {
			return handler(ctx, req)
		}
		key := p.Addr.String()
		if !l.acquire(key) {
			return nil, status.Errorf(codes.ResourceExhausted,
				"wait: this connection already holds its limit of %d waiting reserves (server.max_long_polls_per_conn); open another connection or wait less",
				l.max)
		}
		defer l.release(key)
		return handler(ctx, req)
	}
}
