package bench

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestBacklogRateJobs(t *testing.T) {
	tests := []struct{ backlog, asked, want int }{
		{1_000_000, 0, 100_000},
		{200_000, 0, 20_000},
		{2_000_000, 0, 100_000}, // at most 100,000
		{2000, 0, 200},
		{5, 0, 1}, // at least one
		{0, 0, 1},
		{200_000, 5000, 5000}, // asked wins
	}
	for _, tt := range tests {
		if got := backlogRateJobs(tt.backlog, tt.asked); got != tt.want {
			t.Errorf("backlogRateJobs(%d, %d) = %d, want %d", tt.backlog, tt.asked, got, tt.want)
		}
	}
}

func TestPerJob(t *testing.T) {
	tests := []struct {
		name          string
		before, after float64
		n             int
		want          float64
	}{
		{"growth over the jobs", 50 << 20, 50<<20 + 200_000*300, 200_000, 300},
		{"a shrink is negative", 1000, 400, 100, -6},
		{"no jobs", 1000, 2000, 0, 0},
	}
	for _, tt := range tests {
		if got := perJob(tt.before, tt.after, tt.n); got != tt.want {
			t.Errorf("%s: perJob(%v, %v, %d) = %v, want %v", tt.name, tt.before, tt.after, tt.n, got, tt.want)
		}
	}
}

// A rate ratio prints with three significant digits, as every figure
// under 100 does, and is left out when the empty queue's rate is unknown.
func TestRateRatio(t *testing.T) {
	tests := []struct {
		atBacklog, empty float64
		want             string
		ok               bool
	}{
		{45_000, 50_000, "0.9", true},
		{10_917, 14_371, "0.76", true},
		{14_371, 10_917, "1.32", true},
		{50_000, 50_000, "1", true},
		{1, 3, "0.333", true},
		{50_000, 0, "", false},
	}
	for _, tt := range tests {
		got, ok := rateRatio(tt.atBacklog, tt.empty)
		if ok != tt.ok {
			t.Errorf("rateRatio(%v, %v): ok %v, want %v", tt.atBacklog, tt.empty, ok, tt.ok)
			continue
		}
		if ok && formatValue(got) != tt.want {
			t.Errorf("rateRatio(%v, %v) prints %q, want %q", tt.atBacklog, tt.empty, formatValue(got), tt.want)
		}
	}
}

