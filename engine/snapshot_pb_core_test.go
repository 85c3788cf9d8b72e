package engine_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/sepp-io/sepp/engine"
	storepb "github.com/sepp-io/sepp/proto/seppstore/v1"
)

// TestProtoSnapshot_CoreRefused: a layout 19 stream whose header, queues,
// jobs, dead letters, keys or reservations break what the engine holds
// true is refused with ErrCorruptSnapshot and a message naming the field
// and what is wrong, as the hand-written layouts' decoder refuses the same
// states; so is one whose fields are not the snapshot's, or out of order.
func TestProtoSnapshot_CoreRefused(t *testing.T) {
	t.Parallel()
	e := richEngine(t, withHistory5)
	if _, err := e.Reserve(e.Now(), engine.ReserveParams{Queue: "a", N: 2, WorkerID: "worker-8", RequestID: "req-2"}); err != nil {
		t.Fatal(err)
	}
	form := protobufSnapshotBytes(t, e)
	s := pbBody(t, form)
	if len(s.GetJobs()) < 5 || len(s.GetDeadLetters()) == 0 || len(s.GetIdempotencyKeys()) < 2 || len(s.GetReservations()) == 0 {
		t.Fatalf("the state holds %d jobs, %d dead letters, %d keys, %d reservations: the cases below test nothing",
			len(s.GetJobs()), len(s.GetDeadLetters()), len(s.GetIdempotencyKeys()), len(s.GetReservations()))
	}
	if err := engine.New(engine.DefaultConfig()).Restore(bytes.NewReader(pbForm(t, s))); err != nil {
		t.Fatalf("re-encoded unchanged, the body is refused: %v", err)
	}
	// jobOf finds the first job m accepts.
	jobOf := func(s *storepb.EngineSnapshot, m func(*storepb.EngineJob) bool) *storepb.EngineJob {
		for _, j := range s.GetJobs() {
			if m(j) {
				return j
			}
		}
		t.Fatal("no such job in the state")
		return nil
	}
	ready := func(j *storepb.EngineJob) bool { return engine.State(j.GetState()) == engine.StateReady }
	reserved := func(j *storepb.EngineJob) bool { return engine.State(j.GetState()) == engine.StateReserved }
	custom := func(j *storepb.EngineJob) bool { return len(j.GetCustom()) > 1 }
	for _, c := range []struct {
		name, want string
		change     func(s *storepb.EngineSnapshot)
	}{
		{"no header", "no header", func(s *storepb.EngineSnapshot) { s.Header = nil }},
		{"id counters", "bad id counters", func(s *storepb.EngineSnapshot) { s.Header.NextId = 0 }},
		{"an invalid config", "config", func(s *storepb.EngineSnapshot) { s.Header.Config.Limits.DefaultPriority = 99 }},
		{"payload lengths not asked for", "written with payload lengths", func(s *storepb.EngineSnapshot) { s.Header.PayloadLengths = true }},
		{"more keys than the input", "more than the input holds", func(s *storepb.EngineSnapshot) { s.Header.IdempotencyKeyCount = 1 << 39 }},
		{"queues out of order", "bad or unsorted name", func(s *storepb.EngineSnapshot) { s.Queues[0], s.Queues[1] = s.Queues[1], s.Queues[0] }},
		{"a configured queue missing", "missing", func(s *storepb.EngineSnapshot) {
			s.Queues = s.Queues[1:]
			s.Jobs = nil
			s.DeadLetters = nil
			s.IdempotencyKeys = nil
			s.Reservations = nil
		}},
		{"too many dead-letter causes", "dead-letter causes", func(s *storepb.EngineSnapshot) { s.Queues[0].DeadLettered = make([]uint64, 9) }},
		{"jobs out of order", "out of order", func(s *storepb.EngineSnapshot) { s.Jobs[0], s.Jobs[1] = s.Jobs[1], s.Jobs[0] }},
		{"job id 0", "outside", func(s *storepb.EngineSnapshot) { s.Jobs[0].Id = 0 }},
		{"job id not given yet", "outside", func(s *storepb.EngineSnapshot) { s.Jobs[len(s.Jobs)-1].Id = s.Header.NextId }},
		{"job of no queue", "out of range", func(s *storepb.EngineSnapshot) { s.Jobs[0].Queue = 99 }},
		{"empty job type", "empty job type", func(s *storepb.EngineSnapshot) { s.Jobs[0].JobType = "" }},
		{"priority above 9", "above", func(s *storepb.EngineSnapshot) { s.Jobs[0].Priority = 10 }},
		{"a dead job among the live", "is not live", func(s *storepb.EngineSnapshot) { s.Jobs[0].State = uint32(engine.StateDead) }},
		{"a ready job with a lease", "with lease", func(s *storepb.EngineSnapshot) { jobOf(s, ready).Lease = 7 }},
		{"a ready job with a worker", "with a worker", func(s *storepb.EngineSnapshot) { jobOf(s, ready).Worker = "w" }},
		{"a ready job with progress", "with a worker", func(s *storepb.EngineSnapshot) {
			jobOf(s, ready).Progress = &storepb.EngineProgress{Percent: 5}
		}},
		{"progress above 100", "above 100", func(s *storepb.EngineSnapshot) {
			jobOf(s, reserved).Progress = &storepb.EngineProgress{Percent: 101}
		}},
		{"a payload with its length", "a payload and a payload length", func(s *storepb.EngineSnapshot) { s.Jobs[0].PayloadLength = 3 }},
		{"custom keys out of order", "custom keys out of order", func(s *storepb.EngineSnapshot) {
			j := jobOf(s, custom)
			j.Custom[0], j.Custom[1] = j.Custom[1], j.Custom[0]
		}},
		{"an unknown attempt outcome", "bad attempt outcome", func(s *storepb.EngineSnapshot) {
			jobOf(s, func(j *storepb.EngineJob) bool { return len(j.GetHistory()) > 0 }).History[0].Outcome = 9
		}},
		{"a unique hold without a key", "without a unique key", func(s *storepb.EngineSnapshot) { s.Jobs[0].UniqueDead = true }},
		{"a bad trace context", "trace context", func(s *storepb.EngineSnapshot) {
			s.Jobs[0].Trace = &storepb.EngineTrace{Traceparent: "not a traceparent"}
		}},
		{"an origin of an unknown cause", "unknown origin cause", func(s *storepb.EngineSnapshot) {
			s.Jobs[0].Origin = &storepb.EngineOrigin{Queue: "a", JobId: 1, Cause: 99}
		}},
		{"a ready job blocked by nobody", "parents pending", func(s *storepb.EngineSnapshot) {
			j := jobOf(s, func(j *storepb.EngineJob) bool { return ready(j) && j.GetId() > 1 })
			j.Parents = &storepb.EngineParents{Parents: []*storepb.EngineParent{{Id: j.GetId() - 1}}}
		}},
		{"a dead letter that is not dead", "bad state or cause", func(s *storepb.EngineSnapshot) {
			s.DeadLetters[0].Job.State = uint32(engine.StateReady)
		}},
		{"a dead letter of no cause", "bad state or cause", func(s *storepb.EngineSnapshot) { s.DeadLetters[0].Cause = 0 }},
		{"a dead letter that is live", "appears twice", func(s *storepb.EngineSnapshot) { s.DeadLetters[0].Job.Id = s.Jobs[0].Id }},
		{"a dead letter with a deadline", "dead with parents or a deadline", func(s *storepb.EngineSnapshot) { s.DeadLetters[0].Job.ExpiresAt = 5 }},
		{"a dead letter without its job", "without its job", func(s *storepb.EngineSnapshot) { s.DeadLetters[0].Job = nil }},
		{"a key twice", "appears twice", func(s *storepb.EngineSnapshot) {
			s.IdempotencyKeys = append(s.IdempotencyKeys, s.IdempotencyKeys[len(s.IdempotencyKeys)-1])
		}},
		{"keys out of creation order", "out of creation order", func(s *storepb.EngineSnapshot) {
			s.IdempotencyKeys[0].CreatedAt = s.IdempotencyKeys[1].CreatedAt + 1
		}},
		{"hex digits written as text", "not written as the bytes", func(s *storepb.EngineSnapshot) {
			s.IdempotencyKeys[0].Key = strings.Repeat("ab", 16)
		}},
		{"a key of 15 bytes", "neither a key nor 16 bytes", func(s *storepb.EngineSnapshot) {
			s.IdempotencyKeys[0].Key, s.IdempotencyKeys[0].HexKey = "", make([]byte, 15)
		}},
		{"a reservation's leases short", "leases", func(s *storepb.EngineSnapshot) {
			s.Reservations[0].Leases = s.Reservations[0].Leases[1:]
		}},
		{"a reservation twice", "out of order or twice", func(s *storepb.EngineSnapshot) {
			s.Reservations = append(s.Reservations, s.Reservations[0])
		}},
		{"a declaration of no fingerprint", "declarations, 1 to", func(s *storepb.EngineSnapshot) {
			s.Declared = []*storepb.EngineDeclaration{{Queue: "a"}}
		}},
	} {
		s := pbBody(t, form)
		c.change(s)
		err := engine.New(engine.DefaultConfig()).Restore(bytes.NewReader(pbForm(t, s)))
		if err == nil || !errors.Is(err, engine.ErrCorruptSnapshot) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: restore: %v, want ErrCorruptSnapshot saying %q", c.name, err, c.want)
		}
	}

	// The stream's own shape: fields the snapshot does not have, or out of
	// their order.
	body := form[len("SEPPENG\x00")+1 : len(form)-4]
	_, _, n := protowire.ConsumeField(body)
	if n < 0 {
		t.Fatal("no first field")
	}
	header, rest := body[:n], body[n:]
	// queues and the rest: rest split where the first job begins.
	at := 0
	for at < len(rest) {
		num, _, n := protowire.ConsumeField(rest[at:])
		if n < 0 || num == 3 {
			break
		}
		at += n
	}
	queues, afterQueues := rest[:at], rest[at:]
	at = 0
	for at < len(afterQueues) {
		num, _, n := protowire.ConsumeField(afterQueues[at:])
		if n < 0 || num != 3 {
			break
		}
		at += n
	}
	jobs, afterJobs := afterQueues[:at], afterQueues[at:]
	for _, c := range []struct {
		name, want string
		body       []byte
	}{
		{"an unknown field", "not a field of the snapshot", protowire.AppendVarint(protowire.AppendTag(bytes.Clone(body), 14, protowire.BytesType), 0)},
		{"a varint field", "not a field of the snapshot", protowire.AppendVarint(protowire.AppendTag(bytes.Clone(body), 3, protowire.VarintType), 1)},
		{"the header after the queues", "no header", append(bytes.Clone(rest), header...)},
		{"the queues after the jobs", "missing", append(append(bytes.Clone(header), afterQueues...), queues...)},
		{"the jobs after the fields that follow them", "field 3 after field 6: out of order", slices.Concat(header, queues, afterJobs, jobs)},
		{"two headers", "a second header", append(append(bytes.Clone(header), header...), rest...)},
	} {
		out := append([]byte("SEPPENG\x00\x13"), c.body...)
		out = binary.LittleEndian.AppendUint32(out, crc32.ChecksumIEEE(out))
		err := engine.New(engine.DefaultConfig()).Restore(bytes.NewReader(out))
		if err == nil || !errors.Is(err, engine.ErrCorruptSnapshot) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: restore: %v, want ErrCorruptSnapshot saying %q", c.name, err, c.want)
		}
	}
}

