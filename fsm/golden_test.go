package fsm

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/hashicorp/raft"
)

// Golden log entries: the committed files under testdata/fuzz/FuzzDecodeEntry
// are the bytes of every entry format (1: unframed protobuf, as the first
// binaries wrote it; 2: frame byte and CRC-32C) and every command version
// (1..CommandVersion) that a log may hold. A newer binary must apply them
// all, to the state the same commands give when this binary writes them:
// that is what lets it replay an older node's log in a rolling upgrade.
// The seed_* files are also compared byte for byte with what this binary
// writes (TestSeedCorpusIsCurrent's seeds), so a change of the encoding,
// which an older follower could not read, fails here first.
func TestGoldenEntries(t *testing.T) {
	dir := filepath.Join("testdata", "fuzz", "FuzzDecodeEntry")
	seeds := seedEntries(t)
	tests := []struct {
		file       string
		format     int    // entry format the bytes are in
		commandMax uint32 // highest command version in the entry
		// sameStateAs names the current seed whose commands the file holds,
		// to compare states; "" for a file whose commands this binary no
		// longer builds (a ConfigSet of an older binary's default limits),
		// which must then apply without an error.
		sameStateAs string
	}{
		{"legacy_v1_enqueue", 1, 1, "enqueue"},
		{"legacy_v1_enqueue_batch", 1, 1, "enqueue_batch"},
		{"legacy_v1_reserve_ack", 1, 1, "reserve_ack"},
		{"legacy_v1_nack_release", 1, 1, "nack_release"},
		{"legacy_v1_extend", 1, 1, "extend"},
		{"legacy_v1_dead_letters", 1, 1, "dead_letters"},
		{"legacy_v1_queues", 1, 1, "queues"},
		{"legacy_v1_tick", 1, 1, "tick"},
		{"legacy_v1_nodes", 1, 1, "nodes"},
		{"legacy_v1_config", 1, 1, ""},
		{"seed_enqueue", 2, 1, "enqueue"},
		{"seed_enqueue_batch", 2, 1, "enqueue_batch"},
		{"seed_reserve_ack", 2, 1, "reserve_ack"},
		{"seed_nack_release", 2, 1, "nack_release"},
		{"seed_extend", 2, 1, "extend"},
		{"seed_dead_letters", 2, 1, "dead_letters"},
		{"seed_queues", 2, 1, "queues"},
		{"seed_tick", 2, 1, "tick"},
		{"seed_config", 2, 1, ""},
		{"seed_nodes", 2, 1, "nodes"},
		{"seed_nodes_versioned", 2, 1, "nodes_versioned"},
		{"seed_ack_batch", 2, CommandVersionAckBatch, "ack_batch"},
		{"seed_config_key_min_window", 2, CommandVersionKeyMinWindow, "config_key_min_window"},
		{"seed_config_memory_budget", 2, CommandVersionMemoryBudget, "config_memory_budget"},
		{"seed_managed_queues", 2, CommandVersionQueues, "managed_queues"},
		{"seed_config_reserve_limits", 2, CommandVersionReserveLimits, "config_reserve_limits"},
		{"seed_schedules", 2, CommandVersionSchedules, "schedules"},
		{"seed_unique", 2, CommandVersionUnique, "unique"},
		{"seed_cancel", 2, CommandVersionCancel, "cancel"},
		{"seed_redrive", 2, CommandVersionRedrive, "redrive"},
		{"seed_expiry_fairness", 2, CommandVersionExpiryFairness, "expiry_fairness"},
		{"seed_record_fields", 2, CommandVersionRecordFields, "record_fields"},
		{"seed_dead_letter_edges", 2, CommandVersionDeadLetterEdges, "dead_letter_edges"},
		{"seed_reserve_retry", 2, CommandVersionReserveRetry, "reserve_retry"},
		{"seed_queue_reserve_limits", 2, CommandVersionQueueReserveLimits, "queue_reserve_limits"},
		{"seed_payloads_off_heap", 2, CommandVersionPayloadsOffHeap, "payloads_off_heap"},
		{"seed_trace_context", 2, CommandVersionTraceContext, "trace_context"},
		{"seed_queue_tags", 2, CommandVersionQueueTags, "queue_tags"},
		{"seed_results", 2, CommandVersionResults, "results"},
		{"seed_public_queue_settings", 2, CommandVersionPublicQueueSettings, "public_queue_settings"},
		{"seed_compact_charge", 2, CommandVersionCompactCharge, "compact_charge"},
		{"seed_progress", 2, CommandVersionProgress, "progress"},
		{"seed_follow_ups", 2, CommandVersionFollowUps, "follow_ups"},
		{"seed_public_enqueue", 2, CommandVersionPublicEnqueue, "public_enqueue"},
		{"seed_dependencies", 2, CommandVersionDependencies, "dependencies"},
	}
	covered := map[[2]uint32]bool{}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			data := readSeedFile(t, filepath.Join(dir, tt.file))
			if framed := len(data) > 0 && data[0] == entryFrameV2; framed != (tt.format == 2) {
				t.Fatalf("entry format: framed %v, want format %d", framed, tt.format)
			}
			entry, err := DecodeEntry(data)
			if err != nil {
				t.Fatalf("decode: %v", err)
			}
			if got := entry.GetFormatVersion(); got != uint32(tt.format) {
				t.Fatalf("format version %d, want %d", got, tt.format)
			}
			var top uint32
			for _, c := range entry.GetCommands() {
				top = max(top, c.GetVersion())
			}
			if top != tt.commandMax {
				t.Fatalf("highest command version %d, want %d", top, tt.commandMax)
			}
			if err := CheckEntry(data); err != nil {
				t.Fatalf("CheckEntry: %v", err)
			}
			golden := newTestFSM(t)
			results, _ := golden.Apply(&raft.Log{Index: 1, Term: 1, Type: raft.LogCommand, Data: data}).([]Result)
			if len(results) != len(entry.GetCommands()) {
				t.Fatalf("apply gave %d results for %d commands", len(results), len(entry.GetCommands()))
			}
			covered[[2]uint32{uint32(tt.format), top}] = true
			if tt.sameStateAs == "" {
				for i, r := range results {
					if r.Err != nil {
						t.Fatalf("command %d: %v", i, r.Err)
					}
				}
				return
			}
			current, ok := seeds[tt.sameStateAs]
			if !ok {
				t.Fatalf("no current seed %q", tt.sameStateAs)
			}
			// Node metadata's command version is not in the digest, so the
			// versioned node seed still matches after CommandVersion grows.
			if tt.format == 2 && tt.file != "seed_nodes_versioned" && string(current) != string(data) {
				t.Fatal("this binary no longer writes these bytes for the same commands: an older follower may not read them")
			}
			now := newTestFSM(t)
			now.Apply(&raft.Log{Index: 1, Term: 1, Type: raft.LogCommand, Data: current})
			if golden.Digest() != now.Digest() {
				t.Fatal("the golden entry applies to another state than the same commands written by this binary")
			}
		})
	}
	for _, want := range [][2]uint32{{1, 1}, {2, 1}, {2, 2}, {2, 3}, {2, 4}, {2, 5}, {2, 6}, {2, 7}, {2, 8}, {2, 9}, {2, 10}, {2, 11}, {2, 12}, {2, 13}, {2, 14}, {2, 15}} {
		if !covered[want] {
			t.Errorf("no golden entry of format %d with command version %d", want[0], want[1])
		}
	}
	// The newest version a command carries (a capability row is carried
	// by none).
	newest := CommandVersion
	for isCapability(newest) {
		newest--
	}
	if !covered[[2]uint32{2, newest}] {
		t.Errorf("no golden entry of command version %d, the newest a command carries: add one", newest)
	}
}

// readSeedFile returns the bytes of a one-value `go test fuzz v1` file.
func readSeedFile(t *testing.T, path string) []byte {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitN(string(raw), "\n", 3)
	if len(lines) < 2 || lines[0] != "go test fuzz v1" || !strings.HasPrefix(lines[1], "[]byte(") {
		t.Fatalf("%s is not a fuzz seed file", path)
	}
	data, err := strconv.Unquote(strings.TrimSuffix(strings.TrimPrefix(lines[1], "[]byte("), ")"))
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return []byte(data)
}
