package bench

import (
	"context"

	"github.com/sepp-io/sepp/client"
)

// pendingEnqueue is the part of *client.PendingEnqueue the window uses.
type pendingEnqueue interface {
	Done() <-chan struct{}
	Result() (client.EnqueueResult, error)
}

// enqueueWindow keeps at most size enqueues outstanding, as a producer's
// own loop does: the goroutine that sends also collects, and while the
// window is full it waits for the oldest result. Results come back in
// batches and in order, so one wait frees a whole batch of slots, and the
// next jobs go out with no other goroutine to wake on the way. (A version
// with waiter goroutines handing slots back to the sender took 130 µs from
// a batch's results to the first job of the next one on the project's
// machine: three wake-ups in a row while the cluster sat idle.)
//
// It is not safe for concurrent use.
type enqueueWindow struct {
	size     int
	pending  []pendingEnqueue // outstanding, oldest first, from head
	head     int
	onResult func(client.EnqueueResult, error)
}

func newEnqueueWindow(size int, onResult func(client.EnqueueResult, error)) *enqueueWindow {
	size = max(size, 1)
	return &enqueueWindow{size: size, pending: make([]pendingEnqueue, 0, 2*size), onResult: onResult}
}

func (w *enqueueWindow) outstanding() int { return len(w.pending) - w.head }

// acquire waits until fewer than size enqueues are outstanding, collecting
// results oldest first; false when ctx ended first.
func (w *enqueueWindow) acquire(ctx context.Context) bool {
	for w.outstanding() >= w.size {
		select {
		case <-w.pending[w.head].Done():
		case <-ctx.Done():
			return false
		}
		w.collectDone()
	}
	return true
}

// collectDone takes every result that is in, oldest first, stopping at the
// first outstanding one.
func (w *enqueueWindow) collectDone() {
	for w.outstanding() > 0 {
		pe := w.pending[w.head]
		select {
		case <-pe.Done():
		default:
			return
		}
		w.onResult(pe.Result())
		w.pending[w.head] = nil
		w.head++
	}
	if w.head == len(w.pending) {
		w.pending, w.head = w.pending[:0], 0
	}
}

// add records an enqueue sent after acquire.
func (w *enqueueWindow) add(pe pendingEnqueue) {
	if w.head > 0 && len(w.pending) == cap(w.pending) {
		// Slide the outstanding ones to the front instead of growing.
		n := copy(w.pending, w.pending[w.head:])
		clear(w.pending[n:])
		w.pending, w.head = w.pending[:n], 0
	}
	w.pending = append(w.pending, pe)
}

// wait collects every outstanding result.
func (w *enqueueWindow) wait() {
	for ; w.head < len(w.pending); w.head++ {
		w.onResult(w.pending[w.head].Result())
		w.pending[w.head] = nil
	}
	w.pending, w.head = w.pending[:0], 0
}
