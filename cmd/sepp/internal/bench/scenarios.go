package bench

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/sepp-io/sepp/client"
	seppv1 "github.com/sepp-io/sepp/proto/sepp/v1"
)

// produce: N enqueues with a window of outstanding requests through the
// client's batching Producer.
func (r *runner) produce(ctx context.Context) error {
	queue := queueName("produce")
	n := r.opts.Produce
	if err := r.awaitKeyRoom(ctx, n); err != nil {
		return err
	}
	t0 := r.sampleTimings(ctx)
	cpu0 := r.sampleCPU()
	elapsed, err := r.enqueueWindowed(ctx, "produce", queue, 0, n)
	cpu1 := r.sampleCPU()
	t1 := r.sampleTimings(ctx)
	if err != nil {
		return err
	}
	r.add("produce_jobs", float64(n), "jobs")
	r.add("produce_rate", float64(n)/elapsed.Seconds(), "jobs/s")
	r.addCPUPerJob("produce", cpu0, cpu1, int64(n))
	r.addTimingFigures("produce", t0, t1, int64(n), seppv1.QueueService_EnqueueBatch_FullMethodName)
	r.produced = queue
	return nil
}

// enqueueWindowed enqueues n jobs into queue, numbered from first, through
// the client's batching Producer with opts.Window enqueues outstanding,
// and returns the time from the first enqueue to the last result. label
// names the progress lines. Any failed enqueue fails it.
func (r *runner) enqueueWindowed(ctx context.Context, label, queue string, first uint64, n int) (time.Duration, error) {
	p := r.cli.NewProducer(r.producerOptions())
	var done, failed atomic.Int64
	var firstErr atomic.Value
	window := newEnqueueWindow(r.opts.Window, func(_ client.EnqueueResult, err error) {
		if err != nil {
			failed.Add(1)
			firstErr.CompareAndSwap(nil, err)
			return
		}
		done.Add(1)
	})
	stop := r.ticker(ctx, label, &done, int64(n))
	start := time.Now()
	for i := 0; i < n && window.acquire(ctx); i++ {
		window.add(p.EnqueueAsync(ctx, client.NewEnqueueRequest(queue, "bench").WithPayload(r.payload(first+uint64(i), time.Now()))))
	}
	window.wait()
	elapsed := time.Since(start)
	stop()
	if err := ctx.Err(); err != nil {
		return elapsed, err
	}
	if err := p.Close(ctx); err != nil {
		return elapsed, err
	}
	if f := failed.Load(); f > 0 {
		return elapsed, fmt.Errorf("%d of %d enqueues failed, first: %v", f, n, firstErr.Load())
	}
	return elapsed, nil
}

// latency: enqueues one at a time, each waiting for its commit.
func (r *runner) latency(ctx context.Context) error {
	queue := queueName("latency")
	err := r.timeSyncEnqueues(ctx, "sync enqueues", "sync_enqueue", []string{seppv1.QueueService_Enqueue_FullMethodName}, func(i int) error {
		req := client.NewEnqueueRequest(queue, "bench").WithPayload(r.payload(uint64(i), time.Now()))
		_, err := r.cli.Enqueue(ctx, req)
		return err
	})
	if err != nil {
		return err
	}
	if err := r.followerLatency(ctx, queue); err != nil {
		return err
	}
	if err := r.idleLatency(ctx, queue); err != nil {
		return err
	}
	if _, err := r.drainQueue(ctx, queue); err != nil {
		return err
	}
	return nil
}

// timeSyncEnqueues runs enqueue opts.Latency times, one after the other,
// and reports the latency percentiles as <figure>_p50, _p99 and _p999, and
// the timings of calls (full gRPC method names) made through the bench's
// client.
func (r *runner) timeSyncEnqueues(ctx context.Context, label, figure string, calls []string, enqueue func(i int) error) error {
	lat := make([]time.Duration, 0, r.opts.Latency)
	var count atomic.Int64
	stop := r.ticker(ctx, label, &count, int64(r.opts.Latency))
	defer stop()
	before := r.sampleTimings(ctx)
	for i := 0; i < r.opts.Latency; i++ {
		t0 := time.Now()
		if err := enqueue(i); err != nil {
			return err
		}
		lat = append(lat, time.Since(t0))
		count.Add(1)
	}
	sortDurations(lat)
	r.add(figure+"_p50", ms(percentile(lat, 0.50)), "ms")
	r.add(figure+"_p99", ms(percentile(lat, 0.99)), "ms")
	r.add(figure+"_p999", ms(percentile(lat, 0.999)), "ms")
	r.addFsyncRatio(figure+"_p50", "disk_fsync_p50")
	r.addFsyncRatio(figure+"_p99", "disk_fsync_p99")
	// What the disk and the commit took of those milliseconds (timings.go).
	r.addTimingFigures(figure, before, r.sampleTimings(ctx), int64(r.opts.Latency), calls...)
	return nil
}

