package integration

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/sepp-io/sepp/client"
)

// TestRedriveSurvivesLeaderKill: 2000 dead letters, a rate-limited redrive
// replaying them as fresh jobs to another queue, the leader SIGKILLed
// mid-way. The new leader carries the task on from its replicated
// progress: when it ends, every selected record was replayed exactly once
// (each payload once in the target queue: none lost, none doubled), none
// is left, and the audit record counts 2000.
func TestRedriveSurvivesLeaderKill(t *testing.T) {
	t.Parallel()
	requireLong(t)
	const (
		records = 2000
		rate    = 400 // jobs/s: about 5 s of redrive, the kill lands mid-way
		from    = "faults"
		to      = "faults-replayed"
	)
	c := startLocal(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cl, err := client.New(ctx, c.Addrs())
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	waitLeader(ctx, t, cl, c, 15*time.Second, -1)
	// Queue operations wait until the leader has learnt every member's
	// command version (a few seconds after start).
	if err := waitFor(ctx, 30*time.Second, func(ctx context.Context) (bool, error) {
		_, err := cl.CreateQueue(ctx, to, client.QueueSettings{}, false)
		if errors.Is(err, client.ErrAlreadyExists) {
			return true, nil // an earlier attempt of unknown outcome took effect
		}
		return err == nil, err
	}); err != nil {
		t.Fatal(err)
	}

	var ids []uint64
	want := make([]string, 0, records)
	for start := 0; start < records; start += 500 {
		var batch []*client.EnqueueRequest
		for i := start; i < start+500; i++ {
			p := fmt.Sprintf("job-%04d", i)
			want = append(want, p)
			batch = append(batch, client.NewEnqueueRequest(from, "redrive").WithPayload([]byte(p)).WithIdempotencyKey(p))
		}
		res, err := cl.EnqueueBatch(ctx, batch)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range res {
			if r.Err != nil {
				t.Fatal(r.Err)
			}
			ids = append(ids, r.Result.JobID)
		}
	}
	for start := 0; start < len(ids); start += 500 {
		res, err := cl.DeadLetterJobs(ctx, ids[start:start+500], "poison")
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range res {
			if r.Err != nil {
				t.Fatal(r.Err)
			}
		}
	}
	if q, err := cl.GetQueue(ctx, from, false); err != nil || q.Stats.Dead != records {
		t.Fatalf("before the redrive: %+v, %v; want %d dead letters", q, err, records)
	}

	task, err := cl.StartRedrive(ctx, client.RedriveOptions{Selection: client.RedriveSelection{Queue: from}, ToQueue: to, Fresh: true, Rate: rate})
	if err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	leader, err := leaderIndex(ctx, cl, c)
	if err != nil {
		t.Fatal(err)
	}
	var movedAtKill uint64
	if err := waitFor(ctx, 30*time.Second, func(ctx context.Context) (bool, error) {
		got, err := cl.GetRedrive(ctx, task.ID, false)
		movedAtKill = got.Moved
		return err == nil && got.Moved >= records/4, err
	}); err != nil {
		t.Fatalf("the redrive did not get a quarter through: %v", err)
	}
	killed := time.Now()
	if err := c.Kill(leader); err != nil {
		t.Fatal(err)
	}
	report(t, "redrive moved before the leader kill", movedAtKill, "records")
	waitLeader(ctx, t, cl, c, 15*time.Second, leader)
	report(t, "redrive failover election", ms(time.Since(killed)), "ms")

	var final client.RedriveTask
	if err := waitFor(ctx, 60*time.Second, func(ctx context.Context) (bool, error) {
		got, err := cl.GetRedrive(ctx, task.ID, false)
		final = got
		return err == nil && got.State == client.RedriveDone, err
	}); err != nil {
		t.Fatalf("the redrive did not finish after the failover: %+v, %v", final, err)
	}
	report(t, "redrive of 2000 records with a leader kill", ms(time.Since(began)), "ms")
	if movedAtKill >= records {
		t.Fatalf("the redrive had ended (%d moved) before the kill: nothing was shown", movedAtKill)
	}
	restart(ctx, t, c, leader)

	// The audit record: the task ended done, counting every record once.
	if final.Moved != records || final.Remaining != 0 || final.EndedAt.IsZero() {
		t.Errorf("audit record %+v: want %d moved, 0 remaining, an end time", final, records)
	}
	tasks, err := cl.ListRedrives(ctx, false)
	if err != nil || !slices.ContainsFunc(tasks, func(x client.RedriveTask) bool { return x.ID == task.ID && x.Moved == records }) {
		t.Errorf("ListRedrives = %+v, %v: want task %d with %d moved", tasks, err, task.ID, records)
	}
	src, err := cl.GetQueue(ctx, from, false)
	if err != nil || src.Stats.Dead != 0 {
		t.Fatalf("source queue after the redrive: %+v, %v; want no dead letter left", src, err)
	}
	dst, err := cl.GetQueue(ctx, to, false)
	if err != nil || dst.Stats.Ready != records {
		t.Fatalf("target queue after the redrive: %+v, %v; want %d ready", dst, err, records)
	}
	// Every payload exactly once.
	var got []string
	for len(got) < records+1 {
		ds, err := cl.Reserve(ctx, to, client.ReserveOptions{Max: 100, Lease: time.Minute, WorkerID: "check"})
		if err != nil {
			t.Fatal(err)
		}
		if len(ds) == 0 {
			break
		}
		for _, d := range ds {
			got = append(got, string(d.Job.Payload))
			if d.Ctx.Attempt != 1 {
				t.Errorf("replayed job %d on attempt %d, want a fresh job", d.Job.ID, d.Ctx.Attempt)
			}
		}
	}
	slices.Sort(got)
	if !slices.Equal(got, want) {
		dup, missing := 0, 0
		seen := map[string]int{}
		for _, p := range got {
			seen[p]++
		}
		for _, p := range want {
			switch seen[p] {
			case 0:
				missing++
			case 1:
			default:
				dup++
			}
		}
		t.Fatalf("target queue holds %d jobs: %d payloads missing, %d doubled", len(got), missing, dup)
	}
}
