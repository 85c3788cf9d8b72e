package integration

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/sepp-io/sepp/client"
	"github.com/sepp-io/sepp/devcluster"
	"github.com/sepp-io/sepp/integration/history"
	seppv1 "github.com/sepp-io/sepp/proto/sepp/v1"
)

// The nemesis: a Jepsen-style campaign of seeded, randomized fault
// schedules against three real `sepp serve` processes, each in its own
// network namespace where that can be had, while producers and workers of
// two clients (client/ and rawClient, built on the protos alone) record
// every call. Safety is the history checker's (0 lost, 0 duplicated, 0
// double leases, stale acks refused, attempts in order); liveness is the
// campaign's own: every restart of every node comes up and serves, and
// within livenessBound of the schedule's end the cluster takes a write and
// every replica holds the same state digest.

var seedFlag = flag.String("seed", "", "nemesis: comma-separated seeds to run (replays a run; also SEPP_NEMESIS_SEEDS)")

// ciSeeds run when no seed is asked for: CI's fixed set.
var ciSeeds = []uint64{1, 2, 3}

// livenessBound is how soon after the schedule's end the cluster must take
// writes.
const livenessBound = 2 * time.Second

// agreementBound is how soon after the schedule's end every running
// replica must hold the same state. It is longer than livenessBound for a
// node whose last fault, a kill, heals as the schedule ends: the node
// takes about 1 s to serve, and raft's leader retries appends to a
// follower whose appends failed only after a backoff that doubles from
// 10 ms per failure (replication.go), so a follower that was down 2 s is
// tried again up to ~1.3 s after it listens (CI once measured 2.3 s).
const agreementBound = 4 * time.Second

// nemesisSeeds are the seeds to run: -seed, else SEPP_NEMESIS_SEEDS, else
// SEPP_NEMESIS_COUNT seeds from a random base (printed), else ciSeeds.
func nemesisSeeds(t *testing.T) []uint64 {
	t.Helper()
	list := *seedFlag
	if list == "" {
		list = os.Getenv("SEPP_NEMESIS_SEEDS")
	}
	if list != "" {
		var out []uint64
		for s := range strings.SplitSeq(list, ",") {
			n, err := strconv.ParseUint(strings.TrimSpace(s), 10, 64)
			if err != nil {
				t.Fatalf("nemesis seeds %q: %q is not a seed", list, s)
			}
			out = append(out, n)
		}
		return out
	}
	if v := os.Getenv("SEPP_NEMESIS_COUNT"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 {
			t.Fatalf("SEPP_NEMESIS_COUNT=%q: want a positive number of seeds", v)
		}
		base := uint64(time.Now().UnixNano()%1_000_000) * 1000
		out := make([]uint64, n)
		for i := range out {
			out[i] = base + uint64(i)
		}
		return out
	}
	return ciSeeds
}

// nemesisScheduleOptions: CI's size unless SEPP_NEMESIS_LENGTH asks for
// longer runs (`make nemesis`), which get more faults in proportion.
func nemesisScheduleOptions(t *testing.T, partitions bool) scheduleOptions {
	t.Helper()
	o := scheduleOptions{Nodes: 3, Length: 20 * time.Second, RestartsPerNode: 2, Extra: 6, Partitions: partitions, MaxConcurrent: 2}
	if v := os.Getenv("SEPP_NEMESIS_LENGTH"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < 5*time.Second {
			t.Fatalf("SEPP_NEMESIS_LENGTH=%q: want a duration of at least 5s", v)
		}
		scale := float64(d) / float64(o.Length)
		o.Length, o.RestartsPerNode, o.Extra = d, max(2, int(float64(o.RestartsPerNode)*scale+0.5)), int(float64(o.Extra)*scale+0.5)
	}
	return o
}

