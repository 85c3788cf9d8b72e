package cluster

import (
	"fmt"
	"testing"
)

func TestReplayPlace_Due(t *testing.T) {
	const T = 3000
	tests := []struct {
		name   string
		p      replayPlace
		due    bool
		reason string
	}{
		{"off", replayPlace{commands: 1 << 40, work: 1 << 40, threshold: 0, slots: 3}, false, ""},
		{"member 0 passes its place", replayPlace{commands: 2000, work: 3000, workBefore: 2999, threshold: T, slot: 0, slots: 3}, true, "place"},
		{"member 0 short of its place", replayPlace{commands: 2000, work: 2999, workBefore: 2000, threshold: T, slot: 0, slots: 3}, false, ""},
		{"member 1 passes its place a third sooner", replayPlace{commands: 2000, work: 2000, workBefore: 1999, threshold: T, slot: 1, slots: 3}, true, "place"},
		{"member 2 passes its place two thirds sooner", replayPlace{commands: 1000, work: 1000, workBefore: 900, threshold: T, slot: 2, slots: 3}, true, "place"},
		{"a place passed at an earlier check does not count again", replayPlace{commands: 1500, work: 3100, workBefore: 3050, threshold: T, slot: 0, slots: 3}, false, ""},
		{"a place too soon after the last snapshot is passed over", replayPlace{commands: 999, work: 3000, workBefore: 2900, threshold: T, slot: 0, slots: 3}, false, ""},
		{"at the earliest the place counts", replayPlace{commands: 1000, work: 3000, workBefore: 2900, threshold: T, slot: 0, slots: 3}, true, "place"},
		{"commands far past the threshold, no place", replayPlace{commands: 4500, work: 4000, workBefore: 3999, threshold: T, slot: 0, slots: 3}, true, "threshold"},
		{"just short of that bound", replayPlace{commands: 4499, work: 4000, workBefore: 3999, threshold: T, slot: 0, slots: 3}, false, ""},
		{"a lone node: places a threshold of work apart", replayPlace{commands: 3000, work: 6000, workBefore: 5990, threshold: T, slot: 0, slots: 1}, true, "place"},
		{"a lone node never snapshots before a threshold of commands", replayPlace{commands: 2999, work: 6000, workBefore: 5990, threshold: T, slot: 0, slots: 1}, false, ""},
		{"not a member: the bound alone", replayPlace{commands: 2000, work: 3000, workBefore: 2999, threshold: T, slot: -1, slots: 3}, false, ""},
		{"a work count that went back (never: Work only grows) passes nothing", replayPlace{commands: 2000, work: 100, workBefore: 5000, threshold: T, slot: 0, slots: 3}, false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			due, reason := tt.p.due()
			if due != tt.due || reason != tt.reason {
				t.Errorf("due() = %v, %q; want %v, %q", due, reason, tt.due, tt.reason)
			}
		})
	}
}

// Three members fed one log whose work grows at ratio times its commands,
// checking after every entry: each member snapshots about once per
// threshold of commands (more often only where the work outruns them) and
// never replays more than latest. Where the work keeps up with two thirds
// of the commands (every load of enqueues, deliveries and acks, a worker
// reserving one job at a time included), the members' snapshots stay
// apart, even from a start where all three had just snapshotted together.
// Below that the bound times the snapshots, and far above it (deliveries
// whose leases lapse, unacked) places come more often than the earliest
// allows; members that came together may then stay closer.
func TestReplayPlace_MembersStayApart(t *testing.T) {
	const (
		threshold = 30_000
		entry     = 100 // commands per entry
		entries   = 200 * threshold / entry
	)
	for _, ratio := range []float64{1, 0.95, 0.9, 0.75, 2.0 / 3, 0.5, 0.4, 1.25, 2, 3} {
		for _, together := range []int{0, entries / 3, entries/3 + 77} {
			t.Run(fmt.Sprintf("ratio=%.2f/together_at=%d", ratio, together), func(t *testing.T) {
				type member struct{ commands, workBefore uint64 }
				members := make([]member, 3)
				type snapshot struct {
					member   int
					commands uint64 // of the log, at the snapshot
				}
				var snaps []snapshot
				var commands uint64
				var work float64
				for e := range entries {
					commands += entry
					work += entry * ratio
					if e == together { // raft's own threshold on all three at one entry
						for i := range members {
							members[i] = member{0, uint64(work)}
						}
					}
					for i := range members {
						m := &members[i]
						m.commands += entry
						p := replayPlace{commands: m.commands, work: uint64(work), workBefore: m.workBefore, threshold: threshold, slot: i, slots: 3}
						if m.commands > p.latest() {
							t.Fatalf("member %d: %d commands since its snapshot, above the bound %d", i, m.commands, p.latest())
						}
						if due, _ := p.due(); due {
							*m = member{0, uint64(work)}
							snaps = append(snaps, snapshot{i, commands})
						} else {
							m.workBefore = uint64(work)
						}
					}
				}
				perThreshold := float64(len(snaps)) / 3 / (entries * entry / threshold)
				if limit := max(ratio, 1) * 1.02; perThreshold > limit {
					t.Errorf("%.2f snapshots per member per threshold of commands, want at most %.2f", perThreshold, limit)
				}
				// Past the first threshold after the members came together,
				// no two members' snapshots are closer than an eighth of it.
				if ratio < 2.0/3 || ratio > 2 {
					return
				}
				settled := uint64(together*entry) + 2*threshold
				for a := range snaps {
					if snaps[a].commands < settled {
						continue
					}
					for b := a + 1; b < len(snaps); b++ {
						if snaps[b].member == snaps[a].member {
							continue
						}
						if gap := snaps[b].commands - snaps[a].commands; gap < threshold/8 {
							t.Fatalf("members %d and %d snapshot %d commands apart (at %d), want at least %d", snaps[a].member, snaps[b].member, gap, snaps[a].commands, threshold/8)
						}
						break
					}
				}
			})
		}
	}
}
