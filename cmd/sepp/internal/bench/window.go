package bench

import (
	"context"
	"sync"

	"github.com/sepp-io/sepp/client"
)

// enqueueWindow keeps at most size enqueues outstanding and collects their
// results in the order they were sent, with a few goroutines rather than
// one per job: the client sees what a real producer's loop costs, not the
// benchmark's bookkeeping. Results come back in batches, in order, so
// waiting on the oldest first holds nothing up.
type enqueueWindow struct {
	slots   chan struct{}
	pending chan *client.PendingEnqueue
	wg      sync.WaitGroup
}

// enqueueWindowWaiters is how many goroutines wait on results.
const enqueueWindowWaiters = 4

func newEnqueueWindow(size int, onResult func(client.EnqueueResult, error)) *enqueueWindow {
	size = max(size, 1)
	w := &enqueueWindow{slots: make(chan struct{}, size), pending: make(chan *client.PendingEnqueue, size)}
	for range enqueueWindowWaiters {
		w.wg.Add(1)
		go func() {
			defer w.wg.Done()
			for pe := range w.pending {
				onResult(pe.Result())
				<-w.slots
			}
		}()
	}
	return w
}

// acquire waits for a free slot; false when ctx ended first.
func (w *enqueueWindow) acquire(ctx context.Context) bool {
	select {
	case w.slots <- struct{}{}:
		return true
	case <-ctx.Done():
		return false
	}
}

// add hands over an enqueue sent after acquire.
func (w *enqueueWindow) add(pe *client.PendingEnqueue) { w.pending <- pe }

// wait waits for every added enqueue's result.
func (w *enqueueWindow) wait() {
	close(w.pending)
	w.wg.Wait()
}
