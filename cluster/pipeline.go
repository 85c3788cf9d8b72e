package cluster

import (
	"sync"

	"github.com/hashicorp/raft"
)

// hashicorp/raft (v1.7.3, and v1.8.0 unchanged) can deadlock a leader's
// replication to a peer when it loses leadership: its response decoder
// (pipelineDecode) returns as soon as a response carries a newer term,
// while the sender (pipelineReplicate) may still be sending. The network
// pipeline hands each response on through a channel of MaxRPCsInFlight-2
// slots (none by default), so with nobody reading them the pipeline's
// reader blocks, the next send blocks behind it for good, and raft's
// Shutdown, which waits for the sender, never returns. Seen after a
// leadership transfer under load: the old leader's node hung on Close.
//
// guardedTransport gives raft pipelines whose responses are queued without
// bound as they arrive, so a sender always gets its request on the wire and
// its answer read, finds the decoder gone on its next turn and closes the
// pipeline. Responses queue only while raft is not reading them, which is
// the window above; otherwise each passes straight through.
type guardedTransport struct {
	*raft.NetworkTransport
}

func (t guardedTransport) AppendEntriesPipeline(id raft.ServerID, target raft.ServerAddress) (raft.AppendPipeline, error) {
	p, err := t.NetworkTransport.AppendEntriesPipeline(id, target)
	if err != nil {
		return nil, err
	}
	return newGuardedPipeline(p), nil
}

// guardedPipeline passes a pipeline's completed requests on in order through
// a queue that never fills.
type guardedPipeline struct {
	raft.AppendPipeline
	out       chan raft.AppendFuture
	stop      chan struct{}
	forwarded chan struct{} // closed when forward has returned
	closeOnce sync.Once
	closeErr  error
}

func newGuardedPipeline(p raft.AppendPipeline) *guardedPipeline {
	g := &guardedPipeline{
		AppendPipeline: p,
		out:            make(chan raft.AppendFuture),
		stop:           make(chan struct{}),
		forwarded:      make(chan struct{}),
	}
	go g.forward()
	return g
}

func (g *guardedPipeline) forward() {
	defer close(g.forwarded)
	in := g.AppendPipeline.Consumer()
	var queue []raft.AppendFuture
	for {
		var out chan raft.AppendFuture // nil while the queue is empty
		var next raft.AppendFuture
		if len(queue) > 0 {
			out, next = g.out, queue[0]
		}
		select {
		case f := <-in:
			queue = append(queue, f)
		case out <- next:
			queue[0] = nil
			queue = queue[1:]
		case <-g.stop:
			return
		}
	}
}

// Consumer is where raft reads the completed requests.
func (g *guardedPipeline) Consumer() <-chan raft.AppendFuture { return g.out }

// Close closes the pipeline and stops the forwarding.
func (g *guardedPipeline) Close() error {
	g.closeOnce.Do(func() {
		g.closeErr = g.AppendPipeline.Close()
		close(g.stop)
		<-g.forwarded
	})
	return g.closeErr
}
