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

// wfWorkload runs workflows beside the campaign's workload: each a plan,
// wfRenders renders after it and a stitch after the renders that runs
// whatever they did (on_parent_failure run) and reads their results. Even
// workflows are enqueued whole by the producer (keyed, retried across
// failures); odd ones are a plan whose worker enqueues the renders and the
// stitch as follow-ups of its ack, without keys of their own, so that a
// follow-up enqueued by an ack whose lease was lost would be a job too
// many. Its workers check each delivery as they take it; check counts the
// jobs once the queues drained.
type wfWorkload struct {
	w    *workload // its hold pauses these clients too
	c    *client.Client
	stop atomic.Bool
	wg   sync.WaitGroup

	mu sync.Mutex
	// applied: workflows whose enqueue answered OK (their plan's id);
	// maybe: a workflow given up with an unknown outcome.
	applied map[int]uint64
	maybe   map[int]bool
	bad     []string
	stitch  atomic.Int64 // stitch deliveries that read every result
	// unsupported counts calls refused while a member's command versions
	// were unknown to the leader (retried).
	unsupported atomic.Int64
}

const wfRenders = 4

func startWorkflowWorkload(ctx context.Context, t *testing.T, w *workload, addrs []string) *wfWorkload {
	t.Helper()
	wf := &wfWorkload{w: w, c: newClient(ctx, t, addrs), applied: map[int]uint64{}, maybe: map[int]bool{}}
	w.producerWG.Add(1)
	go func() {
		defer w.producerWG.Done()
		wf.produce(ctx)
	}()
	for k := range 2 {
		wf.wg.Add(1)
		go func() {
			defer wf.wg.Done()
			wf.work(ctx, fmt.Sprintf("wf-worker-%d", k))
		}()
	}
	return wf
}

func (wf *wfWorkload) problem(format string, args ...any) {
	wf.mu.Lock()
	defer wf.mu.Unlock()
	wf.bad = append(wf.bad, fmt.Sprintf(format, args...))
}

func wfName(n int) string { return fmt.Sprintf("nwf-%d", n) }

func (wf *wfWorkload) produce(ctx context.Context) {
	for n := 0; ; n++ {
		if wf.w.held(ctx, &wf.w.stopProducers) {
			return
		}
		name := wfName(n)
		reqs := []*client.EnqueueRequest{client.NewEnqueueRequest("wf-plan", "plan").WithPayload([]byte(name)).WithIdempotencyKey(name + "-plan")}
		if n%2 == 0 {
			after := make([]int, wfRenders)
			for k := range wfRenders {
				reqs = append(reqs, client.NewEnqueueRequest("wf-render", "render").WithAfter(0).
					WithPayload(fmt.Appendf(nil, "%s/%d", name, k)).WithIdempotencyKey(fmt.Sprintf("%s-render-%d", name, k)))
				after[k] = 1 + k
			}
			reqs = append(reqs, client.NewEnqueueRequest("wf-stitch", "stitch").WithPayload([]byte(name)).
				WithIdempotencyKey(name+"-stitch").WithAfter(after...).WithOnParentFailure(client.ParentFailureRun))
		}
		uncertain := false
		for {
			res, err := wf.c.EnqueueBatch(ctx, reqs)
			if err == nil {
				wf.mu.Lock()
				wf.applied[n] = res[0].Result.JobID
				wf.mu.Unlock()
				break
			}
			// A member wiped and joined again has not told the leader its
			// command versions yet: dependencies are refused until it has
			// (ErrUnsupported, nothing applied), as any gated feature is.
			if errors.Is(err, client.ErrUnknownOutcome) || errors.Is(err, client.ErrUnavailable) || errors.Is(err, client.ErrUnsupported) {
				uncertain = uncertain || errors.Is(err, client.ErrUnknownOutcome)
				if errors.Is(err, client.ErrUnsupported) {
					wf.unsupported.Add(1)
				}
				if !wf.w.held(ctx, &wf.w.stopProducers) {
					pause(ctx, 100*time.Millisecond)
					continue // the keys make the retry safe
				}
			}
			if uncertain || errors.Is(err, client.ErrUnknownOutcome) {
				wf.mu.Lock()
				wf.maybe[n] = true
				wf.mu.Unlock()
			}
			if ctx.Err() != nil || wf.w.stopProducers.Load() {
				return
			}
			wf.problem("workflow %s refused: %v", name, err)
			break
		}
		pause(ctx, 100*time.Millisecond)
	}
}

func (wf *wfWorkload) work(ctx context.Context, workerID string) {
	for {
		if wf.w.held(ctx, &wf.stop) {
			return
		}
		took := 0
		for _, q := range []string{"wf-plan", "wf-render", "wf-stitch"} {
			ds, err := wf.c.Reserve(ctx, q, client.ReserveOptions{WorkerID: workerID, Max: 4, Lease: 5 * time.Second})
			if err != nil {
				continue
			}
			took += len(ds)
			for _, d := range ds {
				wf.handle(ctx, d)
			}
		}
		if took == 0 {
			pause(ctx, 50*time.Millisecond)
		}
	}
}

