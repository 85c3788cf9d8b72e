package client_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"sort"
	"time"

	"github.com/sepp-io/sepp/client"
)

// A workflow in one call: a root job, three tiles rendered after it (fan
// out), and a callback after the three (fan in) that runs whatever they
// did and reads their outcomes and results. The jobs wait for each other
// by index within the batch; the batch is applied whole.
func Example_workflow() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := waitExampleClient(ctx)
	defer c.Close()

	// docs:begin workflow
	res, err := c.EnqueueBatch(ctx, []*client.EnqueueRequest{
		client.NewEnqueueRequest("tiles", "plan"),                // 0
		client.NewEnqueueRequest("tiles", "render").WithAfter(0), // 1
		client.NewEnqueueRequest("tiles", "render").WithAfter(0), // 2
		client.NewEnqueueRequest("tiles", "render").WithAfter(0), // 3
		client.NewEnqueueRequest("tiles", "stitch").WithAfter(1, 2, 3). // 4
										WithOnParentFailure(client.ParentFailureRun),
	})
	if err != nil {
		log.Fatal(err) // nothing was enqueued
	}
	fmt.Println(res[0].Result.State, res[4].Result.State)
	// docs:end workflow

	// A Producer batches many callers' jobs: it refuses after, whose
	// indexes would name other callers' jobs.
	prod := c.NewProducer(client.ProducerOptions{})
	_, err = prod.Enqueue(ctx, client.NewEnqueueRequest("tiles", "render").WithAfter(0))
	fmt.Println(errors.Is(err, client.ErrInvalidArgument))
	if err := prod.Close(ctx); err != nil {
		log.Fatal(err)
	}

	done := make(chan []string, 1)
	w := client.NewWorker(c, client.WorkerOptions{WorkerID: "tiler"})
	w.Handle("tiles", "plan", func(ctx context.Context, d *client.Delivery) error { return nil })
	w.Handle("tiles", "render", func(ctx context.Context, d *client.Delivery) error {
		d.SetResult(fmt.Appendf(nil, "tile of job %d", d.Ctx.JobID-res[0].Result.JobID))
		return nil
	})
	// docs:begin workflow-callback
	w.Handle("tiles", "stitch", func(ctx context.Context, d *client.Delivery) error {
		parents, err := c.ParentResults(ctx, d.Job.Parents)
		if err != nil {
			return err
		}
		var tiles []string
		for _, p := range parents {
			tiles = append(tiles, fmt.Sprintf("%v %s", p.State, p.Result))
		}
		done <- tiles
		return nil
	})
	// docs:end workflow-callback
	if err := w.Start(); err != nil {
		log.Fatal(err)
	}
	tiles := <-done
	sort.Strings(tiles)
	for _, t := range tiles {
		fmt.Println(t)
	}
	if err := w.Stop(ctx); err != nil {
		log.Fatal(err)
	}
	// Output:
	// ready blocked
	// true
	// completed tile of job 1
	// completed tile of job 2
	// completed tile of job 3
}
