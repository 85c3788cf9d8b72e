package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// What the scenarios that hold a backlog (recovery, backlog) read of the
// local cluster's processes: their resident memory, their data folders,
// and how long one takes to come back after a restart.

// residentBytes reads VmRSS of a process from /proc.
func residentBytes(pid int) (int64, error) { return procStatusBytes(pid, "VmRSS") }

// procStatusBytes reads a size field (in kB) of a process's
// /proc/PID/status: VmRSS, the resident memory, or RssAnon, its anonymous
// part (the heap and stacks, without the pages of files it maps, which the
// kernel can drop and read back).
func procStatusBytes(pid int, field string) (int64, error) {
	if pid == 0 {
		return 0, fmt.Errorf("not running")
	}
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, field+":"); ok {
			f := strings.Fields(rest)
			if len(f) >= 1 {
				kb, err := strconv.ParseInt(f[0], 10, 64)
				return kb * 1024, err
			}
		}
	}
	return 0, fmt.Errorf("no %s in /proc/%d/status", field, pid)
}

// nodesAnon is every local node's anonymous resident memory (RssAnon), by
// index; 0 where it could not be read.
func (r *runner) nodesAnon() []int64 {
	out := make([]int64, len(r.cluster.Nodes))
	for i := range r.cluster.Nodes {
		if n, err := procStatusBytes(r.cluster.Pid(i), "RssAnon"); err == nil {
			out[i] = n
		}
	}
	return out
}

// nodesRSS is every local node's resident memory, by index; 0 for a node
// whose memory could not be read, which a note says.
func (r *runner) nodesRSS() []int64 {
	out := make([]int64, len(r.cluster.Nodes))
	for i, node := range r.cluster.Nodes {
		rss, err := residentBytes(r.cluster.Pid(i))
		if err != nil {
			r.note("rss of %s: %v", node.ID, err)
			continue
		}
		out[i] = rss
	}
	return out
}

func mib(b int64) float64 { return float64(b) / (1 << 20) }

// dirBytes is the disk space the files under dir take (allocated blocks,
// as du counts them: a file with several hard links, a snapshot's
// checkpoint of the payload store, once). Files that vanish while it walks
// (a log segment or a table compacted away) are skipped.
func dirBytes(dir string) (int64, error) {
	var total int64
	type inode struct{ dev, ino uint64 }
	seen := map[inode]bool{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) && path != dir {
				return nil
			}
			return err
		}
		if d.IsDir() {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		if st, ok := info.Sys().(*syscall.Stat_t); ok {
			if st.Nlink > 1 {
				id := inode{uint64(st.Dev), st.Ino} //nolint:unconvert // Dev's type differs between platforms
				if seen[id] {
					return nil
				}
				seen[id] = true
			}
			total += st.Blocks * 512
		} else {
			total += info.Size()
		}
		return nil
	})
	return total, err
}

// nodesDataBytes is every local node's data folder size, by index; -1 for
// one that could not be read, which a note says.
func (r *runner) nodesDataBytes() []int64 {
	out := make([]int64, len(r.cluster.Nodes))
	for i, node := range r.cluster.Nodes {
		b, err := dirBytes(node.DataDir())
		if err != nil {
			r.note("data folder of %s: %v", node.ID, err)
			b = -1
		}
		out[i] = b
	}
	return out
}

// followerIndex is a local node that does not lead: the one after the
// leader.
func (r *runner) followerIndex(ctx context.Context) (int, error) {
	leader, err := r.leaderIndex(ctx)
	if err != nil {
		return -1, err
	}
	return (leader + 1) % len(r.cluster.Nodes), nil
}

// restartTimeout bounds a restarted node's way back to caught up.
const restartTimeout = 10 * time.Minute

// zeroIndexWait is how long past raft's catch-up restartNode waits for a
// state machine that reads applied index 0 (restored from a snapshot) to
// apply an entry and learn its index.
const zeroIndexWait = time.Minute

// restartTimes is how long a restarted node took, from its start, to
// accept connections on its gRPC port (serving), to answer /readyz with
// 200 (ready: it knows a leader and its state machine has applied all but
// server.ready_max_apply_lag entries of the log), to have raft's applied
// index reach what was committed when it was stopped (caught up: the
// ClusterStatus figure, which raft moves when it hands entries to the
// state machine, up to 128 batches of them before they are applied), and
// to have its state machine's own applied index (which /readyz shows)
// reach it (applied); and its resident memory then.
type restartTimes struct {
	serving, ready, caughtUp, applied time.Duration
	rss                               int64 // 0: unread
	// notReady is the last reason /readyz gave before it said ready.
	notReady string
	// sawZero: the state machine's applied index read 0 while raft's was
	// caught up (restored from a snapshot, it learns its index only from
	// the next entry it applies).
	sawZero bool
}

