package integration

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sepp-io/sepp/client"
	"github.com/sepp-io/sepp/devcluster"
)

// buildTagged builds cmd/sepp with a test build tag into a temporary
// folder.
func buildTagged(t *testing.T, tag string) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "sepp-"+tag)
	build := exec.Command("go", "build", "-tags", tag, "-o", bin, "./cmd/sepp")
	build.Dir = repoRoot
	build.Env = append(build.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build with -tags %s: %v\n%s", tag, err, out)
	}
	return bin
}

// A leader whose disk fails a log write (EIO, as a failed fsync reports)
// exits with code 74 instead of stepping down and retrying; the others go
// on under the nemesis's workload, the node restarts on a healthy disk and
// catches up, and the history holds: nothing acknowledged lost or
// duplicated (issue 36). The binary is built with the tag
// sepp_fault_inject, whose log store fails every write while the data dir
// holds the file inject-eio (cluster/faultinject_on.go).
func TestDiskFault_FailedFsyncStopsTheLeader(t *testing.T) {
	t.Parallel()
	requireLong(t)
	runLeaderDiskFault(t, "failed-fsync", "inject-eio", func(ctx context.Context, insp *client.Client, c localCluster, li int, trigger string) (story []string, err error) {
		node, start := c.Nodes[li], time.Now()
		if err := waitFor(ctx, 20*time.Second, func(context.Context) (bool, error) {
			return !c.Running(li), fmt.Errorf("%s still runs", node.ID)
		}); err != nil {
			return story, fmt.Errorf("the leader whose disk failed a write did not exit: %w", err)
		}
		story = append(story, fmt.Sprintf("%s exited %s after its disk began failing", node.ID, time.Since(start).Round(time.Millisecond)))
		logTail := tail(filepath.Join(node.Dir, "sepp.log"), 40)
		if !strings.Contains(logTail, "exiting: the disk failed a write to the node's store") || !strings.Contains(logTail, "exit_code=74") {
			return story, fmt.Errorf("%s's log does not say why it exited:\n%s", node.ID, logTail)
		}
		nl := waitLeader(ctx, t, insp, c, 20*time.Second, li)
		story = append(story, fmt.Sprintf("%s leads", c.Nodes[nl].ID))
		pause(ctx, 2*time.Second) // load on two nodes
		if err := os.Remove(trigger); err != nil {
			return story, err
		}
		if err := c.StartNode(li); err != nil {
			return story, err
		}
		if err := waitNodeServes(ctx, c, li, 30*time.Second); err != nil {
			return story, fmt.Errorf("%s after the disk fault: %w\n%s", node.ID, err, c.LogTail(li))
		}
		if err := waitCaughtUp(ctx, insp, c, li, 30*time.Second); err != nil {
			return story, err
		}
		return append(story, fmt.Sprintf("%s restarted and caught up", node.ID)), nil
	})
}

