package integration

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/sepp-io/sepp/client"
	"github.com/sepp-io/sepp/devcluster"
	seppv1 "github.com/sepp-io/sepp/proto/sepp/v1"
)

// TestMemoryBudgetInOwnCgroup runs three real sepp processes, each started
// inside a memory cgroup of its own as systemd's MemoryMax= does (not in a
// container whose cgroup is mounted as the root), and floods them as
// TestMemoryBudgetUnderContainerLimit does: each node must find its limit
// in its own cgroup or an ancestor's, producers must be refused, no node
// may die, and all three must restart within the limit and drain (issue
// 36). The nodes' layouts differ: node 1 runs in the limited cgroup itself,
// node 2 in an unlimited child of it (the limit is an ancestor's), node 3
// in a child whose own limit (memLimitMiB) is below its parent's.
func TestMemoryBudgetInOwnCgroup(t *testing.T) {
	t.Parallel()
	floodInOwnCgroups(t, clusterTOML, 6*time.Minute, 1)
}

// TestMemoryBudgetInOwnCgroup_PayloadsOnDisk is TestMemoryBudgetInOwnCgroup
// with limits.payload_budget = "disk": the memory budget counts job records
// and keys only, so each node holds several times the jobs in the same
// limit, their payloads in its payload store; all three must still restart
// within the limit (over the payload stores they kept) and drain every job
// once (issue 35). Its refusals stop at a quarter of the jobs accepted: it
// accepts ten times the jobs of the others (some 900,000), and a refused
// job's 1 KiB goes through the log as an accepted one's does, so a full
// share would double a run that is already the package's longest; what
// refused traffic does to a node's memory the two other tests measure at
// the full share.
func TestMemoryBudgetInOwnCgroup_PayloadsOnDisk(t *testing.T) {
	t.Parallel()
	toml := strings.Replace(clusterTOML, "[limits]\n", "[limits]\npayload_budget = \"disk\"\n", 1)
	if toml == clusterTOML {
		t.Fatal("clusterTOML has no [limits] table to add payload_budget to")
	}
	floodInOwnCgroups(t, toml, 12*time.Minute, 0.25)
}

func floodInOwnCgroups(t *testing.T, extraTOML string, timeout time.Duration, refusedPerAccepted float64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	c, insp := startInOwnCgroups(ctx, t, extraTOML, int64(memLimitMiB)<<20)
	defer dumpLogs(t, c)
	requireDefaultBudget(ctx, t, c.Addrs()[0])
	floodRestartDrain(ctx, t, c, insp, refusedPerAccepted)
}

// cgroupSeq numbers the cgroup trees this process makes.
var cgroupSeq atomic.Int64

