package integration

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/sepp-io/sepp/client"
	"github.com/sepp-io/sepp/devcluster"
)

// electionsWindow is how long the test watches a loaded cluster beside a
// CPU hog for leader changes nobody caused. scripts/elections.sh measures
// the long windows (10 minutes); a test only shows the count is kept and
// printed, and what a short window sees.
const electionsWindow = 20 * time.Second

// busyLoopEnv makes the test binary a CPU hog instead of running tests
// (TestMain): the stand-in for stress-ng on a machine without it.
const busyLoopEnv = "SEPP_TEST_BUSY_LOOP"

// busyLoop spins every CPU until killed or d has passed.
func busyLoop(d time.Duration) {
	deadline := time.Now().Add(d)
	var wg sync.WaitGroup
	for range runtime.NumCPU() {
		wg.Add(1)
		go func() {
			defer wg.Done()
			x := 0
			for time.Now().Before(deadline) {
				for i := range 1_000_000 {
					x += i
				}
			}
			_ = x
		}()
	}
	wg.Wait()
}

// startCPUHog starts 2 CPU hogs per CPU for at most d: stress-ng --cpu when
// it is installed, else this test binary as a busy loop. It returns what
// runs and a stop function.
func startCPUHog(t *testing.T, d time.Duration) (string, func()) {
	t.Helper()
	n := 2 * runtime.NumCPU()
	secs := strconv.Itoa(int(d.Seconds()) + 1)
	var cmds []*exec.Cmd
	what := ""
	if path, err := exec.LookPath("stress-ng"); err == nil {
		cmds = append(cmds, exec.Command(path, "--cpu", strconv.Itoa(n), "--timeout", secs+"s", "--quiet"))
		what = fmt.Sprintf("stress-ng --cpu %d", n)
	} else {
		if os.Getenv("SEPP_REQUIRE_ALL") != "" {
			t.Fatal("SEPP_REQUIRE_ALL is set (CI) but stress-ng is not installed")
		}
		for range n / runtime.NumCPU() {
			c := exec.Command(os.Args[0])
			c.Env = append(os.Environ(), busyLoopEnv+"="+secs+"s")
			cmds = append(cmds, c)
		}
		what = fmt.Sprintf("%d Go busy-loop children of %d threads (stress-ng not installed)", len(cmds), runtime.NumCPU())
	}
	for _, c := range cmds {
		if err := c.Start(); err != nil {
			t.Fatalf("start CPU hog: %v", err)
		}
	}
	var once sync.Once
	stop := func() {
		once.Do(func() {
			for _, c := range cmds {
				_ = c.Process.Kill()
				_ = c.Wait()
			}
		})
	}
	t.Cleanup(stop)
	return what, stop
}

// raftCounters reads a node's sepp_raft_leader_changes_total and
// sepp_raft_elections_total from its /metrics.
func raftCounters(ctx context.Context, httpAddr string) (changes, elections float64, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+httpAddr+"/metrics", nil)
	if err != nil {
		return 0, 0, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, 0, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, 0, err
	}
	found := 0
	for line := range strings.SplitSeq(string(body), "\n") {
		name, value, ok := strings.Cut(line, " ")
		if !ok || strings.HasPrefix(line, "#") {
			continue
		}
		name, _, _ = strings.Cut(name, "{")
		v, perr := strconv.ParseFloat(strings.TrimSpace(value), 64)
		switch {
		case perr != nil:
		case name == "sepp_raft_leader_changes_total":
			changes, found = v, found+1
		case name == "sepp_raft_elections_total":
			elections, found = v, found+1
		}
	}
	if found != 2 {
		return 0, 0, fmt.Errorf("%s/metrics lacks sepp_raft_leader_changes_total or sepp_raft_elections_total", httpAddr)
	}
	return changes, elections, nil
}

