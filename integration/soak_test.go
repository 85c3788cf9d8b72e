package integration

import (
	"bufio"
	"context"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// The soak (issue 36): the nemesis's workload and faults for a long time,
// with each node's resident memory, goroutines, open files and disk use
// sampled throughout. `make soak DURATION=1h` runs it for an hour and draws
// the samples (docs/soak.png); CI runs a short form of it.

// soakOptions are read from the environment: SEPP_SOAK_DURATION (default
// 45s, the short form), SEPP_SOAK_SAMPLE (the sampling interval, default
// a fiftieth of the duration, at least 1s), SEPP_SOAK_OUT (a folder for
// soak.csv, default the test's temporary folder).
type soakOptions struct {
	duration, every time.Duration
	out             string
}

func soakOptionsFromEnv(t *testing.T) soakOptions {
	t.Helper()
	o := soakOptions{duration: 45 * time.Second}
	if v := os.Getenv("SEPP_SOAK_DURATION"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < 20*time.Second {
			t.Fatalf("SEPP_SOAK_DURATION=%q: want a duration of at least 20s", v)
		}
		o.duration = d
	}
	o.every = max(time.Second, o.duration/50)
	if v := os.Getenv("SEPP_SOAK_SAMPLE"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < 100*time.Millisecond {
			t.Fatalf("SEPP_SOAK_SAMPLE=%q: want a duration of at least 100ms", v)
		}
		o.every = d
	}
	o.out = os.Getenv("SEPP_SOAK_OUT")
	if o.out == "" {
		o.out = t.TempDir()
	}
	return o
}

// soakSchedule has a fault every minute or two on average: per node a
// process restart (kill, graceful restart or wipe) every six minutes, and
// as many again of any kind, a third of them aimed at the leader; one
// fault at a time.
func soakSchedule(seed uint64, d time.Duration, partitions bool) schedule {
	minutes := int(d / time.Minute)
	return genSchedule(seed, scheduleOptions{
		Nodes: 3, Length: d - 10*time.Second, Partitions: partitions, MaxConcurrent: 1,
		RestartsPerNode: max(1, minutes/6), Extra: max(2, minutes/2),
	})
}

func TestSoak(t *testing.T) {
	t.Parallel()
	requireLong(t)
	o := soakOptionsFromEnv(t)
	partitions := netnsUnavailable() == ""
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("SEPP_NEMESIS_SEEDS"); s != "" {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("SEPP_NEMESIS_SEEDS=%q: want one seed", s)
		}
		seed = v
	}
	sched := soakSchedule(seed, o.duration, partitions)
	fmt.Printf("soak: %s, seed %d, %d faults, a sample every %s (replay: SEPP_SOAK_DURATION=%s SEPP_NEMESIS_SEEDS=%d go test ./integration -run 'TestSoak$')\n",
		o.duration, seed, len(sched.Faults), o.every, o.duration, seed)
	var samples *soakSampler
	r := runCampaign(t, campaignOptions{
		Schedule: sched, Partitions: partitions, Name: "soak", MaxJobs: 5_000_000,
		DeadLetterRetention: o.duration + time.Hour,
		During: func(ctx context.Context, c localCluster) func() {
			samples = startSoakSampler(ctx, c, o.every)
			deadline := time.Now().Add(o.duration)
			return func() {
				pause(ctx, time.Until(deadline)) // the workload runs the whole duration
				samples.stop()
				// Written now, before the drain and the history check, so
				// that a run the checks fail still leaves its samples.
				if err := samples.writeCSV(filepath.Join(o.out, "soak.csv")); err != nil {
					t.Errorf("soak samples: %v", err)
				}
			}
		},
	})
	r.print(t)
	for _, p := range r.Liveness {
		t.Errorf("liveness: %s", p)
	}
	if samples == nil {
		t.Fatal("the sampler never started")
	}
	path := filepath.Join(o.out, "soak.csv")
	fmt.Printf("soak: %d samples in %s\n", len(samples.rows), path)
	for _, g := range samples.growth() {
		report(t, "soak "+g.String(), g.ratio(), "× (last fifth's median / second fifth's)")
		// Growth is judged on runs long enough to tell a trend from a
		// restart's warm-up: ten minutes and more.
		if o.duration >= 10*time.Minute && g.unbounded() {
			t.Errorf("soak: %s grows without bound: median %.1f in the second fifth, %.1f in the last", g, g.early, g.late)
		}
	}
}

// soakRow is one sample of one node.
type soakRow struct {
	at                 time.Duration
	node               string
	rssMiB, diskMiB    float64
	fds, goroutines    int
	rssOK, fdsOK, goOK bool
}

type soakSampler struct {
	mu     sync.Mutex
	rows   []soakRow
	cancel context.CancelFunc
	done   chan struct{}
}

