package integration

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sepp-io/sepp/client"
	"github.com/sepp-io/sepp/devcluster"
)

// A local cluster splits the machine's CPUs among its nodes (see
// devcluster.CPUShare). Started again in the folder it ran in (`sepp dev
// --dir`), it comes back on its old addresses, elects a leader and still
// holds its jobs. It used to take fresh ports, and the nodes' raft logs,
// naming the old ones, left them campaigning at peers that were not there.
func TestDevCluster_SplitsTheCPUsAndRestartsWithItsJobs(t *testing.T) {
	t.Parallel()
	requireLong(t)
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()

	start := func() *devcluster.Cluster {
		t.Helper()
		c, err := devcluster.Start(devcluster.Options{Binary: seppBinary, Nodes: 3, Dir: dir})
		if err != nil {
			t.Fatalf("start cluster: %v", err)
		}
		t.Cleanup(func() { _ = c.Stop() })
		if err := c.WaitServing(ctx); err != nil {
			t.Fatalf("%v\n%s", err, localCluster{c}.LogTail(0))
		}
		return c
	}

	first := start()
	addrs := first.Addrs()
	wantProcs := devcluster.CPUShare(runtime.NumCPU(), 3)
	if env := os.Getenv("GOMAXPROCS"); env != "" {
		wantProcs, _ = strconv.Atoi(env)
	}
	for _, n := range first.Nodes {
		if got := gomaxprocsOf(ctx, t, n.HTTPAddr); got != wantProcs {
			t.Errorf("%s runs with GOMAXPROCS %d, want %d (the host's %d CPUs split among 3 nodes)", n.ID, got, wantProcs, runtime.NumCPU())
		}
	}
	cl, err := client.New(ctx, addrs)
	if err != nil {
		t.Fatal(err)
	}
	req := client.NewEnqueueRequest("restart", "t")
	req.Payload = []byte("kept across restarts")
	res, err := cl.Enqueue(ctx, req)
	cl.Close()
	if err != nil {
		t.Fatalf("enqueue: %v", err)
	}
	if err := first.Stop(); err != nil {
		t.Fatalf("stop: %v", err)
	}

	second := start()
	if first.Restarted || !second.Restarted {
		t.Fatalf("Restarted = %v on the first start and %v on the second, want false then true", first.Restarted, second.Restarted)
	}
	if got := second.Addrs(); !slices.Equal(got, addrs) {
		t.Fatalf("restarted on %v, want the earlier addresses %v", got, addrs)
	}
	cl, err = client.New(ctx, second.Addrs())
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	job, err := cl.GetJob(ctx, res.JobID, false)
	if err != nil {
		t.Fatalf("get job %d after the restart: %v\n%s", res.JobID, err, localCluster{second}.LogTail(0))
	}
	if !bytes.Equal(job.Payload, req.Payload) || job.State != client.StateReady {
		t.Fatalf("job after the restart: payload %q state %v, want %q ready", job.Payload, job.State, req.Payload)
	}
}

// gomaxprocsOf reads a node's GOMAXPROCS from its /metrics.
func gomaxprocsOf(ctx context.Context, t *testing.T, httpAddr string) int {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+httpAddr+"/metrics", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("metrics of %s: %v", httpAddr, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.SplitSeq(string(body), "\n") {
		if v, ok := strings.CutPrefix(line, "go_sched_gomaxprocs_threads "); ok {
			n, err := strconv.Atoi(strings.TrimSpace(v))
			if err != nil {
				t.Fatalf("metrics of %s: %q", httpAddr, line)
			}
			return n
		}
	}
	t.Fatalf("metrics of %s show no go_sched_gomaxprocs_threads", httpAddr)
	return 0
}
