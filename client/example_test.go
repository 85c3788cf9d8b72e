package client_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/sepp-io/sepp/client"
)

// Producing: build a request field by field and enqueue it. The client
// finds the leader among the addresses and retries through a failover
// without ever adding the job twice.
func Example_produce() {
	addr, stop := exampleServer()
	defer stop()
	ctx := context.Background()

	c, err := client.New(ctx, []string{addr}) // e.g. {"node1:50051", "node2:50051", "node3:50051"}
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	// MaxPriority (9) jumps ahead of anything lower on the queue.
	res, err := c.Enqueue(ctx, client.NewEnqueueRequest("emails", "password_reset").
		WithPayload([]byte(`{"user":42}`)).
		WithPriority(client.MaxPriority).
		WithMaxAttempts(5))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("job", res.JobID, res.State)

	// No delay parameter: schedule an absolute time.
	res, err = c.Enqueue(ctx, client.NewEnqueueRequest("reports", "daily_rollup").
		WithScheduledAt(time.Now().Add(time.Hour)))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("job", res.JobID, res.State)

	// Too far ahead: the error reports the horizon.
	_, err = c.Enqueue(ctx, client.NewEnqueueRequest("reports", "yearly").
		WithScheduledAt(time.Now().AddDate(1, 0, 0)))
	var tooFar *client.ScheduledTooFarError
	if errors.As(err, &tooFar) {
		fmt.Println("rejected: horizon is", tooFar.Horizon)
	}
	// Output:
	// job 1 ready
	// job 2 scheduled
	// rejected: horizon is 720h0m0s
}

// A Producer coalesces concurrent enqueues into batch calls for throughput;
// each job still gets its own result.
func Example_producer() {
	addr, stop := exampleServer()
	defer stop()
	ctx := context.Background()
	c, err := client.New(ctx, []string{addr})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	// One producer keeps the order of its jobs: they get increasing ids
	// and, on one queue and priority, are delivered in that order.
	p := c.NewProducer(client.ProducerOptions{Linger: time.Millisecond, MaxBatch: 100})
	var pending []*client.PendingEnqueue
	for i := range 3 {
		pending = append(pending, p.EnqueueAsync(ctx, client.NewEnqueueRequest("thumbnails", "resize").
			WithPayload([]byte(fmt.Sprintf("image-%d.png", i)))))
	}
	for _, pe := range pending {
		res, err := pe.Wait(ctx)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println("job", res.JobID, res.State)
	}
	if err := p.Close(ctx); err != nil {
		log.Fatal(err)
	}
	// Output:
	// job 1 ready
	// job 2 ready
	// job 3 ready
}

// docs:begin worker

// Working: register handlers, start, stop gracefully. A nil return acks;
// Retry, RetryAfter and Permanent choose the nack directive.
func Example_worker() {
	addr, stop := exampleServer()
	defer stop()
	ctx := context.Background()
	c, err := client.New(ctx, []string{addr})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Enqueue(ctx, client.NewEnqueueRequest("emails", "welcome").WithPayload([]byte("ada@example.com"))); err != nil {
		log.Fatal(err)
	}

	done := make(chan struct{})
	w := client.NewWorker(c, client.WorkerOptions{Concurrency: 4, Lease: 30 * time.Second})
	w.Handle("emails", "welcome", func(ctx context.Context, d *client.Delivery) error {
		defer close(done)
		fmt.Printf("welcome %s (attempt %d of %d)\n", d.Job.Payload, d.Ctx.Attempt, d.Ctx.MaxAttempts)
		if d.Ctx.LastAttempt() {
			log.Printf("last try for job %d: a failure now dead-letters it", d.Ctx.JobID)
		}
		if string(d.Job.Payload) == "" {
			return client.Permanent(errors.New("no address"))
		}
		return nil // ack
	})
	if err := w.Start(); err != nil {
		log.Fatal(err)
	}
	<-done
	sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := w.Stop(sctx); err != nil {
		log.Fatal(err)
	}
	// Output:
	// welcome ada@example.com (attempt 1 of 3)
}

// docs:end worker

// Draining dead letters removes them: persist what you get before acting on
// it. A replay is a fresh job with a new id and attempt 1.
func Example_drainDeadLetters() {
	addr, stop := exampleServer()
	defer stop()
	ctx := context.Background()
	c, err := client.New(ctx, []string{addr})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	// Make one dead letter: reserve a job and reject it.
	if _, err := c.Enqueue(ctx, client.NewEnqueueRequest("emails", "welcome")); err != nil {
		log.Fatal(err)
	}
	ds, err := c.Reserve(ctx, "emails", client.ReserveOptions{Max: 1})
	if err != nil {
		log.Fatal(err)
	}
	if _, err := c.Nack(ctx, ds[0].Ctx, client.DeadLetter(), "mailbox does not exist"); err != nil {
		log.Fatal(err)
	}

	// An empty drain is also what a server without retention returns.
	info, err := c.ServerInfo(ctx)
	if err != nil || !info.DeadLetterRetentionEnabled {
		log.Fatal("dead-letter retention is off: nothing to drain")
	}
	records, err := c.DrainDeadLetters(ctx, client.DrainOptions{Queue: "emails", Max: 100})
	if errors.Is(err, client.ErrUnknownOutcome) {
		log.Fatal("the drain's answer was lost; those records may be gone")
	}
	if err != nil {
		log.Fatal(err)
	}
	for _, r := range records {
		fmt.Printf("%d died on attempt %d (%s): %s\n", r.JobID(), r.FinalAttempt, r.Cause, r.LastReason)
		res, err := c.Enqueue(ctx, r.ToEnqueueRequest())
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println("replayed as job", res.JobID)
	}
	// Output:
	// 1 died on attempt 1 (rejected): mailbox does not exist
	// replayed as job 2
}

// Nacking by hand, for code that drives deliveries itself.
func ExampleClient_Nack() {
	addr, stop := exampleServer()
	defer stop()
	ctx := context.Background()
	c, err := client.New(ctx, []string{addr})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Enqueue(ctx, client.NewEnqueueRequest("emails", "welcome").WithMaxAttempts(2)); err != nil {
		log.Fatal(err)
	}
	for {
		ds, err := c.Reserve(ctx, "emails", client.ReserveOptions{Max: 1})
		if err != nil {
			log.Fatal(err)
		}
		if len(ds) == 0 {
			break
		}
		dead, err := c.Nack(ctx, ds[0].Ctx, client.DefaultRetry(), "smtp timeout")
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("attempt %d failed; dead-lettered: %v\n", ds[0].Ctx.Attempt, dead)
	}
	// Output:
	// attempt 1 failed; dead-lettered: false
	// attempt 2 failed; dead-lettered: true
}
