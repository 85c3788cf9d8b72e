package client_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/sepp-io/sepp/client"
)

// A consumer that reserves a batch and does its work inline acks the batch
// with one AckBatch: one wait for all, and each delivery still gets its own
// confirmed outcome.
func ExampleClient_AckBatch() {
	addr, stop := exampleServer()
	defer stop()
	ctx := context.Background()
	c, err := client.New(ctx, []string{addr})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	for range 3 {
		if _, err := c.Enqueue(ctx, client.NewEnqueueRequest("emails", "welcome")); err != nil {
			log.Fatal(err)
		}
	}

	ds, err := c.Reserve(ctx, "emails", client.ReserveOptions{Max: 10, Lease: time.Minute})
	if err != nil {
		log.Fatal(err)
	}
	jcs := make([]client.JobContext, len(ds))
	for i, d := range ds {
		// ... handle d.Job ...
		jcs[i] = d.Ctx
	}
	for i, err := range c.AckBatch(ctx, jcs) {
		switch {
		case err == nil:
			fmt.Println("acked job", jcs[i].JobID)
		case errors.Is(err, client.ErrLeaseLost):
			fmt.Println("job", jcs[i].JobID, "went to another worker")
		case errors.Is(err, client.ErrUnknownOutcome):
			fmt.Println("job", jcs[i].JobID, "may have been acked")
		default:
			log.Fatal(err)
		}
	}
	// Output:
	// acked job 1
	// acked job 2
	// acked job 3
}