func TestNemesis(t *testing.T) {
	t.Parallel()
	requireLong(t)
	partitions := true
	if why := netnsUnavailable(); why != "" {
		if os.Getenv("SEPP_REQUIRE_ALL") != "" {
			t.Fatal("SEPP_REQUIRE_ALL is set (CI) but " + why)
		}
		partitions = false
		t.Logf("nemesis: partitions skipped: %s; the other faults run", why)
		fmt.Printf("nemesis: partitions skipped: %s\n", why)
	}
	for _, seed := range nemesisSeeds(t) {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			t.Parallel() // each seed's cluster is its own (doc.go)
			sched := genSchedule(seed, nemesisScheduleOptions(t, partitions))
			// The schedule depends on its length too: a replay names both.
			replay := fmt.Sprintf("make nemesis SEED=%d, or go test ./integration -run 'TestNemesis$' -seed %d", seed, seed)
			if l := os.Getenv("SEPP_NEMESIS_LENGTH"); l != "" {
				replay = fmt.Sprintf("make nemesis SEED=%d LENGTH=%s, or SEPP_NEMESIS_LENGTH=%s go test ./integration -run 'TestNemesis$' -seed %d", seed, l, l, seed)
			}
			fmt.Printf("nemesis: seed %d (replay: %s)\n", seed, replay)
			r := runCampaign(t, campaignOptions{Schedule: sched, Partitions: partitions, Workflows: true})
			r.print(t)
			for _, p := range r.Liveness {
				t.Errorf("liveness: %s", p)
			}
			if t.Failed() {
				t.Logf("nemesis: seed %d failed; replay: %s\n%s", seed, replay, sched)
				fmt.Printf("nemesis: seed %d FAILED (replay: %s)\n", seed, replay)
			}
		})
	}
}

type campaignOptions struct {
	Schedule schedule
	// Recipe, when set, makes the schedule's faults once the first leader
	// is known (a scripted scenario rather than a drawn one).
	Recipe     func(leader int) []fault
	Partitions bool   // run the nodes in network namespaces
	Binary     string // default seppBinary
	// Name labels the figures (default "seed=N").
	Name string
	// PlantedLoss says the schedule makes a job vanish on purpose: the
	// history's violations are the caller's to assert, not errors.
	PlantedLoss bool
	// Launch, when set and the nodes run without network namespaces,
	// turns a node's command line into the one started (devcluster's
	// Options.Launch): the rolling upgrade picks each node's binary with it.
	Launch func(node int, argv []string) []string
	// DeadLetterRetention, when set, keeps dead letters this long instead of
	// clusterTOML's hour: a run longer than that must outlive it, or the
	// final read misses the first dead letters and counts them lost.
	DeadLetterRetention time.Duration
	// MaxJobs bounds the workload's distinct jobs (default 200,000).
	MaxJobs int
	// ExtraTOML is appended to every node's config after clusterTOML (a
	// [cluster] table of other snapshot settings, say).
	ExtraTOML string
	// During, when set, starts with the workload and is stopped, by the
	// function it returns, once the schedule is over (the soak's sampler).
	During func(ctx context.Context, c localCluster) (stop func())
	// Workflows runs the workflow workload beside the others
	// (nemesis_workflow_test.go); the campaigns of an older binary (the
	// rolling upgrade) and of a fixed purpose leave it out.
	Workflows bool
}

// restartFailure is a start of a node's process that did not come up and
// serve.
type restartFailure struct {
	Node  string
	Fault string // the fault whose heal it was
	Err   string
}

func (f restartFailure) String() string {
	return fmt.Sprintf("%s did not restart after %s: %s", f.Node, f.Fault, f.Err)
}

type campaignReport struct {
	Name           string
	Seed           uint64
	Injected       [numFaultKinds]int
	Restarts       int
	FailedRestarts []restartFailure
	History        history.Report
	Checked        bool          // the history was checked (a majority was left to drain and read)
	Unavailable    time.Duration // longest stretch without a successful write during the schedule
	WritesAfter    time.Duration // from the schedule's end to the first write taken
	AgreeAfter     time.Duration // from the schedule's end to equal digests
	// Liveness lists what the campaign found wrong besides the history:
	// failed restarts, a cluster slow to take writes or to agree.
	Liveness []string
	// Vanished are the jobs a faultVanish made disappear.
	Vanished []uint64
	// LogTails are the nodes' last log lines at the end, for a caller
	// whose own checks of the report fail.
	LogTails []string
}

func (r campaignReport) faults() string {
	var parts []string
	total := 0
	for k, n := range r.Injected {
		if n > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", faultKind(k), n))
			total += n
		}
	}
	return fmt.Sprintf("%d (%s)", total, strings.Join(parts, ", "))
}