// idleEnqueues is how many sync enqueues idleLatency times.
const idleEnqueues = 100

// idleLatency times sync enqueues IdleGap apart, as a producer that
// enqueues now and then makes them: each finds the cluster, and every
// node's disk, idle, and on a VM that costs (see diskFigures). The
// back-to-back figures above are the best case.
func (r *runner) idleLatency(ctx context.Context, queue string) error {
	if r.opts.IdleGap <= 0 {
		return nil
	}
	r.progress(fmt.Sprintf("%d sync enqueues %v apart", idleEnqueues, r.opts.IdleGap))
	lat := make([]time.Duration, 0, idleEnqueues)
	for i := range idleEnqueues {
		if i > 0 {
			select {
			case <-time.After(r.opts.IdleGap): // the idle time being measured
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		t0 := time.Now()
		if _, err := r.cli.Enqueue(ctx, client.NewEnqueueRequest(queue, "bench").WithPayload(r.payload(uint64(i), t0))); err != nil {
			return err
		}
		lat = append(lat, time.Since(t0))
	}
	sortDurations(lat)
	r.add("sync_enqueue_after_idle_p50", ms(percentile(lat, 0.50)), "ms")
	r.add("sync_enqueue_after_idle_p90", ms(percentile(lat, 0.90)), "ms")
	r.addFsyncRatio("sync_enqueue_after_idle_p50", "disk_fsync_after_idle_p50")
	return nil
}

// followerLatency times sync enqueues sent to a follower, which forwards
// them to the leader (server.forward_to_leader): what a client pinned to one
// node, or behind a load balancer, sees. A plain gRPC stub, not the Go
// client, which would move to the leader after the first answer.
func (r *runner) followerLatency(ctx context.Context, queue string) error {
	st, err := r.cli.ClusterStatus(ctx)
	if err != nil {
		return err
	}
	addr := ""
	for _, m := range st.Members {
		if !m.Leader && m.Node.GRPCAddr != "" {
			addr = m.Node.GRPCAddr
			break
		}
	}
	if addr == "" {
		r.progress("no follower: sync enqueue latency through a follower skipped")
		return nil
	}
	cc, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return err
	}
	defer cc.Close()
	qc := seppv1.NewQueueServiceClient(cc)
	// Its calls are not the bench client's, and both nodes time them: no
	// call figures.
	return r.timeSyncEnqueues(ctx, "sync enqueues through follower "+addr, "sync_enqueue_follower", nil, func(i int) error {
		req := &seppv1.EnqueueRequest{Queue: queue, JobType: "bench", Payload: r.payload(uint64(r.opts.Latency+i), time.Now())}
		if _, err := qc.Enqueue(ctx, req); err != nil {
			return fmt.Errorf("enqueue through follower %s: %w", addr, err)
		}
		return nil
	})
}

// consume: reserve in batches and ack each job with a confirmed ack until
// the queue is empty. It consumes what produce left, or fills a queue first.
func (r *runner) consume(ctx context.Context) error {
	queue := r.produced
	r.produced = ""
	total := r.opts.Produce
	if queue == "" {
		queue = queueName("consume")
		r.progress(fmt.Sprintf("filling %s with %d jobs", queue, total))
		if err := r.fill(ctx, queue, total, r.opts.PayloadBytes); err != nil {
			return err
		}
	}
	t0 := r.sampleTimings(ctx)
	cpu0 := r.sampleCPU()
	acked, elapsed, err := r.reserveAndAck(ctx, "consume", queue, int64(total), false)
	cpu1 := r.sampleCPU()
	t1 := r.sampleTimings(ctx)
	if err != nil {
		return err
	}
	r.add("consume_jobs", float64(acked), "jobs")
	r.add("consume_rate", float64(acked)/elapsed.Seconds(), "jobs/s")
	r.addCPUPerJob("consume", cpu0, cpu1, acked)
	r.addTimingFigures("consume", t0, t1, acked, seppv1.QueueService_Reserve_FullMethodName, seppv1.QueueService_AckBatch_FullMethodName)
	return nil
}

// reserveAndAck runs opts.Consumers loops that reserve opts.ConsumeBatch
// jobs at a time from queue and ack each batch behind the next reserve
// (every ack confirmed), until the queue is empty or, with exactly set,
// until exactly total jobs were reserved: the head of a queue that holds
// more. total also scales the progress lines, which label names. It
// returns the jobs acked and the time it took.
func (r *runner) reserveAndAck(ctx context.Context, label, queue string, total int64, exactly bool) (int64, time.Duration, error) {
	var acked atomic.Int64
	// left is how many jobs may still be reserved; a loop claims its
	// batch from it before reserving, so the loops together take no more.
	var left atomic.Int64
	left.Store(math.MaxInt64)
	if exactly {
		left.Store(total)
	}
	claim := func() int64 {
		for {
			l := left.Load()
			c := min(l, int64(max(r.opts.ConsumeBatch, 1)))
			if c <= 0 || left.CompareAndSwap(l, l-c) {
				return c
			}
		}
	}
	stop := r.ticker(ctx, label, &acked, total)
	start := time.Now()
	var wg sync.WaitGroup
	errc := make(chan error, 2*max(r.opts.Consumers, 1)) // a reserve and an ack error each
	for w := 0; w < max(r.opts.Consumers, 1); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			acks := r.newAckBehind()
			defer acks.wait()
			for !acks.failed.Load() {
				want := claim()
				if want <= 0 {
					return
				}
				ds, err := r.cli.Reserve(ctx, queue, client.ReserveOptions{WorkerID: fmt.Sprintf("bench-%d", w), Max: int(want), Lease: time.Minute})
				if err != nil {
					errc <- err
					return
				}
				left.Add(want - int64(len(ds))) // what the queue did not have
				if len(ds) == 0 {
					return
				}
				acks.ack(ctx, ds, func(n int) { acked.Add(int64(n)) }, func(err error) { errc <- err })
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	stop()
	close(errc)
	if err := <-errc; err != nil {
		return acked.Load(), elapsed, err
	}
	return acked.Load(), elapsed, nil
}

// fill enqueues n jobs of payloadBytes into queue, numbered from 0, as fast
// as the client's Producer takes them (4096 outstanding).
func (r *runner) fill(ctx context.Context, queue string, n, payloadBytes int) error {
	if err := r.awaitKeyRoom(ctx, n); err != nil {
		return err
	}
	p := r.cli.NewProducer(r.producerOptions())
	var done atomic.Int64
	stop := r.ticker(ctx, "filling "+queue, &done, int64(n))
	defer stop()
	pend := make([]*client.PendingEnqueue, 0, 4096)
	flush := func() error {
		for _, pe := range pend {
			if _, err := pe.Result(); err != nil {
				return err
			}
		}
		done.Add(int64(len(pend)))
		pend = pend[:0]
		return nil
	}
	for i := 0; i < n; i++ {
		pend = append(pend, p.EnqueueAsync(ctx, client.NewEnqueueRequest(queue, "bench").WithPayload(r.payloadOf(payloadBytes, uint64(i), time.Now()))))
		if len(pend) == cap(pend) {
			if err := flush(); err != nil {
				return err
			}
		}
	}
	if err := flush(); err != nil {
		return err
	}
	return p.Close(ctx)
}

// mixed: producers and workers at once for a fixed time, then end-to-end
// latency at a fixed offered rate.
func (r *runner) mixed(ctx context.Context) error {
	queue := queueName("mixed")
	if _, err := r.mixedOn(ctx, "mixed", queue); err != nil {
		return err
	}
	if _, err := r.drainQueue(ctx, queue); err != nil {
		return err
	}
	return r.endToEnd(ctx)
}

// mixedRun is what a mixed run did: its completed jobs per second, and
// the jobs it enqueued and acked.
type mixedRun struct {
	completed  float64
	enq, acked int64
}

// mixedOn runs producers and workers at once on queue for the mixed
// duration and reports its figures under prefix. The workers take the
// queue's head, so on a queue with a backlog they take from it; the
// queue is left as the run leaves it.
func (r *runner) mixedOn(ctx context.Context, prefix, queue string) (mixedRun, error) {
	runCtx, cancel := context.WithTimeout(ctx, r.opts.MixedDuration)
	defer cancel()
	t0 := r.sampleTimings(ctx)
	cpu0 := r.sampleCPU()
	load := r.startMixedLoad(ctx, runCtx, prefix, queue)
	<-runCtx.Done()
	elapsed := time.Since(load.start)
	cpu1 := r.sampleCPU()
	t1 := r.sampleTimings(ctx)
	err := load.wait()
	run := mixedRun{completed: float64(load.acked.Load()) / elapsed.Seconds(), enq: load.enq.Load(), acked: load.acked.Load()}
	if err != nil {
		return run, err
	}
	qs, err := r.queueStats(ctx, queue)
	if err != nil {
		return run, err
	}
	r.add(prefix+"_completed_rate", run.completed, "jobs/s")
	r.add(prefix+"_enqueue_rate", float64(run.enq)/elapsed.Seconds(), "jobs/s")
	r.add(prefix+"_backlog", float64(qs.Ready+qs.Scheduled+qs.Reserved), "jobs")
	// Per enqueued-and-completed job: the mixed run does both kinds of work.
	r.addCPUPerJob(prefix, cpu0, cpu1, (run.enq+run.acked)/2)
	// Not Reserve: its long-poll waits for jobs.
	r.addTimingFigures(prefix, t0, t1, (run.enq+run.acked)/2, seppv1.QueueService_EnqueueBatch_FullMethodName, seppv1.QueueService_AckBatch_FullMethodName)
	return run, nil
}

// mixedLoad is the mixed run's producers and workers at work on a queue
// until runCtx ends: the jobs enqueued and acked so far.
type mixedLoad struct {
	enq, acked atomic.Int64
	start      time.Time
	wg         sync.WaitGroup
	errc       chan error
	stopTicker func()
}

// startMixedLoad starts MixedProducers producers and MixedWorkers workers
// on queue, which stop taking new work when runCtx ends; wait waits for
// the work begun to finish. prefix names the workers and the progress
// line.
func (r *runner) startMixedLoad(ctx, runCtx context.Context, prefix, queue string) *mixedLoad {
	l := &mixedLoad{errc: make(chan error, 1), start: time.Now()}
	report := func(err error) {
		select {
		case l.errc <- err:
		default: // the first error is the one reported
		}
	}
	l.stopTicker = r.ticker(ctx, strings.ReplaceAll(prefix, "_", " ")+" acked", &l.acked, 0)
	for i := 0; i < r.opts.MixedProducers; i++ {
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			p := r.cli.NewProducer(r.producerOptions())
			defer p.Close(context.Background())
			window := newEnqueueWindow(64, func(_ client.EnqueueResult, err error) {
				if err == nil {
					l.enq.Add(1)
				}
			})
			defer window.wait()
			var seq uint64
			// An enqueue begun before the deadline runs to its answer
			// (ctx, not runCtx): one cut short may still be committed,
			// uncounted, and the counts must be the queue's.
			for runCtx.Err() == nil && window.acquire(runCtx) {
				seq++
				window.add(p.EnqueueAsync(ctx, client.NewEnqueueRequest(queue, "bench").WithPayload(r.payload(seq, time.Now()))))
			}
		}()
	}
	for i := 0; i < r.opts.MixedWorkers; i++ {
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			acks := r.newAckBehind()
			defer acks.wait()
			for runCtx.Err() == nil && !acks.failed.Load() {
				// A reserve begun before the deadline runs to its answer
				// too (ctx): one cut short may have leased jobs nobody
				// acks, held for the lease's minute.
				ds, err := r.cli.Reserve(ctx, queue, client.ReserveOptions{WorkerID: fmt.Sprintf("%s-%d", prefix, i), Max: 100, Lease: time.Minute, Wait: 100 * time.Millisecond})
				if err != nil {
					if ctx.Err() == nil {
						report(err)
					}
					return
				}
				// Acks run to completion even past the deadline: a
				// reserved job must not be left leased.
				acks.ack(context.Background(), ds, func(n int) { l.acked.Add(int64(n)) }, report)
			}
		}()
	}
	return l
}

