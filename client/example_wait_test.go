package client_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/sepp-io/sepp/client"
)

// Waiting for an outcome: WaitJob returns once the job completed or died,
// with the cause of a death. The example server keeps dead letters for an
// hour, so a dead job's outcome can be read.
func Example_waitJob() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := waitExampleClient(ctx)
	defer c.Close()

	res, err := c.Enqueue(ctx, client.NewEnqueueRequest("images", "resize"))
	if err != nil {
		log.Fatal(err)
	}
	// A worker gives up on the job.
	go func() {
		ds, err := c.Reserve(ctx, "images", client.ReserveOptions{WorkerID: "w1", Wait: 5 * time.Second})
		if err != nil || len(ds) != 1 {
			log.Fatal(ds, err)
		}
		if _, err := c.Nack(ctx, ds[0].Ctx, client.DeadLetter(), "corrupt image"); err != nil {
			log.Fatal(err)
		}
	}()

	// docs:begin wait
	out, err := c.WaitJob(ctx, res.JobID)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(out.Terminal, out.State, out.Cause)

	// A job the server does not hold has no outcome.
	_, err = c.WaitJob(ctx, res.JobID+1000)
	fmt.Println(errors.Is(err, client.ErrNotFound))
	// docs:end wait

	// Output:
	// true dead rejected
	// true
}

// A result on an ack: the queue "thumbnails" keeps completed jobs an hour
// (completed_retention_ms), so the producer's WaitJob gets the result. A
// queue that keeps none refuses it with ErrWrongState, and a cluster not
// yet upgraded with ErrUnsupported; either way the lease stays held, so
// the worker acks without it.
func Example_ackWithResult() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := waitExampleClient(ctx)
	defer c.Close()

	res, err := c.Enqueue(ctx, client.NewEnqueueRequest("thumbnails", "resize"))
	if err != nil {
		log.Fatal(err)
	}
	ds, err := c.Reserve(ctx, "thumbnails", client.ReserveOptions{WorkerID: "w1"})
	if err != nil || len(ds) != 1 {
		log.Fatal(ds, err)
	}
	// docs:begin ack-result
	err = c.AckWithResult(ctx, ds[0].Ctx, []byte(`{"width":640}`))
	if errors.Is(err, client.ErrWrongState) { // kept nowhere: ack without it
		err = c.Ack(ctx, ds[0].Ctx)
	}
	if err != nil {
		log.Fatal(err)
	}
	out, err := c.WaitJob(ctx, res.JobID)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(out.State, string(out.Result))
	// docs:end ack-result

	// A Worker's handler sets the result on its delivery.
	if _, err := c.Enqueue(ctx, client.NewEnqueueRequest("thumbnails", "resize")); err != nil {
		log.Fatal(err)
	}
	done := make(chan uint64, 1)
	w := client.NewWorker(c, client.WorkerOptions{WorkerID: "w2"})
	// docs:begin worker-result
	w.Handle("thumbnails", "resize", func(ctx context.Context, d *client.Delivery) error {
		d.SetResult([]byte(`{"width":320}`))
		done <- d.Ctx.JobID
		return nil
	})
	// docs:end worker-result
	stopped := make(chan struct{})
	go func() { _ = w.Run(ctx); close(stopped) }()
	id := <-done
	out, err = c.WaitJob(ctx, id)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(out.State, string(out.Result), out.Job.CompletedAt.IsZero())
	if err := w.Stop(ctx); err != nil {
		log.Fatal(err)
	}
	<-stopped
	// Output:
	// completed {"width":640}
	// completed {"width":320} false
}

// A queue that keeps no completed jobs (completed_retention_ms 0, the
// default) refuses a result: ErrWrongState, nothing applied, the lease
// still held, so the worker acks without it. A Worker does the same by
// itself and reports the refusal through OnError.
func Example_ackWithResultRefused() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := waitExampleClient(ctx)
	defer c.Close()

	if _, err := c.Enqueue(ctx, client.NewEnqueueRequest("avatars", "resize")); err != nil {
		log.Fatal(err)
	}
	ds, err := c.Reserve(ctx, "avatars", client.ReserveOptions{WorkerID: "w1"})
	if err != nil || len(ds) != 1 {
		log.Fatal(ds, err)
	}
	err = c.AckWithResult(ctx, ds[0].Ctx, []byte(`{"width":640}`))
	fmt.Println(errors.Is(err, client.ErrWrongState), errors.Is(err, client.ErrLeaseLost))
	fmt.Println(c.Ack(ctx, ds[0].Ctx))
	// Output:
	// true false
	// <nil>
}

// waitExampleClient is a client of the server this file's examples share
// (sharedExampleServer): one server start for all three.
func waitExampleClient(ctx context.Context) *client.Client {
	c, err := client.New(ctx, []string{sharedExampleServer()})
	if err != nil {
		log.Fatal(err)
	}
	return c
}
