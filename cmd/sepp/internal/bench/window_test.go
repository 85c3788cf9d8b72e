package bench

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/sepp-io/sepp/client"
)

// fakePending is an enqueue whose result the test decides.
type fakePending struct {
	id   uint64
	done chan struct{}
	err  error
}

func newFakePending(id uint64) *fakePending {
	return &fakePending{id: id, done: make(chan struct{})}
}

func (f *fakePending) Done() <-chan struct{} { return f.done }

func (f *fakePending) Result() (client.EnqueueResult, error) {
	<-f.done
	return client.EnqueueResult{JobID: f.id}, f.err
}

func (f *fakePending) resolve(err error) {
	f.err = err
	close(f.done)
}

// The window never has more than its size outstanding, hands every result
// over once and in send order, and frees a whole returned batch with one
// wait.
func TestEnqueueWindow_BoundsAndOrder(t *testing.T) {
	tests := []struct {
		name        string
		size, jobs  int
		resolveEach int // results come back in groups of this many
	}{
		{"batches the size of the window", 4, 20, 4},
		{"smaller batches", 8, 30, 3},
		{"one at a time", 3, 10, 1},
		{"window of one", 1, 5, 1},
		{"fewer jobs than the window", 16, 5, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []uint64
			var failures int
			w := newEnqueueWindow(tt.size, func(res client.EnqueueResult, err error) {
				if err != nil {
					failures++
					return
				}
				got = append(got, uint64(res.JobID))
			})
			var sent []*fakePending
			resolved := 0
			ctx := context.Background()
			for i := 0; i < tt.jobs; i++ {
				// The results of the oldest group arrive whenever the
				// window is full, as a server answering a batch would.
				if w.outstanding() == tt.size {
					for end := min(resolved+tt.resolveEach, len(sent)); resolved < end; resolved++ {
						var err error
						if sent[resolved].id%7 == 0 {
							err = errors.New("rejected")
						}
						sent[resolved].resolve(err)
					}
				}
				if !w.acquire(ctx) {
					t.Fatal("acquire failed with a live context")
				}
				if n := w.outstanding(); n >= tt.size {
					t.Fatalf("after acquire %d outstanding, window %d", n, tt.size)
				}
				pe := newFakePending(uint64(i + 1))
				sent = append(sent, pe)
				w.add(pe)
			}
			for ; resolved < len(sent); resolved++ {
				sent[resolved].resolve(nil)
			}
			w.wait()
			if w.outstanding() != 0 {
				t.Fatalf("%d outstanding after wait", w.outstanding())
			}
			for i := 1; i < len(got); i++ {
				if got[i] <= got[i-1] {
					t.Fatalf("results out of order: %v", got)
				}
			}
			if len(got)+failures != tt.jobs {
				t.Fatalf("%d results and %d failures for %d jobs", len(got), failures, tt.jobs)
			}
		})
	}
}

// A full window waits for the oldest result, and gives up when ctx ends.
func TestEnqueueWindow_AcquireWaitsForOldest(t *testing.T) {
	w := newEnqueueWindow(2, func(client.EnqueueResult, error) {})
	a, b := newFakePending(1), newFakePending(2)
	w.add(a)
	w.add(b)

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if w.acquire(ctx) {
		t.Fatal("acquire on a full window returned true with an ended context")
	}

	// The newer result alone frees nothing: results are taken in order.
	b.resolve(nil)
	got := make(chan bool, 1)
	go func() { got <- w.acquire(context.Background()) }()
	select {
	case <-got:
		t.Fatal("acquire returned while the oldest enqueue was outstanding")
	case <-time.After(20 * time.Millisecond):
	}
	a.resolve(nil)
	select {
	case ok := <-got:
		if !ok {
			t.Fatal("acquire failed")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("acquire did not return once the oldest result was in")
	}
	if n := w.outstanding(); n != 0 {
		t.Fatalf("%d outstanding, want both collected", n)
	}
}
