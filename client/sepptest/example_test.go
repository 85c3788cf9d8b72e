package sepptest_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/sepp-io/sepp/client"
	"github.com/sepp-io/sepp/client/sepptest"
)

// docs:begin code-under-test

// sendWelcome is code under test: it enqueues a job.
func sendWelcome(ctx context.Context, c *client.Client, address string) (uint64, error) {
	res, err := c.Enqueue(ctx, client.NewEnqueueRequest("emails", "welcome").WithPayload([]byte(address)))
	return res.JobID, err
}

// welcome is a handler under test.
func welcome(ctx context.Context, d *client.Delivery) error {
	switch string(d.Job.Payload) {
	case "":
		return client.Permanent(errors.New("no address"))
	case "busy@example.com":
		return client.RetryAfter(time.Minute, errors.New("mailbox busy"))
	}
	return nil
}

// docs:end code-under-test

// NewServer is Start for code without a testing.T, such as an Example
// function: here, one that enqueues a job and reserves it.
func ExampleNewServer() {
	s, err := sepptest.NewServer(sepptest.WithConfig(`
[[queues]]
name = "emails"
default_max_attempts = 5
`))
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()

	id, err := sendWelcome(ctx, s.Client(), "ada@example.com")
	if err != nil {
		log.Fatal(err)
	}
	ds, err := s.Client().Reserve(ctx, "emails", client.ReserveOptions{})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(ds[0].Job.ID == id, string(ds[0].Job.Payload), ds[0].Ctx.MaxAttempts)
	// Output: true ada@example.com 5
}
