package integration

import (
	"bytes"
	"context"
	"slices"
	"testing"
	"time"

	"github.com/sepp-io/sepp/client"
	"github.com/sepp-io/sepp/devcluster"
)

// A cluster started again in the folder it ran in (`sepp dev --dir`) comes
// back on its old addresses, elects a leader and still holds its jobs. It
// used to take fresh ports, and the nodes' raft logs, naming the old ones,
// left them campaigning at peers that were not there.
func TestDevCluster_RestartsInItsFolderWithItsJobs(t *testing.T) {
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
