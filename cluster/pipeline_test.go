package cluster

import (
	"io"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

// raft stops reading a pipeline's responses when it loses leadership while
// its sender may still send (pipeline.go). With raft's own pipeline the
// second unread response blocks every later send for good; a guarded
// pipeline keeps sending and hands every response over, in order, once
// someone reads again.
func TestGuardedPipeline_SendsWhileNobodyReadsTheResponses(t *testing.T) {
	peer, err := raft.NewTCPTransport("127.0.0.1:0", nil, 2, 10*time.Second, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	defer peer.Close()
	done := make(chan struct{})
	defer close(done)
	go func() { // the peer answers every request
		for {
			select {
			case rpc := <-peer.Consumer():
				req := rpc.Command.(*raft.AppendEntriesRequest)
				rpc.Respond(&raft.AppendEntriesResponse{Term: req.Term, LastLog: req.PrevLogEntry + 1, Success: true}, nil)
			case <-done:
				return
			}
		}
	}()
	local, err := raft.NewTCPTransport("127.0.0.1:0", nil, 2, 10*time.Second, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	defer local.Close()

	p, err := guardedTransport{local}.AppendEntriesPipeline("peer", peer.LocalAddr())
	if err != nil {
		t.Fatal(err)
	}
	const sends = 20
	sent := make(chan error, 1)
	go func() {
		for i := range sends {
			req := &raft.AppendEntriesRequest{RPCHeader: raft.RPCHeader{ID: []byte("local"), Addr: []byte(local.LocalAddr())}, Term: 7, PrevLogEntry: uint64(i)}
			if _, err := p.AppendEntries(req, &raft.AppendEntriesResponse{}); err != nil {
				sent <- err
				return
			}
		}
		sent <- nil
	}()
	select {
	case err := <-sent:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("%d sends did not finish while nobody read the responses", sends)
	}
	for i := range sends {
		f := <-p.Consumer()
		if err := f.Error(); err != nil {
			t.Fatalf("response %d: %v", i, err)
		}
		if got := f.Request().PrevLogEntry; got != uint64(i) {
			t.Fatalf("response %d answers request %d: out of order", i, got)
		}
		if !f.Response().Success {
			t.Fatalf("response %d: not a success", i)
		}
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if err := p.Close(); err != nil {
		t.Fatalf("second close: %v", err)
	}
}
