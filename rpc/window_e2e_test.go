package rpc_test

import (
	"net"
	"testing"

	"golang.org/x/net/http2"

	"github.com/sepp-io/sepp/cluster"
	"github.com/sepp-io/sepp/engine"
	"github.com/sepp-io/sepp/internal/grpcbuf/grpcbuftest"
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
	if _, err := conn.Write([]byte(http2.ClientPreface)); err != nil {
		t.Fatal(err)
	}
	grpcbuftest.CheckWindows(t, conn, testTimeout)
}