// print reports the seed's figures, and appends its table row to the file
// SEPP_NEMESIS_TABLE names (docs/nemesis.md's table is made of them).
func (r campaignReport) print(t *testing.T) {
	t.Helper()
	name := "nemesis " + r.Name
	report(t, name+" faults", r.faults(), "")
	report(t, name+" restarts", fmt.Sprintf("%d (%d failed)", r.Restarts, len(r.FailedRestarts)), "")
	if !r.Checked {
		report(t, name+" history", "not checked", "(no majority left)")
	}
	report(t, name+" jobs", r.History.EnqueueOK, "acknowledged")
	report(t, name+" lost", len(r.History.Lost), "jobs")
	report(t, name+" duplicated", len(r.History.Duplicates), "jobs")
	report(t, name+" double_leases", len(r.History.DoubleLeases), "jobs")
	report(t, name+" unavailable", ms(r.Unavailable), "ms")
	report(t, name+" writes_after_end", ms(r.WritesAfter), "ms")
	report(t, name+" replicas_agree_after_end", ms(r.AgreeAfter), "ms")
	if path := os.Getenv("SEPP_NEMESIS_TABLE"); path != "" {
		jobs, lost, dup := "not checked", "-", "-"
		if r.Checked {
			jobs, lost, dup = fmt.Sprint(r.History.EnqueueOK), fmt.Sprint(len(r.History.Lost)), fmt.Sprint(len(r.History.Duplicates))
		}
		row := fmt.Sprintf("| %d | %s | %d | %d | %s | %s | %s | %d ms | %d ms | %d ms |\n", r.Seed, r.faults(), r.Restarts, len(r.FailedRestarts),
			jobs, lost, dup, ms(r.Unavailable), ms(r.WritesAfter), ms(r.AgreeAfter))
		f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err == nil {
			_, err = f.WriteString(row)
			f.Close()
		}
		if err != nil {
			t.Errorf("SEPP_NEMESIS_TABLE: %v", err)
		}
	}
}

// nemesis runs one schedule's faults against a cluster.
type nemesis struct {
	t *testing.T
	w *workload // the lone writes are recorded in its history
	// loneConns are connections made ahead for lone writes, by node (only
	// fixed-node lone writes, at most one per node).
	loneConns []*grpc.ClientConn
	c         localCluster
	net       *nodeNet // nil without partitions
	insp      *client.Client
	start     time.Time
	nodeMu    []sync.Mutex // one process fault per node at a time
	wipeMu    sync.Mutex   // one wipe at a time

	mu       sync.Mutex
	injected [numFaultKinds]int
	restarts int
	failed   []restartFailure
	problems []string
	vanished []uint64
}

func (n *nemesis) logf(format string, args ...any) {
	n.t.Logf("nemesis +%.1fs: %s", time.Since(n.start).Seconds(), fmt.Sprintf(format, args...))
}

func (n *nemesis) problem(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	n.logf("PROBLEM: %s", msg)
	n.mu.Lock()
	n.problems = append(n.problems, msg)
	n.mu.Unlock()
}

