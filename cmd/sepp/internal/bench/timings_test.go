package bench

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"

	"google.golang.org/grpc"
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
# HELP sepp_rpc_duration_seconds Time to handle a gRPC call, by method and status code (long-poll waits included).
# TYPE sepp_rpc_duration_seconds histogram
sepp_rpc_duration_seconds_bucket{code="OK",method="/sepp.v1.QueueService/EnqueueBatch",node="sepp-1",le="+Inf"} 5
sepp_rpc_duration_seconds_sum{code="OK",method="/sepp.v1.QueueService/EnqueueBatch",node="sepp-1"} 0.01
sepp_rpc_duration_seconds_count{code="OK",method="/sepp.v1.QueueService/EnqueueBatch",node="sepp-1"} 5
sepp_rpc_duration_seconds_bucket{code="Unavailable",method="/sepp.v1.QueueService/EnqueueBatch",node="sepp-1",le="+Inf"} 7
sepp_rpc_duration_seconds_sum{code="Unavailable",method="/sepp.v1.QueueService/EnqueueBatch",node="sepp-1"} 1
sepp_rpc_duration_seconds_count{code="Unavailable",method="/sepp.v1.QueueService/EnqueueBatch",node="sepp-1"} 7
sepp_rpc_duration_seconds_bucket{code="OK",method="/sepp.v1.QueueService/AckBatch",node="sepp-1",le="+Inf"} 2
sepp_rpc_duration_seconds_sum{code="OK",method="/sepp.v1.QueueService/AckBatch",node="sepp-1"} 0.003
sepp_rpc_duration_seconds_count{code="OK",method="/sepp.v1.QueueService/AckBatch",node="sepp-1"} 2
# HELP sepp_jobs_handed_over_total Jobs this node, as leader, delivered to waiting reserves in the log entry that enqueued them.
# TYPE sepp_jobs_handed_over_total counter
sepp_jobs_handed_over_total{node="sepp-1"} 3
# HELP sepp_raft_phase_seconds Phases of a Raft commit as raft times them.
# TYPE sepp_raft_phase_seconds histogram
sepp_raft_phase_seconds_bucket{node="sepp-1",phase="quorum",le="+Inf"} 4
sepp_raft_phase_seconds_sum{node="sepp-1",phase="quorum"} 0.004
sepp_raft_phase_seconds_count{node="sepp-1",phase="quorum"} 4
sepp_raft_phase_seconds_bucket{node="sepp-1",phase="apply",le="+Inf"} 2
sepp_raft_phase_seconds_sum{node="sepp-1",phase="apply"} 0.001
sepp_raft_phase_seconds_count{node="sepp-1",phase="apply"} 2
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
	want := serverTimings{logWrite: histogramTotals{20, 0.010}, commit: histogramTotals{8, 0.012}, handedOver: 6,
		phases: map[string]histogramTotals{"quorum": {8, 0.008}, "apply": {4, 0.002}}, calls: map[string]histogramTotals{
			// Failed calls are left out: their times are not a call's.
			enqueueBatch: {10, 0.02},
			ackBatch:     {4, 0.006},
		}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("timings = %+v, want %+v", got, want)
	}
	if err := addTimings(strings.NewReader("not { a metric"), &got); err == nil {
		t.Fatal("a malformed exposition parsed without error")
	}
}

const (
	enqueueBatch = "/sepp.v1.QueueService/EnqueueBatch"
	ackBatch     = "/sepp.v1.QueueService/AckBatch"
)

