package cluster

import (
	"strings"
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

// The rules a follower checks before it calls an election for a leader it
// found gone (crashwatch.go): every one of them, alone, stops the call.
func TestCrashCallVerdict(t *testing.T) {
	dead := crashedLeader{id: "n1", term: 7}
	ok := crashCheck{state: raft.Follower, term: 7, leader: "n1"}
	tests := []struct {
		name   string
		change func(c *crashCheck)
		want   string // a substring of the reason; "" allows the call
	}{
		{"still believed in", func(*crashCheck) {}, ""},
		{"raft blanked the leader after its heartbeat timeout", func(c *crashCheck) { c.leader = "" }, ""},
		{"a candidate already", func(c *crashCheck) { c.state = raft.Candidate }, "not a follower"},
		{"a leader already", func(c *crashCheck) { c.state = raft.Leader }, "not a follower"},
		{"voted for a new leader not heard from yet", func(c *crashCheck) { c.term = 8 }, "term moved on from 7 to 8"},
		{"a leader elected moments ago in a newer term", func(c *crashCheck) { c.term, c.leader = 8, "n2" }, "term moved on"},
		{"another leader named in the same term", func(c *crashCheck) { c.leader = "n2" }, "n2 leads now"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := ok
			tt.change(&c)
			got := crashCallVerdict(dead, c)
			if tt.want == "" && got != "" || tt.want != "" && !strings.Contains(got, tt.want) {
				t.Fatalf("verdict %q, want %q", got, tt.want)
			}
		})
	}
}

// The dead leader's term is the one this node learned of it in, not the
// current one: a follower that voted in a later election (the case that
// deposed a leader elected 50 ms earlier) must see its term moved on.
func TestCrashWatch_DeadLeaderKeepsTheTermItWasLearnedIn(t *testing.T) {
	w := newCrashWatch()
	if got := w.deadLeader("n1", 7); got != (crashedLeader{id: "n1", term: 7}) {
		t.Fatalf("never observed: %+v, want the current term", got)
	}
	w.sawLeader("n1", 7)
	w.sawLeader("", 7)            // raft blanks the leader after a heartbeat timeout
	dead := w.deadLeader("n1", 8) // then this node voted in term 8
	if dead != (crashedLeader{id: "n1", term: 7}) {
		t.Fatalf("after a vote in term 8: %+v, want n1 of term 7", dead)
	}
	if why := crashCallVerdict(dead, crashCheck{state: raft.Follower, term: 8, leader: "n1"}); !strings.Contains(why, "term moved on") {
		t.Fatalf("verdict %q, want a refusal: the term moved on", why)
	}
	w.sawLeader("n2", 8)
	if got := w.deadLeader("n1", 8); got != (crashedLeader{id: "n1", term: 8}) {
		t.Fatalf("a leader other than the one last seen: %+v, want the current term", got)
	}
	var none *crashWatch
	none.sawLeader("n1", 1) // a node without a detector
}