// startInOwnCgroups starts three real nodes, each inside a memory cgroup of
// its own limited to limit bytes, in the three layouts systemd makes (see
// TestMemoryBudgetInOwnCgroup), waits for a leader and for every member to
// report the limit it found, and returns the cluster and a client of it.
func startInOwnCgroups(ctx context.Context, t *testing.T, extraTOML string, limit int64) (cgroupBudgeted, *client.Client) {
	t.Helper()
	requireLong(t)
	h := requireCgroupHierarchy(t)

	// A name of its own: the tests run side by side (doc.go).
	base := filepath.Join(h.dir, fmt.Sprintf("sepp-test-%d-%d-%d", os.Getpid(), cgroupSeq.Add(1), limit>>20))
	var nodeDirs [3]string
	for i, layout := range []struct {
		limited, run string
		childLimit   int64
	}{
		{limited: "node-1", run: "node-1"},
		{limited: "node-2", run: "node-2/service"},
		{limited: "node-3", run: "node-3/service", childLimit: limit},
	} {
		limitedDir := filepath.Join(base, layout.limited)
		h.mkdir(t, limitedDir)
		parentLimit := limit
		if layout.childLimit > 0 {
			parentLimit = 2 * limit
		}
		h.setLimit(t, limitedDir, parentLimit)
		nodeDirs[i] = filepath.Join(base, layout.run)
		if nodeDirs[i] != limitedDir {
			h.mkdir(t, nodeDirs[i])
			if layout.childLimit > 0 {
				h.setLimit(t, nodeDirs[i], layout.childLimit)
			}
		}
	}
	t.Cleanup(func() { h.removeTree(t, base) })

	// The node's command line, run by a shell that first moves itself into
	// the node's cgroup and then becomes the node (exec), as systemd starts
	// a unit's process inside the unit's cgroup.
	launch := func(node int, argv []string) []string {
		procs := filepath.Join(nodeDirs[node], "cgroup.procs")
		return append([]string{"/bin/sh", "-c", `echo $$ > "$0" && shift && exec "$@"`, procs, "--"}, argv...)
	}
	dc, err := devcluster.Start(devcluster.Options{Binary: seppBinary, Nodes: 3, Dir: t.TempDir(), ExtraTOML: extraTOML, Launch: launch})
	if err != nil {
		t.Fatalf("start cluster: %v", err)
	}
	t.Cleanup(func() { _ = dc.Stop() })
	c := cgroupBudgeted{localCluster: localCluster{dc}, h: h, nodeDirs: nodeDirs, limitMiB: limit >> 20}
	if err := dc.WaitServing(ctx); err != nil {
		t.Fatalf("%v\n%s", err, c.LogTail(0))
	}
	for i := range nodeDirs {
		if !h.holds(nodeDirs[i], dc.Pid(i)) {
			t.Fatalf("node %d (pid %d) is not in its cgroup %s", i+1, dc.Pid(i), nodeDirs[i])
		}
	}
	insp := newClient(ctx, t, c.Addrs())
	waitLeader(ctx, t, insp, c, 60*time.Second, -1)
	requireMembersFoundLimit(ctx, t, c.Addrs()[0], limit)
	return c, insp
}

// requireMembersFoundLimit fails t unless every member reports limit bytes
// from its cgroup as its memory limit.
func requireMembersFoundLimit(ctx context.Context, t *testing.T, addr string, limit int64) {
	t.Helper()
	cc, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	var last string
	if err := waitFor(ctx, 30*time.Second, func(ctx context.Context) (bool, error) {
		info, err := seppv1.NewQueueServiceClient(cc).GetServerInfo(ctx, &seppv1.GetServerInfoRequest{})
		if err != nil {
			return false, err
		}
		var seen []string
		for _, m := range info.GetMembers() {
			seen = append(seen, fmt.Sprintf("%s: %d from %q", m.GetNodeId(), m.GetMemoryLimitBytes(), m.GetMemoryLimitFrom()))
			if m.GetMemoryLimitBytes() != limit || m.GetMemoryLimitFrom() != "cgroup memory limit" {
				last = strings.Join(seen, "; ")
				return false, errors.New("not every member found its cgroup's limit")
			}
		}
		last = strings.Join(seen, "; ")
		return len(info.GetMembers()) == 3, errors.New("not every member has reported")
	}); err != nil {
		t.Fatalf("members' memory limits, want %d from the cgroup: %s: %v", limit, last, err)
	}
	t.Logf("members' memory limits: %s", last)
}

// cgroupBudgeted runs floodRestartDrain on nodes in cgroups of their own.
type cgroupBudgeted struct {
	localCluster
	h        cgroupHierarchy
	nodeDirs [3]string
	limitMiB int64 // each node's memory limit
}

func (c cgroupBudgeted) killAll(_ context.Context, t *testing.T) {
	t.Helper()
	for i := range c.nodeDirs {
		if err := c.Kill(i); err != nil {
			t.Fatal(err)
		}
	}
}

func (c cgroupBudgeted) startAll(_ context.Context, t *testing.T) {
	t.Helper()
	for i := range c.nodeDirs {
		if err := c.StartNode(i); err != nil {
			t.Fatal(err)
		}
	}
}

func (c cgroupBudgeted) requireAlive(_ context.Context, t *testing.T, when string) {
	t.Helper()
	for i, dir := range c.nodeDirs {
		if !c.Running(i) {
			t.Fatalf("%s: node %d is not running:\n%s", when, i+1, c.LogTail(i))
		}
		if !c.h.holds(dir, c.Pid(i)) {
			t.Fatalf("%s: node %d (pid %d) left its cgroup", when, i+1, c.Pid(i))
		}
		// The limited cgroup and the one the node runs in.
		for _, d := range []string{filepath.Dir(dir), dir} {
			if events, err := os.ReadFile(filepath.Join(d, c.h.eventsFile)); err == nil {
				requireNoOOMKill(t, string(events), when, c.IDs()[i])
			}
		}
	}
}

