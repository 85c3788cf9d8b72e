package client_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/sepp-io/sepp/client"
)

// Progress: a worker reports how far a job is with its lease extension,
// and anyone reading the job (GetJob, ListJobs, WaitJob, the admin UI)
// sees it until the delivery ends.
func Example_reportProgress() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := waitExampleClient(ctx)
	defer c.Close()

	res, err := c.Enqueue(ctx, client.NewEnqueueRequest("exports", "csv"))
	if err != nil {
		log.Fatal(err)
	}
	ds, err := c.Reserve(ctx, "exports", client.ReserveOptions{WorkerID: "w1", Lease: time.Minute})
	if err != nil || len(ds) != 1 {
		log.Fatal(ds, err)
	}
	// docs:begin report-progress
	// One call, one log entry: the lease is extended (by the server's
	// default lease) and the progress kept with the job.
	if _, err := c.ReportProgress(ctx, ds[0].Ctx, 40, "exported 4000 of 10000 rows"); err != nil {
		log.Fatal(err)
	}
	job, err := c.GetJob(ctx, res.JobID, false)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(job.Progress.Percent, job.Progress.Message)
	// docs:end report-progress
	if err := c.Ack(ctx, ds[0].Ctx); err != nil {
		log.Fatal(err)
	}

	// A Worker's handler reports on its delivery; the report rides the
	// worker's next lease extension.
	if _, err := c.Enqueue(ctx, client.NewEnqueueRequest("exports", "csv")); err != nil {
		log.Fatal(err)
	}
	seen := make(chan struct{})
	reported := make(chan uint64, 1)
	w := client.NewWorker(c, client.WorkerOptions{WorkerID: "w2"})
	// docs:begin worker-progress
	w.Handle("exports", "csv", func(ctx context.Context, d *client.Delivery) error {
		for rows := 0; rows < 10_000; rows += 2_500 {
			// ... export the next 2500 rows ...
			if err := d.Progress(rows/100, fmt.Sprintf("exported %d of 10000 rows", rows)); err != nil {
				return err
			}
		}
		// docs:end worker-progress
		reported <- d.Ctx.JobID
		<-seen
		return nil
	})
	if err := w.Start(); err != nil {
		log.Fatal(err)
	}
	id := <-reported
	for {
		job, err := c.GetJob(ctx, id, false)
		if err != nil {
			log.Fatal(err)
		}
		if job.Progress != nil && job.Progress.Percent == 75 {
			fmt.Println(job.Progress.Percent, job.Progress.Message)
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	close(seen)
	if err := w.Stop(ctx); err != nil {
		log.Fatal(err)
	}
	// Output:
	// 40 exported 4000 of 10000 rows
	// 75 exported 7500 of 10000 rows
}
