package integration

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"
)

// The nemesis's fault schedules: a seed makes the same list of faults every
// time (kinds, targets, offsets, durations), so a failing run is replayed
// with its seed. Which node "the leader" names is decided when the fault
// begins, so that part follows the run, not the seed.

// faultKind is one way a node is hurt.
type faultKind uint8

const (
	// faultKill SIGKILLs the node and starts it again from its data once
	// the fault's time is up.
	faultKill faultKind = iota
	// faultPause SIGSTOPs the node and SIGCONTs it when the time is up.
	faultPause
	// faultRestart stops the node gracefully (SIGTERM) and starts it again.
	faultRestart
	// faultWipe kills the node, removes it from the configuration, deletes
	// its data dir, starts it empty and joins it again (`sepp cluster
	// remove` / `join`): a lost disk replaced.
	faultWipe
	// faultPartition cuts the node off from the other nodes (both ways;
	// clients still reach every node) until the time is up.
	faultPartition
	// faultLoneWrite sends one enqueue to the node alone (no leader
	// following), recorded like the workload's: with its followers frozen,
	// a leader appends it and cannot commit it. Scripted recipes only.
	faultLoneWrite
	// faultVanish makes one acknowledged job disappear behind the clients'
	// backs (queue paused, the job dead-lettered and that record deleted
	// through the operator's commands, queue resumed): a planted lost job
	// the checker must name. Scripted recipes only.
	faultVanish
	numFaultKinds
)

var faultKindNames = [numFaultKinds]string{"kill", "pause", "restart", "wipe", "partition", "lone write", "vanish"}

func (k faultKind) String() string {
	if k < numFaultKinds {
		return faultKindNames[k]
	}
	return fmt.Sprintf("fault(%d)", k)
}

// restarts reports whether the fault ends by starting the node's process
// again.
func (k faultKind) restarts() bool {
	return k == faultKill || k == faultRestart || k == faultWipe
}

// leaderTarget as a fault's Node means the node leading when it begins.
const leaderTarget = -1

type fault struct {
	Kind faultKind
	// At is the offset from the schedule's start at which the fault begins.
	At time.Duration
	// For is how long the node stays down, paused or cut off; a graceful
	// restart and a wipe start the node again at once.
	For time.Duration
	// Node is the node hit, or leaderTarget.
	Node int
	// Fallback is the node hit when a leaderTarget fault finds no leader.
	Fallback int
}

func (f fault) String() string {
	target := fmt.Sprintf("node %d", f.Node)
	if f.Node == leaderTarget {
		target = fmt.Sprintf("leader (else node %d)", f.Fallback)
	}
	return fmt.Sprintf("+%.1fs %s %s for %s", f.At.Seconds(), f.Kind, target, f.For)
}

type schedule struct {
	Seed   uint64
	Faults []fault // ordered by At
}

// End is when the last planned fault would heal.
func (s schedule) End() time.Duration {
	var end time.Duration
	for _, f := range s.Faults {
		end = max(end, f.At+f.For)
	}
	return end
}

// Counts is the number of faults of each kind.
func (s schedule) Counts() [numFaultKinds]int {
	var n [numFaultKinds]int
	for _, f := range s.Faults {
		n[f.Kind]++
	}
	return n
}

func (s schedule) String() string {
	lines := []string{fmt.Sprintf("seed %d: %d faults over %.1fs", s.Seed, len(s.Faults), s.End().Seconds())}
	for _, f := range s.Faults {
		lines = append(lines, "  "+f.String())
	}
	return strings.Join(lines, "\n")
}

type scheduleOptions struct {
	Nodes int
	// Length is the span in which faults begin.
	Length time.Duration
	// RestartsPerNode is the least number of process restarts (kill,
	// graceful restart, wipe) aimed at each node by number; faults aimed at
	// the leader come on top.
	RestartsPerNode int
	// Extra is the number of further faults of any kind, a third of them
	// aimed at the leader.
	Extra int
	// Partitions allows faultPartition (network namespaces available).
	Partitions bool
	// MaxConcurrent bounds the faults in force at once; two of three nodes
	// hurt at the same time is a cluster without quorum for that while.
	MaxConcurrent int
}