// restartNode stops local node i (SIGTERM), starts it again with its data
// and times its way back.
func (r *runner) restartNode(ctx context.Context, i int) (restartTimes, error) {
	var rt restartTimes
	st, err := r.cli.ClusterStatus(ctx)
	if err != nil {
		return rt, err
	}
	target := st.CommitIndex
	r.progress(fmt.Sprintf("restarting %s (commit index %d)", r.cluster.Nodes[i].ID, target))
	if err := r.cluster.StopNode(i, 30*time.Second); err != nil {
		return rt, err
	}
	t0 := time.Now()
	if err := r.cluster.StartNode(i); err != nil {
		return rt, err
	}
	wctx, cancel := context.WithTimeout(ctx, restartTimeout)
	defer cancel()
	if err := r.cluster.WaitServing(wctx); err != nil {
		return rt, err
	}
	rt.serving = time.Since(t0)
	// Ready, caught up and applied are polled together, each timed when
	// first seen: any may come first.
	node := r.cluster.Nodes[i]
	for rt.ready == 0 || rt.caughtUp == 0 || rt.applied == 0 {
		if rt.ready == 0 || rt.applied == 0 {
			rd := readiness(wctx, node.HTTPAddr)
			if rd.ready && rt.ready == 0 {
				rt.ready = time.Since(t0)
			} else if !rd.ready && rd.why != "" {
				rt.notReady = rd.why
			}
			if rd.answered && rt.applied == 0 {
				switch {
				case rd.applied >= target:
					rt.applied = time.Since(t0)
				case rd.applied == 0 && rt.caughtUp > 0:
					rt.sawZero = true
				}
			}
		}
		if rt.caughtUp == 0 {
			if st, err := r.cli.ClusterStatusOf(wctx, node.GRPCAddr); err == nil && st.AppliedIndex >= target {
				rt.caughtUp = time.Since(t0)
			}
		}
		if rt.sawZero && time.Since(t0) > rt.caughtUp+zeroIndexWait {
			break // no entry came to give the state machine its index
		}
		select {
		case <-wctx.Done():
			return rt, fmt.Errorf("%s, restarted %s ago: ready %v, raft's and the state machine's applied index at %d: %v and %v: %w",
				node.ID, time.Since(t0).Round(time.Millisecond), rt.ready > 0, target, rt.caughtUp > 0, rt.applied > 0, wctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
	if rss, err := residentBytes(r.cluster.Pid(i)); err == nil {
		rt.rss = rss
	}
	return rt, nil
}

// addRestart reports a restart as prefix_restart_to_serving, _to_ready,
// _to_caught_up, _to_applied and prefix_rss_restarted, with a note of why the node was
// not ready when it was caught up before it was ready.
func (r *runner) addRestart(prefix string, rt restartTimes) {
	if rt.ready > rt.caughtUp && rt.notReady != "" {
		r.note("%s: ready %s after it caught up; /readyz said last: %s", prefix, (rt.ready - rt.caughtUp).Round(time.Millisecond), rt.notReady)
	}
	r.add(prefix+"_restart_to_serving", ms(rt.serving), "ms")
	if rt.ready > 0 {
		r.add(prefix+"_restart_to_ready", ms(rt.ready), "ms")
	}
	r.add(prefix+"_restart_to_caught_up", ms(rt.caughtUp), "ms")
	if rt.applied > 0 {
		r.add(prefix+"_restart_to_applied", ms(rt.applied), "ms")
	}
	if rt.sawZero {
		r.note("%s: the state machine's applied index read 0 after raft's had caught up (restored from a snapshot, it learns its index from the next entry it applies): _to_applied and _to_ready waited for that entry, or are left out when none came within %s", prefix, zeroIndexWait)
	}
	if rt.rss > 0 {
		r.add(prefix+"_rss_restarted", mib(rt.rss), "MiB")
	}
}

// readyz is what a node's /readyz said.
type readyz struct {
	answered bool
	ready    bool
	why      string // the first line of a not-ready answer
	applied  uint64 // the state machine's applied index it shows
}

// readiness asks the node's /readyz.
func readiness(ctx context.Context, httpAddr string) readyz {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+httpAddr+"/readyz", nil)
	if err != nil {
		return readyz{}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return readyz{}
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	return parseReadyz(resp.StatusCode, resp.Status, string(body))
}

// parseReadyz reads a /readyz answer: 200 or 503 and a body of a reason
// line, then "state=… commit_index=N applied_index=N".
func parseReadyz(code int, status, body string) readyz {
	rd := readyz{ready: code == http.StatusOK}
	first, _, _ := strings.Cut(body, "\n")
	if !rd.ready {
		rd.why = fmt.Sprintf("%s: %s", status, strings.TrimSpace(first))
	}
	for _, f := range strings.Fields(body) {
		if v, ok := strings.CutPrefix(f, "applied_index="); ok {
			if n, err := strconv.ParseUint(v, 10, 64); err == nil {
				rd.applied, rd.answered = n, true
			}
		}
	}
	return rd
}
