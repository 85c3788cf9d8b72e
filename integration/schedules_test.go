package integration

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/sepp-io/sepp/client"
	"github.com/sepp-io/sepp/devcluster"
)

// limitsTOML configures the queue whose max_reserved must hold across a
// leader kill.
const limitsTOML = `[[queues]]
name = "capped"
max_reserved = 3
`

func startLocalWith(t *testing.T, extra string) localCluster {
	t.Helper()
	c, err := devcluster.Start(devcluster.Options{Binary: seppBinary, Nodes: 3, Dir: t.TempDir(), ExtraTOML: extra})
	if err != nil {
		t.Fatalf("start cluster: %v", err)
	}
	t.Cleanup(func() { _ = c.Stop() })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	lc := localCluster{c}
	if err := c.WaitServing(ctx); err != nil {
		t.Fatalf("%v\n%s", err, lc.LogTail(0))
	}
	return lc
}

// scheduleTicks reads the tick of every job of queue (Ready: nobody
// reserves them), in job id order.
func scheduleTicks(ctx context.Context, t *testing.T, c *client.Client, queue string) []int64 {
	t.Helper()
	var ticks []int64
	after := uint64(0)
	for {
		jobs, next, err := c.ListJobs(ctx, queue, client.ListJobsOptions{State: client.StateReady, AfterJobID: after, Limit: 1000})
		if err != nil {
			t.Fatalf("list jobs: %v", err)
		}
		for _, j := range jobs {
			v, err := strconv.ParseInt(j.Custom["sepp_schedule_tick"], 10, 64)
			if err != nil {
				t.Fatalf("job %d: tick %q: %v", j.ID, j.Custom["sepp_schedule_tick"], err)
			}
			ticks = append(ticks, v)
		}
		if next == 0 {
			return ticks
		}
		after = next
	}
}

// A schedule ticking every second across a SIGKILL of the leader fires
// each tick exactly once: the jobs' ticks are distinct whole seconds, one
// per second but for at most one gap (the ticks no leader was there to
// fire, which catch-up "once" folds into one job at the latest of them),
// the schedule's fired count is the number of jobs, and the last job is
// the schedule's last fire. The new leader keeps firing, and so does the
// old one's successor after it rejoins.
func TestSchedule_EachTickOnceAcrossLeaderKill(t *testing.T) {
	t.Parallel()
	requireLong(t)
	c := startLocalWith(t, "")
	defer dumpLogs(t, c)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cl := newClient(ctx, t, c.Addrs())
	leader := waitLeader(ctx, t, cl, c, 20*time.Second, -1)

	def := client.ScheduleDefinition{
		Name: "every-second", Interval: time.Second,
		Template: client.JobTemplate{Queue: "ticks", JobType: "tick"},
		Overlap:  client.OverlapAllow, CatchUp: client.CatchUpOnce,
	}
	if err := waitFor(ctx, 20*time.Second, func(ctx context.Context) (bool, error) {
		_, err := cl.CreateSchedule(ctx, def)
		return err == nil, err // FailedPrecondition until the leader knows every member's version
	}); err != nil {
		t.Fatalf("create schedule: %v", err)
	}
	fired := func(ctx context.Context) (client.Schedule, error) { return cl.GetSchedule(ctx, def.Name, 1, false) }
	waitFired := func(n uint64) {
		t.Helper()
		if err := waitFor(ctx, 30*time.Second, func(ctx context.Context) (bool, error) {
			s, err := fired(ctx)
			return err == nil && s.Fired >= n, err
		}); err != nil {
			t.Fatalf("the schedule did not reach %d fires: %v", n, err)
		}
	}
	waitFired(4)
	killed := time.Now()
	if err := c.Kill(leader); err != nil {
		t.Fatal(err)
	}
	waitLeader(ctx, t, cl, c, 10*time.Second, leader)
	s, err := fired(ctx)
	if err != nil {
		t.Fatal(err)
	}
	report(t, "schedule kill_leader election", ms(time.Since(killed)), "ms")
	waitFired(s.Fired + 4)
	restart(ctx, t, c, leader)
	s, err = fired(ctx)
	if err != nil {
		t.Fatal(err)
	}
	waitFired(s.Fired + 2)
	final, err := cl.PauseSchedule(ctx, def.Name)
	if err != nil {
		t.Fatal(err)
	}

	ticks := scheduleTicks(ctx, t, cl, "ticks")
	report(t, "schedule jobs", len(ticks), "jobs")
	if uint64(len(ticks)) != final.Fired {
		t.Errorf("%d jobs, the schedule says it fired %d", len(ticks), final.Fired)
	}
	if !slices.IsSorted(ticks) {
		t.Errorf("ticks out of job id order: %v", ticks)
	}
	seen := map[int64]bool{}
	gaps := 0
	for i, tk := range ticks {
		if seen[tk] {
			t.Errorf("tick %s fired twice", time.Unix(0, tk).UTC())
		}
		seen[tk] = true
		if tk%int64(time.Second) != 0 {
			t.Errorf("tick %d is not a whole second", tk)
		}
		if i > 0 && tk-ticks[i-1] > int64(time.Second) {
			gaps++
			report(t, "schedule gap", fmt.Sprintf("%s after %s", time.Duration(tk-ticks[i-1]), time.Unix(0, ticks[i-1]).UTC().Format(time.TimeOnly)), "")
		}
	}
	if gaps > 1 {
		t.Errorf("%d gaps in the ticks (at most one, the failover, folded by catch-up once): %v", gaps, ticks)
	}
	if n := len(ticks); n > 0 && !final.LastFireTime.Equal(time.Unix(0, ticks[n-1])) {
		t.Errorf("last fire %v, the last job's tick %v", final.LastFireTime, time.Unix(0, ticks[n-1]).UTC())
	}
	report(t, "schedule skipped", final.Skipped, "ticks")
	if _, err := waitReplicasAgree(ctx, c, 20*time.Second); err != nil {
		t.Errorf("replicas did not agree once quiet: %v", err)
	}
}