// startSoakSampler samples every running node every interval until stop.
func startSoakSampler(ctx context.Context, c localCluster, every time.Duration) *soakSampler {
	ctx, cancel := context.WithCancel(ctx)
	s := &soakSampler{cancel: cancel, done: make(chan struct{})}
	start := time.Now()
	hc := &http.Client{Timeout: 2 * time.Second}
	go func() {
		defer close(s.done)
		tick := time.NewTicker(every)
		defer tick.Stop()
		for {
			for i, n := range c.Nodes {
				row := soakRow{at: time.Since(start), node: n.ID}
				if c.Running(i) {
					pid := strconv.Itoa(c.Pid(i))
					row.rssMiB, row.rssOK = procRSSMiB(pid)
					row.fds, row.fdsOK = openFiles(pid)
					row.goroutines, row.goOK = goroutines(ctx, hc, n.HTTPAddr)
				}
				row.diskMiB = dirMiB(n.Dir)
				s.mu.Lock()
				s.rows = append(s.rows, row)
				s.mu.Unlock()
			}
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	return s
}

func (s *soakSampler) stop() {
	s.cancel()
	<-s.done
}

// writeCSV writes the samples, one block per node separated by two blank
// lines (gnuplot's data sets: scripts/soak-chart.gp plots block i as node
// i), after a commented header; an empty field is a node that was down.
func (s *soakSampler) writeCSV(path string) error {
	var b strings.Builder
	b.WriteString("# seconds,node,rss_mib,goroutines,open_files,disk_mib\n")
	num := func(v float64, ok bool) string {
		if !ok {
			return ""
		}
		return strconv.FormatFloat(v, 'f', 1, 64)
	}
	s.mu.Lock()
	rows := slices.Clone(s.rows)
	s.mu.Unlock()
	slices.SortStableFunc(rows, func(a, b soakRow) int { return strings.Compare(a.node, b.node) })
	for i, r := range rows {
		if i > 0 && rows[i-1].node != r.node {
			b.WriteString("\n\n")
		}
		fmt.Fprintf(&b, "%s,%s,%s,%s,%s,%s\n", strconv.FormatFloat(r.at.Seconds(), 'f', 1, 64), r.node,
			num(r.rssMiB, r.rssOK), num(float64(r.goroutines), r.goOK), num(float64(r.fds), r.fdsOK), num(r.diskMiB, true))
	}
	return os.WriteFile(path, []byte(b.String()), 0o644)
}

// soakGrowth compares one measure of one node early and late in the run.
type soakGrowth struct {
	node, measure string
	early, late   float64
	slack         float64 // absolute growth forgiven (a restart's warm-up, a snapshot)
}

func (g soakGrowth) String() string { return g.node + " " + g.measure }

func (g soakGrowth) ratio() string {
	if g.early == 0 {
		return "n/a"
	}
	return strconv.FormatFloat(g.late/g.early, 'f', 2, 64)
}

// unbounded: the last fifth's median is more than twice the second fifth's
// and more than the slack above it.
func (g soakGrowth) unbounded() bool { return g.late > 2*g.early && g.late-g.early > g.slack }

// growth is, per node and measure, the median of the second fifth of the
// run (past the start's warm-up) against that of the last fifth.
func (s *soakSampler) growth() []soakGrowth {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.rows) == 0 {
		return nil
	}
	end := s.rows[len(s.rows)-1].at
	var out []soakGrowth
	nodes := map[string]bool{}
	var order []string
	for _, r := range s.rows {
		if !nodes[r.node] {
			nodes[r.node] = true
			order = append(order, r.node)
		}
	}
	measures := []struct {
		name  string
		slack float64
		get   func(soakRow) (float64, bool)
	}{
		{"rss_mib", 64, func(r soakRow) (float64, bool) { return r.rssMiB, r.rssOK }},
		{"goroutines", 200, func(r soakRow) (float64, bool) { return float64(r.goroutines), r.goOK }},
		{"open_files", 64, func(r soakRow) (float64, bool) { return float64(r.fds), r.fdsOK }},
		{"disk_mib", 256, func(r soakRow) (float64, bool) { return r.diskMiB, true }},
	}
	for _, node := range order {
		for _, m := range measures {
			var early, late []float64
			for _, r := range s.rows {
				v, ok := m.get(r)
				if r.node != node || !ok {
					continue
				}
				switch {
				case r.at >= end/5 && r.at < 2*end/5:
					early = append(early, v)
				case r.at >= 4*end/5:
					late = append(late, v)
				}
			}
			if len(early) > 0 && len(late) > 0 {
				out = append(out, soakGrowth{node: node, measure: m.name, early: median(early), late: median(late), slack: m.slack})
			}
		}
	}
	return out
}

func median(v []float64) float64 {
	v = slices.Clone(v)
	slices.Sort(v)
	return v[len(v)/2]
}

// procRSSMiB is VmRSS of process pid.
func procRSSMiB(pid string) (float64, bool) {
	status, err := os.ReadFile("/proc/" + pid + "/status")
	if err != nil {
		return 0, false
	}
	for _, line := range strings.Split(string(status), "\n") {
		if f := strings.Fields(line); len(f) == 3 && f[0] == "VmRSS:" && f[2] == "kB" {
			if kb, err := strconv.ParseFloat(f[1], 64); err == nil {
				return kb / 1024, true
			}
		}
	}
	return 0, false
}

// openFiles counts process pid's file descriptors.
func openFiles(pid string) (int, bool) {
	ents, err := os.ReadDir("/proc/" + pid + "/fd")
	if err != nil {
		return 0, false
	}
	return len(ents), true
}

// goroutines reads go_goroutines from a node's /metrics.
func goroutines(ctx context.Context, hc *http.Client, httpAddr string) (int, bool) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+httpAddr+"/metrics", nil)
	if err != nil {
		return 0, false
	}
	resp, err := hc.Do(req)
	if err != nil {
		return 0, false
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "go_goroutines "); ok {
			n, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			return int(n), err == nil
		}
	}
	return 0, false
}

// dirMiB is the size of the files under dir.
func dirMiB(dir string) float64 {
	var total int64
	_ = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil // a file removed while walking (a compacted segment)
		}
		if !d.IsDir() {
			if info, err := d.Info(); err == nil {
				total += info.Size()
			}
		}
		return nil
	})
	return float64(total) / (1 << 20)
}