func (wf *wfWorkload) handle(ctx context.Context, d client.Delivery) {
	switch d.Job.Type {
	case "plan":
		name := string(d.Job.Payload)
		n, _ := strconv.Atoi(strings.TrimPrefix(name, "nwf-"))
		if n%2 == 0 {
			_ = wf.c.Ack(ctx, d.Ctx) // its renders and stitch came with it
			return
		}
		// The renders wait for nothing of the call (their plan is the
		// job acked, which completes with them); the stitch for the four.
		var fus []*client.EnqueueRequest
		after := make([]int, wfRenders)
		for k := range wfRenders {
			fus = append(fus, client.NewEnqueueRequest("wf-render", "render").WithPayload(fmt.Appendf(nil, "%s/%d", name, k)))
			after[k] = k
		}
		fus = append(fus, client.NewEnqueueRequest("wf-stitch", "stitch").WithPayload([]byte(name)).
			WithAfter(after...).WithOnParentFailure(client.ParentFailureRun))
		for range 20 { // within the lease: a refusal applied nothing
			if _, err := wf.c.AckWithFollowUps(ctx, d.Ctx, nil, fus); !errors.Is(err, client.ErrUnsupported) {
				return
			}
			wf.unsupported.Add(1)
			pause(ctx, 100*time.Millisecond)
		}
	case "render":
		for _, p := range d.Job.Parents {
			if !p.Ended || p.State != client.StateCompleted {
				wf.problem("render %d delivered while its parent %+v had not completed", d.Ctx.JobID, p)
			}
		}
		_ = wf.c.AckWithResult(ctx, d.Ctx, append([]byte("tile "), d.Job.Payload...))
	case "stitch":
		name := string(d.Job.Payload)
		if len(d.Job.Parents) != wfRenders {
			wf.problem("stitch of %s has %d parents", name, len(d.Job.Parents))
		}
		for _, p := range d.Job.Parents {
			if !p.Ended {
				wf.problem("stitch of %s delivered while its parent %+v runs", name, p)
			}
		}
		results, err := wf.c.ParentResults(ctx, d.Job.Parents)
		if err != nil {
			return // back when its lease expires
		}
		for _, r := range results {
			if r.State == client.StateCompleted && (!r.Kept || !strings.HasPrefix(string(r.Result), "tile "+name+"/")) {
				wf.problem("stitch of %s: render %d reported completed, its result %q kept %v", name, r.JobID, r.Result, r.Kept)
			}
		}
		wf.stitch.Add(1)
		_ = wf.c.AckWithResult(ctx, d.Ctx, []byte("stitched "+name))
	}
}

// check drains the workflows' queues, stops the workers and holds the
// counts to the workflows: one stitch and wfRenders renders per workflow
// enqueued whole, and per follow-up workflow whose plan completed (its
// ack enqueued them); none more (a retry or a stale lease), none fewer
// (a callback never enqueued).
func (wf *wfWorkload) check(ctx context.Context, t *testing.T, insp *client.Client, drainFor time.Duration) (problems []string) {
	t.Helper()
	defer func() {
		wf.stop.Store(true)
		wf.wg.Wait()
	}()
	err := waitFor(ctx, drainFor+lastAttemptHold, func(ctx context.Context) (bool, error) {
		for _, name := range []string{"wf-plan", "wf-render", "wf-stitch"} {
			q, err := insp.GetQueue(ctx, name, false)
			if err != nil {
				return false, err
			}
			if s := q.Stats; s.Ready+s.Reserved+s.Scheduled+s.Blocked != 0 {
				return false, fmt.Errorf("%s: %d ready, %d reserved, %d scheduled, %d blocked", name, s.Ready, s.Reserved, s.Scheduled, s.Blocked)
			}
		}
		return true, nil
	})
	if err != nil {
		return []string{fmt.Sprintf("workflows did not drain: %v", err)}
	}
	wf.mu.Lock()
	defer wf.mu.Unlock()
	problems = append(problems, wf.bad...)
	// Each workflow's stitch and renders: sure for those enqueued whole
	// and for follow-up ones whose plan completed; uncertain for the
	// others given up with an unknown outcome.
	sure, unsure := 0, 0
	for n, plan := range wf.applied {
		if n%2 == 0 {
			sure++
			continue
		}
		j, err := insp.GetJob(ctx, plan, false)
		switch {
		case err == nil && j.State == client.StateCompleted:
			sure++
		case errors.Is(err, client.ErrNotFound), err == nil && j.State == client.StateDead:
			// died before its ack: no follow-ups
		default:
			problems = append(problems, fmt.Sprintf("workflow %s: plan %d: %+v, %v", wfName(n), plan, j, err))
		}
	}
	for range wf.maybe {
		unsure++
	}
	stitch, err := insp.GetQueue(ctx, "wf-stitch", false)
	if err != nil {
		return append(problems, err.Error())
	}
	render, err := insp.GetQueue(ctx, "wf-render", false)
	if err != nil {
		return append(problems, err.Error())
	}
	if got := int(stitch.Stats.EnqueuedTotal); got < sure || got > sure+unsure {
		problems = append(problems, fmt.Sprintf("%d stitches enqueued for %d workflows (%d more uncertain): a callback twice or never", got, sure, unsure))
	}
	if got := int(render.Stats.EnqueuedTotal); got < sure*wfRenders || got > (sure+unsure)*wfRenders {
		problems = append(problems, fmt.Sprintf("%d renders enqueued for %d workflows of %d (%d more uncertain)", got, sure, wfRenders, unsure))
	}
	report(t, "nemesis workflows", fmt.Sprintf("%d applied (%d uncertain), %d stitches enqueued for %d expected, %d read every result, %d calls refused while a member's versions were unknown",
		len(wf.applied), unsure, stitch.Stats.EnqueuedTotal, sure, wf.stitch.Load(), wf.unsupported.Load()), "")
	return problems
}