// What the backlog scenario reads of a node's /metrics: the memory and
// payload gauges, and the snapshot and restore histograms.
func TestParseNodeMetrics(t *testing.T) {
	const text = `# TYPE sepp_memory_held_bytes gauge
sepp_memory_held_bytes{node="sepp-2"} 4.6e+07
# TYPE sepp_payload_held_bytes gauge
sepp_payload_held_bytes{node="sepp-2"} 2.048e+08
# TYPE sepp_payload_store_disk_bytes gauge
sepp_payload_store_disk_bytes{node="sepp-2"} 2.1e+08
# TYPE sepp_raft_snapshot_seconds histogram
sepp_raft_snapshot_seconds_bucket{node="sepp-2",phase="capture",le="+Inf"} 1
sepp_raft_snapshot_seconds_sum{node="sepp-2",phase="capture"} 0.25
sepp_raft_snapshot_seconds_count{node="sepp-2",phase="capture"} 1
sepp_raft_snapshot_seconds_bucket{node="sepp-2",phase="persist",le="+Inf"} 2
sepp_raft_snapshot_seconds_sum{node="sepp-2",phase="persist"} 3
sepp_raft_snapshot_seconds_count{node="sepp-2",phase="persist"} 2
sepp_raft_snapshot_seconds_bucket{node="sepp-2",phase="receive",le="+Inf"} 1
sepp_raft_snapshot_seconds_sum{node="sepp-2",phase="receive"} 0.5
sepp_raft_snapshot_seconds_count{node="sepp-2",phase="receive"} 1
# TYPE sepp_raft_restore_seconds histogram
sepp_raft_restore_seconds_bucket{node="sepp-2",le="+Inf"} 1
sepp_raft_restore_seconds_sum{node="sepp-2"} 1.5
sepp_raft_restore_seconds_count{node="sepp-2"} 1
# TYPE sepp_payload_store_tombstones gauge
sepp_payload_store_tombstones 1.2e+06
# TYPE sepp_payload_store_compaction_debt_bytes gauge
sepp_payload_store_compaction_debt_bytes 3e+07
# TYPE sepp_payload_store_compaction_seconds_total counter
sepp_payload_store_compaction_seconds_total 12.5
`
	m, err := parseNodeMetrics(strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	if m.memoryHeld != 46e6 || m.payloadHeld != 204.8e6 || m.payloadStore != 210e6 {
		t.Errorf("gauges %+v", m)
	}
	if m.storeTombstones != 1.2e6 || m.storeDebt != 3e7 || m.storeCompactionSeconds != 12.5 {
		t.Errorf("store figures %+v", m)
	}
	for _, name := range []string{memoryHeldMetric, payloadHeldMetric, payloadStoreMetric, storeTombstonesMetric, storeDebtMetric, storeCompactionsSeconds} {
		if !m.known[name] {
			t.Errorf("%s not known", name)
		}
	}
	if m.snapshotCapture != (histogramTotals{1, 0.25}) || m.snapshotPersist != (histogramTotals{2, 3}) || m.snapshotReceive != (histogramTotals{1, 0.5}) || m.restore != (histogramTotals{1, 1.5}) {
		t.Errorf("histograms: capture %+v persist %+v receive %+v restore %+v", m.snapshotCapture, m.snapshotPersist, m.snapshotReceive, m.restore)
	}
	if v, ok := meanMS(histogramTotals{}, m.snapshotPersist); !ok || v != 1500 {
		t.Errorf("persist mean %v ms (%v), want 1500", v, ok)
	}
	if _, ok := meanMS(m.restore, m.restore); ok {
		t.Error("a mean over no observation")
	}

	// A node of an earlier release has no payload metrics: they are not
	// reported as zero.
	m, err = parseNodeMetrics(strings.NewReader("# TYPE sepp_memory_held_bytes gauge\nsepp_memory_held_bytes 7\n"))
	if err != nil {
		t.Fatal(err)
	}
	if m.known[payloadStoreMetric] || m.known[payloadHeldMetric] || m.known[storeCompactionsSeconds] || !m.known[memoryHeldMetric] {
		t.Errorf("known %v, want sepp_memory_held_bytes alone", m.known)
	}
}

// dirBytes counts the blocks of every file below a folder, as du does;
// newestSnapshotBytes the newest complete snapshot's.
func TestDirBytes(t *testing.T) {
	dir := t.TempDir()
	write := func(path string, size int) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, make([]byte, size), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	snaps := filepath.Join(dir, "snapshots")
	write(filepath.Join(dir, "raft", "00001.wal"), 100_000)
	write(filepath.Join(snaps, "2-100-1", "state.bin"), 40_000)
	write(filepath.Join(snaps, "2-200-2", "state.bin"), 80_000)
	write(filepath.Join(snaps, "2-300-3.tmp", "state.bin"), 120_000)
	old := time.Now().Add(-time.Hour)
	if err := os.Chtimes(filepath.Join(snaps, "2-100-1"), old, old); err != nil {
		t.Fatal(err)
	}

	got, err := dirBytes(dir)
	if err != nil {
		t.Fatal(err)
	}
	// Blocks round each file up; zeros written are allocated.
	if min, max := int64(340_000), int64(340_000+4*64<<10); got < min || got > max {
		t.Errorf("dirBytes = %d, want %d..%d", got, min, max)
	}
	if _, err := dirBytes(filepath.Join(dir, "absent")); err == nil {
		t.Error("dirBytes of an absent folder: no error")
	}

	got, err = newestSnapshotBytes(snaps)
	if err != nil {
		t.Fatal(err)
	}
	if got < 80_000 || got > 80_000+64<<10 {
		t.Errorf("newestSnapshotBytes = %d, want the 80,000-byte snapshot's (the .tmp one is still being written)", got)
	}
	if _, err := newestSnapshotBytes(filepath.Join(dir, "raft")); err == nil {
		t.Error("a folder without snapshots: no error")
	}
}

// /readyz's answers, as cmd/sepp/ready.go writes them: the state machine's
// applied index is read from either.
func TestParseReadyz(t *testing.T) {
	rd := parseReadyz(503, "503 Service Unavailable", "not ready: applied index 4801 is 1080 entries behind commit index 5881 (more than 1000): catching up\nstate=Follower leader=sepp-3 term=2 commit_index=5881 applied_index=4801\n")
	if rd.ready || !rd.answered || rd.applied != 4801 || !strings.HasPrefix(rd.why, "503 Service Unavailable: not ready: applied index 4801") || strings.Contains(rd.why, "state=") {
		t.Errorf("not ready: %+v", rd)
	}
	rd = parseReadyz(200, "200 OK", "ready\nstate=Leader leader=sepp-1 term=3 commit_index=12 applied_index=12\n")
	if !rd.ready || !rd.answered || rd.applied != 12 || rd.why != "" {
		t.Errorf("ready: %+v", rd)
	}
	if rd := parseReadyz(502, "502 Bad Gateway", "upstream"); rd.answered || rd.ready {
		t.Errorf("a body without the index: %+v", rd)
	}
}
