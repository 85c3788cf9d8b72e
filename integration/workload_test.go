package integration

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sepp-io/sepp/client"
	"github.com/sepp-io/sepp/integration/history"
)

// The workload: producers enqueue uniquely tagged jobs at a steady pace,
// workers reserve them and ack most, nack some, reject a few into the
// dead-letter store and abandon a few so their leases expire. Every call
// is recorded. It runs until told to stop or until its job budget is spent.

const (
	workQueue       = "faults"
	workMaxAttempts = 3
	workLease       = 1500 * time.Millisecond
	workReserveWait = 300 * time.Millisecond
	// producerPace spaces one producer's enqueues: three producers make
	// ~300 jobs/s, enough to see every gap and light enough for 2 cores.
	producerPace = 10 * time.Millisecond
)

// workloadOptions size a workload.
type workloadOptions struct {
	Addrs     []string
	Producers int
	Workers   int
	MaxJobs   int // budget of distinct jobs over all producers
	Backlog   int // acknowledged jobs waiting before the workers start
}

type workload struct {
	opts    workloadOptions
	rec     *history.Recorder
	clients []*client.Client

	produced      atomic.Int64 // distinct keys sent
	stopProducers atomic.Bool
	stopWorkers   atomic.Bool
	// hold pauses producers and workers between calls while set (the
	// nemesis quiets the cluster to compare the replicas' digests).
	hold       atomic.Bool
	producerWG sync.WaitGroup
	workerWG   sync.WaitGroup
}

