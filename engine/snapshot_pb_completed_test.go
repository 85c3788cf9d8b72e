package engine_test

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/sepp-io/sepp/engine"
	et "github.com/sepp-io/sepp/engine/enginetest"
	storepb "github.com/sepp-io/sepp/proto/seppstore/v1"
)

// pbCompletedEngine is an engine with completed jobs whose records carry
// a history (a nack with a directive, a release, a lease expiry), on two
// queues, and a fair queue whose levels' turn orders are not the order
// their lines first got a job.
func pbCompletedEngine(t *testing.T, store engine.PayloadStore) (*engine.Engine, []engine.JobID) {
	t.Helper()
	clock := et.NewClock()
	e := et.New(t,
		et.WithQueue(engine.QueueConfig{Name: "kept", CompletedRetention: time.Hour}),
		et.WithQueue(engine.QueueConfig{Name: "kept2", CompletedRetention: 2 * time.Hour}),
		et.WithQueue(engine.QueueConfig{Name: "fair", FairnessKey: "tenant"}))
	e.EnableRecordFields(clock.Now())
	if store != nil {
		e.UsePayloadStore(store)
	}
	var done []engine.JobID
	// A job nacked (after 1s, with a reason), released, expired, then
	// acked with a result.
	id := et.MustEnqueue(t, e, clock.Now(), engine.EnqueueParams{Queue: "kept", JobType: "hist", Payload: []byte("p"), MaxAttempts: 10})
	d := et.MustReserveOne(t, e, clock.Advance(time.Second), "kept")
	if _, err := e.Nack(clock.Advance(time.Second), engine.NackParams{LeaseRef: et.Ref(d), Directive: engine.DirectiveAfter, After: time.Second, Reason: "busy"}); err != nil {
		t.Fatal(err)
	}
	d = et.MustReserveOne(t, e, clock.Advance(2*time.Second), "kept")
	if err := e.Release(clock.Advance(time.Second), et.Ref(d)); err != nil {
		t.Fatal(err)
	}
	et.MustReserveOne(t, e, clock.Advance(time.Second), "kept")
	e.Tick(clock.Advance(time.Hour)) // the lease expires
	d = et.MustReserveOne(t, e, clock.Advance(time.Second), "kept")
	if err := e.AckWithResult(clock.Advance(time.Second), et.Ref(d), []byte(`{"n":1}`)); err != nil {
		t.Fatal(err)
	}
	done = append(done, id)
	// Plain completions on both queues, without a result, interleaved.
	for i := 0; i < 3; i++ {
		for _, q := range []string{"kept2", "kept"} {
			id := et.MustEnqueue(t, e, clock.Advance(time.Millisecond), et.Job(q))
			d := et.MustReserveOne(t, e, clock.Advance(time.Millisecond), q)
			if err := e.AckWithResult(clock.Advance(time.Millisecond), et.Ref(d), nil); err != nil {
				t.Fatal(err)
			}
			done = append(done, id)
		}
	}
	// The fair queue: lines a, b, none and c on priorities 0 and 5; a
	// reserve from each level sends its first line to the back.
	for _, prio := range []uint32{0, 5} {
		for _, k := range []string{"a", "b", "", "c", "a", "b", ""} {
			p := et.Job("fair")
			p.Priority = et.Ptr(prio)
			if k != "" {
				p.Custom = map[string]string{"tenant": k}
			}
			et.MustEnqueue(t, e, clock.Advance(time.Millisecond), p)
		}
	}
	et.MustReserve(t, e, clock.Advance(time.Millisecond), "fair", 2)
	return e, done
}

