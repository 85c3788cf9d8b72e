package integration

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sepp-io/sepp/client"
	"github.com/sepp-io/sepp/devcluster"
)

// Clock faults with real processes. Go reads the clock without libc, so
// libfaketime cannot shift a Go binary: the nodes run a binary built with
// the tag sepp_test_clock, whose wall clock is shifted by the lines of the
// file SEPP_TEST_CLOCK_FILE names ("<node id> <offset ms> <drift ppm>",
// cluster/testclock_on.go), which the test rewrites while the cluster runs.
// Its monotonic clock runs on, as a real clock step leaves it.

const clockTOML = `[[queues]]
name = "clock"
default_max_attempts = 5

[[queues]]
name = "work"
default_max_attempts = 5
`

// maxClockSkew is the cluster's cluster.max_clock_skew_ms (the default).
const maxClockSkew = time.Second

func buildClockBinary(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "sepp-test-clock")
	build := exec.Command("go", "build", "-tags", "sepp_test_clock", "-o", bin, "./cmd/sepp")
	build.Dir = repoRoot
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build the test-clock binary: %v\n%s", err, out)
	}
	return bin
}

func TestClockFaults(t *testing.T) {
	requireLong(t)
	bin := buildClockBinary(t)
	tests := []struct {
		name string
		// offset and drift of the leader's clock from the fault on
		offsetMS, driftPPM int64
	}{
		{"LeaderJumpsAnHourAhead", 3_600_000, 0},
		{"LeaderJumpsAnHourBack", -3_600_000, 0},
		// 20%: the leader's clock is a second ahead after 5 s.
		{"LeaderDriftsAhead", 0, 200_000},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			runClockFault(t, bin, tt.offsetMS, tt.driftPPM)
		})
	}
}