// Durations, by kind: how long a node stays down, paused or cut off. Long
// enough to force an election when it is the leader (the election timeout
// is 300ms), short enough that a run sees many.
var faultSpan = [numFaultKinds][2]time.Duration{
	faultKill:      {300 * time.Millisecond, 2500 * time.Millisecond},
	faultPause:     {400 * time.Millisecond, 3 * time.Second},
	faultRestart:   {0, 0},
	faultWipe:      {0, 0},
	faultPartition: {500 * time.Millisecond, 4 * time.Second},
	faultLoneWrite: {500 * time.Millisecond, 500 * time.Millisecond},
}

// busyFor is how long a fault keeps its node from another process fault
// beyond For: the restart itself (a wipe also removes and joins).
func busyFor(f fault) time.Duration {
	switch f.Kind {
	case faultRestart, faultKill:
		return f.For + 1500*time.Millisecond
	case faultWipe:
		return 4 * time.Second
	}
	return f.For
}

// genSchedule draws a schedule from seed.
func genSchedule(seed uint64, o scheduleOptions) schedule {
	rng := rand.New(rand.NewPCG(seed, 0x5e99_2026))
	span := func(k faultKind) time.Duration {
		lo, hi := faultSpan[k][0], faultSpan[k][1]
		if hi <= lo {
			return lo
		}
		return lo + time.Duration(rng.Int64N(int64(hi-lo)))
	}
	at := func() time.Duration {
		return time.Duration(rng.Int64N(int64(o.Length))).Truncate(10 * time.Millisecond)
	}
	var fs []fault
	restartKinds := []faultKind{faultKill, faultKill, faultRestart, faultWipe}
	for n := 0; n < o.Nodes; n++ {
		for range o.RestartsPerNode {
			k := restartKinds[rng.IntN(len(restartKinds))]
			fs = append(fs, fault{Kind: k, At: at(), For: span(k), Node: n, Fallback: n})
		}
	}
	kinds := []faultKind{faultKill, faultPause, faultPause, faultRestart, faultWipe}
	if o.Partitions {
		kinds = append(kinds, faultPartition, faultPartition, faultPartition)
	}
	for i := range o.Extra {
		k := kinds[rng.IntN(len(kinds))]
		node, fallback := rng.IntN(o.Nodes), rng.IntN(o.Nodes)
		if i%3 == 0 {
			node = leaderTarget
		}
		fs = append(fs, fault{Kind: k, At: at(), For: span(k), Node: node, Fallback: fallback})
	}
	slices.SortStableFunc(fs, func(a, b fault) int { return int(a.At - b.At) })
	return schedule{Seed: seed, Faults: place(fs, o)}
}

// place moves faults later where needed so that a node has one process
// fault at a time, one wipe runs at a time (each shrinks the configuration
// to two voters) and at most MaxConcurrent faults hold at once. Overlaps
// within those bounds are kept: they are the point.
func place(fs []fault, o scheduleOptions) []fault {
	var placed []fault
	for _, f := range fs {
		for {
			clash := time.Duration(0)
			inForce := 0
			for _, p := range placed {
				pEnd := p.At + busyFor(p)
				overlaps := f.At < pEnd && p.At < f.At+max(busyFor(f), time.Millisecond)
				if !overlaps {
					continue
				}
				inForce++
				sameNode := f.Kind != faultPartition && p.Kind != faultPartition &&
					(f.Node == p.Node || f.Node == leaderTarget || p.Node == leaderTarget)
				if sameNode || (f.Kind == faultWipe && p.Kind == faultWipe) {
					clash = max(clash, pEnd)
				}
			}
			if clash == 0 && inForce >= o.MaxConcurrent {
				// The earliest end among those in force.
				for _, p := range placed {
					if pEnd := p.At + busyFor(p); pEnd > f.At && (clash == 0 || pEnd < clash) {
						clash = pEnd
					}
				}
			}
			if clash == 0 {
				break
			}
			f.At = (clash + 100*time.Millisecond).Truncate(10 * time.Millisecond)
		}
		placed = append(placed, f)
	}
	slices.SortStableFunc(placed, func(a, b fault) int { return int(a.At - b.At) })
	return placed
}

