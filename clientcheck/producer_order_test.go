package clientcheck_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/sepp-io/sepp/client"
)

// One producer keeps the order of the jobs handed to it: a batch leaves
// only once the one before it has its result, so a later batch can never
// be applied first. The first batch is held on the server until a second
// batch call has finished (which a producer sending batches concurrently
// does at once, taking the lower id) or, when none comes, for a bound.
func TestProducer_KeepsOrderAcrossBatches(t *testing.T) {
	n := startNode(t, "n1", nil)
	c := newClient(t, []string{n.addr})
	ctx := testContext(t)

	var (
		mu        sync.Mutex
		calls     int
		inFlight  int
		maxFlight int
		laterDone = make(chan struct{})
		once      sync.Once
	)
	n.backend.setBefore(func(ctx context.Context, op string) error {
		if op != "EnqueueBatch" {
			return nil
		}
		mu.Lock()
		calls++
		first := calls == 1
		inFlight++
		maxFlight = max(maxFlight, inFlight)
		mu.Unlock()
		if first {
			t := time.NewTimer(300 * time.Millisecond) // bounds the wait for a batch that must not come
			defer t.Stop()
			select {
			case <-laterDone:
			case <-t.C:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		return nil
	})
	n.backend.setAfter(func(op string) error {
		if op != "EnqueueBatch" {
			return nil
		}
		mu.Lock()
		inFlight--
		later := calls > 1
		mu.Unlock()
		if later {
			once.Do(func() { close(laterDone) })
		}
		return nil
	})

	// One job per batch, so every job is its own call.
	p := c.NewProducer(client.ProducerOptions{MaxBatch: 1, Linger: time.Nanosecond})
	const jobs = 6
	pending := make([]*client.PendingEnqueue, jobs)
	for i := range pending {
		pending[i] = p.EnqueueAsync(ctx, client.NewEnqueueRequest("q", "t").WithPayload([]byte(fmt.Sprint(i))))
	}
	var last uint64
	for i, pe := range pending {
		res, err := pe.Wait(ctx)
		if err != nil {
			t.Fatalf("job %d: %v", i, err)
		}
		if res.JobID <= last {
			t.Fatalf("job %d got id %d after id %d: the producer reordered its jobs", i, res.JobID, last)
		}
		last = res.JobID
	}
	if err := p.Close(ctx); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if maxFlight != 1 {
		t.Fatalf("%d batch calls were in flight at once, want 1", maxFlight)
	}
}

// Under concurrency (run it with -race): each of several goroutines hands
// its jobs to one shared producer in sequence, and each goroutine's jobs
// come back with increasing ids and are delivered in that order.
// spec: PRI-5
func TestProducer_KeepsEachGoroutinesOrder(t *testing.T) {
	n := startNode(t, "n1", nil)
	c := newClient(t, []string{n.addr})
	ctx := testContext(t)
	p := c.NewProducer(client.ProducerOptions{MaxBatch: 8, Linger: 50 * time.Microsecond})

	const goroutines, perGoroutine = 8, 60
	ids := make([][]uint64, goroutines)
	errs := make(chan error, goroutines)
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			pending := make([]*client.PendingEnqueue, perGoroutine)
			for i := range pending {
				pending[i] = p.EnqueueAsync(ctx, client.NewEnqueueRequest(fmt.Sprintf("q%d", g), "t").WithPayload([]byte(fmt.Sprint(i))))
			}
			for i, pe := range pending {
				res, err := pe.Wait(ctx)
				if err != nil {
					errs <- fmt.Errorf("goroutine %d job %d: %w", g, i, err)
					return
				}
				ids[g] = append(ids[g], res.JobID)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if err := p.Close(ctx); err != nil {
		t.Fatal(err)
	}
	for g := range goroutines {
		for i := 1; i < len(ids[g]); i++ {
			if ids[g][i] <= ids[g][i-1] {
				t.Fatalf("goroutine %d: job %d got id %d after id %d", g, i, ids[g][i], ids[g][i-1])
			}
		}
		// The queue hands them out in the same order.
		ds, err := c.Reserve(ctx, fmt.Sprintf("q%d", g), client.ReserveOptions{Max: perGoroutine})
		if err != nil {
			t.Fatal(err)
		}
		if len(ds) != perGoroutine {
			t.Fatalf("goroutine %d: reserved %d jobs, want %d", g, len(ds), perGoroutine)
		}
		for i, d := range ds {
			if want := fmt.Sprint(i); string(d.Job.Payload) != want {
				t.Fatalf("goroutine %d: delivery %d has payload %q, want %q", g, i, d.Job.Payload, want)
			}
		}
	}
}