// wait waits for the load's producers and workers to finish what they
// began and returns the first error one of them met.
func (l *mixedLoad) wait() error {
	l.wg.Wait()
	l.stopTicker()
	close(l.errc)
	return <-l.errc
}

func (r *runner) queueStats(ctx context.Context, queue string) (client.QueueStats, error) {
	qs, err := r.cli.ListQueues(ctx, false)
	if err != nil {
		return client.QueueStats{}, err
	}
	for _, q := range qs {
		if q.Name == queue {
			return q, nil
		}
	}
	return client.QueueStats{}, nil
}

// endToEnd offers a fixed rate (so the figure is not queueing delay) and
// measures from enqueue start to the delivery in the worker's hands, where
// a handler starts (e2e_to_handler), and to its ack done (e2e_latency).
func (r *runner) endToEnd(ctx context.Context) error {
	queue := queueName("e2e")
	rate := max(r.opts.MixedRate, 1)
	n := int(float64(rate) * r.opts.MixedRateFor.Seconds())
	var mu sync.Mutex
	lat := make([]time.Duration, 0, n)
	started := make([]time.Duration, 0, n)
	var got atomic.Int64
	workCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	for i := 0; i < r.opts.MixedWorkers; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for workCtx.Err() == nil && got.Load() < int64(n) {
				ds, err := r.cli.Reserve(workCtx, queue, client.ReserveOptions{WorkerID: "e2e", Max: 100, Lease: time.Minute, Wait: 200 * time.Millisecond})
				if err != nil {
					return
				}
				mu.Lock()
				for _, d := range ds {
					if _, sent, ok := payloadSeq(d.Job.Payload); ok {
						started = append(started, time.Since(sent))
					}
				}
				mu.Unlock()
				_ = r.ackAll(ctx, ds, func(d client.Delivery) {
					if _, sent, ok := payloadSeq(d.Job.Payload); ok {
						mu.Lock()
						lat = append(lat, time.Since(sent))
						mu.Unlock()
					}
					got.Add(1)
				})
			}
		}()
	}
	before := r.sampleTimings(ctx)
	p := r.cli.NewProducer(r.producerOptions())
	interval := time.Second / time.Duration(rate)
	next := time.Now()
	for i := 0; i < n; i++ {
		if d := time.Until(next); d > 0 {
			time.Sleep(d)
		}
		next = next.Add(interval)
		p.EnqueueAsync(ctx, client.NewEnqueueRequest(queue, "bench").WithPayload(r.payload(uint64(i), time.Now())))
	}
	if err := p.Close(ctx); err != nil {
		return err
	}
	deadline := time.Now().Add(30 * time.Second)
	for got.Load() < int64(n) && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	wg.Wait()
	after := r.sampleTimings(ctx)
	mu.Lock()
	defer mu.Unlock()
	if before.ok && after.ok && n > 0 {
		// The jobs handed to a waiting reserve in their enqueue's own
		// entry (cluster/handoff.go); the rest waited for a reserve entry
		// of their own.
		r.add("e2e_handed_over_share", (after.timings.handedOver-before.timings.handedOver)*100/float64(n), "%")
	}
	sortDurations(lat)
	sortDurations(started)
	r.add("e2e_offered_rate", float64(rate), "jobs/s")
	r.add("e2e_to_handler_p50", ms(percentile(started, 0.50)), "ms")
	r.add("e2e_to_handler_p99", ms(percentile(started, 0.99)), "ms")
	r.add("e2e_latency_p50", ms(percentile(lat, 0.50)), "ms")
	r.add("e2e_latency_p99", ms(percentile(lat, 0.99)), "ms")
	return nil
}