// A node killed in the middle of a payload-store flush, with half of the
// flush's first table written and the store's manifest not yet naming it,
// three times in a row, each time on the node then leading: the node
// restarts (the store is emptied and rebuilt from the snapshot and the log
// at every start, so the torn table never matters), catches up, and the
// history holds: nothing acknowledged lost or duplicated (issues 35 and
// 36). The binary is built with the tag sepp_fault_inject, whose store
// flushes and dies so once the data dir holds the file
// inject-kill-in-flush (store/faultinject_on.go).
func TestDiskFault_KilledInAStoreFlush(t *testing.T) {
	t.Parallel()
	requireLong(t)
	const rounds = 3
	runLeaderDiskFault(t, "killed-in-flush", "inject-kill-in-flush", func(ctx context.Context, insp *client.Client, c localCluster, li int, trigger string) (story []string, err error) {
		for round := 1; ; round++ {
			node, start := c.Nodes[li], time.Now()
			if err := waitFor(ctx, 20*time.Second, func(context.Context) (bool, error) {
				return !c.Running(li), fmt.Errorf("%s still runs", node.ID)
			}); err != nil {
				return story, fmt.Errorf("round %d: the node told to die in a flush did not: %w\n%s", round, err, c.LogTail(li))
			}
			logTail := tail(filepath.Join(node.Dir, "sepp.log"), 40)
			at := strings.Index(logTail, "store: killed with")
			if at < 0 {
				return story, fmt.Errorf("round %d: %s exited, but not in a flush:\n%s", round, node.ID, logTail)
			}
			killed, _, _ := strings.Cut(logTail[at:], " (injected")
			nl := waitLeader(ctx, t, insp, c, 20*time.Second, li)
			story = append(story, fmt.Sprintf("round %d: %s %s, %s in; %s leads",
				round, node.ID, killed, time.Since(start).Round(time.Millisecond), c.Nodes[nl].ID))
			if err := c.StartNode(li); err != nil {
				return story, err
			}
			restarted := time.Now()
			if err := waitNodeServes(ctx, c, li, 30*time.Second); err != nil {
				return story, fmt.Errorf("round %d: %s after its kill in a flush: %w\n%s", round, node.ID, err, c.LogTail(li))
			}
			if err := waitCaughtUp(ctx, insp, c, li, 30*time.Second); err != nil {
				return story, fmt.Errorf("round %d: %w", round, err)
			}
			story = append(story, fmt.Sprintf("%s restarted and caught up in %s", node.ID, time.Since(restarted).Round(time.Millisecond)))
			if round == rounds {
				return story, nil
			}
			pause(ctx, 2*time.Second) // the store fills again
			if li, err = leaderIndex(ctx, insp, c); err != nil {
				return story, err
			}
			if err := os.WriteFile(filepath.Join(c.Nodes[li].Dir, "data", "inject-kill-in-flush"), nil, 0o644); err != nil {
				return story, err
			}
		}
	})
}

// runLeaderDiskFault runs the nemesis's workload on a build with the tag
// sepp_fault_inject (cluster/faultinject_on.go) and, two seconds in,
// creates the file trigger in the leader's data dir (its path is fault's
// last argument); fault then follows and heals the fault and tells its
// story. The history must hold: nothing acknowledged lost or duplicated.
func runLeaderDiskFault(t *testing.T, name, trigger string, fault func(ctx context.Context, insp *client.Client, c localCluster, li int, trigger string) (story []string, err error)) {
	t.Helper()
	runInjectedFault(t, name, "", func(ctx context.Context, insp *client.Client, c localCluster) ([]string, error) {
		li, err := leaderIndex(ctx, insp, c)
		if err != nil {
			return nil, err
		}
		path := filepath.Join(c.Nodes[li].DataDir(), trigger)
		if err := os.WriteFile(path, nil, 0o644); err != nil {
			return nil, err
		}
		return fault(ctx, insp, c, li, path)
	})
}

// runInjectedFault runs the nemesis's workload on a build with the tag
// sepp_fault_inject, each node's config extended by extraTOML, and, two
// seconds in, fault, which makes and heals its faults and tells its story.
// The history must hold: nothing acknowledged lost or duplicated, and the
// cluster live and agreed at the end.
func runInjectedFault(t *testing.T, name, extraTOML string, fault func(ctx context.Context, insp *client.Client, c localCluster) (story []string, err error)) {
	t.Helper()
	bin := buildTagged(t, "sepp_fault_inject")
	var faultErr error
	var story []string
	r := runCampaign(t, campaignOptions{
		Schedule: schedule{}, Name: name, Binary: bin, ExtraTOML: extraTOML,
		During: func(ctx context.Context, c localCluster) func() {
			done := make(chan struct{})
			go func() {
				defer close(done)
				insp := newClient(ctx, t, c.Addrs())
				pause(ctx, 2*time.Second)
				story, faultErr = fault(ctx, insp, c)
			}()
			return func() { <-done }
		},
	})
	r.print(t)
	if faultErr != nil {
		t.Fatalf("%s: %v", name, faultErr)
	}
	t.Logf("%s: %s", name, strings.Join(story, "; "))
	for _, p := range r.Liveness {
		t.Errorf("liveness: %s", p)
	}
	if !r.Checked {
		t.Fatal("the history was not checked")
	}
}