func TestProtoSnapshot_CompletedAndFairOrdersRoundTrip(t *testing.T) {
	t.Parallel()
	recs := &recordingStore{payloads: map[engine.JobID][]byte{}, completed: map[engine.JobID]engine.CompletedRecord{}}
	e, done := pbCompletedEngine(t, recs)
	et.RequireInvariants(t, e) // includes the protobuf form's round trip

	// The records restored from either form are the same, field by field
	// (zero times, the history's durations, no result).
	restored := func(o engine.SnapshotOptions) map[engine.JobID]engine.CompletedRecord {
		var buf bytes.Buffer
		if err := e.SnapshotWith(&buf, o); err != nil {
			t.Fatal(err)
		}
		s := &recordingStore{payloads: map[engine.JobID][]byte{}, completed: map[engine.JobID]engine.CompletedRecord{}}
		r := engine.New(engine.DefaultConfig())
		r.UsePayloadStore(s)
		if err := r.Restore(&buf); err != nil {
			t.Fatalf("restore %+v: %v", o, err)
		}
		if r.Digest() != e.Digest() {
			t.Fatalf("restore %+v: another digest", o)
		}
		return s.completed
	}
	legacy, pb := restored(engine.SnapshotOptions{}), restored(engine.SnapshotOptions{Protobuf: true})
	if len(pb) != len(done) || !reflect.DeepEqual(legacy, pb) {
		t.Fatalf("records restored from the protobuf form:\n%+v\nfrom the legacy form:\n%+v", pb, legacy)
	}
	if h := pb[done[0]].History; len(h) != 3 || h[0].Directive != "after" || h[0].Duration == 0 || h[2].Outcome != "lease_expired" {
		t.Fatalf("history %+v", h)
	}

	// Written with CompletedSection, the form holds no record; it
	// restores only with the option, and then takes the records.
	var buf bytes.Buffer
	o := engine.SnapshotOptions{Protobuf: true, CompletedSection: true}
	if err := e.SnapshotWith(&buf, o); err != nil {
		t.Fatal(err)
	}
	if n := len(pbBody(t, buf.Bytes()).GetCompletedRecords()); n != 0 {
		t.Fatalf("%d records written with CompletedSection", n)
	}
	if err := engine.New(engine.DefaultConfig()).Restore(bytes.NewReader(buf.Bytes())); err == nil {
		t.Fatal("a form without records restored without CompletedSection")
	}
	r := engine.New(engine.DefaultConfig())
	if err := r.RestoreWith(&buf, o); err != nil {
		t.Fatal(err)
	}
	if ids := r.CompletedIDs(); !slices.Equal(ids, e.CompletedIDs()) {
		t.Fatalf("completed ids %v, want %v", ids, e.CompletedIDs())
	}
}

// pbBody is the EngineSnapshot of a layout 19 stream.
func pbBody(t *testing.T, form []byte) *storepb.EngineSnapshot {
	t.Helper()
	var s storepb.EngineSnapshot
	if err := proto.Unmarshal(form[len("SEPPENG\x00")+1:len(form)-4], &s); err != nil {
		t.Fatal(err)
	}
	return &s
}

// pbForm is the layout 19 stream of s.
func pbForm(t *testing.T, s *storepb.EngineSnapshot) []byte {
	t.Helper()
	body, err := proto.MarshalOptions{Deterministic: true}.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	out := append([]byte("SEPPENG\x00\x13"), body...)
	return binary.LittleEndian.AppendUint32(out, crc32.ChecksumIEEE(out))
}