// failover: a producer enqueues one job every interval with retries while
// the leader is SIGKILLed (then, in a second round, while leadership is
// transferred); afterwards every acknowledged job must be there once.
// waitApplied polls node i until it has applied index target.
// settleTimeout bounds settle's wait.
const settleTimeout = 30 * time.Second

// settle waits until every reachable local node has applied all that any of
// them had committed, so a scenario starts on a quiet cluster. Raft answers
// a write once a majority stored it and the leader applied it; followers
// apply when they learn of the commit, so a fast scenario can leave them
// applying into the next one, whose figures would then pay for it.
func (r *runner) settle(ctx context.Context) {
	if r.cluster == nil {
		return
	}
	start := time.Now()
	ctx, cancel := context.WithTimeout(ctx, settleTimeout)
	defer cancel()
	var target uint64
	var reachable []int
	for i, n := range r.cluster.Nodes {
		st, err := r.cli.ClusterStatusOf(ctx, n.GRPCAddr)
		if err != nil {
			continue // a node a previous scenario left down
		}
		target = max(target, st.CommitIndex)
		reachable = append(reachable, i)
	}
	for _, i := range reachable {
		if err := r.waitApplied(ctx, i, target); err != nil {
			r.progress(fmt.Sprintf("not settled: %v", err))
			return
		}
	}
	r.progress(fmt.Sprintf("settled: every node applied index %d (%s)", target, time.Since(start).Round(time.Millisecond)))
}