// A leader whose disk stops answering for seconds (every log write waits,
// as a disk stuck in its firmware or a saturated volume does): the write
// times out after [cluster] store_write_timeout_ms, the leader steps down,
// another node leads and serves the nemesis's workload; when the disk
// answers again the node, never restarted, catches up; the history holds:
// nothing acknowledged lost or duplicated (issue 36). The binary is built
// with the tag sepp_fault_inject, whose log store waits while the data dir
// holds the file inject-stall (cluster/faultinject_on.go).
func TestDiskFault_StalledDiskOnTheLeader(t *testing.T) {
	t.Parallel()
	requireLong(t)
	const stallFor = 8 * time.Second // above the default store_write_timeout_ms (5 s)
	runLeaderDiskFault(t, "stalled-disk", "inject-stall", func(ctx context.Context, insp *client.Client, c localCluster, li int, trigger string) (story []string, err error) {
		node, start := c.Nodes[li], time.Now()
		nl := waitLeader(ctx, t, insp, c, 20*time.Second, li)
		story = append(story, fmt.Sprintf("%s's disk stalled; %s leads %s later", node.ID, c.Nodes[nl].ID, time.Since(start).Round(time.Millisecond)))
		pause(ctx, stallFor-time.Since(start))
		if !c.Running(li) {
			return story, fmt.Errorf("%s exited while its disk stalled; a stall is not a failure:\n%s", node.ID, c.LogTail(li))
		}
		if err := os.Remove(trigger); err != nil {
			return story, err
		}
		healed := time.Now()
		if err := waitCaughtUp(ctx, insp, c, li, 30*time.Second); err != nil {
			return story, fmt.Errorf("%s after its disk answered again: %w\n%s", node.ID, err, c.LogTail(li))
		}
		return append(story, fmt.Sprintf("its disk answered again after %s; it caught up %s later without a restart",
			stallFor.Round(time.Second), time.Since(healed).Round(time.Millisecond))), nil
	})
}