func runClockFault(t *testing.T, bin string, offsetMS, driftPPM int64) {
	t.Helper()
	dir := t.TempDir()
	clockFile := filepath.Join(dir, "clock")
	if err := os.WriteFile(clockFile, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("SEPP_TEST_CLOCK_FILE", clockFile)
	c, err := devcluster.Start(devcluster.Options{Binary: bin, Nodes: 3, Dir: filepath.Join(dir, "nodes"), ExtraTOML: clockTOML})
	if err != nil {
		t.Fatalf("start cluster: %v", err)
	}
	t.Cleanup(func() { _ = c.Stop() })
	lc := localCluster{c}
	defer dumpLogs(t, lc)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if err := c.WaitServing(ctx); err != nil {
		t.Fatalf("%v\n%s", err, lc.LogTail(0))
	}
	cl := newClient(ctx, t, lc.Addrs())
	leader := waitLeader(ctx, t, cl, lc, 20*time.Second, -1)
	old := c.Nodes[leader]
	// The members have compared clocks: the leader exports both offsets.
	if err := waitFor(ctx, 20*time.Second, func(context.Context) (bool, error) {
		body, _, err := httpGet(ctx, old.HTTPAddr, "/metrics")
		if err != nil {
			return false, err
		}
		if n := strings.Count(body, "sepp_clock_offset_seconds{"); n != 2 {
			return false, fmt.Errorf("%d member offsets exported", n)
		}
		return true, nil
	}); err != nil {
		t.Fatalf("clock offsets: %v", err)
	}

	// Before the fault: a job reserved with a 30 s lease, one scheduled a
	// minute out, one nacked with a 30 s retry delay.
	const lease, retry = 30 * time.Second, 30 * time.Second
	enqueue := func(queue string, at time.Time) uint64 {
		t.Helper()
		r, err := cl.Enqueue(ctx, &client.EnqueueRequest{Queue: queue, JobType: "clock", Payload: []byte("x"), ScheduledAt: at})
		if err != nil {
			t.Fatalf("enqueue: %v", err)
		}
		return r.JobID
	}
	reserveOne := func(queue string, want uint64) client.Delivery {
		t.Helper()
		ds, err := cl.Reserve(ctx, queue, client.ReserveOptions{Lease: lease, Wait: time.Second})
		if err != nil || len(ds) != 1 || ds[0].Job.ID != want {
			t.Fatalf("reserve %s: %d deliveries, %v; want job %d", queue, len(ds), err, want)
		}
		return ds[0]
	}
	leased := enqueue("clock", time.Time{})
	reservedFrom := time.Now()
	reserveOne("clock", leased)
	scheduledFor := time.Now().Add(time.Minute)
	scheduled := enqueue("clock", scheduledFor)
	retried := enqueue("clock", time.Time{})
	d := reserveOne("clock", retried)
	nackedFrom := time.Now()
	if _, err := cl.Nack(ctx, d.Ctx, client.After(retry), "clock test"); err != nil {
		t.Fatalf("nack: %v", err)
	}
	first, err := cl.GetJob(ctx, leased, false)
	if err != nil {
		t.Fatal(err)
	}

	// The fault: the leader's clock jumps (or starts drifting).
	line := fmt.Sprintf("%s %d %d\n", old.ID, offsetMS, driftPPM)
	if err := os.WriteFile(clockFile, []byte(line), 0o644); err != nil {
		t.Fatal(err)
	}
	faultAt := time.Now()
	t.Logf("fault at %s: %q", faultAt.Format(time.RFC3339Nano), strings.TrimSpace(line))

	// The cluster keeps serving throughout: every enqueue succeeds (the
	// client rides through the hand-over), its stamped time never goes
	// back and is never ahead of the real time by more than the bound.
	last := first.EnqueuedAt
	newLeader, handedAt := -1, time.Time{}
	served := 0
	for handedAt.IsZero() || time.Since(handedAt) < 3*time.Second {
		if time.Since(faultAt) > 20*time.Second {
			t.Fatalf("the leader whose clock is off still leads %s after the fault (%d writes served)", time.Since(faultAt).Round(time.Millisecond), served)
		}
		id := enqueue("work", time.Time{})
		j, err := cl.GetJob(ctx, id, false)
		if err != nil {
			t.Fatalf("get job %d: %v", id, err)
		}
		if j.EnqueuedAt.Before(last) {
			t.Fatalf("job %d enqueued at %s, before the previous write's %s: time went back", id, j.EnqueuedAt.Format(time.RFC3339Nano), last.Format(time.RFC3339Nano))
		}
		if real := time.Now(); j.EnqueuedAt.After(real.Add(maxClockSkew)) {
			t.Fatalf("job %d enqueued at %s, ahead of the real time %s by more than %s", id, j.EnqueuedAt.Format(time.RFC3339Nano), real.Format(time.RFC3339Nano), maxClockSkew)
		}
		last = j.EnqueuedAt
		ds, err := cl.Reserve(ctx, "work", client.ReserveOptions{Lease: lease, Wait: time.Second})
		if err != nil {
			t.Fatalf("reserve: %v", err)
		}
		for _, d := range ds {
			if err := cl.Ack(ctx, d.Ctx); err != nil {
				t.Fatalf("ack: %v", err)
			}
		}
		served++
		if newLeader < 0 {
			if i, err := leaderIndex(ctx, cl, lc); err == nil && i != leader {
				newLeader, handedAt = i, time.Now()
				t.Logf("node %s leads %s after the fault", c.Nodes[i].ID, handedAt.Sub(faultAt).Round(time.Millisecond))
			}
		}
	}
	report(t, "clock_fault_handover_ms", handedAt.Sub(faultAt).Milliseconds(), "ms")
	report(t, "clock_fault_writes_served", served, "writes")

	// The node whose clock is off says so: /readyz and /metrics.
	body, code, err := httpGet(ctx, old.HTTPAddr, "/readyz")
	if err != nil || code != http.StatusServiceUnavailable || !strings.Contains(body, "max_clock_skew") {
		t.Errorf("old leader's /readyz: %d %q %v; want 503 naming max_clock_skew", code, body, err)
	}
	if body, _, err := httpGet(ctx, old.HTTPAddr, "/metrics"); err != nil || !strings.Contains(body, "sepp_clock_skew_exceeded 1") {
		t.Errorf("old leader's /metrics lacks sepp_clock_skew_exceeded 1 (%v)", err)
	}

	// Nothing ran early: the leased job is still reserved, with a lease
	// that ends no earlier than 30 s after it was taken; the scheduled
	// job still waits; the retry still waits out its delay.
	if el := time.Since(reservedFrom); el > lease-2*time.Second {
		t.Fatalf("the test took %s since the reserve: too slow to tell an early expiry from a due one", el)
	}
	j, err := cl.GetJob(ctx, leased, false)
	if err != nil {
		t.Fatal(err)
	}
	if j.State != client.StateReserved || j.Attempt != 1 || j.LeaseDeadline.Before(reservedFrom.Add(lease-maxClockSkew)) {
		t.Errorf("leased job: state %v attempt %d lease deadline %s; want still reserved, attempt 1, deadline not before %s",
			j.State, j.Attempt, j.LeaseDeadline.Format(time.RFC3339Nano), reservedFrom.Add(lease-maxClockSkew).Format(time.RFC3339Nano))
	}
	if j, err = cl.GetJob(ctx, scheduled, false); err != nil || j.State != client.StateScheduled {
		t.Errorf("scheduled job: %+v %v; want still scheduled", j, err)
	}
	if j, err = cl.GetJob(ctx, retried, false); err != nil || j.State != client.StateScheduled || j.NextAttemptAt.Before(nackedFrom.Add(retry-maxClockSkew)) {
		t.Errorf("retried job: %+v %v; want waiting until at least %s", j, err, nackedFrom.Add(retry-maxClockSkew).Format(time.RFC3339Nano))
	}
	if ds, err := cl.Reserve(ctx, "clock", client.ReserveOptions{Lease: lease}); err != nil || len(ds) != 0 {
		t.Errorf("reserve on the clock queue: %d deliveries (%v); want none before %s", len(ds), err, scheduledFor.Format(time.RFC3339Nano))
	}

	// The clock comes right: the node agrees again and is ready.
	if err := os.WriteFile(clockFile, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := waitFor(ctx, 20*time.Second, func(context.Context) (bool, error) {
		body, code, err := httpGet(ctx, old.HTTPAddr, "/readyz")
		if err != nil || code != http.StatusOK {
			return false, fmt.Errorf("/readyz %d %q %v", code, body, err)
		}
		return true, nil
	}); err != nil {
		t.Errorf("old leader not ready again once its clock is right: %v", err)
	}
}

func httpGet(ctx context.Context, addr, path string) (string, int, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+path, nil)
	if err != nil {
		return "", 0, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", 0, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return string(b), resp.StatusCode, err
}