func newClient(ctx context.Context, t *testing.T, addrs []string) *client.Client {
	t.Helper()
	c, err := client.New(ctx, addrs,
		client.WithRetryTimeout(10*time.Second),
		// A paused or cut-off node holds connections open: give up on it
		// quickly and try another.
		client.WithAttemptTimeout(time.Second),
		client.WithBackoff(10*time.Millisecond, 200*time.Millisecond),
	)
	if err != nil {
		t.Fatalf("client: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// startWorkload starts producers and workers, each with its own client (as
// separate processes would have).
func startWorkload(ctx context.Context, t *testing.T, opts workloadOptions) *workload {
	t.Helper()
	w := &workload{opts: opts, rec: &history.Recorder{}}
	for i := 0; i < opts.Producers; i++ {
		c := newClient(ctx, t, opts.Addrs)
		w.clients = append(w.clients, c)
		w.producerWG.Add(1)
		go func() {
			defer w.producerWG.Done()
			w.produce(ctx, i, c)
		}()
	}
	// Workers start once a backlog of mixed priorities has built up, so
	// the reserves have Ready jobs to choose among and the priority/FIFO
	// check has pairs to compare.
	if err := waitFor(ctx, 20*time.Second, func(context.Context) (bool, error) {
		return w.okCount(history.KindEnqueue, time.Time{}) >= opts.Backlog, nil
	}); err != nil {
		t.Errorf("backlog of %d jobs not reached: %v", opts.Backlog, err)
	}
	for i := 0; i < opts.Workers; i++ {
		c := newClient(ctx, t, opts.Addrs)
		w.clients = append(w.clients, c)
		w.workerWG.Add(1)
		go func() {
			defer w.workerWG.Done()
			w.work(ctx, 100+i, c)
		}()
	}
	return w
}

// outcomeOf classifies a client error. Only answers that guarantee nothing
// applied count as Failed; anything else that is not a success may have
// applied.
func outcomeOf(err error) history.Outcome {
	switch {
	case err == nil:
		return history.OK
	case errors.Is(err, client.ErrUnknownOutcome):
		return history.Unknown
	case errors.Is(err, client.ErrLeaseLost), errors.Is(err, client.ErrNotFound),
		errors.Is(err, client.ErrWrongState), errors.Is(err, client.ErrInvalidArgument),
		errors.Is(err, client.ErrResourceExhausted), errors.Is(err, client.ErrUnavailable):
		return history.Failed
	default:
		// Context ends and unclassified errors: the request may have been
		// in flight.
		return history.Unknown
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func (w *workload) produce(ctx context.Context, id int, c *client.Client) {
	for seq := 0; !w.stopProducers.Load() && ctx.Err() == nil; seq++ {
		if w.held(ctx, &w.stopProducers) {
			return
		}
		if w.produced.Add(1) > int64(w.opts.MaxJobs) {
			return
		}
		key := fmt.Sprintf("p%d-%d", id, seq)
		prio := client.Priority((seq % 3) * 4) // 0, 4, 8: order among priorities is checked too
		// An unknown outcome is retried with the same key, as an
		// application would after a failover; the job must exist once.
		for try := 0; try < 3 && ctx.Err() == nil; try++ {
			req := client.NewEnqueueRequest(workQueue, "work").WithPayload([]byte(key)).
				WithPriority(prio).WithMaxAttempts(workMaxAttempts).WithIdempotencyKey(key)
			op := history.Op{Kind: history.KindEnqueue, Client: id, Key: key, Priority: uint32(prio), MaxAttempts: workMaxAttempts, Start: time.Now()}
			res, err := c.Enqueue(ctx, req)
			op.End, op.Outcome, op.Err = time.Now(), outcomeOf(err), errString(err)
			op.JobID, op.Duplicate = res.JobID, res.Duplicate
			w.rec.Add(op)
			if op.Outcome != history.Unknown {
				break
			}
		}
		pause(ctx, producerPace)
	}
}

// fate decides what a worker does with a delivery, from the job id and
// attempt so that a retried job may fare differently.
type fate uint8

const (
	fateAck fate = iota
	fateRetry
	fateReject
	fateAbandon
)

func fateOf(jobID uint64, attempt uint32) fate {
	h := fnv.New32a()
	fmt.Fprintf(h, "%d/%d", jobID, attempt)
	switch n := h.Sum32() % 100; {
	case n < 4:
		return fateAbandon
	case n < 8:
		return fateReject
	case n < 20:
		return fateRetry
	default:
		return fateAck
	}
}

func (w *workload) work(ctx context.Context, id int, c *client.Client) {
	workerID := fmt.Sprintf("worker-%d", id)
	for !w.stopWorkers.Load() && ctx.Err() == nil {
		if w.held(ctx, &w.stopWorkers) {
			return
		}
		op := history.Op{Kind: history.KindReserve, Client: id, Queue: workQueue, Start: time.Now()}
		ds, err := c.Reserve(ctx, workQueue, client.ReserveOptions{WorkerID: workerID, Max: 4, Lease: workLease, Wait: workReserveWait})
		op.End, op.Outcome, op.Err = time.Now(), outcomeOf(err), errString(err)
		for _, d := range ds {
			op.Deliveries = append(op.Deliveries, history.Delivery{
				JobID: d.Ctx.JobID, Token: d.Ctx.LeaseToken, Attempt: d.Ctx.Attempt, MaxAttempts: d.Ctx.MaxAttempts,
				Deadline: d.Ctx.LeaseDeadline, Priority: uint32(d.Job.Priority), Key: string(d.Job.Payload),
			})
		}
		w.rec.Add(op)
		if err == nil && op.End.Sub(op.Start) > workReserveWait+client.DefaultLeaderProbe {
			// The client retries a reserve after an attempt that may have
			// applied (a timeout, an abandoned probe) and reports only the
			// last one's deliveries: the request id replays the first
			// attempt's only while their leases live, so a call that
			// outlived them hands back others, and what the first attempt
			// leased was never seen (an attempt spent). The client does not
			// say it retried; a call this long may have. Record the
			// possibility, so the checker allows the attempt gap.
			w.rec.Add(history.Op{Kind: history.KindReserve, Client: id, Queue: workQueue, Start: op.Start, End: op.End, Outcome: history.Unknown,
				Err: "the call outlasted one attempt: an earlier attempt may have leased jobs it did not return"})
		}
		if err != nil {
			pause(ctx, 50*time.Millisecond)
			continue
		}
		for _, d := range ds {
			w.answer(ctx, id, c, d)
		}
	}
}

func (w *workload) answer(ctx context.Context, id int, c *client.Client, d client.Delivery) {
	f := fateOf(d.Ctx.JobID, d.Ctx.Attempt)
	if f == fateAbandon {
		return // the lease expires; the job comes back with the next attempt
	}
	op := history.Op{Client: id, JobID: d.Ctx.JobID, Token: d.Ctx.LeaseToken, Attempt: d.Ctx.Attempt, Start: time.Now()}
	var err error
	switch f {
	case fateAck:
		op.Kind = history.KindAck
		err = c.Ack(ctx, d.Ctx)
	case fateRetry, fateReject:
		op.Kind = history.KindNack
		dir := client.DefaultRetry()
		if f == fateReject {
			dir, op.DeadLetter = client.DeadLetter(), true
		}
		op.DeadLettered, err = c.Nack(ctx, d.Ctx, dir, "integration: planned failure")
	}
	op.End, op.Outcome, op.Err = time.Now(), outcomeOf(err), errString(err)
	w.rec.Add(op)
}

// held waits while w.hold is set and reports whether the loop should end
// (stop set or ctx done) instead of making its next call.
func (w *workload) held(ctx context.Context, stop *atomic.Bool) bool {
	for w.hold.Load() && !stop.Load() && ctx.Err() == nil {
		pause(ctx, 10*time.Millisecond)
	}
	return stop.Load() || ctx.Err() != nil
}

// lastAttemptHold is how long a job abandoned on its last attempt may stay
// Reserved past its lease: a reserve's request id outlives its leases by
// limits.idempotency_window_ms (2 minutes by default, which the workload's
// cluster keeps), and until it is forgotten the lapsed last attempt is held,
// not dead-lettered, in case the worker never saw it
// (docs/processing-and-leases.md). A job whose first delivery was lost to a
// fault reaches its last attempt during the drain as often as not.
const lastAttemptHold = workLease + 2*time.Minute

// stop ends the producers, lets the workers drain the queue (until it has
// no live job or the deadline passes: drainFor plus lastAttemptHold), then
// ends the workers.
func (w *workload) stop(ctx context.Context, t *testing.T, c *client.Client, drainFor time.Duration) {
	t.Helper()
	w.stopProducers.Store(true)
	w.producerWG.Wait()
	err := waitFor(ctx, drainFor+lastAttemptHold, func(ctx context.Context) (bool, error) {
		qs, err := c.ListQueues(ctx, false)
		if err != nil {
			return false, err
		}
		for _, q := range qs {
			if q.Name == workQueue {
				return q.Ready+q.Reserved+q.Scheduled == 0, fmt.Errorf("%d ready, %d reserved, %d scheduled", q.Ready, q.Reserved, q.Scheduled)
			}
		}
		return false, errors.New("queue not listed")
	})
	w.stopWorkers.Store(true)
	w.workerWG.Wait()
	if err != nil {
		t.Errorf("queue did not drain: %v", err)
	}
}

// okCount counts successful calls of kind that ended after since.
func (w *workload) okCount(kind history.Kind, since time.Time) int {
	n := 0
	for _, op := range w.rec.Ops() {
		if op.Kind == kind && op.Outcome == history.OK && op.End.After(since) {
			n++
		}
	}
	return n
}

// readFinal reads the jobs still live and the retained dead letters from
// the leader (consistent reads).
func readFinal(ctx context.Context, t *testing.T, c *client.Client) history.Final {
	t.Helper()
	f := history.Final{Live: map[uint64]history.LiveState{}, Dead: map[uint64]history.DeadRecord{}}
	states := map[client.JobState]history.LiveState{client.StateReady: history.LiveReady, client.StateReserved: history.LiveReserved, client.StateScheduled: history.LiveScheduled}
	for st, live := range states {
		var after uint64
		for {
			jobs, next, err := c.ListJobs(ctx, workQueue, client.ListJobsOptions{State: st, AfterJobID: after, Limit: 1000})
			if err != nil {
				t.Fatalf("final read: list %s jobs: %v", st, err)
			}
			for _, j := range jobs {
				f.Live[j.ID] = live
			}
			if next == 0 {
				break
			}
			after = next
		}
	}
	var after uint64
	for {
		recs, next, err := c.ListDeadLetters(ctx, client.ListDeadLettersOptions{Queue: workQueue, AfterJobID: after, Limit: 1000})
		if err != nil {
			t.Fatalf("final read: list dead letters: %v", err)
		}
		for _, r := range recs {
			f.Dead[r.JobID()] = history.DeadRecord{FinalAttempt: r.FinalAttempt, Cause: r.Cause.String()}
		}
		if next == 0 {
			break
		}
		after = next
	}
	f.At = time.Now()
	return f
}

// waitFor polls cond every 25ms until it reports true or timeout passes;
// the error names cond's last complaint. A complaint of a call the timeout
// cut short (its DeadlineExceeded) does not replace the one before it: the
// hour's soak reported "status DeadlineExceeded" of whichever node the
// deadline caught, hiding that the replicas differed all along.
func waitFor(ctx context.Context, timeout time.Duration, cond func(ctx context.Context) (bool, error)) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var last error
	for {
		ok, err := cond(ctx)
		if ok {
			return nil
		}
		if err != nil && (last == nil || ctx.Err() == nil) {
			last = err
		}
		select {
		case <-ctx.Done():
			if last == nil {
				last = ctx.Err()
			}
			return fmt.Errorf("not within %s: %w", timeout, last)
		case <-time.After(25 * time.Millisecond):
		}
	}
}

// pause waits d unless ctx ends first (pacing, not waiting for a condition).
func pause(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// checkHistory runs the history checker and reports its findings.
func checkHistory(t *testing.T, name string, w *workload, final history.Final) history.Report {
	t.Helper()
	r := history.Check(w.rec.Ops(), final)
	t.Logf("%s: %d calls, %d jobs acknowledged (%d enqueue calls unknown, %d keys retried), %d deliveries of %d jobs, %d acked, %d dead-lettered, %d reserves unknown, %d job pairs compared for priority/FIFO",
		name, r.Calls, r.EnqueueOK, r.EnqueueUnknown, r.EnqueueRetried, r.Deliveries, r.DeliveredJobs, r.Acked, r.DeadLettered, r.UnknownReserves, r.OrderPairs)
	if err := r.Err(); err != nil {
		t.Error(err)
	}
	if len(r.Unresolved) > 0 {
		t.Errorf("%d acknowledged jobs still live after the drain, e.g. %v", len(r.Unresolved), r.Unresolved[:min(5, len(r.Unresolved))])
	}
	return r
}

// stopUnlessStopped, deferred by a test that stops the workload itself on
// success, ends its goroutines when a t.Fatal returns early instead.
func (w *workload) stopUnlessStopped(cancel context.CancelFunc, stopped *bool) {
	if *stopped {
		return
	}
	w.stopProducers.Store(true)
	w.stopWorkers.Store(true)
	cancel()
	w.producerWG.Wait()
	w.workerWG.Wait()
}

// awaitGoing fails t unless the workload's workers acknowledge 30 jobs
// within 20 s, so faults start against a cluster that is really working.
func (w *workload) awaitGoing(ctx context.Context, t *testing.T) {
	t.Helper()
	begun := time.Now()
	if err := waitFor(ctx, 20*time.Second, func(context.Context) (bool, error) {
		return w.okCount(history.KindAck, begun) >= 30, fmt.Errorf("%d acks", w.okCount(history.KindAck, begun))
	}); err != nil {
		t.Fatalf("workload did not get going: %v", err)
	}
}
