package bench

import (
	"strings"
	"testing"
)

// A node's exposition as the server writes it (histograms abridged to the
// lines addTimings reads, with the node label and other metrics around).
const nodeExposition = `# HELP sepp_raft_commit_seconds On the leader, time from proposing a log entry to its applied result.
# TYPE sepp_raft_commit_seconds histogram
sepp_raft_commit_seconds_bucket{node="sepp-1",le="0.001"} 3
sepp_raft_commit_seconds_bucket{node="sepp-1",le="+Inf"} 4
sepp_raft_commit_seconds_sum{node="sepp-1"} 0.006
sepp_raft_commit_seconds_count{node="sepp-1"} 4
# HELP sepp_raft_log_write_seconds Time of one write to this node's Raft log store, fsync included.
# TYPE sepp_raft_log_write_seconds histogram
sepp_raft_log_write_seconds_bucket{node="sepp-1",le="+Inf"} 10
sepp_raft_log_write_seconds_sum{node="sepp-1"} 0.005
sepp_raft_log_write_seconds_count{node="sepp-1"} 10
# HELP sepp_raft_term Current Raft term.
# TYPE sepp_raft_term gauge
sepp_raft_term{node="sepp-1"} 2
`

func TestAddTimings(t *testing.T) {
	var got serverTimings
	for range 2 { // two nodes with the same figures
		if err := addTimings(strings.NewReader(nodeExposition), &got); err != nil {
			t.Fatal(err)
		}
	}
	want := serverTimings{logWrite: histogramTotals{20, 0.010}, commit: histogramTotals{8, 0.012}}
	if got != want {
		t.Fatalf("timings = %+v, want %+v", got, want)
	}
	if err := addTimings(strings.NewReader("not { a metric"), &got); err == nil {
		t.Fatal("a malformed exposition parsed without error")
	}
}

func TestAddTimingFigures(t *testing.T) {
	before := timingsSample{ok: true, timings: serverTimings{logWrite: histogramTotals{10, 0.005}, commit: histogramTotals{4, 0.004}}}
	after := timingsSample{ok: true, timings: serverTimings{logWrite: histogramTotals{30, 0.025}, commit: histogramTotals{14, 0.034}}}
	tests := []struct {
		name          string
		before, after timingsSample
		jobs          int64
		want          map[string]float64
	}{
		{"means over the scenario", before, after, 2000, map[string]float64{
			"x_log_write_mean": 1, "x_commit_mean": 3, "x_entries_per_1000_jobs": 5,
		}},
		{"a node unread", before, timingsSample{timings: after.timings}, 2000, map[string]float64{}},
		{"a node restarted (counts went back)", after, before, 2000, map[string]float64{}},
		{"nothing observed", before, before, 2000, map[string]float64{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &runner{opts: Options{JSON: true}}
			r.addTimingFigures("x", tt.before, tt.after, tt.jobs)
			got := map[string]float64{}
			for _, f := range r.report.Figures {
				got[f.Name] = f.Value
			}
			if len(got) != len(tt.want) {
				t.Fatalf("figures %v, want %v", got, tt.want)
			}
			for name, v := range tt.want {
				if d := got[name] - v; d > 1e-9 || d < -1e-9 {
					t.Errorf("%s = %g, want %g", name, got[name], v)
				}
			}
		})
	}
}
