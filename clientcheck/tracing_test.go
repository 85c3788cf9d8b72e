package clientcheck_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/sepp-io/sepp/client"
)

// recordingTracing is a client.Tracing that hands out a fresh traceparent
// per send and records what the client told it.
type recordingTracing struct {
	mu        sync.Mutex
	sends     []client.Send
	ends      []string // "jobID err"
	processed map[uint64]*client.TraceContext
	outcomes  map[uint64]string
	n         int
}

func (r *recordingTracing) StartSend(ctx context.Context, s client.Send) (context.Context, client.TraceContext, func(uint64, error)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.n++
	r.sends = append(r.sends, s)
	tc := client.TraceContext{Traceparent: fmt.Sprintf("00-%032x-%016x-01", r.n, r.n), Tracestate: fmt.Sprintf("rec=%d", r.n)}
	return ctx, tc, func(id uint64, err error) {
		r.mu.Lock()
		defer r.mu.Unlock()
		r.ends = append(r.ends, fmt.Sprintf("%d %v", id, err))
	}
}

func (r *recordingTracing) StartProcess(ctx context.Context, d *client.Delivery) (context.Context, func(client.Outcome)) {
	return ctx, func(o client.Outcome) {
		r.mu.Lock()
		defer r.mu.Unlock()
		r.processed[d.Ctx.JobID] = d.Job.TraceContext
		r.outcomes[d.Ctx.JobID] = o.String()
	}
}

// TestTracing_CarriedFromProducerToWorker: a client's Tracing gets a call
// per Enqueue, EnqueueBatch and Producer enqueue; each job carries the trace
// context it returned (or the request's own, WithTraceContext), the server
// keeps it, and the Worker hands it to StartProcess with the handler's
// outcome.
func TestTracing_CarriedFromProducerToWorker(t *testing.T) {
	t.Parallel()
	n := startNode(t, "n1", nil)
	rec := &recordingTracing{processed: map[uint64]*client.TraceContext{}, outcomes: map[uint64]string{}}
	c := newClient(t, []string{n.addr}, client.WithTracing(rec))
	ctx := testContext(t)

	single, err := c.Enqueue(ctx, client.NewEnqueueRequest("traced", "ok"))
	if err != nil {
		t.Fatal(err)
	}
	own := client.TraceContext{Traceparent: "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}
	batch, err := c.EnqueueBatch(ctx, []*client.EnqueueRequest{
		client.NewEnqueueRequest("traced", "ok"),
		client.NewEnqueueRequest("traced", "fail").WithTraceContext(own),
	})
	if err != nil || batch[0].Err != nil || batch[1].Err != nil {
		t.Fatalf("batch %+v, %v", batch, err)
	}
	p := c.NewProducer(client.ProducerOptions{})
	produced, err := p.Enqueue(ctx, client.NewEnqueueRequest("traced", "ok"))
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Close(ctx); err != nil {
		t.Fatal(err)
	}
	want := map[uint64]client.TraceContext{
		single.JobID:          {Traceparent: fmt.Sprintf("00-%032x-%016x-01", 1, 1), Tracestate: "rec=1"},
		batch[0].Result.JobID: {Traceparent: fmt.Sprintf("00-%032x-%016x-01", 2, 2), Tracestate: "rec=2"},
		batch[1].Result.JobID: own,
		produced.JobID:        {Traceparent: fmt.Sprintf("00-%032x-%016x-01", 3, 3), Tracestate: "rec=3"},
	}
	job, err := c.GetJob(ctx, single.JobID, false)
	if err != nil || job.TraceContext == nil || *job.TraceContext != want[single.JobID] {
		t.Fatalf("GetJob trace context %+v, %v", job.TraceContext, err)
	}

	w := client.NewWorker(c, client.WorkerOptions{Concurrency: 2})
	w.Handle("traced", "ok", func(context.Context, *client.Delivery) error { return nil })
	w.Handle("traced", "fail", func(context.Context, *client.Delivery) error { return client.Permanent(errors.New("no")) })
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "four jobs processed", func() bool {
		rec.mu.Lock()
		defer rec.mu.Unlock()
		return len(rec.outcomes) == 4
	})
	if err := w.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if len(rec.sends) != 3 || rec.sends[1].Jobs != 2 || rec.sends[0].Queue != "traced" || rec.sends[0].JobType != "ok" {
		t.Fatalf("sends %+v", rec.sends)
	}
	wantEnds := []string{fmt.Sprintf("%d <nil>", single.JobID), "0 <nil>", fmt.Sprintf("%d <nil>", produced.JobID)}
	if fmt.Sprint(rec.ends) != fmt.Sprint(wantEnds) {
		t.Fatalf("ends %v, want %v", rec.ends, wantEnds)
	}
	for id, tc := range want {
		if got := rec.processed[id]; got == nil || *got != tc {
			t.Errorf("job %d processed with trace context %+v, want %+v", id, got, tc)
		}
	}
	if rec.outcomes[batch[1].Result.JobID] != "nack dead_letter" {
		t.Errorf("outcomes %v", rec.outcomes)
	}
}
