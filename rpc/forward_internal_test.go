package rpc

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/types/known/durationpb"

	seppv1 "github.com/sepp-io/sepp/proto/sepp/v1"
)

// A leader this node cannot connect to is not sent the call: forward
// reports errNotSent, so the caller keeps the certain NotLeader answer
// rather than an Unavailable that reads as "may have been applied".
func TestForward_UnreachableLeaderIsNotSent(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // nothing listens there now: connections are refused

	f := NewForwarder("n1", grpc.WithTransportCredentials(insecure.NewCredentials()))
	defer f.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err = f.forward(ctx, metadata.MD{}, "/sepp.v1.QueueService/Enqueue", &seppv1.EnqueueRequest{Queue: "q", JobType: "t"}, addr)
	if !errors.Is(err, errNotSent) {
		t.Fatalf("forward to a refused address: %v, want errNotSent", err)
	}
}

func TestForwardedMetadata_DropsTransportHeaders(t *testing.T) {
	in := metadata.MD{
		":authority":    {"x"},
		"content-type":  {"application/grpc"},
		"user-agent":    {"grpc-go"},
		"grpc-timeout":  {"1S"},
		"authorization": {"Bearer t"},
		"x-trace":       {"abc"},
		// A Connect call's HTTP/1.1 headers, which HTTP/2 forbids or
		// which mean nothing on the gRPC hop.
		"connection":               {"keep-alive"},
		"keep-alive":               {"timeout=5"},
		"host":                     {"127.0.0.1:50051"},
		"content-length":           {"42"},
		"connect-protocol-version": {"1"},
		"connect-timeout-ms":       {"10000"},
	}
	out := forwardedMetadata(in, "n2")
	for _, k := range []string{":authority", "content-type", "user-agent", "grpc-timeout",
		"connection", "keep-alive", "host", "content-length", "connect-protocol-version", "connect-timeout-ms"} {
		if _, ok := out[k]; ok {
			t.Errorf("%s was forwarded", k)
		}
	}
	if out.Get("authorization")[0] != "Bearer t" || out.Get("x-trace")[0] != "abc" || out.Get(ForwardedFromHeader)[0] != "n2" {
		t.Fatalf("forwarded metadata %v", out)
	}
}

// Long polls are redirected, not forwarded: a waiting reserve and every
// WaitJob. A reserve that does not wait is forwarded like any write.
func TestForwardable_LongPollsAreRedirected(t *testing.T) {
	tests := []struct {
		name   string
		method string
		req    any
		want   bool
	}{
		{"Enqueue", seppv1.QueueService_Enqueue_FullMethodName, &seppv1.EnqueueRequest{}, true},
		{"ReserveNoWait", seppv1.QueueService_Reserve_FullMethodName, &seppv1.ReserveRequest{}, true},
		{"ReserveWaiting", seppv1.QueueService_Reserve_FullMethodName, &seppv1.ReserveRequest{Wait: durationpb.New(time.Second)}, false},
		{"WaitJob", seppv1.QueueService_WaitJob_FullMethodName, &seppv1.WaitJobRequest{JobId: 1}, false},
		{"ClusterStatus", seppv1.ClusterService_Status_FullMethodName, &seppv1.StatusRequest{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := forwardable(tt.method, tt.req); got != tt.want {
				t.Errorf("forwardable(%s) = %v, want %v", tt.method, got, tt.want)
			}
		})
	}
}