// A byte flipped in a sealed segment of a follower's Raft log between two
// runs: the node refuses to start and names the file; the operator's way
// back (docs/backup-and-restore.md: remove the member, delete its data,
// start it empty, join it) brings it back with every job (issue 36).
func TestDiskFault_FlippedByteInASealedSegment(t *testing.T) {
	t.Parallel()
	requireLong(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	dc, err := devcluster.Start(devcluster.Options{Binary: seppBinary, Nodes: 3, Dir: t.TempDir(),
		ExtraTOML: strings.Replace(clusterTOML, "[storage]\n", "[storage]\nwal_segment_mb = 1\n", 1)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = dc.Stop() })
	c := localCluster{dc}
	defer dumpLogs(t, c)
	if err := dc.WaitServing(ctx); err != nil {
		t.Fatal(err)
	}
	insp := newClient(ctx, t, c.Addrs())
	li := waitLeader(ctx, t, insp, c, 20*time.Second, -1)
	// Three 1 MiB segments' worth of jobs: the first segments are sealed.
	var ids []uint64
	for b := 0; b < 30; b++ {
		reqs := make([]*client.EnqueueRequest, 100)
		for i := range reqs {
			reqs[i] = client.NewEnqueueRequest("corrupt", "fill").WithPayload(make([]byte, 1024))
		}
		res, err := insp.EnqueueBatch(ctx, reqs)
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
	f := followerOf(li)
	node := c.Nodes[f]
	if err := waitCaughtUp(ctx, insp, c, f, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	if err := c.StopNode(f, 20*time.Second); err != nil {
		t.Fatal(err)
	}
	segs, _ := filepath.Glob(filepath.Join(node.Dir, "data", "wal", "*.wal"))
	slices.Sort(segs)
	if len(segs) < 2 {
		t.Fatalf("want a sealed segment and the open one, found %v", segs)
	}
	sealed := segs[0]
	data, err := os.ReadFile(sealed)
	if err != nil {
		t.Fatal(err)
	}
	data[len(data)/3] ^= 0x20
	if err := os.WriteFile(sealed, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := c.StartNode(f); err != nil {
		t.Fatal(err)
	}
	if err := waitFor(ctx, 30*time.Second, func(context.Context) (bool, error) {
		return !c.Running(f), fmt.Errorf("%s still runs on a corrupt segment", node.ID)
	}); err != nil {
		t.Fatalf("%v\n%s", err, c.LogTail(f))
	}
	why := lastLogError(node.Dir)
	if !strings.Contains(why, "corrupt data on disk") || !strings.Contains(why, filepath.Join(node.Dir, "data", "wal")) {
		t.Fatalf("%s refused to start without naming the corrupt log: %q", node.ID, why)
	}
	t.Logf("%s refused to start: %s", node.ID, why)

	// The operator's way back: remove, wipe, start empty, join.
	n := &nemesis{t: t, c: c, insp: insp, start: time.Now(), nodeMu: make([]sync.Mutex, 3)}
	n.wipe(ctx, f, node.ID)
	if len(n.problems) > 0 || len(n.failed) > 0 {
		t.Fatalf("wipe and rejoin: %v %v", n.problems, n.failed)
	}
	if err := waitCaughtUp(ctx, insp, c, f, 60*time.Second); err != nil {
		t.Fatal(err)
	}
	if _, err := waitReplicasAgree(ctx, c, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	// Every job is there, on the rejoined node too.
	cc := newClient(ctx, t, []string{node.GRPCAddr})
	for _, id := range []uint64{ids[0], ids[len(ids)/2], ids[len(ids)-1]} {
		if _, err := cc.GetJob(ctx, id, true); err != nil {
			t.Fatalf("job %d on the rejoined %s: %v", id, node.ID, err)
		}
	}
}

// A torn write at the tail of a follower's Raft log (the last record of
// its open segment cut mid-way, as a power loss during the write leaves
// it): the node restarts, drops only that unfinished tail, and catches up
// from the leader (issue 36).
func TestDiskFault_TornWriteAtTheLogTail(t *testing.T) {
	t.Parallel()
	requireLong(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c := startLocal(t)
	defer dumpLogs(t, c)
	insp := newClient(ctx, t, c.Addrs())
	li := waitLeader(ctx, t, insp, c, 20*time.Second, -1)
	for i := 0; i < 200; i++ {
		if _, err := insp.Enqueue(ctx, client.NewEnqueueRequest("torn", "t").WithPayload([]byte(fmt.Sprintf("job %d", i)))); err != nil {
			t.Fatal(err)
		}
	}
	f := followerOf(li)
	node := c.Nodes[f]
	if err := waitCaughtUp(ctx, insp, c, f, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	if err := c.Kill(f); err != nil {
		t.Fatal(err)
	}
	segs, _ := filepath.Glob(filepath.Join(node.Dir, "data", "wal", "*.wal"))
	slices.Sort(segs)
	if len(segs) == 0 {
		t.Fatal("no WAL segment")
	}
	open := segs[len(segs)-1]
	data, err := os.ReadFile(open)
	if err != nil {
		t.Fatal(err)
	}
	end := len(data)
	for end > 0 && data[end-1] == 0 { // the segment is preallocated: written data ends at the last non-zero byte
		end--
	}
	if end < 64 {
		t.Fatalf("%s holds no records", open)
	}
	for i := end - 24; i < end; i++ { // the last record's tail never reached the disk
		data[i] = 0
	}
	if err := os.WriteFile(open, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := c.StartNode(f); err != nil {
		t.Fatal(err)
	}
	if err := waitNodeServes(ctx, c, f, 30*time.Second); err != nil {
		t.Fatalf("%s did not restart after a torn tail write: %v\n%s", node.ID, err, c.LogTail(f))
	}
	if err := waitCaughtUp(ctx, insp, c, f, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	if _, err := waitReplicasAgree(ctx, c, 30*time.Second); err != nil {
		t.Fatal(err)
	}
}
