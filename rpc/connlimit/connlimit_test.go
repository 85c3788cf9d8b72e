package connlimit

import (
	"context"
	"net"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	seppv1 "github.com/sepp-io/sepp/proto/sepp/v1"
)

func TestLongPolls_CapPerConnection(t *testing.T) {
	l := NewLongPolls(2)
	icpt := l.UnaryInterceptor()
	info := &grpc.UnaryServerInfo{FullMethod: seppv1.QueueService_Reserve_FullMethodName}
	waiting := &seppv1.ReserveRequest{Queue: "q", Wait: durationpb.New(time.Second)}
	connA := peer.NewContext(context.Background(), &peer.Peer{Addr: &net.TCPAddr{IP: net.IPv4(10, 0, 0, 1), Port: 1000}})
	connB := peer.NewContext(context.Background(), &peer.Peer{Addr: &net.TCPAddr{IP: net.IPv4(10, 0, 0, 1), Port: 1001}})

	release := make(chan struct{})
	entered := make(chan struct{}, 2)
	block := func(context.Context, any) (any, error) { entered <- struct{}{}; <-release; return nil, nil }
	done := make(chan error, 2)
	for i := 0; i < 2; i++ {
		go func() { _, err := icpt(connA, waiting, info, block); done <- err }()
	}
	<-entered
	<-entered
	pass := func(context.Context, any) (any, error) { return "ok", nil }
	if _, err := icpt(connA, waiting, info, pass); status.Code(err) != codes.ResourceExhausted {
		t.Fatalf("third waiting reserve on one connection: %v, want ResourceExhausted", err)
	}
	if _, err := icpt(connB, waiting, info, pass); err != nil {
		t.Fatalf("another connection was refused: %v", err)
	}
	noWait := &seppv1.ReserveRequest{Queue: "q"}
	if _, err := icpt(connA, noWait, info, pass); err != nil {
		t.Fatalf("a reserve that does not wait was refused: %v", err)
	}
	close(release)
	for i := 0; i < 2; i++ {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	if n := l.Open("10.0.0.1:1000"); n != 0 {
		t.Fatalf("%d slots still held after the reserves ended", n)
	}
}
