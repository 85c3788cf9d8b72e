package integration

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// upgradeFromCommit is the last release before this round's changes: the
// rolling upgrade starts a cluster of its binary and replaces it, node by
// node, with this tree's.
const upgradeFromCommit = "2ff591cdc1b3db8c55dc07346f9bf2cefd7f89f6"

// TestRollingUpgradeUnderLoad starts three nodes of the previous release,
// runs the nemesis's workload (Go client and raw-proto client, recorded
// into one history), and replaces each node in turn with this tree's
// binary (a graceful stop, the new binary started on the same data, caught
// up before the next): no acknowledged job lost or duplicated, and the
// replicas agree (issue 36).
func TestRollingUpgradeUnderLoad(t *testing.T) {
	requireLong(t)
	old := buildReleaseBinary(t, upgradeFromCommit)

	var mu sync.Mutex
	binFor := []string{old, old, old}
	launch := func(node int, argv []string) []string {
		mu.Lock()
		defer mu.Unlock()
		argv = append([]string(nil), argv...)
		argv[0] = binFor[node]
		return argv
	}
	var upgradeErr error
	var upgraded []string
	r := runCampaign(t, campaignOptions{
		Schedule: schedule{}, Name: "rolling-upgrade", Launch: launch,
		During: func(ctx context.Context, c localCluster) func() {
			done := make(chan struct{})
			go func() {
				defer close(done)
				insp := newClient(ctx, t, c.Addrs())
				pause(ctx, 3*time.Second) // load on the old cluster first
				// Followers first, the leader last: one leader change.
				leader, err := leaderIndex(ctx, insp, c)
				if err != nil {
					upgradeErr = err
					return
				}
				order := []int{(leader + 1) % 3, (leader + 2) % 3, leader}
				for _, i := range order {
					start := time.Now()
					if err := c.StopNode(i, 20*time.Second); err != nil {
						upgradeErr = fmt.Errorf("stop %s: %w", c.Nodes[i].ID, err)
						return
					}
					mu.Lock()
					binFor[i] = seppBinary
					mu.Unlock()
					if err := c.StartNode(i); err != nil {
						upgradeErr = fmt.Errorf("start %s on the new binary: %w", c.Nodes[i].ID, err)
						return
					}
					if err := waitNodeServes(ctx, c, i, 30*time.Second); err != nil {
						upgradeErr = fmt.Errorf("%s on the new binary: %w\n%s", c.Nodes[i].ID, err, c.LogTail(i))
						return
					}
					if err := waitCaughtUp(ctx, insp, c, i, 30*time.Second); err != nil {
						upgradeErr = fmt.Errorf("%s on the new binary did not catch up: %w", c.Nodes[i].ID, err)
						return
					}
					upgraded = append(upgraded, fmt.Sprintf("%s in %s", c.Nodes[i].ID, time.Since(start).Round(time.Millisecond)))
					pause(ctx, 3*time.Second) // load on the mixed cluster
				}
			}()
			return func() { <-done }
		},
	})
	r.print(t)
	if upgradeErr != nil {
		t.Fatalf("rolling upgrade: %v", upgradeErr)
	}
	t.Logf("upgraded, node by node: %s", strings.Join(upgraded, ", "))
	for _, p := range r.Liveness {
		t.Errorf("liveness: %s", p)
	}
	if !r.Checked {
		t.Fatal("the history was not checked")
	}
}

// buildReleaseBinary builds cmd/sepp of commit from this repository's
// history into a temporary folder. It skips t (fails in CI) when the
// history does not hold the commit (a shallow clone).
func buildReleaseBinary(t *testing.T, commit string) string {
	t.Helper()
	if out, err := exec.Command("git", "-C", repoRoot, "cat-file", "-e", commit+"^{commit}").CombinedOutput(); err != nil {
		skipOrFail(t, fmt.Sprintf("the repository's history does not hold %s (%v: %s): the rolling upgrade from it is skipped", commit[:12], err, strings.TrimSpace(string(out))))
	}
	dir := t.TempDir()
	src := filepath.Join(dir, "src")
	if err := os.MkdirAll(src, 0o755); err != nil {
		t.Fatal(err)
	}
	archive := exec.Command("sh", "-c", `git -C "$0" archive "$1" | tar -x -C "$2"`, repoRoot, commit, src)
	if out, err := archive.CombinedOutput(); err != nil {
		t.Fatalf("git archive %s: %v\n%s", commit[:12], err, out)
	}
	bin := filepath.Join(dir, "sepp-"+commit[:12])
	build := exec.Command("go", "build", "-o", bin, "./cmd/sepp")
	build.Dir = src
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build the release %s: %v\n%s", commit[:12], err, out)
	}
	return bin
}
