package integration

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// truncateTailRecipe is the issue-21 recipe as nemesis faults: both
// followers down while the leader appends one entry it cannot commit, the
// leader killed, the followers back to elect a new leader, the old leader
// restarted (it drops its uncommitted tail when it rejoins: a log tail
// truncation), killed again and started again. A node whose store cannot
// open after a tail truncation fails that last start. The followers are
// killed, not frozen: a frozen follower, once thawed, still reads what the
// leader had sent it, and then the entry is committed, not truncated.
func truncateTailRecipe(leader int) []fault {
	f1, f2 := (leader+1)%3, (leader+2)%3
	return []fault{
		{Kind: faultKill, At: 0, For: 2 * time.Second, Node: f1, Fallback: f1},
		{Kind: faultKill, At: 0, For: 2 * time.Second, Node: f2, Fallback: f2},
		// Not left to the workload's timing: one entry the leader must
		// append and cannot commit, sent once the followers are gone and
		// within the leader lease (500ms by default) of losing them.
		{Kind: faultLoneWrite, At: 30 * time.Millisecond, For: 500 * time.Millisecond, Node: leader, Fallback: leader},
		{Kind: faultKill, At: 600 * time.Millisecond, For: 3 * time.Second, Node: leader, Fallback: leader},
		{Kind: faultKill, At: 9 * time.Second, For: 500 * time.Millisecond, Node: leader, Fallback: leader},
	}
}

// The campaign reports a node that fails to restart. The binary under test
// is built with the tag sepp_planted_restart_bug, whose store refuses to
// start once its log tail was truncated (what raft-wal v0.4.0 did, without
// depending on that version being vendored); the recipe above truncates
// the old leader's tail. The campaign must name that node's failed restart
// and why, and still find the history safe: the two others keep a majority.
func TestNemesis_ReportsANodeThatFailsToRestart(t *testing.T) {
	t.Parallel()
	requireLong(t)
	bin := filepath.Join(t.TempDir(), "sepp-planted")
	build := exec.Command("go", "build", "-tags", "sepp_planted_restart_bug", "-o", bin, "./cmd/sepp")
	build.Dir = repoRoot
	build.Env = append(build.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build the planted binary: %v\n%s", err, out)
	}
	var leader string
	r := runCampaign(t, campaignOptions{
		Name:   "planted_restart_bug",
		Binary: bin,
		Recipe: func(l int) []fault {
			leader = fmt.Sprintf("sepp-%d", l+1)
			return truncateTailRecipe(l)
		},
	})
	r.print(t)
	defer func() {
		if t.Failed() {
			t.Log(strings.Join(r.LogTails, "\n"))
		}
	}()
	if len(r.FailedRestarts) == 0 {
		t.Fatalf("the campaign reported no failed restart; liveness findings: %q", r.Liveness)
	}
	f := r.FailedRestarts[0]
	if f.Node != leader || f.Fault != "SIGKILL" || !strings.Contains(f.Err, "corrupt data on disk") {
		t.Errorf("failed restart reported as %+v, want %s's start after SIGKILL refused as corrupt data", f, leader)
	}
	found := false
	for _, l := range r.Liveness {
		found = found || strings.Contains(l, leader+" did not restart after SIGKILL")
	}
	if !found {
		t.Errorf("the campaign's liveness findings %q do not name %s's failed restart", r.Liveness, leader)
	}
	if len(r.History.Lost)+len(r.History.Duplicates)+len(r.History.DoubleLeases) > 0 {
		t.Errorf("history with two nodes of three left: %d lost, %d duplicated, %d double leases", len(r.History.Lost), len(r.History.Duplicates), len(r.History.DoubleLeases))
	}
}

// The campaign, through the history checker, names a lost job: in the
// middle of a run with a leader kill, one acknowledged job is made to
// vanish through the operator's commands (the server forgetting a job it
// acknowledged, as a lost write would). The checker's own planted bugs are
// integration/history's TestCheck_CatchesPlantedBugs; this is the same proof
// end to end, through real processes, both clients and the final read.
func TestNemesis_ReportsALostJob(t *testing.T) {
	t.Parallel()
	requireLong(t)
	r := runCampaign(t, campaignOptions{
		Name:        "planted_lost_job",
		PlantedLoss: true,
		Recipe: func(l int) []fault {
			return []fault{
				{Kind: faultKill, At: 500 * time.Millisecond, For: time.Second, Node: l, Fallback: l},
				{Kind: faultVanish, At: 4 * time.Second, Node: (l + 1) % 3, Fallback: (l + 1) % 3},
			}
		},
	})
	r.print(t)
	if len(r.Vanished) != 1 {
		t.Fatalf("the recipe made %d jobs vanish, want 1; liveness findings: %q", len(r.Vanished), r.Liveness)
	}
	if !slices.Equal(r.History.Lost, r.Vanished) {
		t.Errorf("the checker reports lost jobs %v, want exactly the vanished %v", r.History.Lost, r.Vanished)
	}
	if len(r.History.Duplicates)+len(r.History.DoubleLeases)+len(r.FailedRestarts) > 0 {
		t.Errorf("findings beyond the planted loss: %d duplicated, %d double leases, failed restarts %v", len(r.History.Duplicates), len(r.History.DoubleLeases), r.FailedRestarts)
	}
}
