package cluster

import (
	"strings"
	"testing"
	"time"

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
	ended := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	dead := crashedLeader{id: "n1", term: 7}
	ok := crashCheck{state: raft.Follower, term: 7, leader: "n1", lastContact: ended.Add(-3 * time.Millisecond)}
	tests := []struct {
		name   string
		change func(c *crashCheck)
		want   string // a substring of the reason; "" allows the call
	}{
		{"still believed in, silent since the connection ended", func(*crashCheck) {}, ""},
		{"raft blanked the leader after its heartbeat timeout", func(c *crashCheck) { c.leader = "" }, ""},
		{"last contact at the very moment the connection ended", func(c *crashCheck) { c.lastContact = ended }, ""},
		{"a candidate already", func(c *crashCheck) { c.state = raft.Candidate }, "not a follower"},
		{"a leader already", func(c *crashCheck) { c.state = raft.Leader }, "not a follower"},
		{"a newer term: an election ran since", func(c *crashCheck) { c.term = 8 }, "term moved on from 7 to 8"},
		{"a leader elected moments ago in a newer term", func(c *crashCheck) { c.term, c.leader = 8, "n2" }, "term moved on"},
		{"another leader named in the same term", func(c *crashCheck) { c.leader = "n2" }, "n2 leads now"},
		{"heard from a leader after the connection ended", func(c *crashCheck) { c.lastContact = ended.Add(time.Millisecond) }, "heard from 1ms after"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := ok
			tt.change(&c)
			got := crashCallVerdict(dead, ended, c)
			if tt.want == "" && got != "" || tt.want != "" && !strings.Contains(got, tt.want) {
				t.Fatalf("verdict %q, want %q", got, tt.want)
			}
		})
	}
}

// A poll of the other voters' terms allows the call only when enough of
// them answered to make a quorum with this node and none is in a later term
// than the crashed leader's.
func TestTermPollVerdict(t *testing.T) {
	tests := []struct {
		name    string
		needed  int
		answers []uint64
		want    string
	}{
		{"three nodes: the other follower still in the term", 1, []uint64{7}, ""},
		{"an answer from an older term (a node that was down)", 1, []uint64{5}, ""},
		{"three nodes: the other follower is a leader elected since", 1, []uint64{8}, "term 8, after the crashed leader's 7"},
		{"three nodes: no answer in time", 1, nil, "0 of the 1 other voters"},
		{"five nodes: two of three answered", 2, []uint64{7, 7}, ""},
		{"five nodes: one of three answered", 2, []uint64{7}, "1 of the 2"},
		{"five nodes: one answer in a later term among enough", 2, []uint64{7, 9, 7}, "term 9"},
		{"one node left of two: nobody to ask", 0, nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := termPollVerdict(7, tt.needed, tt.answers)
			if tt.want == "" && got != "" || tt.want != "" && !strings.Contains(got, tt.want) {
				t.Fatalf("verdict %q, want %q", got, tt.want)
			}
		})
	}
}

// A connection end records when it happened, once per pending signal: the
// watcher compares raft's last contact with the first end it has not taken.
func TestCrashWatch_RecordsTheFirstPendingEnd(t *testing.T) {
	w := newCrashWatch()
	now := time.Unix(100, 0)
	w.now = func() time.Time { return now }
	w.connectionEnded()
	now = now.Add(time.Second)
	w.connectionEnded()
	if got := time.Unix(0, w.endedAt.Swap(0)); !got.Equal(time.Unix(100, 0)) {
		t.Fatalf("ended at %s, want the first end", got)
	}
	w.connectionEnded()
	if got := time.Unix(0, w.endedAt.Load()); !got.Equal(now) {
		t.Fatalf("after the watcher took it: ended at %s, want %s", got, now)
	}
}
