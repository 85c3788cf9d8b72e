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

// A result on an ack: a server that keeps no results refuses it with
// ErrUnsupported and the lease stays held, so the worker acks without it.
func Example_ackWithResult() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := waitExampleClient(ctx)
	defer c.Close()

	// A queue of its own: Example_waitJob's server is this one.
	if _, err := c.Enqueue(ctx, client.NewEnqueueRequest("thumbnails", "resize")); err != nil {
		log.Fatal(err)
	}
	ds, err := c.Reserve(ctx, "thumbnails", client.ReserveOptions{WorkerID: "w1"})
	if err != nil || len(ds) != 1 {
		log.Fatal(ds, err)
	}
	// docs:begin ack-result
	err = c.AckWithResult(ctx, ds[0].Ctx, []byte(`{"width":640}`))
	if errors.Is(err, client.ErrUnsupported) {
		err = c.Ack(ctx, ds[0].Ctx)
	}
	// docs:end ack-result
	fmt.Println(err)
	// Output:
	// <nil>
}

// waitExampleClient is a client of the server this file's examples share
// (sharedExampleServer): one server start for both.
func waitExampleClient(ctx context.Context) *client.Client {
	c, err := client.New(ctx, []string{sharedExampleServer()})
	if err != nil {
		log.Fatal(err)
	}
	return c
}
