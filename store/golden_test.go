package store

import (
	"bytes"
	"encoding/hex"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"google.golang.org/protobuf/proto"

	storepb "github.com/sepp-io/sepp/proto/seppstore/v1"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// goldenRecords are one record of each kind, with every field set, under
// the key it is stored at. Their bytes are the store's on-disk form: a
// change that alters them is a format change (FormatVersion) or a bug.
func goldenRecords() []struct {
	name string
	key  []byte
	rec  proto.Message
} {
	origin := &storepb.Origin{Queue: "orders", JobId: 41, Cause: storepb.Cause_CAUSE_ATTEMPTS_EXHAUSTED, FailedAtUnixNano: 1_700_000_000_000_000_000, LastReason: "timeout", FinalAttempt: 5}
	b := &storepb.JobBody{
		Queue: "orders.dlq", JobType: "charge", Payload: []byte(`{"amount":42}`),
		Custom:             map[string]string{"zeta": "last", "alpha": "first", "mid": "m"},
		EnqueuedAtUnixNano: 1_700_000_000_123_456_789, ScheduledAtUnixNano: 1_700_000_060_000_000_000,
		UniqueKey: "charge-42", Origin: origin,
	}
	p := &storepb.JobProgress{
		Attempts: []*storepb.Attempt{
			{Attempt: 1, Outcome: storepb.AttemptOutcome_ATTEMPT_OUTCOME_NACK, AtUnixNano: 1_700_000_001_000_000_000, Worker: "w-1", Reason: "busy", StartedAtUnixNano: 1_700_000_000_900_000_000, Lease: 77, Directive: 2},
			{Attempt: 2, Outcome: storepb.AttemptOutcome_ATTEMPT_OUTCOME_LEASE_EXPIRED, AtUnixNano: 1_700_000_002_000_000_000},
		},
		LastReason: "busy", Result: []byte("ok"),
	}
	dk, err := deadKey("orders.dlq", 1<<40+3)
	if err != nil {
		panic(err)
	}
	return []struct {
		name string
		key  []byte
		rec  proto.Message
	}{
		{"meta", metaKey, &storepb.StoreMeta{FormatVersion: FormatVersion, AppliedIndex: 123456, AppliedTerm: 7}},
		{"job_body", bodyKey(1<<40 + 3), b},
		{"job_progress", progressKey(1<<40 + 3), p},
		{"dead_letter", dk, &storepb.DeadLetter{Body: b, Progress: p, Cause: storepb.Cause_CAUSE_REJECTED, FailedAtUnixNano: 1_700_000_003_000_000_000, ExpiresAtUnixNano: 1_700_604_803_000_000_000, FinalAttempt: 3, MaxAttempts: 5, Priority: 2}},
		{"completed_job", completedKey(1<<40 + 4), &storepb.CompletedJob{
			Queue: "thumbnails", JobType: "resize", Result: []byte(`{"width":640}`),
			CompletedAtUnixNano: 1_700_000_004_000_000_000, StartedAtUnixNano: 1_700_000_003_500_000_000, EnqueuedAtUnixNano: 1_700_000_000_123_456_789,
			Attempt: 2, MaxAttempts: 3, Priority: 5, History: p.GetAttempts()[:1], Worker: "w-2",
		}},
	}
}

// TestGolden_Records: keys and deterministic record bytes match
// testdata/records.golden (go test ./store -run TestGolden -update
// rewrites it), and the golden bytes decode back to the records.
func TestGolden_Records(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	out.WriteString("# sepp store records: name, key (hex), value (hex). Regenerate: go test ./store -run TestGolden_Records -update\n")
	for _, g := range goldenRecords() {
		v, err := marshal.Marshal(g.rec)
		if err != nil {
			t.Fatal(err)
		}
		for range 5 { // map order must not leak into the bytes
			again, _ := marshal.Marshal(g.rec)
			if !bytes.Equal(again, v) {
				t.Fatalf("%s: marshalling is not deterministic", g.name)
			}
		}
		back := g.rec.ProtoReflect().New().Interface()
		if err := proto.Unmarshal(v, back); err != nil || !proto.Equal(back, g.rec) {
			t.Fatalf("%s: round trip: %v", g.name, err)
		}
		fmt.Fprintf(&out, "%s %s %s\n", g.name, hex.EncodeToString(g.key), hex.EncodeToString(v))
	}
	path := filepath.Join("testdata", "records.golden")
	if *update {
		if err := os.WriteFile(path, out.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(out.Bytes(), want) {
		t.Errorf("records differ from %s:\n got: %s\nwant: %s", path, out.Bytes(), want)
	}
}