// TestProtoSnapshot_LongElementsWithLengths: a plain job and a key whose
// elements pass 127 bytes (a long job type, a long key) are written
// straight into the encoder's buffer like every other, their length
// taking a second byte: with payload lengths (as the state machine
// snapshots) the form is still the deterministic encoding of its
// EngineSnapshot, and restores to the same state.
func TestProtoSnapshot_LongElementsWithLengths(t *testing.T) {
	t.Parallel()
	e := engine.New(engine.DefaultConfig())
	e.UsePayloadStore(sharedPayload{payload100})
	now := e.Now()
	for i, p := range []engine.EnqueueParams{
		{Queue: "q", JobType: strings.Repeat("t", 200), Payload: payload100, IdempotencyKey: strings.Repeat("k", 150)},
		{Queue: "q", JobType: "short", Payload: payload100, IdempotencyKey: strings.Repeat("ab", 16)},
		{Queue: "q", JobType: strings.Repeat("u", 120), Payload: payload100, IdempotencyKey: strings.Repeat("m", 110)},
	} {
		if _, err := e.Enqueue(now, p); err != nil {
			t.Fatalf("enqueue %d: %v", i, err)
		}
	}
	lengths := engine.SnapshotOptions{PayloadLengths: true}
	var legacy, pb bytes.Buffer
	if err := e.SnapshotWith(&legacy, lengths); err != nil {
		t.Fatal(err)
	}
	if err := e.SnapshotWith(&pb, engine.SnapshotOptions{PayloadLengths: true, Protobuf: true}); err != nil {
		t.Fatal(err)
	}
	s := pbBody(t, pb.Bytes())
	if got := pbForm(t, s); !bytes.Equal(got, pb.Bytes()) {
		t.Fatal("the form is not the deterministic encoding of its EngineSnapshot")
	}
	if len(s.GetJobs()) != 3 || len(s.GetJobs()[0].GetJobType()) != 200 || len(s.GetIdempotencyKeys()) != 3 || len(s.GetIdempotencyKeys()[0].GetKey()) != 150 {
		t.Fatalf("jobs %d, keys %d", len(s.GetJobs()), len(s.GetIdempotencyKeys()))
	}
	r := engine.New(engine.DefaultConfig())
	r.UsePayloadStore(sharedPayload{payload100})
	if err := r.RestoreWith(bytes.NewReader(pb.Bytes()), lengths); err != nil {
		t.Fatal(err)
	}
	r.PayloadsLoaded()
	var again bytes.Buffer
	if err := r.SnapshotWith(&again, lengths); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(again.Bytes(), legacy.Bytes()) {
		t.Fatal("restored from the protobuf form with payload lengths, the state writes other bytes")
	}
}
