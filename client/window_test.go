package client_test

import (
	"context"
	"io"
	"net"
	"testing"
	"time"

	"golang.org/x/net/http2"

	"github.com/sepp-io/sepp/client"
	"github.com/sepp-io/sepp/internal/grpcbuf"
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
	fr := http2.NewFramer(conn, conn)
	if err := fr.WriteSettings(); err != nil {
		t.Fatal(err)
	}
	// The client writes its SETTINGS and the connection's WINDOW_UPDATE
	// right after the preface, before it reads ours; its acknowledgement of
	// ours therefore comes after both.
	var streamWindow, connIncrement uint32
	var sawSettings, sawAck bool
	for !sawAck {
		f, err := fr.ReadFrame()
		if err != nil {
			t.Fatalf("read frame: %v", err)
		}
		switch f := f.(type) {
		case *http2.SettingsFrame:
			if f.IsAck() {
				sawAck = true
				continue
			}
			sawSettings = true
			if v, ok := f.Value(http2.SettingInitialWindowSize); ok {
				streamWindow = v
			}
		case *http2.WindowUpdateFrame:
			if f.StreamID == 0 {
				connIncrement += f.Increment
			}
		}
	}
	if !sawSettings {
		t.Fatal("no SETTINGS frame from the client")
	}
	if streamWindow != grpcbuf.StreamWindow {
		t.Errorf("SETTINGS_INITIAL_WINDOW_SIZE = %d, want %d", streamWindow, grpcbuf.StreamWindow)
	}
	const http2DefaultWindow = 65535
	if got := connIncrement + http2DefaultWindow; got != grpcbuf.ConnectionWindow {
		t.Errorf("connection window = %d, want %d", got, grpcbuf.ConnectionWindow)
	}
}
