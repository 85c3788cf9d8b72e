package fsm

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"testing"
	"time"

	"github.com/sepp-io/sepp/engine"
	"github.com/sepp-io/sepp/store"
)

func newResultsRecorder(t *testing.T, seed uint64) *logRecorder {
	t.Helper()
	r := newLogRecorder(t, seed)
	r.results = true
	return r
}

// completedIn counts the completed jobs f keeps and checks that each one
// the engine lists has its record in f's store.
func completedIn(t *testing.T, f *FSM) int {
	t.Helper()
	n := 0
	if err := f.Read(func(e *engine.Engine) error {
		n = e.CompletedCount()
		for _, id := range e.CompletedIDs() {
			if f.payloads == nil {
				continue
			}
			if _, err := f.payloads.st.Completed(uint64(id)); err != nil {
				return fmt.Errorf("completed job %d: store: %w", id, err)
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestFSM_CompletedRecordsLiveInTheStore: an ack with a result writes the
// job's record to the node's store at its apply, GetJob reads it back from
// there, and the tick that passes the queue's retention deletes it.
func TestFSM_CompletedRecordsLiveInTheStore(t *testing.T) {
	f := openStoreFSM(t, filepath.Join(t.TempDir(), "payloads"))
	defer closeFSM(t, f)
	at := func(d time.Duration) time.Time { return t0.Add(d) }
	res := applyEntry(t, f, 1, stamped(at(0),
		CreateQueueCommand(engine.QueueConfig{Name: "kept", CompletedRetention: time.Minute}, false),
		EnqueueCommand(enqueueParams("kept", 1)),
		ReserveCommand(engine.ReserveParams{Queue: "kept", WorkerID: "w", N: 1, Lease: time.Minute})))
	if len(res[2].Deliveries) != 1 {
		t.Fatalf("reserve: %+v", res[2])
	}
	d := res[2].Deliveries[0]
	ref := engine.LeaseRef{JobID: d.Job.ID, LeaseToken: d.LeaseToken}
	res = applyEntry(t, f, 2, stamped(at(time.Second), AckWithResultCommand(ref, []byte("42"))))
	if res[0].Err != nil {
		t.Fatal(res[0].Err)
	}
	rec, err := f.payloads.st.Completed(uint64(ref.JobID))
	if err != nil {
		t.Fatalf("the store holds no record of the completed job: %v", err)
	}
	if string(rec.GetResult()) != "42" || rec.GetQueue() != "kept" || rec.GetWorker() != "w" || rec.GetAttempt() != 1 {
		t.Fatalf("record %v", rec)
	}
	var job engine.Job
	if err := f.Read(func(e *engine.Engine) error {
		var err error
		job, err = e.GetJob(ref.JobID)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if job.State != engine.StateCompleted || job.Completed == nil || string(job.Completed.Result) != "42" || !job.Completed.CompletedAt.Equal(at(time.Second)) {
		t.Fatalf("GetJob: %+v", job)
	}
	applyEntry(t, f, 3, stamped(at(time.Minute+time.Second), TickCommand()))
	if _, err := f.payloads.st.Completed(uint64(ref.JobID)); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("the record after the retention: %v, want not found", err)
	}
}

// TestFSM_CompletedStoreAheadReplayWritesNothing: a node restarted over
// the store it kept, past its last snapshot, replays the entries up to the
// store's index without writing to it (rule 1: the completed FIFOs move
// from the log alone), and reaches the state of a replica that never
// restarted, completed records and their expiries included.
func TestFSM_CompletedStoreAheadReplayWritesNothing(t *testing.T) {
	const total, snapAt, more = 300, 120, 100
	for _, seed := range []uint64{1, 2} {
		t.Run(fmt.Sprint("Seed", seed), func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "payloads")
			rec := newResultsRecorder(t, seed)
			node := openStoreFSM(t, dir)
			rec.run(node, snapAt)
			snap := snapshotBytes(t, node)
			rec.run(node, total-snapAt)
			if completedIn(t, node) == 0 {
				t.Fatal("no completed job kept at the end: the test tests nothing")
			}
			closeFSM(t, node)

			restarted := openStoreFSM(t, dir)
			defer closeFSM(t, restarted)
			storeBefore, idx, err := restarted.payloads.st.Digest()
			if err != nil || idx != total {
				t.Fatalf("kept store at %d (%v), want %d", idx, err, total)
			}
			if err := restarted.Restore(io.NopCloser(bytes.NewReader(snap))); err != nil {
				t.Fatal(err)
			}
			rec.replay(t, restarted, snapAt+1, seed+10)
			storeAfter, _, err := restarted.payloads.st.Digest()
			if err != nil {
				t.Fatal(err)
			}
			if storeAfter != storeBefore {
				t.Fatal("the replay of entries the store already held wrote to it")
			}
			reference := newTestFSM(t)
			rec.replay(t, reference, 1, seed)
			if restarted.Digest() != reference.Digest() {
				t.Fatal("the restarted node's state (completed records included) differs from the replica's")
			}
			completedIn(t, restarted)
			rec.run(restarted, more)
			rec.replay(t, reference, total+1, seed)
			if restarted.Digest() != reference.Digest() {
				t.Fatal("the restarted node diverged after more entries")
			}
		})
	}
}

// engineLayoutProtobuf is the engine's protobuf layout (engine/snapshot_pb.go).
const engineLayoutProtobuf = 19

// engineLayout is the layout of the engine's part of the snapshot data.
func engineLayout(t *testing.T, data []byte) byte {
	t.Helper()
	i := bytes.Index(data, []byte("SEPPENG\x00"))
	if i < 0 || i+8 >= len(data) {
		t.Fatal("no engine part in the snapshot")
	}
	return data[i+8]
}

// TestFSM_CompletedSnapshotCarriesRecords: once every member applies
// command version 20, snapshots are format 3, whose completed section is
// streamed from the store's view taken at the snapshot's index; with one
// member older they stay format 2 with the records inside the engine's
// part; once every member applies 24 they are format 4 (the payloads
// last), and once every member applies 28 the engine's part is in
// protobuf. Either way the restored state (over a fresh store, over the kept
// store, without a store) is the log's at that index, records included.
func TestFSM_CompletedSnapshotCarriesRecords(t *testing.T) {
	for _, tc := range []struct {
		name           string
		newest, oldest uint32
		format         uint32
	}{
		{"EveryMemberApplies28", CommandVersionSnapshotProtobuf, CommandVersionSnapshotProtobuf, snapshotFormatPayloadsLast},
		{"OneMemberBefore28", CommandVersionSnapshotProtobuf, CommandVersionSnapshotProtobuf - 1, snapshotFormatPayloadsLast},
		{"EveryMemberApplies24", CommandVersionSnapshotPayloadsLast, CommandVersionSnapshotPayloadsLast, snapshotFormatPayloadsLast},
		{"OneMemberBefore24", CommandVersionSnapshotPayloadsLast, CommandVersionSnapshotPayloadsLast - 1, snapshotFormatCompletedSection},
		{"EveryMemberApplies20", CommandVersionResults, CommandVersionResults, snapshotFormatCompletedSection},
		{"OneMemberBefore20", CommandVersionResults, CommandVersionResults - 1, snapshotFormatPayloadSection},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "payloads")
			rec := newResultsRecorder(t, 5)
			node := openStoreFSM(t, dir)
			rec.run(node, 2)
			for i := range 3 {
				v := tc.newest
				if i == 2 {
					v = tc.oldest
				}
				rec.apply(node, SetNodeCommand(NodeMeta{ID: fmt.Sprint("n", i), RaftAddr: fmt.Sprint("127.0.0.1:", 7000+i), MaxCommandVersion: v}))
			}
			rec.run(node, 150)
			if completedIn(t, node) == 0 {
				t.Fatal("no completed job kept at the snapshot: the test tests nothing")
			}
			at := node.AppliedIndex()
			snap, err := node.Snapshot()
			if err != nil {
				t.Fatal(err)
			}
			rec.run(node, 100) // applies (acks, expiries) go on before Persist reads the store
			var sink memSink
			if err := snap.Persist(&sink); err != nil {
				t.Fatal(err)
			}
			snap.Release()
			data := sink.Bytes()
			if got := snapshotFormat(t, data); got != tc.format {
				t.Fatalf("format %d, want %d", got, tc.format)
			}
			// The engine's part is in protobuf (layout 19) once every
			// member reads it, in a hand-written layout before.
			if got, protobuf := engineLayout(t, data), tc.oldest >= CommandVersionSnapshotProtobuf; (got == engineLayoutProtobuf) != protobuf {
				t.Fatalf("engine layout %d with every member at %d or later", got, tc.oldest)
			}
			reference := newTestFSM(t)
			for _, l := range rec.entries[:at] {
				reference.Apply(l)
			}
			want := reference.Digest()

			heap := newTestFSM(t)
			if err := heap.Restore(io.NopCloser(bytes.NewReader(data))); err != nil {
				t.Fatal(err)
			}
			if heap.Digest() != want {
				t.Fatal("restored without a store: the state differs from the log's at the snapshot's index")
			}
			fresh := openStoreFSM(t, filepath.Join(t.TempDir(), "other"))
			defer closeFSM(t, fresh)
			if err := fresh.Restore(io.NopCloser(bytes.NewReader(data))); err != nil {
				t.Fatal(err)
			}
			if fresh.Digest() != want {
				t.Fatal("restored over a fresh store: the state differs from the log's at the snapshot's index")
			}
			completedIn(t, fresh)
			rec.replay(t, fresh, at+1, 9)
			all := newTestFSM(t)
			rec.replay(t, all, 1, 9)
			if fresh.Digest() != all.Digest() {
				t.Fatal("restored over a fresh store and replayed: the state differs")
			}

			closeFSM(t, node)
			kept := openStoreFSM(t, dir)
			defer closeFSM(t, kept)
			if err := kept.Restore(io.NopCloser(bytes.NewReader(data))); err != nil {
				t.Fatal(err)
			}
			rec.replay(t, kept, at+1, 9)
			if kept.Digest() != all.Digest() {
				t.Fatal("restored over the kept store and replayed: the state differs")
			}
		})
	}
}

// TestFSM_CompletedSectionRejectsCorruption: a format 3 stream whose
// completed section lacks a record, or names a job the engine does not
// keep, is refused.
func TestFSM_CompletedSectionRejectsCorruption(t *testing.T) {
	ids := []engine.JobID{3, 7}
	for _, tc := range []struct {
		name string
		recs []uint64
	}{
		{"missing", []uint64{3}},
		{"unknown", []uint64{3, 8}},
		{"extra", []uint64{3, 7, 9}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			for _, id := range tc.recs {
				var rec [12]byte
				rec[7] = byte(id)
				buf.Write(rec[:])
			}
			buf.Write(make([]byte, 8))
			loaded := 0
			err := readCompletedRecords(&buf, ids, func(*engine.CompletedRecord) { loaded++ })
			if err == nil {
				t.Fatalf("accepted (%d records loaded)", loaded)
			}
		})
	}
}