func TestProtoSnapshot_CompletedAndFairOrdersRefused(t *testing.T) {
	t.Parallel()
	e, _ := pbCompletedEngine(t, nil)
	var buf bytes.Buffer
	if err := e.SnapshotWith(&buf, engine.SnapshotOptions{Protobuf: true}); err != nil {
		t.Fatal(err)
	}
	form := buf.Bytes()
	if s := pbBody(t, form); len(s.GetFairOrders()) != 2 || len(s.GetCompleted()) != 7 || len(s.GetCompletedRecords()) != 7 {
		t.Fatalf("%d fair orders, %d completed, %d records", len(s.GetFairOrders()), len(s.GetCompleted()), len(s.GetCompletedRecords()))
	}
	// Re-encoded unchanged, the body restores (the cases below fail for
	// their change, not the re-encoding).
	if err := engine.New(engine.DefaultConfig()).Restore(bytes.NewReader(pbForm(t, pbBody(t, form)))); err != nil {
		t.Fatal(err)
	}
	liveID := pbBody(t, form).GetJobs()[0].GetId()
	for _, c := range []struct {
		name, want string
		change     func(s *storepb.EngineSnapshot)
	}{
		{"fair order of a level with lines left out", "no turn order", func(s *storepb.EngineSnapshot) {
			s.FairOrders = s.FairOrders[1:]
		}},
		{"fair order of the last level left out", "no turn order", func(s *storepb.EngineSnapshot) {
			s.FairOrders = s.FairOrders[:1]
		}},
		{"fair orders out of order", "no turn order", func(s *storepb.EngineSnapshot) {
			s.FairOrders[0], s.FairOrders[1] = s.FairOrders[1], s.FairOrders[0]
		}},
		{"fair order twice", "out of order", func(s *storepb.EngineSnapshot) {
			s.FairOrders = append(s.FairOrders[:1], s.FairOrders...)
		}},
		{"fair order of a queue without a key", "without a fairness key", func(s *storepb.EngineSnapshot) {
			s.FairOrders[0].Queue = 1
		}},
		{"fair order of a priority out of range", "out of range", func(s *storepb.EngineSnapshot) {
			s.FairOrders[1].Priority = engine.MaxPriority + 1
		}},
		{"empty fair order", "empty turn order", func(s *storepb.EngineSnapshot) {
			s.FairOrders = append(s.FairOrders, &storepb.EngineFairOrder{Queue: s.FairOrders[1].Queue, Priority: 7})
		}},
		{"fair order missing a line", "does not match", func(s *storepb.EngineSnapshot) {
			s.FairOrders[0].Lines = s.FairOrders[0].Lines[1:]
		}},
		{"fair order with an unknown line", "does not match", func(s *storepb.EngineSnapshot) {
			s.FairOrders[0].Lines[0] = &storepb.EngineFairLine{Value: "zzz"}
		}},
		{"fair line both none and a value", "without the field has value", func(s *storepb.EngineSnapshot) {
			for _, l := range s.FairOrders[0].Lines {
				if l.None {
					l.Value = "a"
				}
			}
		}},
		{"completed job 0", "is held twice or is 0", func(s *storepb.EngineSnapshot) {
			s.Completed[0].Id = 0
		}},
		{"completed job twice", "is held twice or is 0", func(s *storepb.EngineSnapshot) {
			s.Completed[1].Id = s.Completed[0].Id
		}},
		{"completed job live", "is held twice or is 0", func(s *storepb.EngineSnapshot) {
			s.Completed[0].Id = liveID
		}},
		{"completed jobs out of completion order", "out of order or after the clock", func(s *storepb.EngineSnapshot) {
			s.Completed[0].At, s.Completed[1].At = s.Completed[1].At, s.Completed[0].At
		}},
		{"completed after the clock", "out of order or after the clock", func(s *storepb.EngineSnapshot) {
			s.Completed[len(s.Completed)-1].At = s.GetHeader().GetNow() + 1
		}},
		{"completed queues out of order", "out of order", func(s *storepb.EngineSnapshot) {
			s.Completed[0], s.Completed[len(s.Completed)-1] = s.Completed[len(s.Completed)-1], s.Completed[0]
		}},
		{"completed queue out of range", "out of range", func(s *storepb.EngineSnapshot) {
			s.Completed[len(s.Completed)-1].Queue = 99
		}},
		{"record missing", "records for", func(s *storepb.EngineSnapshot) {
			s.CompletedRecords = s.CompletedRecords[1:]
		}},
		{"record of a job not completed", "not a completed job", func(s *storepb.EngineSnapshot) {
			s.CompletedRecords = append(s.CompletedRecords, &storepb.EngineCompletedRecord{Id: 1 << 40, Job: &storepb.EngineCompletedJob{Queue: "kept"}})
		}},
		{"records out of order", "out of order", func(s *storepb.EngineSnapshot) {
			s.CompletedRecords[0], s.CompletedRecords[1] = s.CompletedRecords[1], s.CompletedRecords[0]
		}},
		{"record of another queue", "completed in queue", func(s *storepb.EngineSnapshot) {
			s.CompletedRecords[0].Job.Queue = "kept2"
		}},
		{"record without a body", "no body", func(s *storepb.EngineSnapshot) {
			s.CompletedRecords[0].Job = nil
		}},
		{"record with an unknown outcome", "unknown outcome", func(s *storepb.EngineSnapshot) {
			s.CompletedRecords[0].Job.History[0].Outcome = 9
		}},
		{"record with an unknown directive", "unknown directive", func(s *storepb.EngineSnapshot) {
			s.CompletedRecords[0].Job.History[0].Directive = 4
		}},
	} {
		s := pbBody(t, form)
		c.change(s)
		err := engine.New(engine.DefaultConfig()).Restore(bytes.NewReader(pbForm(t, s)))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: restore: %v, want an error saying %q", c.name, err, c.want)
		}
	}
}
