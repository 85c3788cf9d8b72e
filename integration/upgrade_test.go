package integration

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sepp-io/sepp/client"
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
	t.Parallel()
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
	var downgradeRefusal string
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
				downgradeRefusal, upgradeErr = refuseDowngrade(ctx, t, c, insp, old, func(i int, bin string) {
					mu.Lock()
					binFor[i] = bin
					mu.Unlock()
				})
			}()
			return func() { <-done }
		},
	})
	r.print(t)
	if upgradeErr != nil {
		t.Fatalf("rolling upgrade: %v", upgradeErr)
	}
	t.Logf("upgraded, node by node: %s", strings.Join(upgraded, ", "))
	t.Logf("downgrade refused: %s", downgradeRefusal)
	for _, p := range r.Liveness {
		t.Errorf("liveness: %s", p)
	}
	if !r.Checked {
		t.Fatal("the history was not checked")
	}
}

// commandVersionMet finds the command version a refused entry carries in
// the previous release's refusal ("command 0 has version 21, ...").
var commandVersionMet = regexp.MustCompile(`has version (\d+)`)

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

// refuseDowngrade, on a cluster every member of which runs this tree's
// binary, uses a feature of a command version the previous release does
// not apply (a queue whose dead_letter_queue is checked, version 13; the
// workload's reserves carry version 14 too once every member applies it), then
// starts a follower on the previous release's binary over its data: that
// start must be refused, saying which version it met. The follower then
// runs this tree's binary again. setBin picks a node's binary.
func refuseDowngrade(ctx context.Context, t *testing.T, c localCluster, insp *client.Client, old string, setBin func(int, string)) (string, error) {
	t.Helper()
	for _, args := range [][]string{
		{"queues", "create", "upgrade-dead"},
		{"queues", "create", "upgrade-src", "--dead-letter-queue", "upgrade-dead"},
	} {
		argv := append(args, "--addr", strings.Join(c.Addrs(), ","), "--timeout", "10s")
		if out, err := exec.CommandContext(ctx, seppBinary, argv...).CombinedOutput(); err != nil {
			return "", fmt.Errorf("sepp %s: %v: %s", strings.Join(args, " "), err, out)
		}
	}
	li, err := leaderIndex(ctx, insp, c)
	if err != nil {
		return "", err
	}
	f := followerOf(li)
	if err := waitCaughtUp(ctx, insp, c, f, 30*time.Second); err != nil {
		return "", err
	}
	if err := c.StopNode(f, 20*time.Second); err != nil {
		return "", err
	}
	setBin(f, old)
	if err := c.StartNode(f); err != nil {
		return "", err
	}
	if err := waitFor(ctx, 30*time.Second, func(context.Context) (bool, error) {
		return !c.Running(f), fmt.Errorf("%s runs the previous release over data of a newer command version", c.Nodes[f].ID)
	}); err != nil {
		return "", err
	}
	why := lastLogError(c.Nodes[f].Dir)
	// The first newer entry it meets, whichever comes first in the log: a
	// queue create (13, or 21 once every member writes queue settings in
	// the public form) or a workload reserve carrying its retry window (14).
	if m := commandVersionMet.FindStringSubmatch(why); m == nil || !strings.Contains(why, "this binary applies 1..12") {
		return why, fmt.Errorf("%s's refusal does not name the command version it met: %q", c.Nodes[f].ID, why)
	} else if v, _ := strconv.Atoi(m[1]); v <= 12 {
		return why, fmt.Errorf("%s's refusal names version %d, which the previous release applies: %q", c.Nodes[f].ID, v, why)
	}
	setBin(f, seppBinary)
	if err := c.StartNode(f); err != nil {
		return why, err
	}
	if err := waitNodeServes(ctx, c, f, 30*time.Second); err != nil {
		return why, err
	}
	return why, waitCaughtUp(ctx, insp, c, f, 30*time.Second)
}
