package cluster

import (
	"testing"

	"github.com/hashicorp/raft"
)

func TestCrashWatch_HidesOnlyTheCrashedLeadersTerm(t *testing.T) {
	w := newCrashWatch()
	w.crashed.Store(&crashedLeader{id: "n1", term: 7})
	tests := []struct {
		id   raft.ServerID
		term uint64
		want bool
	}{
		{"n1", 7, true},  // the crashed leader, still believed in
		{"n1", 8, false}, // elected again after a restart
		{"n2", 7, false},
		{"n2", 8, false},
	}
	for _, tt := range tests {
		if got := w.hides(tt.id, tt.term); got != tt.want {
			t.Errorf("hides(%s, %d) = %v, want %v", tt.id, tt.term, got, tt.want)
		}
	}
	var none *crashWatch
	if none.hides("n1", 7) {
		t.Error("a node without a detector hid a leader")
	}
}