func (r *runner) waitApplied(ctx context.Context, i int, target uint64) error {
	addr := r.cluster.Nodes[i].GRPCAddr
	for {
		fs, err := r.cli.ClusterStatusOf(ctx, addr)
		if err == nil && fs.AppliedIndex >= target {
			return nil
		}
		if ctx.Err() != nil {
			return fmt.Errorf("%s did not apply up to index %d: %v", r.cluster.Nodes[i].ID, target, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (r *runner) failover(ctx context.Context) error {
	if r.cluster == nil {
		r.note("failover skipped: it needs the local cluster bench starts itself (run without --addr)")
		return nil
	}
	var integrity error
	for _, mode := range []string{"kill", "transfer"} {
		if err := r.failoverRound(ctx, mode); err != nil {
			if errors.Is(err, ErrIntegrity) {
				integrity = err
				continue
			}
			return err
		}
	}
	if err := r.freezeLeader(ctx); err != nil {
		return err
	}
	return integrity
}

// freezeTimeout bounds the wait for a new leader after freezing the old
// one: far above any heartbeat timeout a user would set.
const freezeTimeout = 30 * time.Second

// freezeLeader SIGSTOPs the leader and times how long the others take to
// elect a new one (failover_stop_new_leader), polling their status every
// 5 ms; then it thaws the old leader and waits for it to follow. A frozen
// process closes no connection, so only raft's heartbeat timeout, never
// crash detection, can replace it: this is the figure the timeout sets.
func (r *runner) freezeLeader(ctx context.Context) error {
	r.settle(ctx)
	leader, err := r.leaderIndex(ctx)
	if err != nil {
		return err
	}
	old := r.cluster.Nodes[leader].ID
	r.progress(fmt.Sprintf("SIGSTOP leader %s (pid %d)", old, r.cluster.Pid(leader)))
	if err := r.cluster.Signal(leader, syscall.SIGSTOP); err != nil {
		return err
	}
	stopped := time.Now()
	thawed := false
	thaw := func() error {
		if thawed {
			return nil
		}
		thawed = true
		return r.cluster.Signal(leader, syscall.SIGCONT)
	}
	defer func() { _ = thaw() }()
	wctx, cancel := context.WithTimeout(ctx, freezeTimeout)
	defer cancel()
	var replaced time.Duration
	for replaced == 0 {
		for i, n := range r.cluster.Nodes {
			if i == leader {
				continue
			}
			sctx, scancel := context.WithTimeout(wctx, 200*time.Millisecond)
			st, err := r.cli.ClusterStatusOf(sctx, n.GRPCAddr)
			scancel()
			if err == nil && st.State == "Leader" {
				replaced = time.Since(stopped)
				break
			}
		}
		if replaced == 0 {
			if wctx.Err() != nil {
				return fmt.Errorf("bench: no new leader within %s of freezing %s", freezeTimeout, old)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	r.add("failover_stop_new_leader", ms(replaced), "ms")
	if err := thaw(); err != nil {
		return err
	}
	// The thawed node steps down at its first contact with the new term;
	// the next scenario starts on a whole cluster.
	r.settle(ctx)
	return nil
}

func (r *runner) failoverRound(ctx context.Context, mode string) error {
	queue := queueName("failover-" + mode)
	leader, err := r.leaderIndex(ctx)
	if err != nil {
		return err
	}
	var mu sync.Mutex
	acked := map[uint64]bool{}
	var okTimes []time.Time
	var failures atomic.Int64
	stopProducer := make(chan struct{})
	producerDone := make(chan struct{})
	go func() {
		defer close(producerDone)
		t := time.NewTicker(r.opts.FailoverInterval)
		defer t.Stop()
		var seq uint64
		for {
			select {
			case <-stopProducer:
				return
			case <-t.C:
			}
			seq++
			s := seq
			cctx, cancel := context.WithTimeout(ctx, 15*time.Second)
			_, err := r.cli.Enqueue(cctx, client.NewEnqueueRequest(queue, "bench").WithPayload(r.payload(s, time.Now())))
			cancel()
			if err != nil {
				failures.Add(1)
				continue
			}
			mu.Lock()
			acked[s] = true
			okTimes = append(okTimes, time.Now())
			mu.Unlock()
		}
	}()
	time.Sleep(r.opts.FailoverBefore)
	switch mode {
	case "kill":
		r.progress(fmt.Sprintf("SIGKILL leader %s (pid %d)", r.cluster.Nodes[leader].ID, r.cluster.Pid(leader)))
		if err := r.cluster.Kill(leader); err != nil {
			return err
		}
	case "transfer":
		r.progress("transferring leadership from " + r.cluster.Nodes[leader].ID)
		if err := r.cli.TransferLeadership(ctx, ""); err != nil {
			return err
		}
	}
	time.Sleep(r.opts.FailoverAfter)
	close(stopProducer)
	<-producerDone

	if mode == "kill" {
		if err := r.cluster.StartNode(leader); err != nil {
			return err
		}
		wctx, cancel := context.WithTimeout(ctx, 60*time.Second)
		defer cancel()
		if err := r.cluster.WaitServing(wctx); err != nil {
			return err
		}
		// The next round (a planned transfer) measures a healthy cluster,
		// not one whose third node is still replaying its log.
		st, err := r.cli.ClusterStatus(wctx)
		if err != nil {
			return err
		}
		if err := r.waitApplied(wctx, leader, st.CommitIndex); err != nil {
			return err
		}
	}
	mu.Lock()
	gap := longestGap(okTimes)
	mu.Unlock()
	delivered, err := r.drainQueue(ctx, queue)
	if err != nil {
		return err
	}
	lost, dup := countLossAndDup(acked, delivered)
	prefix := "failover_" + mode
	r.add(prefix+"_longest_gap", ms(gap), "ms")
	r.add(prefix+"_acked", float64(len(acked)), "jobs")
	r.add(prefix+"_failed_calls", float64(failures.Load()), "calls")
	r.add(prefix+"_lost", float64(lost), "jobs")
	r.add(prefix+"_duplicates", float64(dup), "jobs")
	if lost > 0 || dup > 0 {
		return ErrIntegrity
	}
	return nil
}

// longestGap is the longest time between two successive successful
// enqueues: what a client saw of the unavailability.
func longestGap(ok []time.Time) time.Duration {
	var gap time.Duration
	for i := 1; i < len(ok); i++ {
		gap = max(gap, ok[i].Sub(ok[i-1]))
	}
	return gap
}

// recovery: fill a queue with RecoveryJobs jobs, report each node's
// resident memory, restart a follower and time it until it serves and
// until it has caught up.
func (r *runner) recovery(ctx context.Context) error {
	if r.cluster == nil {
		r.note("recovery skipped: it needs the local cluster bench starts itself (run without --addr)")
		return nil
	}
	queue := queueName("recovery")
	n := r.opts.RecoveryJobs
	if r.opts.RecoveryClean {
		if err := r.awaitNoKeys(ctx); err != nil {
			return err
		}
	}
	r.progress(fmt.Sprintf("filling %s with %d jobs of 100 bytes", queue, n))
	if err := r.fill(ctx, queue, n, 100); err != nil {
		return err
	}
	for i, rss := range r.nodesRSS() {
		if rss > 0 {
			r.add(fmt.Sprintf("recovery_rss_%s", r.cluster.Nodes[i].ID), mib(rss), "MiB")
		}
	}
	// The nodes also hold the idempotency keys of every job enqueued in the
	// window: this scenario's, and the earlier ones' unless RecoveryClean
	// waited them out. They are part of that memory.
	if k, err := r.readRememberedKeys(ctx); err == nil && k.known {
		r.add("recovery_remembered_keys", float64(k.keys), "keys")
	}
	follower, err := r.followerIndex(ctx)
	if err != nil {
		return err
	}
	rt, err := r.restartNode(ctx, follower)
	if err != nil {
		return err
	}
	r.add("recovery_jobs", float64(n), "jobs")
	r.addRestart("recovery", rt)
	r.progress("draining the recovery queue")
	if _, err := r.drainQueue(ctx, queue); err != nil {
		return err
	}
	return nil
}

// producerOptions are the client producer's options the flags set.
func (r *runner) producerOptions() client.ProducerOptions {
	return client.ProducerOptions{MaxBatch: r.opts.ProducerBatch, Linger: r.opts.ProducerLinger}
}
