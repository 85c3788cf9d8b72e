package clientcheck_test

import (
	"errors"
	"testing"
	"time"

	"github.com/sepp-io/sepp/client"
)

// Unique jobs from the Go client: a repeat returns the holder as a
// duplicate; with Refuse it fails with ErrAlreadyExists naming the holder,
// in single and batch enqueues.
func TestClient_UniqueJobs(t *testing.T) {
	n := startNode(t, "n1", nil)
	c := newClient(t, []string{n.addr})
	ctx := testContext(t)

	unique := client.UniqueOptions{Fields: []string{"tenant"}, CompletedFor: time.Minute}
	req := func() *client.EnqueueRequest {
		return client.NewEnqueueRequest("reports", "build").WithPayload([]byte("r1")).WithCustom("tenant", "acme").WithUnique(unique)
	}
	first, err := c.Enqueue(ctx, req())
	if err != nil || first.Duplicate {
		t.Fatalf("first = %+v, %v", first, err)
	}
	again, err := c.Enqueue(ctx, req())
	if err != nil || !again.Duplicate || again.JobID != first.JobID {
		t.Fatalf("again = %+v, %v; want a duplicate of job %d", again, err, first.JobID)
	}

	refuse := req()
	refuse.Unique.Refuse = true
	_, err = c.Enqueue(ctx, refuse)
	var ce *client.UniqueConflictError
	if !errors.Is(err, client.ErrAlreadyExists) || !errors.As(err, &ce) || ce.JobID != first.JobID || ce.Queue != "reports" {
		t.Fatalf("refused enqueue err = %v; want ErrAlreadyExists naming job %d", err, first.JobID)
	}

	results, err := c.EnqueueBatch(ctx, []*client.EnqueueRequest{req(), refuse})
	if err != nil {
		t.Fatal(err)
	}
	if !results[0].Result.Duplicate || results[0].Result.JobID != first.JobID || !errors.Is(results[1].Err, client.ErrAlreadyExists) {
		t.Fatalf("batch = %+v", results)
	}

	bad := req()
	bad.Unique.CompletedFor = -time.Second
	if _, err := c.Enqueue(ctx, bad); !errors.Is(err, client.ErrInvalidArgument) {
		t.Fatalf("negative completed_for: err = %v", err)
	}
}