// A seed makes one schedule, and every schedule keeps the generator's
// promises: each node restarted RestartsPerNode times or more, one process
// fault per node at a time, one wipe at a time, no more than MaxConcurrent
// faults at once, partitions only when allowed. It runs under -short: no
// process is started.
func TestNemesisSchedule(t *testing.T) {
	tests := []struct {
		name string
		o    scheduleOptions
	}{
		{"ci", scheduleOptions{Nodes: 3, Length: 20 * time.Second, RestartsPerNode: 2, Extra: 6, Partitions: true, MaxConcurrent: 2}},
		{"no partitions", scheduleOptions{Nodes: 3, Length: 20 * time.Second, RestartsPerNode: 2, Extra: 6, MaxConcurrent: 2}},
		{"long", scheduleOptions{Nodes: 3, Length: 2 * time.Minute, RestartsPerNode: 6, Extra: 36, Partitions: true, MaxConcurrent: 2}},
		{"one at a time", scheduleOptions{Nodes: 3, Length: 10 * time.Second, RestartsPerNode: 3, Extra: 4, Partitions: true, MaxConcurrent: 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			kinds := map[faultKind]bool{}
			overlapped := false
			for seed := uint64(1); seed <= 200; seed++ {
				s := genSchedule(seed, tt.o)
				if again := genSchedule(seed, tt.o); again.String() != s.String() {
					t.Fatalf("seed %d made two schedules:\n%s\n%s", seed, s, again)
				}
				restarts := make([]int, tt.o.Nodes)
				for i, f := range s.Faults {
					kinds[f.Kind] = true
					if f.Kind.restarts() && f.Node != leaderTarget {
						restarts[f.Node]++
					}
					if f.Kind == faultPartition && !tt.o.Partitions {
						t.Fatalf("seed %d: a partition without partitions allowed: %s", seed, f)
					}
					inForce := 1
					for _, g := range s.Faults[:i] {
						if g.At+busyFor(g) <= f.At {
							continue
						}
						inForce++
						overlapped = true
						if f.Kind != faultPartition && g.Kind != faultPartition &&
							(f.Node == g.Node || f.Node == leaderTarget || g.Node == leaderTarget) {
							t.Fatalf("seed %d: two process faults on one node at once: %s and %s", seed, g, f)
						}
						if f.Kind == faultWipe && g.Kind == faultWipe {
							t.Fatalf("seed %d: two wipes at once: %s and %s", seed, g, f)
						}
					}
					if inForce > tt.o.MaxConcurrent {
						t.Fatalf("seed %d: %d faults at once at %s, over %d", seed, inForce, f, tt.o.MaxConcurrent)
					}
				}
				for node, n := range restarts {
					if n < tt.o.RestartsPerNode {
						t.Fatalf("seed %d: node %d restarted %d times, want >= %d\n%s", seed, node, n, tt.o.RestartsPerNode, s)
					}
				}
			}
			want := []faultKind{faultKill, faultPause, faultRestart, faultWipe}
			if tt.o.Partitions {
				want = append(want, faultPartition)
			}
			for _, k := range want {
				if !kinds[k] {
					t.Errorf("no %s fault in 200 seeds", k)
				}
			}
			if tt.o.MaxConcurrent > 1 && !overlapped {
				t.Error("no two faults overlapped in 200 seeds")
			}
		})
	}
	if a, b := genSchedule(1, tests[0].o), genSchedule(2, tests[0].o); a.String()[len("seed 1"):] == b.String()[len("seed 2"):] {
		t.Error("seeds 1 and 2 made the same schedule")
	}
}
