package clientcheck_test

import (
	"reflect"
	"testing"
	"time"

	"github.com/sepp-io/sepp/client"
	"github.com/sepp-io/sepp/cluster"
	"github.com/sepp-io/sepp/cluster/clustertest"
	"github.com/sepp-io/sepp/rpc"
	"github.com/sepp-io/sepp/rpc/rpctest"
)

// TestWaitJob_LeaderKilled: the Go client's WaitJob gets the same outcome
// from the leader after a crash of the one that answered first, and a wait
// under way through the crash goes on at the new leader until the job dies
// there.
func TestWaitJob_LeaderKilled(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a three-node cluster")
	}
	nodes := rpctest.ServeCluster(t, 3, func(int) rpc.Options { return rpc.Options{MaxReserveWait: 200 * time.Millisecond} },
		clustertest.WithConfig(func(_ int, cfg *cluster.Config) { cfg.Engine.Limits.DeadLetterRetention = time.Hour }))
	c := newClient(t, nodes.Addrs(), client.WithRetryTimeout(20*time.Second), client.WithBackoff(5*time.Millisecond, 100*time.Millisecond))
	ctx := testContext(t)

	dead := deadLetterOne(t, c, "wait")
	before, err := c.WaitJob(ctx, dead.JobID)
	if err != nil || !before.Terminal || before.State != client.StateDead || before.Cause != client.CauseRejected {
		t.Fatalf("WaitJob before the crash = %+v, %v; want terminal, dead, rejected", before, err)
	}

	pending, err := c.Enqueue(ctx, client.NewEnqueueRequest("wait", "t"))
	if err != nil {
		t.Fatal(err)
	}
	type answer struct {
		out client.JobOutcome
		err error
	}
	waited := make(chan answer, 1)
	go func() {
		out, err := c.WaitJob(ctx, pending.JobID)
		waited <- answer{out, err}
	}()
	time.Sleep(100 * time.Millisecond) // let the wait reach the leader
	old := nodes.WaitLeader()
	nodes.Kill(old)
	t.Logf("killed leader n%d; new leader n%d", old, nodes.WaitLeader())

	after, err := c.WaitJob(ctx, dead.JobID)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(before, after) {
		t.Fatalf("the new leader answers\n%+v\nthe old one answered\n%+v", after, before)
	}

	ds, err := c.Reserve(ctx, "wait", client.ReserveOptions{WorkerID: "w", Wait: 5 * time.Second})
	if err != nil || len(ds) != 1 || ds[0].Ctx.JobID != pending.JobID {
		t.Fatalf("reserve on the new leader: %v, %v", ds, err)
	}
	if _, err := c.Nack(ctx, ds[0].Ctx, client.DeadLetter(), "after the crash"); err != nil {
		t.Fatal(err)
	}
	select {
	case a := <-waited:
		if a.err != nil || !a.out.Terminal || a.out.State != client.StateDead {
			t.Fatalf("the wait through the crash = %+v, %v; want terminal, dead", a.out, a.err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the wait through the crash did not end when the job died on the new leader")
	}
}