// A queue with max_reserved 3 never has more than 3 jobs reserved, before,
// during and after a SIGKILL of the leader: workers keep asking for jobs
// (and never ack, with leases longer than the test), the reserved count is
// sampled all along, and at most 3 distinct jobs are ever delivered; an ack
// frees a place that the next reserve takes.
func TestReserveLimit_HoldsAcrossLeaderKill(t *testing.T) {
	t.Parallel()
	requireLong(t)
	c := startLocalWith(t, limitsTOML)
	defer dumpLogs(t, c)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cl := newClient(ctx, t, c.Addrs())
	leader := waitLeader(ctx, t, cl, c, 20*time.Second, -1)
	// The limits come into force once the leader knows every member applies
	// them (cluster/leader.go, membersConfig); GetServerInfo shows them then.
	if err := waitFor(ctx, 30*time.Second, func(ctx context.Context) (bool, error) {
		info, err := cl.ServerInfo(ctx)
		if err != nil {
			return false, err
		}
		for _, q := range info.Queues {
			if q.GetName() == "capped" && q.GetMaxReserved() == 3 {
				return true, nil
			}
		}
		return false, nil
	}); err != nil {
		t.Fatalf("max_reserved 3 never showed in GetServerInfo: %v", err)
	}
	for i := range 20 {
		if _, err := cl.Enqueue(ctx, client.NewEnqueueRequest("capped", "job").WithPayload([]byte(strconv.Itoa(i)))); err != nil {
			t.Fatalf("enqueue: %v", err)
		}
	}

	var (
		mu        sync.Mutex
		delivered = map[uint64]client.Delivery{}
		maxSeen   uint64
	)
	wctx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for wctx.Err() == nil {
				ds, err := cl.Reserve(wctx, "capped", client.ReserveOptions{WorkerID: fmt.Sprint("w", w), Max: 2, Lease: 5 * time.Minute, Wait: 500 * time.Millisecond})
				if err != nil {
					pause(wctx, 50*time.Millisecond)
					continue
				}
				mu.Lock()
				for _, d := range ds {
					delivered[d.Job.ID] = d
				}
				mu.Unlock()
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for wctx.Err() == nil {
			qctx, qcancel := context.WithTimeout(wctx, time.Second)
			q, err := cl.GetQueue(qctx, "capped", false)
			qcancel()
			if err == nil {
				mu.Lock()
				maxSeen = max(maxSeen, q.Stats.Reserved)
				mu.Unlock()
			}
			pause(wctx, 100*time.Millisecond)
		}
	}()
	count := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(delivered)
	}
	if err := waitFor(ctx, 20*time.Second, func(context.Context) (bool, error) { return count() >= 3, nil }); err != nil {
		t.Fatalf("the workers did not get 3 jobs: %v", err)
	}
	pause(ctx, time.Second) // the workers keep asking at the limit
	if err := c.Kill(leader); err != nil {
		t.Fatal(err)
	}
	waitLeader(ctx, t, cl, c, 10*time.Second, leader)
	pause(ctx, 3*time.Second) // ask the new leader for a while
	restart(ctx, t, c, leader)
	pause(ctx, time.Second)

	mu.Lock()
	n, seen := len(delivered), maxSeen
	var one client.Delivery
	for _, d := range delivered {
		one = d
		break
	}
	mu.Unlock()
	report(t, "reserve_limit delivered", n, "jobs")
	report(t, "reserve_limit max_reserved_seen", seen, "jobs")
	if n > 3 || seen > 3 {
		t.Fatalf("max_reserved 3: %d distinct jobs delivered, %d reserved at once seen", n, seen)
	}
	if err := cl.Ack(ctx, one.Ctx); err != nil {
		t.Fatalf("ack: %v", err)
	}
	if err := waitFor(ctx, 20*time.Second, func(context.Context) (bool, error) { return count() == 4, nil }); err != nil {
		t.Fatalf("an ack at the limit did not let a fourth job through: %v", err)
	}
	stop()
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	if len(delivered) != 4 || maxSeen > 3 {
		t.Fatalf("after the ack: %d delivered, %d reserved at once seen", len(delivered), maxSeen)
	}
}