func runCampaign(t *testing.T, o campaignOptions) campaignReport {
	t.Helper()
	sched := o.Schedule
	t.Logf("nemesis schedule, %s", sched)
	bin := o.Binary
	if bin == "" {
		bin = seppBinary
	}
	ctx, cancel := context.WithTimeout(context.Background(), sched.End()+4*time.Minute+lastAttemptHold)
	defer cancel()

	extra := clusterTOML
	if o.DeadLetterRetention > 0 {
		extra = strings.Replace(extra, "dead_letter_retention_ms = 3600000", fmt.Sprintf("dead_letter_retention_ms = %d", o.DeadLetterRetention.Milliseconds()), 1)
	}
	extra += o.ExtraTOML
	if o.Workflows {
		extra += workflowQueuesTOML
	}
	dopts := devcluster.Options{Binary: bin, Nodes: 3, Dir: t.TempDir(), ExtraTOML: extra, Launch: o.Launch}
	var nn *nodeNet
	if o.Partitions {
		var err error
		if nn, err = newNodeNet(ctx, 3); err != nil {
			if os.Getenv("SEPP_REQUIRE_ALL") != "" {
				t.Fatalf("SEPP_REQUIRE_ALL is set (CI) but network namespaces cannot be set up: %v", err)
			}
			t.Logf("nemesis: partitions skipped: network namespaces cannot be set up: %v", err)
			nn = nil
		} else {
			t.Cleanup(nn.Close) // registered first: runs after the nodes stop
			dopts.NodeHosts, dopts.Launch = nn.ips, nn.Launch
		}
	}
	if nn == nil {
		// No namespaces: the schedule's partitions cannot be made.
		var kept []fault
		for _, f := range sched.Faults {
			if f.Kind != faultPartition {
				kept = append(kept, f)
			}
		}
		sched.Faults = kept
	}
	dc, err := devcluster.Start(dopts)
	if err != nil {
		t.Fatalf("start cluster: %v", err)
	}
	t.Cleanup(func() { _ = dc.Stop() })
	c := localCluster{dc}
	defer dumpLogs(t, c)
	{
		wctx, wcancel := context.WithTimeout(ctx, 30*time.Second)
		err := dc.WaitServing(wctx)
		wcancel()
		if err != nil {
			t.Fatalf("%v\n%s", err, c.LogTail(0))
		}
	}
	insp := newClient(ctx, t, c.Addrs())
	leader := waitLeader(ctx, t, insp, c, 20*time.Second, -1)
	if o.Recipe != nil {
		sched.Faults = o.Recipe(leader)
		t.Logf("nemesis recipe with %s leading: %s", c.Nodes[leader].ID, sched)
	}

	maxJobs := o.MaxJobs
	if maxJobs == 0 {
		maxJobs = 200_000
	}
	w := startWorkload(ctx, t, workloadOptions{Addrs: c.Addrs(), Producers: 2, Workers: 2, MaxJobs: maxJobs, Backlog: 40})
	closeRaw := startRawWorkload(ctx, w, c.Addrs(), 1, 1)
	defer closeRaw()
	var wf *wfWorkload
	if o.Workflows {
		wf = startWorkflowWorkload(ctx, t, w, c.Addrs())
	}
	stopped := false
	defer w.stopUnlessStopped(cancel, &stopped) // a t.Fatal below: end the goroutines before returning
	w.awaitGoing(ctx, t)

	n := &nemesis{t: t, w: w, c: c, net: nn, loneConns: make([]*grpc.ClientConn, 3), insp: insp, start: time.Now(), nodeMu: make([]sync.Mutex, 3)}
	var wg sync.WaitGroup
	for _, f := range sched.Faults {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if f.Kind == faultLoneWrite {
				// Connected ahead: the write must arrive within the leader
				// lease (500ms by default) of its followers freezing.
				n.loneConns[f.Node] = n.connect(ctx, f.Node)
			}
			pause(ctx, time.Until(n.start.Add(f.At)))
			n.inject(ctx, f)
		}()
	}
	if o.During != nil {
		stopDuring := o.During(ctx, c)
		wg.Wait()
		stopDuring()
	}
	wg.Wait()
	end := time.Now()
	n.logf("schedule over: every fault healed")

	r := campaignReport{Name: o.Name, Seed: sched.Seed}
	if r.Name == "" {
		r.Name = fmt.Sprintf("seed=%d", sched.Seed)
	}
	for i, node := range c.Nodes {
		if !c.Running(i) {
			n.problem("%s is not running at the schedule's end", node.ID)
		}
	}
	// Liveness: a write taken, then (the clients held) equal digests.
	probe := client.NewEnqueueRequest("nemesis-probe", "probe").WithIdempotencyKey(fmt.Sprintf("probe-%d", sched.Seed))
	pctx, pcancel := context.WithTimeout(ctx, 20*time.Second)
	_, perr := insp.Enqueue(pctx, probe)
	pcancel()
	r.WritesAfter = time.Since(end)
	if perr != nil {
		n.problem("no write taken after the schedule's end: %v", perr)
	} else if r.WritesAfter > livenessBound {
		n.problem("the first write after the schedule's end took %s, over %s", r.WritesAfter.Round(time.Millisecond), livenessBound)
	}
	w.hold.Store(true)
	// The nodes that are down are a finding already; the others must agree.
	_, aerr := waitReplicasAgree(ctx, runningNodes(c), 20*time.Second)
	r.AgreeAfter = time.Since(end)
	if aerr != nil {
		n.problem("replicas did not agree after the schedule's end: %v", aerr)
	} else if r.AgreeAfter > agreementBound {
		n.problem("replicas agreed %s after the schedule's end, over %s", r.AgreeAfter.Round(time.Millisecond), agreementBound)
	}
	w.hold.Store(false)
	r.Unavailable = history.LongestGap(w.rec.Ops(), n.start, end)

	running := 0
	for i := range c.Nodes {
		if c.Running(i) {
			running++
		}
	}
	if running <= len(c.Nodes)/2 {
		// No majority will come back: nothing can drain, nor be read.
		n.problem("only %d of %d nodes run: the cluster has lost its majority for good; the history is not checked", running, len(c.Nodes))
		return n.finish(r)
	}
	w.stop(ctx, t, insp, 60*time.Second)
	stopped = true
	if wf != nil {
		for _, p := range wf.check(ctx, t, insp, 60*time.Second) {
			n.problem("workflows: %s", p)
		}
	}
	final := readFinal(ctx, t, insp)
	if o.PlantedLoss {
		r.History, r.Checked = history.Check(w.rec.Ops(), final), true
	} else {
		r.History, r.Checked = checkHistory(t, "nemesis "+r.Name, w, final), true
	}
	r.Vanished = n.vanished
	if t.Failed() {
		dumpHistory(t, sched.Seed, w.rec.Ops())
	}

	return n.finish(r)
}

