package clientcheck_test

import (
	"context"
	"io"
	"net"
	"testing"
	"time"

	"golang.org/x/net/http2"

	"github.com/sepp-io/sepp/client"
	"github.com/sepp-io/sepp/internal/grpcbuf/grpcbuftest"
)

// The client opens its fixed flow-control windows (internal/grpcbuf) to
// every server it dials: read off the wire by a bare HTTP/2 listener, its
// first SETTINGS frame names the stream window, and a WINDOW_UPDATE on the
// connection raises that window from HTTP/2's 64 KiB to the connection
// window.
func TestClient_OpensFixedFlowControlWindows(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer lis.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := client.New(ctx, []string{lis.Addr().String()})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// The client dials on first use; the call itself never gets an answer
	// and ends with ctx.
	callDone := make(chan struct{})
	go func() {
		defer close(callDone)
		_, _ = c.Enqueue(ctx, client.NewEnqueueRequest("q", "t"))
	}()
	defer func() { cancel(); <-callDone }()

	conn, err := lis.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if err := conn.SetDeadline(time.Now().Add(30 * time.Second)); err != nil {
		t.Fatal(err)
	}
	preface := make([]byte, len(http2.ClientPreface))
	if _, err := io.ReadFull(conn, preface); err != nil || string(preface) != http2.ClientPreface {
		t.Fatalf("client preface %q, %v", preface, err)
	}
	grpcbuftest.CheckWindows(t, conn, 30*time.Second)
}
