package rpc_test

import (
	"net"
	"testing"
	"time"

	"golang.org/x/net/http2"

	"github.com/sepp-io/sepp/cluster"
	"github.com/sepp-io/sepp/engine"
	"github.com/sepp-io/sepp/internal/grpcbuf"
	"github.com/sepp-io/sepp/rpc"
	"github.com/sepp-io/sepp/rpc/rpctest"
)

// The server opens its fixed flow-control windows (internal/grpcbuf) to
// every client: its first SETTINGS frame names the stream window, and a
// WINDOW_UPDATE on the connection raises that window from HTTP/2's 64 KiB
// to the connection window. Read off the wire, as a client sees them.
func TestServer_OpensFixedFlowControlWindows(t *testing.T) {
	lb, err := rpctest.NewLocalBackend(engine.DefaultConfig(), cluster.NodeInfo{ID: "n1"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	addr := rpctest.Serve(t, lb, rpc.Options{})
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if err := conn.SetDeadline(time.Now().Add(testTimeout)); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Write([]byte(http2.ClientPreface)); err != nil {
		t.Fatal(err)
	}
	fr := http2.NewFramer(conn, conn)
	if err := fr.WriteSettings(); err != nil {
		t.Fatal(err)
	}
	// The server writes its SETTINGS and the connection's WINDOW_UPDATE as
	// it accepts the connection, before it reads ours; its acknowledgement
	// of ours therefore comes after both.
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
		t.Fatal("no SETTINGS frame from the server")
	}
	if streamWindow != grpcbuf.StreamWindow {
		t.Errorf("SETTINGS_INITIAL_WINDOW_SIZE = %d, want %d", streamWindow, grpcbuf.StreamWindow)
	}
	const http2DefaultWindow = 65535
	if got := connIncrement + http2DefaultWindow; got != grpcbuf.ConnectionWindow {
		t.Errorf("connection window = %d, want %d", got, grpcbuf.ConnectionWindow)
	}
}