func TestAddTimingFigures(t *testing.T) {
	before := timingsSample{ok: true,
		timings: serverTimings{logWrite: histogramTotals{10, 0.005}, commit: histogramTotals{4, 0.004},
			calls: map[string]histogramTotals{enqueueBatch: {2, 0.004}}},
		client: map[string]histogramTotals{enqueueBatch: {2, 0.006}},
	}
	after := timingsSample{ok: true,
		timings: serverTimings{logWrite: histogramTotals{30, 0.025}, commit: histogramTotals{14, 0.034},
			calls: map[string]histogramTotals{enqueueBatch: {12, 0.024}, ackBatch: {3, 0.003}}},
		client: map[string]histogramTotals{enqueueBatch: {12, 0.031}, ackBatch: {3, 0.006}},
	}
	unread := after
	unread.ok = false
	tests := []struct {
		name          string
		before, after timingsSample
		jobs          int64
		calls         []string
		want          map[string]float64
	}{
		{"means over the scenario", before, after, 2000, nil, map[string]float64{
			"x_log_write_mean": 1, "x_commit_mean": 3, "x_entries_per_1000_jobs": 5,
		}},
		{"with its calls", before, after, 2000, []string{enqueueBatch, ackBatch}, map[string]float64{
			"x_log_write_mean": 1, "x_commit_mean": 3, "x_entries_per_1000_jobs": 5,
			"x_enqueue_batch_call_mean": 2.5, "x_enqueue_batch_server_mean": 2,
			"x_ack_batch_call_mean": 2, "x_ack_batch_server_mean": 1,
		}},
		{"a call never made", before, after, 2000, []string{"/sepp.v1.QueueService/Nack"}, map[string]float64{
			"x_log_write_mean": 1, "x_commit_mean": 3, "x_entries_per_1000_jobs": 5,
		}},
		// Against given addresses, only the client's side is known.
		{"a node unread", before, unread, 2000, []string{enqueueBatch}, map[string]float64{"x_enqueue_batch_call_mean": 2.5}},
		{"a node restarted (counts went back)", after, before, 2000, nil, map[string]float64{}},
		{"nothing observed", before, before, 2000, []string{enqueueBatch}, map[string]float64{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &runner{opts: Options{JSON: true}}
			r.addTimingFigures("x", tt.before, tt.after, tt.jobs, tt.calls...)
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

func TestCallFigureName(t *testing.T) {
	for method, want := range map[string]string{
		enqueueBatch:                    "enqueue_batch",
		"/sepp.v1.QueueService/Enqueue": "enqueue",
		"/sepp.v1.QueueService/Reserve": "reserve",
		"Ping":                          "ping",
	} {
		if got := callFigureName(method); got != want {
			t.Errorf("callFigureName(%q) = %q, want %q", method, got, want)
		}
	}
}

// The client's interceptor counts successful calls by method, as the
// server's histogram does.
func TestCallTimer(t *testing.T) {
	var c callTimer
	ok := func(context.Context, string, any, any, *grpc.ClientConn, ...grpc.CallOption) error { return nil }
	failed := func(context.Context, string, any, any, *grpc.ClientConn, ...grpc.CallOption) error {
		return errors.New("unavailable")
	}
	before := c.snapshot()
	for range 3 {
		if err := c.intercept(context.Background(), enqueueBatch, nil, nil, nil, ok); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.intercept(context.Background(), enqueueBatch, nil, nil, nil, failed); err == nil {
		t.Fatal("the call's error was not passed on")
	}
	if err := c.intercept(context.Background(), ackBatch, nil, nil, nil, failed); err == nil {
		t.Fatal("the call's error was not passed on")
	}
	after := c.snapshot()
	if len(before) != 0 {
		t.Fatalf("first snapshot %v, want empty", before)
	}
	if got := after[enqueueBatch]; got.count != 3 || got.sum < 0 {
		t.Fatalf("EnqueueBatch totals %+v, want 3 calls", got)
	}
	if _, ok := after[ackBatch]; ok {
		t.Fatalf("a failed call was counted: %v", after)
	}
	// A snapshot is a copy: later calls do not change it.
	_ = c.intercept(context.Background(), enqueueBatch, nil, nil, nil, ok)
	if after[enqueueBatch].count != 3 {
		t.Fatal("a snapshot changed after a later call")
	}
}
