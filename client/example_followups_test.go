package client_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/sepp-io/sepp/client"
)

// Follow-ups: an ack that enqueues the next jobs in the same log entry,
// all or nothing and fenced by the lease. A retry after a lost answer
// cannot enqueue a follow-up twice: each carries an idempotency key. Once
// the lease is lost, the ack fails and enqueues nothing.
func Example_ackWithFollowUps() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := waitExampleClient(ctx)
	defer c.Close()

	if _, err := c.Enqueue(ctx, client.NewEnqueueRequest("orders", "charge")); err != nil {
		log.Fatal(err)
	}
	ds, err := c.Reserve(ctx, "orders", client.ReserveOptions{WorkerID: "w1"})
	if err != nil || len(ds) != 1 {
		log.Fatal(ds, err)
	}
	// docs:begin ack-follow-ups
	res, err := c.AckWithFollowUps(ctx, ds[0].Ctx, nil, []*client.EnqueueRequest{
		client.NewEnqueueRequest("orders", "ship").WithIdempotencyKey("order-42-ship"),
		client.NewEnqueueRequest("receipts", "send").WithIdempotencyKey("order-42-receipt"),
	})
	if err != nil {
		log.Fatal(err) // nothing was applied: the job is still reserved, or its lease is lost
	}
	for _, r := range res {
		fmt.Println(r.State, r.Duplicate, r.IdempotencyKey)
	}
	// docs:end ack-follow-ups

	// The same ack again: its lease is gone, so nothing more is enqueued.
	_, err = c.AckWithFollowUps(ctx, ds[0].Ctx, nil, []*client.EnqueueRequest{client.NewEnqueueRequest("orders", "ship")})
	fmt.Println(errors.Is(err, client.ErrLeaseLost))

	// A Worker's handler adds follow-ups to its delivery; they are
	// enqueued with its ack, with the result if it set one.
	done := make(chan string, 1)
	w := client.NewWorker(c, client.WorkerOptions{WorkerID: "w2"})
	// docs:begin worker-follow-ups
	w.Handle("orders", "ship", func(ctx context.Context, d *client.Delivery) error {
		d.AddFollowUp(client.NewEnqueueRequest("emails", "shipped").
			WithPayload([]byte(`{"order":42}`)).WithIdempotencyKey("order-42-shipped"))
		return nil
	})
	// docs:end worker-follow-ups
	w.Handle("emails", "shipped", func(ctx context.Context, d *client.Delivery) error {
		done <- string(d.Job.Payload)
		return nil
	})
	if err := w.Start(); err != nil {
		log.Fatal(err)
	}
	fmt.Println(<-done)
	if err := w.Stop(ctx); err != nil {
		log.Fatal(err)
	}
	// Output:
	// ready false order-42-ship
	// ready false order-42-receipt
	// true
	// {"order":42}
}