func (c cgroupBudgeted) reportPeaks(_ context.Context, t *testing.T, name string) {
	t.Helper()
	for i := range c.nodeDirs {
		reportPeak(t, strconv.Itoa(c.Pid(i)), fmt.Sprintf("%s_rss_%s", name, c.IDs()[i]), c.limitMiB)
	}
}

// cgroupHierarchy is a mounted memory cgroup hierarchy this test may make
// cgroups in.
type cgroupHierarchy struct {
	dir        string
	v2         bool
	eventsFile string // where the kernel counts OOM kills
}

// requireCgroupHierarchy finds a writable memory hierarchy: cgroup v2 at
// /sys/fs/cgroup with the memory controller enabled for children, else
// cgroup v1's memory controller. It skips t (fails in CI) when there is
// none, e.g. when not root.
func requireCgroupHierarchy(t *testing.T) cgroupHierarchy {
	t.Helper()
	if os.Geteuid() != 0 {
		skipOrFail(t, "making memory cgroups needs root: cgroup test skipped")
	}
	if ctl, err := os.ReadFile("/sys/fs/cgroup/cgroup.subtree_control"); err == nil && strings.Contains(" "+string(ctl)+" ", " memory ") {
		return cgroupHierarchy{dir: "/sys/fs/cgroup", v2: true, eventsFile: "memory.events"}
	}
	if _, err := os.Stat("/sys/fs/cgroup/memory/memory.limit_in_bytes"); err == nil {
		return cgroupHierarchy{dir: "/sys/fs/cgroup/memory", eventsFile: "memory.oom_control"}
	}
	skipOrFail(t, "no writable memory cgroup hierarchy (v2 with memory in /sys/fs/cgroup/cgroup.subtree_control, or v1 at /sys/fs/cgroup/memory): cgroup test skipped")
	return cgroupHierarchy{}
}

func (h cgroupHierarchy) mkdir(t *testing.T, dir string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		skipOrFail(t, fmt.Sprintf("cannot make a cgroup (%v): cgroup test skipped", err))
	}
	if h.v2 {
		// A v2 cgroup's children get the memory controller only when it
		// enables it for them.
		_ = os.WriteFile(filepath.Join(dir, "cgroup.subtree_control"), []byte("+memory"), 0o644)
	}
}

// setLimit sets dir's memory limit to n bytes with no swap beyond it.
func (h cgroupHierarchy) setLimit(t *testing.T, dir string, n int64) {
	t.Helper()
	v := []byte(strconv.FormatInt(n, 10))
	if h.v2 {
		if err := os.WriteFile(filepath.Join(dir, "memory.max"), v, 0o644); err != nil {
			t.Fatal(err)
		}
		_ = os.WriteFile(filepath.Join(dir, "memory.swap.max"), []byte("0"), 0o644) // absent without swap accounting
		return
	}
	if err := os.WriteFile(filepath.Join(dir, "memory.limit_in_bytes"), v, 0o644); err != nil {
		t.Fatal(err)
	}
	_ = os.WriteFile(filepath.Join(dir, "memory.memsw.limit_in_bytes"), v, 0o644) // absent without swap accounting
}

// holds reports whether process pid is in cgroup dir.
func (h cgroupHierarchy) holds(dir string, pid int) bool {
	data, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
	if err != nil {
		return false
	}
	for _, f := range strings.Fields(string(data)) {
		if f == strconv.Itoa(pid) {
			return true
		}
	}
	return false
}

// removeTree removes the cgroups under base, children first (a cgroup is
// removed with rmdir once no process is in it).
func (h cgroupHierarchy) removeTree(t *testing.T, base string) {
	t.Helper()
	var dirs []string
	_ = filepath.WalkDir(base, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			dirs = append(dirs, p)
		}
		return nil
	})
	deadline := time.Now().Add(10 * time.Second)
	for i := len(dirs) - 1; i >= 0; i-- {
		for os.Remove(dirs[i]) != nil && time.Now().Before(deadline) {
			time.Sleep(50 * time.Millisecond) // the killed nodes' last exit
		}
	}
}