// finish adds the nemesis's counts and findings to r.
func (n *nemesis) finish(r campaignReport) campaignReport {
	n.mu.Lock()
	defer n.mu.Unlock()
	r.Injected, r.Restarts, r.FailedRestarts = n.injected, n.restarts, n.failed
	for _, f := range n.failed {
		r.Liveness = append(r.Liveness, f.String())
	}
	r.Liveness = append(r.Liveness, n.problems...)
	for i, node := range n.c.Nodes {
		r.LogTails = append(r.LogTails, fmt.Sprintf("---- last lines of %s's log\n%s", node.ID, n.c.LogTail(i)))
	}
	return r
}

// nodesView is a testCluster of some of a cluster's nodes.
type nodesView struct {
	c   localCluster
	idx []int
}

func (v nodesView) Addrs() []string {
	var out []string
	for _, i := range v.idx {
		out = append(out, v.c.Nodes[i].GRPCAddr)
	}
	return out
}

func (v nodesView) IDs() []string {
	var out []string
	for _, i := range v.idx {
		out = append(out, v.c.Nodes[i].ID)
	}
	return out
}

func (v nodesView) LogTail(i int) string { return v.c.LogTail(v.idx[i]) }

// runningNodes is the view of c's nodes whose process runs.
func runningNodes(c localCluster) nodesView {
	v := nodesView{c: c}
	for i := range c.Nodes {
		if c.Running(i) {
			v.idx = append(v.idx, i)
		}
	}
	return v
}

// dumpHistory writes a failed run's calls, one JSON object a line, where
// they outlive the test's temporary dir.
func dumpHistory(t *testing.T, seed uint64, ops []history.Op) {
	t.Helper()
	path := filepath.Join(os.TempDir(), fmt.Sprintf("sepp-nemesis-seed%d-%d.jsonl", seed, os.Getpid()))
	f, err := os.Create(path)
	if err != nil {
		t.Logf("history not written: %v", err)
		return
	}
	defer f.Close()
	enc := json.NewEncoder(f)
	for _, op := range ops {
		if err := enc.Encode(op); err != nil {
			t.Logf("history not written: %v", err)
			return
		}
	}
	t.Logf("nemesis: the run's %d calls are in %s", len(ops), path)
}

// target resolves a fault's node: the leader now, for a leaderTarget.
func (n *nemesis) target(ctx context.Context, f fault) (int, string) {
	if f.Node != leaderTarget {
		return f.Node, n.c.Nodes[f.Node].ID
	}
	lctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	if i, err := leaderIndex(lctx, n.insp, n.c); err == nil {
		return i, n.c.Nodes[i].ID + " (the leader)"
	}
	return f.Fallback, n.c.Nodes[f.Fallback].ID + " (no leader found)"
}

func (n *nemesis) inject(ctx context.Context, f fault) {
	i, who := n.target(ctx, f)
	if f.Kind == faultPartition {
		others := []int{}
		for j := range n.c.Nodes {
			if j != i {
				others = append(others, j)
			}
		}
		if err := n.net.Cut(ctx, i, others); err != nil {
			n.problem("partition %s: %v", who, err)
			return
		}
		n.count(f.Kind)
		n.logf("partition: %s cut off from the others for %s", who, f.For)
		pause(ctx, f.For)
		if err := n.net.Heal(ctx, i, others); err != nil {
			n.problem("heal partition of %s: %v", who, err)
		}
		n.logf("partition of %s healed", who)
		return
	}
	if f.Kind == faultLoneWrite {
		n.count(f.Kind)
		n.loneWrite(ctx, i, who, f.For)
		return
	}
	if f.Kind == faultVanish {
		n.count(f.Kind)
		n.vanish(ctx)
		return
	}
	if f.Kind == faultWipe {
		n.wipeMu.Lock()
		defer n.wipeMu.Unlock()
	}
	n.nodeMu[i].Lock()
	defer n.nodeMu[i].Unlock()
	if !n.c.Running(i) {
		n.logf("%s on %s skipped: the node is not running (an earlier restart failed)", f.Kind, who)
		return
	}
	n.count(f.Kind)
	id := n.c.Nodes[i].ID
	switch f.Kind {
	case faultKill:
		n.logf("SIGKILL %s; down for %s", who, f.For)
		if err := n.c.Kill(i); err != nil {
			n.problem("kill %s: %v", id, err)
			return
		}
		pause(ctx, f.For)
		n.startNode(ctx, i, "SIGKILL")
	case faultPause:
		n.logf("SIGSTOP %s for %s", who, f.For)
		if err := n.c.Signal(i, syscall.SIGSTOP); err != nil {
			n.problem("pause %s: %v", id, err)
			return
		}
		pause(ctx, f.For)
		if err := n.c.Signal(i, syscall.SIGCONT); err != nil {
			n.problem("continue %s: %v", id, err)
		}
		n.logf("SIGCONT %s", id)
	case faultRestart:
		n.logf("SIGTERM %s (graceful restart)", who)
		if err := n.c.StopNode(i, 10*time.Second); err != nil {
			n.problem("graceful stop of %s: %v", id, err)
		}
		n.startNode(ctx, i, "a graceful stop")
	case faultWipe:
		n.wipe(ctx, i, who)
	}
}

