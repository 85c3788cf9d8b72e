package integration

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sepp-io/sepp/client"
)

// workflowTOML keeps the workflows' completed jobs, so that a callback
// reads its parents' results.
const workflowTOML = clusterTOML + workflowQueuesTOML

// workflowQueuesTOML declares the workflows' queues, keeping completed
// jobs ten minutes.
const workflowQueuesTOML = `
[[queues]]
name = "wf-plan"
completed_retention_ms = 600000

[[queues]]
name = "wf-render"
completed_retention_ms = 600000

[[queues]]
name = "wf-stitch"
completed_retention_ms = 600000
`

// TestWorkflowSurvivesLeaderKill is the three-step workflow through a
// leader kill, on three real processes: each workflow is a plan job, N
// render jobs after it (fan out) and a stitch job after the N that runs
// whatever they did (fan in) and reads their results. Half the workflows
// are enqueued whole by the producer (one EnqueueBatch); in the other half
// the plan's worker enqueues the renders and the stitch as follow-ups of
// its ack. Producers and workers run while the leader is SIGKILLed
// mid-way, so batches and acks are retried across the failover. Then:
// every stitch exists once and completed once (the queue enqueued exactly
// one per workflow: no callback twice, none never), no render ran before
// its plan completed, no stitch before its renders ended, and each stitch
// read every render's result (none lost for a job reported completed).
func TestWorkflowSurvivesLeaderKill(t *testing.T) {
	t.Parallel()
	requireLong(t)
	const (
		workflows = 40
		fanOut    = 8
	)
	c := startLocalWith(t, workflowTOML)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cl := newClient(ctx, t, c.Addrs())
	waitLeader(ctx, t, cl, c, 15*time.Second, -1)
	// Dependencies wait until the leader has learnt every member's
	// command version (a few seconds after start).
	if err := waitFor(ctx, 30*time.Second, func(ctx context.Context) (bool, error) {
		info, err := cl.ServerInfo(ctx)
		return err == nil && info.Supports("dependencies"), nil
	}); err != nil {
		t.Fatal("the cluster never offered the capability dependencies")
	}

	var (
		mu       sync.Mutex
		stitches = map[int]int{} // workflow -> stitch handler runs that read every result
		bad      []string
		renders  atomic.Int64
	)
	fail := func(format string, args ...any) {
		mu.Lock()
		bad = append(bad, fmt.Sprintf(format, args...))
		mu.Unlock()
	}
	w := client.NewWorker(cl, client.WorkerOptions{WorkerID: "wf", Concurrency: 16, OnError: func(err error) {
		if !errors.Is(err, client.ErrUnavailable) && !errors.Is(err, client.ErrUnknownOutcome) && !errors.Is(err, client.ErrLeaseLost) {
			t.Logf("worker: %v", err)
		}
	}})
	w.Handle("wf-plan", "plan", func(ctx context.Context, d *client.Delivery) error {
		wf := string(d.Job.Payload)
		if !strings.HasPrefix(wf, "follow-") {
			return nil // its renders and stitch were enqueued with it
		}
		for k := range fanOut {
			d.AddFollowUp(client.NewEnqueueRequest("wf-render", "render").
				WithPayload(fmt.Appendf(nil, "%s/%d", wf, k)).WithIdempotencyKey(fmt.Sprintf("%s-render-%d", wf, k)))
		}
		after := make([]int, fanOut)
		for k := range after {
			after[k] = k
		}
		d.AddFollowUp(client.NewEnqueueRequest("wf-stitch", "stitch").WithPayload([]byte(wf)).
			WithIdempotencyKey(wf + "-stitch").WithAfter(after...).WithOnParentFailure(client.ParentFailureRun))
		return nil
	})
	w.Handle("wf-render", "render", func(ctx context.Context, d *client.Delivery) error {
		for _, p := range d.Job.Parents {
			if !p.Ended || p.State != client.StateCompleted {
				fail("render %d ran with parent %+v", d.Ctx.JobID, p)
			}
		}
		renders.Add(1)
		d.SetResult(append([]byte("tile "), d.Job.Payload...))
		return nil
	})
	w.Handle("wf-stitch", "stitch", func(ctx context.Context, d *client.Delivery) error {
		wf := string(d.Job.Payload)
		if len(d.Job.Parents) != fanOut {
			fail("stitch of %s has %d parents", wf, len(d.Job.Parents))
		}
		results, err := cl.ParentResults(ctx, d.Job.Parents)
		if err != nil {
			return err // retried: the job comes back
		}
		seen := map[string]bool{}
		for _, r := range results {
			if !r.Ended || r.State != client.StateCompleted || !r.Kept {
				fail("stitch of %s: parent %+v before or without its result", wf, r)
			}
			seen[string(r.Result)] = true
		}
		for k := range fanOut {
			if !seen[fmt.Sprintf("tile %s/%d", wf, k)] {
				fail("stitch of %s lacks render %d's result (has %d)", wf, k, len(seen))
			}
		}
		n, _ := strconv.Atoi(wf[strings.LastIndexByte(wf, '-')+1:])
		mu.Lock()
		stitches[n]++
		mu.Unlock()
		d.SetResult([]byte("stitched " + wf))
		return nil
	})
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = w.Stop(context.Background()) }()

	// The producer: each workflow in one call, keyed, retried on an
	// unknown outcome (the leader dies under some of them).
	stitchIDs := make([]uint64, workflows)
	produced := make(chan error, 1)
	go func() {
		for n := range workflows {
			name := fmt.Sprintf("batch-%d", n)
			var reqs []*client.EnqueueRequest
			if n%2 == 1 {
				name = fmt.Sprintf("follow-%d", n)
				reqs = append(reqs, client.NewEnqueueRequest("wf-plan", "plan").WithPayload([]byte(name)).WithIdempotencyKey(name+"-plan"))
			} else {
				reqs = append(reqs, client.NewEnqueueRequest("wf-plan", "plan").WithPayload([]byte(name)).WithIdempotencyKey(name+"-plan"))
				after := make([]int, fanOut)
				for k := range fanOut {
					reqs = append(reqs, client.NewEnqueueRequest("wf-render", "render").WithAfter(0).
						WithPayload(fmt.Appendf(nil, "%s/%d", name, k)).WithIdempotencyKey(fmt.Sprintf("%s-render-%d", name, k)))
					after[k] = 1 + k
				}
				reqs = append(reqs, client.NewEnqueueRequest("wf-stitch", "stitch").WithPayload([]byte(name)).
					WithIdempotencyKey(name+"-stitch").WithAfter(after...).WithOnParentFailure(client.ParentFailureRun))
			}
			for {
				res, err := cl.EnqueueBatch(ctx, reqs)
				if err == nil {
					if n%2 == 0 {
						stitchIDs[n] = res[len(res)-1].Result.JobID
					}
					break
				}
				if ctx.Err() != nil || !(errors.Is(err, client.ErrUnavailable) || errors.Is(err, client.ErrUnknownOutcome)) {
					produced <- fmt.Errorf("workflow %d: %w", n, err)
					return
				}
				time.Sleep(100 * time.Millisecond)
			}
			time.Sleep(20 * time.Millisecond)
		}
		produced <- nil
	}()

	// Kill the leader once a third of the renders ran: producers and
	// workers are mid-way.
	leader, err := leaderIndex(ctx, cl, c)
	if err != nil {
		t.Fatal(err)
	}
	if err := waitFor(ctx, 90*time.Second, func(context.Context) (bool, error) {
		return renders.Load() >= workflows*fanOut/3, nil
	}); err != nil {
		t.Fatalf("a third of the renders did not run: %d", renders.Load())
	}
	killed := time.Now()
	if err := c.Kill(leader); err != nil {
		t.Fatal(err)
	}
	report(t, "workflow renders run before the leader kill", renders.Load(), "jobs")
	waitLeader(ctx, t, cl, c, 15*time.Second, leader)
	report(t, "workflow failover election", ms(time.Since(killed)), "ms")
	if err := <-produced; err != nil {
		t.Fatal(err)
	}

	// Every stitch completes.
	if err := waitFor(ctx, 120*time.Second, func(ctx context.Context) (bool, error) {
		q, err := cl.GetQueue(ctx, "wf-stitch", false)
		return err == nil && q.Stats.AckedTotal >= workflows, nil
	}); err != nil {
		q, _ := cl.GetQueue(ctx, "wf-stitch", false)
		t.Fatalf("the stitches did not all complete: %+v", q.Stats)
	}
	_ = w.Stop(ctx)
	report(t, "workflows through a leader kill", ms(time.Since(killed)), "ms after the kill")

	for _, b := range bad {
		t.Error(b)
	}
	for name, want := range map[string]uint64{"wf-plan": workflows, "wf-render": workflows * fanOut, "wf-stitch": workflows} {
		q, err := cl.GetQueue(ctx, name, false)
		if err != nil {
			t.Fatal(err)
		}
		s := q.Stats
		// Exactly once: as many enqueued as workflows ask (no retry, no
		// failover doubled one), all acked, none dead, none left.
		if s.EnqueuedTotal != want || s.AckedTotal != want || s.Ready+s.Scheduled+s.Reserved+s.Blocked+s.Dead != 0 {
			t.Errorf("queue %s: enqueued %d, acked %d, left %+v; want %d enqueued and acked, none left", name, s.EnqueuedTotal, s.AckedTotal, s, want)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	for n := range workflows {
		if stitches[n] < 1 {
			t.Errorf("workflow %d: its stitch never read its renders' results", n)
		}
	}
	for n, id := range stitchIDs {
		if id == 0 {
			continue
		}
		j, err := cl.GetJob(ctx, id, false)
		if err != nil || j.State != client.StateCompleted || string(j.Result) != fmt.Sprintf("stitched batch-%d", n) {
			t.Errorf("workflow %d: stitch %d: %+v, %v", n, id, j, err)
		}
	}
	redelivered := 0
	for _, k := range stitches {
		redelivered += k - 1
	}
	report(t, "workflow stitches run more than once (redelivered after the kill, acked once)", redelivered, "runs")
}
