// Package grpcbuftest checks, from the far end of an HTTP/2 connection,
// that a gRPC client or server opened grpcbuf's flow-control windows.
package grpcbuftest

import (
	"net"
	"testing"
	"time"

	"golang.org/x/net/http2"

	"github.com/sepp-io/sepp/internal/grpcbuf"
)

// http2DefaultWindow is the window every HTTP/2 stream and connection
// starts with.
const http2DefaultWindow = 65535

// CheckWindows plays the other end of conn, whose connection preface has
// already been exchanged: it sends its own SETTINGS, reads the peer's
// SETTINGS and the connection's WINDOW_UPDATE, and fails t unless they
// open grpcbuf.StreamWindow and grpcbuf.ConnectionWindow. A gRPC peer
// writes both as the connection starts, before it reads ours, so its
// acknowledgement of ours comes after them and ends the reading.
func CheckWindows(t testing.TB, conn net.Conn, timeout time.Duration) {
	t.Helper()
	if err := conn.SetDeadline(time.Now().Add(timeout)); err != nil {
		t.Fatal(err)
	}
	fr := http2.NewFramer(conn, conn)
	if err := fr.WriteSettings(); err != nil {
		t.Fatal(err)
	}
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
		t.Fatal("no SETTINGS frame from the peer")
	}
	if streamWindow != grpcbuf.StreamWindow {
		t.Errorf("SETTINGS_INITIAL_WINDOW_SIZE = %d, want %d", streamWindow, grpcbuf.StreamWindow)
	}
	if got := connIncrement + http2DefaultWindow; got != grpcbuf.ConnectionWindow {
		t.Errorf("connection window = %d, want %d", got, grpcbuf.ConnectionWindow)
	}
}