func (n *nemesis) count(k faultKind) {
	n.mu.Lock()
	n.injected[k]++
	n.mu.Unlock()
}

// startNode starts node i's process again and checks that it comes up and
// serves; a node that does not is a failed restart, and stays down.
func (n *nemesis) startNode(ctx context.Context, i int, after string) {
	node := n.c.Nodes[i]
	n.mu.Lock()
	n.restarts++
	n.mu.Unlock()
	began := time.Now()
	err := n.c.StartNode(i)
	if err == nil {
		err = waitNodeServes(ctx, n.c, i, 30*time.Second)
	}
	if err != nil {
		_ = n.c.StopNode(i, time.Second) // one that serves nothing but still runs
		f := restartFailure{Node: node.ID, Fault: after, Err: err.Error()}
		n.logf("RESTART FAILED: %s", f)
		n.mu.Lock()
		n.failed = append(n.failed, f)
		n.mu.Unlock()
		return
	}
	n.logf("%s restarted after %s; serving in %s", node.ID, after, time.Since(began).Round(time.Millisecond))
}

// waitNodeServes waits until node i answers a Status call; it fails at once
// when the process exits, with the reason its log gives last.
func waitNodeServes(ctx context.Context, c localCluster, i int, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	node := c.Nodes[i]
	cc, err := grpc.NewClient(node.GRPCAddr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return err
	}
	defer cc.Close()
	for {
		if !c.Running(i) {
			return fmt.Errorf("the process exited: %s", lastLogError(node.Dir))
		}
		actx, acancel := context.WithTimeout(ctx, 500*time.Millisecond)
		_, err := seppv1.NewClusterServiceClient(cc).Status(actx, &seppv1.StatusRequest{})
		acancel()
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("not serving within %s: %v", timeout, err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// lastLogError is the last line of a node's log that says why it stopped
// (`sepp: ...`), else its last line.
func lastLogError(dir string) string {
	lines := strings.Split(tail(filepath.Join(dir, "sepp.log"), 20), "\n")
	for j := len(lines) - 1; j >= 0; j-- {
		if strings.HasPrefix(lines[j], "sepp: ") {
			return lines[j]
		}
	}
	return lines[len(lines)-1]
}

// wipe replaces node i's disk: kill, remove from the configuration, delete
// the data dir, start empty (bootstrap = false) and join, through the
// operator's commands (`sepp cluster remove` / `join`).
func (n *nemesis) wipe(ctx context.Context, i int, who string) {
	node := n.c.Nodes[i]
	if down := n.othersDown(ctx, i, 15*time.Second); len(down) > 0 {
		// Replacing a disk while another member is down is two failures
		// at once, beyond what three voters tolerate: the one node left
		// may lack what the wiped one acknowledged, or, missing a
		// configuration change, refuse to elect the other. An operator
		// replaces a disk in a healthy cluster; the campaign waits for
		// one, and else leaves the disk alone.
		n.logf("wipe %s skipped: %s still down", who, strings.Join(down, ", "))
		return
	}
	for j := range n.c.Nodes {
		if j == i {
			continue
		}
		if err := waitCaughtUp(ctx, n.insp, n.c, j, 15*time.Second); err != nil {
			n.logf("wipe %s skipped: %s has not caught up with a leader: %v", who, n.c.Nodes[j].ID, err)
			return
		}
	}
	n.logf("wipe %s: SIGKILL, remove, delete its data, start empty, join", who)
	if n.c.Running(i) { // a node that refused its data has exited already
		if err := n.c.Kill(i); err != nil {
			n.problem("wipe: kill %s: %v", node.ID, err)
			return
		}
	}
	if lost := n.failedNodes(i); len(lost) > 0 {
		// Two voters left besides this one, and one of them will never
		// start again: no majority can remove or join it.
		n.problem("wipe of %s skipped: %s failed to restart, so no majority can change the configuration", node.ID, strings.Join(lost, ", "))
		n.startNode(ctx, i, "a SIGKILL (wipe skipped)")
		return
	}
	if err := n.membership(ctx, "remove", node.ID); err != nil {
		// The removal may not have taken effect. A voter started empty
		// would be amnesia: its vote could elect a leader that lacks
		// entries it acknowledged (sepp's nodes refuse to vote until they
		// are added, the raft fork's eighth change, which this campaign
		// found missing). An operator who cannot remove a node keeps its
		// disk (docs/backup-and-restore.md); so does the campaign, and the
		// failed removal is its finding.
		n.problem("wipe of %s skipped, its data kept: remove: %v", node.ID, err)
		n.startNode(ctx, i, "a SIGKILL (wipe skipped)")
		return
	}
	if err := os.RemoveAll(filepath.Join(node.Dir, "data")); err != nil {
		n.problem("wipe: %v", err)
	}
	cfg, err := os.ReadFile(node.Config)
	if err != nil {
		n.problem("wipe: %v", err)
		return
	}
	if !strings.Contains(string(cfg), "bootstrap = false") {
		cfg = []byte(strings.Replace(string(cfg), "[cluster]\n", "[cluster]\nbootstrap = false\n", 1))
		if err := os.WriteFile(node.Config, cfg, 0o644); err != nil {
			n.problem("wipe: %v", err)
			return
		}
	}
	n.startNode(ctx, i, "a wipe")
	if !n.c.Running(i) {
		return
	}
	if err := n.membership(ctx, "join", node.ID, "--raft-addr", node.RaftAddr, "--grpc-addr", node.GRPCAddr, "--http-addr", node.HTTPAddr); err != nil {
		n.problem("wipe: join %s: %v", node.ID, err)
	}
	n.logf("%s joined again", node.ID)
}

// loneWrite sends one keyed enqueue to node i alone, waiting at most d,
// and records it (an answer that does not come is an unknown outcome).
func (n *nemesis) loneWrite(ctx context.Context, i int, who string, d time.Duration) {
	node := n.c.Nodes[i]
	cc := n.loneConns[i]
	if cc == nil {
		n.problem("lone write to %s: no connection", node.ID)
		return
	}
	defer cc.Close()
	key := fmt.Sprintf("lone-%s-%d", node.ID, time.Now().UnixNano())
	prio := uint32(0)
	op := history.Op{Kind: history.KindEnqueue, Client: 300, Key: key, MaxAttempts: workMaxAttempts, Start: time.Now()}
	wctx, cancel := context.WithTimeout(ctx, d)
	res, err := seppv1.NewQueueServiceClient(cc).Enqueue(wctx, &seppv1.EnqueueRequest{
		Queue: workQueue, JobType: "work", Payload: []byte(key), Priority: &prio, MaxAttempts: workMaxAttempts, IdempotencyKey: key,
	})
	cancel()
	op.End, op.Err = time.Now(), errString(err)
	switch {
	case err == nil:
		op.Outcome, op.JobID, op.Duplicate = history.OK, res.GetJobId(), res.GetDuplicate()
	case isNotLeader(err):
		op.Outcome = history.Failed
	default:
		op.Outcome = history.Unknown
	}
	n.w.rec.Add(op)
	n.logf("lone write to %s: %s %s", who, op.Outcome, op.Err)
}

// vanish makes one acknowledged Ready job disappear: the queue paused (so
// no worker takes it meanwhile), the job dead-lettered and the record
// deleted with `sepp jobs dead-letter` and `sepp dead-letters delete`, the
// queue resumed.
func (n *nemesis) vanish(ctx context.Context) {
	if err := n.insp.PauseQueue(ctx, workQueue); err != nil {
		n.problem("vanish: pause %s: %v", workQueue, err)
		return
	}
	defer func() {
		if err := n.insp.ResumeQueue(ctx, workQueue); err != nil {
			n.problem("vanish: resume %s: %v", workQueue, err)
		}
	}()
	// With the queue paused the producers' jobs pile up Ready; on a fast
	// machine the workers may have left none at the moment of the pause, and
	// a job's enqueue is recorded OK only once its producer hears back, so
	// look until one Ready job is also an acknowledged one.
	var victim uint64
	var seen int
	if err := waitFor(ctx, 10*time.Second, func(ctx context.Context) (bool, error) {
		acked := map[uint64]bool{}
		for _, op := range n.w.rec.Ops() {
			if op.Kind == history.KindEnqueue && op.Outcome == history.OK {
				acked[op.JobID] = true
			}
		}
		jobs, _, err := n.insp.ListJobs(ctx, workQueue, client.ListJobsOptions{State: client.StateReady, Limit: 100})
		if err != nil {
			return false, fmt.Errorf("list ready jobs: %w", err)
		}
		seen = len(jobs)
		for _, j := range jobs {
			if acked[j.ID] {
				victim = j.ID
				return true, nil
			}
		}
		return false, fmt.Errorf("none of %d ready jobs is an acknowledged one", seen)
	}); err != nil {
		n.problem("vanish: %v", err)
		return
	}
	id := strconv.FormatUint(victim, 10)
	if err := n.cli(ctx, "jobs", "dead-letter", id, "--reason", "nemesis: planted loss"); err != nil {
		n.problem("vanish: %v", err)
		return
	}
	if err := n.cli(ctx, "dead-letters", "delete", id); err != nil {
		n.problem("vanish: %v", err)
		return
	}
	n.mu.Lock()
	n.vanished = append(n.vanished, victim)
	n.mu.Unlock()
	n.logf("vanish: acknowledged job %d dead-lettered and deleted behind the clients' backs", victim)
}

// cli runs one `sepp` operator command against the cluster.
func (n *nemesis) cli(ctx context.Context, args ...string) error {
	argv := append(args, "--addr", strings.Join(n.c.Addrs(), ","), "--timeout", "10s")
	cctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	if out, err := exec.CommandContext(cctx, seppBinary, argv...).CombinedOutput(); err != nil {
		return fmt.Errorf("sepp %s: %v: %s", strings.Join(argv, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// connect dials node i and waits (up to 5s) until the connection is ready.
func (n *nemesis) connect(ctx context.Context, i int) *grpc.ClientConn {
	cc, err := grpc.NewClient(n.c.Nodes[i].GRPCAddr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return nil
	}
	cc.Connect()
	wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	for st := cc.GetState(); st != connectivity.Ready && cc.WaitForStateChange(wctx, st); st = cc.GetState() {
	}
	return cc
}

func isNotLeader(err error) bool {
	st, _ := status.FromError(err)
	for _, d := range st.Details() {
		if _, ok := d.(*seppv1.NotLeader); ok {
			return true
		}
	}
	return false
}

// failedNodes names the nodes other than i whose restart failed.
func (n *nemesis) failedNodes(i int) []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	var out []string
	for _, f := range n.failed {
		if f.Node != n.c.Nodes[i].ID && !slices.Contains(out, f.Node) {
			out = append(out, f.Node)
		}
	}
	return out
}

// othersDown waits up to d for every node but i to be running, and names
// those that are not by then. wipe then also waits for them to catch up
// with a leader.
func (n *nemesis) othersDown(ctx context.Context, i int, d time.Duration) []string {
	deadline := time.Now().Add(d)
	for {
		var down []string
		for j := range n.c.Nodes {
			if j != i && !n.c.Running(j) {
				down = append(down, n.c.Nodes[j].ID)
			}
		}
		if len(down) == 0 || time.Now().After(deadline) || ctx.Err() != nil {
			return down
		}
		pause(ctx, 100*time.Millisecond)
	}
}

// membership runs `sepp cluster VERB ARGS` against the cluster until it
// succeeds: while other faults hold, there may be no leader for a while.
func (n *nemesis) membership(ctx context.Context, verb string, args ...string) error {
	argv := append([]string{"cluster", verb}, args...)
	argv = append(argv, "--addr", strings.Join(n.c.Addrs(), ","), "--timeout", "5s")
	var last string
	err := waitFor(ctx, 60*time.Second, func(ctx context.Context) (bool, error) {
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		out, err := exec.CommandContext(cctx, seppBinary, argv...).CombinedOutput()
		if err != nil {
			last = fmt.Sprintf("sepp %s: %v: %s", strings.Join(argv, " "), err, strings.TrimSpace(string(out)))
			pause(ctx, 200*time.Millisecond)
			return false, fmt.Errorf("%s", last)
		}
		return true, nil
	})
	return err
}
