package fsm

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/sepp-io/sepp/engine"
	cmdpb "github.com/sepp-io/sepp/proto/seppcmd/v1"
)

var updateCorpus = flag.Bool("update-corpus", false, "rewrite the seed corpus under testdata/fuzz/FuzzDecodeEntry")

// seedEntries are valid entries of every command, the seed corpus of
// FuzzDecodeEntry; they double as a record of the v1 encoding.
func seedEntries(t testing.TB) map[string][]byte {
	t.Helper()
	prio := uint32(3)
	entries := map[string][]*cmdpb.Command{
		"enqueue":         {EnqueueCommand(engine.EnqueueParams{Queue: "q", JobType: "t", Payload: []byte("hello"), Priority: &prio, Custom: map[string]string{"a": "b"}, IdempotencyKey: "k"})},
		"enqueue_batch":   {EnqueueBatchCommand([]engine.EnqueueParams{{Queue: "q", JobType: "t"}, {Queue: "r", JobType: "u", ScheduledAt: t0.Add(time.Hour)}})},
		"ack_batch":       {AckBatchCommand([]engine.LeaseRef{{JobID: 1, LeaseToken: 1}, {JobID: 2, LeaseToken: 7}}), AckCommand(engine.LeaseRef{JobID: 3, LeaseToken: 1})},
		"reserve_ack":     {ReserveCommand(engine.ReserveParams{Queue: "q", WorkerID: "w", N: 2, Lease: time.Minute, RequestID: "r1"}), AckCommand(engine.LeaseRef{JobID: 1, LeaseToken: 1})},
		"nack_release":    {NackCommand(engine.NackParams{LeaseRef: engine.LeaseRef{JobID: 1, LeaseToken: 1}, Directive: engine.DirectiveDeadLetter, Reason: "bad"}), ReleaseCommand(engine.LeaseRef{JobID: 2, LeaseToken: 2})},
		"extend":          {ExtendLeaseCommand(engine.ExtendParams{LeaseRef: engine.LeaseRef{JobID: 1, LeaseToken: 1}, Lease: time.Second}), ExtendAllLeasesCommand(5 * time.Second)},
		"dead_letters":    {DrainCommand(engine.DrainParams{Max: 3}), RequeueDeadLettersCommand([]engine.JobID{1}), DeleteDeadLettersCommand([]engine.JobID{2}), DeadLetterJobsCommand([]engine.JobID{3}, "op")},
		"queues":          {PauseQueueCommand("q"), ResumeQueueCommand("q")},
		"tick":            {TickCommand()},
		"config":          {SetConfigCommand(engine.Config{Limits: engine.DefaultLimits()})},
		"nodes":           {SetNodeCommand(NodeMeta{ID: "n1", RaftAddr: "127.0.0.1:1", GRPCAddr: "127.0.0.1:2"}), DeleteNodeCommand("n1")},
		"nodes_versioned": {SetNodeCommand(NodeMeta{ID: "n2", RaftAddr: "127.0.0.1:3", MaxCommandVersion: CommandVersion})},
	}
	out := make(map[string][]byte, len(entries))
	for name, cmds := range entries {
		data, err := EncodeEntry(stamped(t0, cmds...))
		if err != nil {
			t.Fatal(err)
		}
		out[name] = data
	}
	return out
}

// TestSeedCorpusIsCurrent keeps the committed corpus decodable and, with
// -update-corpus, rewrites it.
func TestSeedCorpusIsCurrent(t *testing.T) {
	dir := filepath.Join("testdata", "fuzz", "FuzzDecodeEntry")
	seeds := seedEntries(t)
	if *updateCorpus {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for name, data := range seeds {
			body := fmt.Sprintf("go test fuzz v1\n[]byte(%q)\n", data)
			if err := os.WriteFile(filepath.Join(dir, "seed_"+name), []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	files, err := filepath.Glob(filepath.Join(dir, "seed_*"))
	if err != nil || len(files) != len(seeds) {
		t.Fatalf("corpus has %d seed files (err %v), want %d: run go test ./fsm -run TestSeedCorpusIsCurrent -update-corpus", len(files), err, len(seeds))
	}
}

// FuzzDecodeEntry: DecodeEntry never panics, and an entry it accepts applies
// without panicking (the engine answers bad input with error values). The
// only panic of Apply is the documented one for entries DecodeEntry rejects.
func FuzzDecodeEntry(f *testing.F) {
	for _, data := range seedEntries(f) {
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		entry, err := DecodeEntry(data)
		if err != nil {
			if !errors.Is(err, ErrDecode) {
				t.Fatalf("decode error %v does not wrap ErrDecode", err)
			}
			return
		}
		fsm := New(Config{Engine: engine.Config{Limits: engine.DefaultLimits()}, SnapshotTempDir: t.TempDir()})
		resp := fsm.Apply(&raft.Log{Index: 1, Type: raft.LogCommand, Data: data})
		if results, ok := resp.([]Result); !ok || len(results) != len(entry.GetCommands()) {
			t.Fatalf("apply answered %T for %d commands", resp, len(entry.GetCommands()))
		}
	})
}