// Three real nodes under a light load of enqueues and reserve-acks, beside
// a CPU hog twice the machine's CPUs, counted for electionsWindow: the test
// prints the leader changes and elections nothing provoked. Then it
// freezes the leader (SIGSTOP) and requires every survivor to count the
// change that caused, and prints how long the replacement took.
func TestElections_CountedBesideACPUHog(t *testing.T) {
	requireLong(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c, err := devcluster.Start(devcluster.Options{Binary: seppBinary, Nodes: 3})
	if err != nil {
		t.Fatalf("start cluster: %v", err)
	}
	t.Cleanup(func() { _ = c.Stop() })
	lc := localCluster{c}
	if err := c.WaitServing(ctx); err != nil {
		t.Fatalf("%v\n%s", err, lc.LogTail(0))
	}
	insp, err := client.New(ctx, c.Addrs())
	if err != nil {
		t.Fatal(err)
	}
	defer insp.Close()
	waitLeader(ctx, t, insp, lc, 30*time.Second, -1)

	counters := func(i int) (float64, float64) {
		t.Helper()
		ch, el, err := raftCounters(ctx, c.Nodes[i].HTTPAddr)
		if err != nil {
			t.Fatal(err)
		}
		return ch, el
	}

	// The load: one producer and one worker, each a call every few ms.
	loadCtx, stopLoad := context.WithCancel(ctx)
	var loadWG sync.WaitGroup
	var loadErrs sync.Map
	loadWG.Add(2)
	go func() {
		defer loadWG.Done()
		for loadCtx.Err() == nil {
			if _, err := insp.Enqueue(loadCtx, client.NewEnqueueRequest("elections", "t")); err != nil && loadCtx.Err() == nil {
				loadErrs.Store("enqueue", err)
			}
			time.Sleep(2 * time.Millisecond)
		}
	}()
	go func() {
		defer loadWG.Done()
		for loadCtx.Err() == nil {
			ds, err := insp.Reserve(loadCtx, "elections", client.ReserveOptions{WorkerID: "w", Max: 16, Lease: 30 * time.Second, Wait: 100 * time.Millisecond})
			if err != nil {
				continue
			}
			for _, d := range ds {
				_ = insp.Ack(loadCtx, d.Ctx)
			}
		}
	}()
	defer func() { stopLoad(); loadWG.Wait() }()

	var before [3][2]float64
	for i := range 3 {
		before[i][0], before[i][1] = counters(i)
	}
	hog, stopHog := startCPUHog(t, electionsWindow)
	start := time.Now()
	time.Sleep(electionsWindow) // the window being measured, not a wait for a condition
	stopHog()
	window := time.Since(start)
	unprovoked := 0.0
	for i := range 3 {
		ch, el := counters(i)
		t.Logf("%s: leader changes %g, elections started %g", c.Nodes[i].ID, ch-before[i][0], el-before[i][1])
		unprovoked = max(unprovoked, ch-before[i][0])
	}
	report(t, "elections unprovoked_leader_changes", unprovoked, fmt.Sprintf("in %s beside %s", window.Round(time.Second), hog))
	if unprovoked > 0 {
		t.Logf("causes in the nodes' logs:\n%s", causesInLogs(c))
	}

	// A provoked change is counted by every survivor.
	leader := waitLeader(ctx, t, insp, lc, 30*time.Second, -1)
	var atFreeze [3]float64
	for i := range 3 {
		atFreeze[i], _ = counters(i)
	}
	if err := c.Signal(leader, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	frozen := time.Now()
	thawed := false
	defer func() {
		if !thawed {
			_ = c.Signal(leader, syscall.SIGCONT)
		}
	}()
	// Poll the survivors themselves, each call bounded, as sepp bench's
	// failover_stop_new_leader does: a call to the frozen node would hang.
	replaced := time.Duration(0)
	for replaced == 0 && time.Since(frozen) < 20*time.Second {
		for i, n := range c.Nodes {
			if i == leader {
				continue
			}
			sctx, scancel := context.WithTimeout(ctx, 200*time.Millisecond)
			st, err := insp.ClusterStatusOf(sctx, n.GRPCAddr)
			scancel()
			if err == nil && st.State == "Leader" {
				replaced = time.Since(frozen)
				break
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	if replaced == 0 {
		t.Fatalf("no survivor led within 20s of freezing %s\n%s", c.Nodes[leader].ID, causesInLogs(c))
	}
	report(t, "elections sigstop_leader_replaced", ms(replaced), "ms")
	waitLeader(ctx, t, insp, lc, 20*time.Second, leader)
	for i := range 3 {
		if i == leader {
			continue
		}
		if ch, _ := counters(i); ch < atFreeze[i]+1 {
			t.Errorf("%s counted %g leader changes across the frozen leader's replacement, want at least 1", c.Nodes[i].ID, ch-atFreeze[i])
		}
	}
	if err := c.Signal(leader, syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	thawed = true
	loadErrs.Range(func(k, v any) bool {
		t.Logf("load saw an error (%s): %v", k, v)
		return true
	})
}

// causesInLogs counts the lines of the nodes' logs that say why an
// election happened.
func causesInLogs(c *devcluster.Cluster) string {
	var b strings.Builder
	for _, n := range c.Nodes {
		data, err := os.ReadFile(n.Dir + "/sepp.log")
		if err != nil {
			continue
		}
		counts := map[string]int{}
		for line := range strings.SplitSeq(string(data), "\n") {
			for _, cause := range []string{"failed to contact quorum", "heartbeat timeout reached", "called an election for the crashed leader"} {
				if strings.Contains(line, cause) {
					counts[cause]++
				}
			}
		}
		fmt.Fprintf(&b, "  %s: %v\n", n.ID, counts)
	}
	return b.String()
}
