// Package enginetest holds helpers for tests that drive an engine.Engine: a
// fake clock, builders for configs and enqueue requests, and
// RequireInvariants, which checks the whole state after a step. Helpers fail
// through the testing.TB they are given.
package enginetest

import (
	"bytes"
	"fmt"
	"reflect"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/sepp-io/sepp/engine"
	storepb "github.com/sepp-io/sepp/proto/seppstore/v1"
)

// Epoch is the time a Clock starts at: far from the zero time and from the
// unix epoch, so no test mistakes an unset time for a real one.
var Epoch = time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)

// Clock is a manual clock for driving an engine.
type Clock struct{ now time.Time }

// NewClock returns a clock at Epoch.
func NewClock() *Clock { return &Clock{now: Epoch} }

// Now returns the clock's time.
func (c *Clock) Now() time.Time { return c.now }

// Advance moves the clock forward by d and returns the new time.
func (c *Clock) Advance(d time.Duration) time.Time {
	c.now = c.now.Add(d)
	return c.now
}

// Ptr returns a pointer to v, for the optional fields of configs and
// requests.
func Ptr[T any](v T) *T { return &v }

// Config returns the default config changed by each mutate in turn.
func Config(mutate ...func(*engine.Config)) engine.Config {
	cfg := engine.DefaultConfig()
	for _, m := range mutate {
		m(&cfg)
	}
	return cfg
}

// New returns an engine running Config(mutate...), failing t when the config
// is invalid.
func New(t testing.TB, mutate ...func(*engine.Config)) *engine.Engine {
	t.Helper()
	cfg := Config(mutate...)
	if err := cfg.Validate(); err != nil {
		t.Fatalf("enginetest.New: %v", err)
	}
	return engine.New(cfg)
}

// WithRetention turns dead-letter retention on.
func WithRetention(d time.Duration) func(*engine.Config) {
	return func(c *engine.Config) { c.Limits.DeadLetterRetention = d }
}

// WithQueue adds a configured queue.
func WithQueue(q engine.QueueConfig) func(*engine.Config) {
	return func(c *engine.Config) { c.Queues = append(c.Queues, q) }
}

// Job returns an enqueue request for queue with job type "job" and a small
// payload.
func Job(queue string) engine.EnqueueParams {
	return engine.EnqueueParams{Queue: queue, JobType: "job", Payload: []byte("payload")}
}

// MustEnqueue enqueues p at now and fails t on error.
func MustEnqueue(t testing.TB, e *engine.Engine, now time.Time, p engine.EnqueueParams) engine.JobID {
	t.Helper()
	res, err := e.Enqueue(now, p)
	if err != nil {
		t.Fatalf("enqueue %+v: %v", p, err)
	}
	return res.JobID
}

// MustReserve reserves up to n jobs from queue at now and fails t on error.
func MustReserve(t testing.TB, e *engine.Engine, now time.Time, queue string, n int) []engine.Delivery {
	t.Helper()
	ds, err := e.Reserve(now, engine.ReserveParams{Queue: queue, N: n, WorkerID: "worker-1"})
	if err != nil {
		t.Fatalf("reserve %q: %v", queue, err)
	}
	return ds
}

// MustReserveOne reserves exactly one job and fails t otherwise.
func MustReserveOne(t testing.TB, e *engine.Engine, now time.Time, queue string) engine.Delivery {
	t.Helper()
	ds := MustReserve(t, e, now, queue, 1)
	if len(ds) != 1 {
		t.Fatalf("reserve %q: got %d deliveries, want 1", queue, len(ds))
	}
	return ds[0]
}

// Ref is the lease reference of a delivery.
func Ref(d engine.Delivery) engine.LeaseRef {
	return engine.LeaseRef{JobID: d.Job.ID, LeaseToken: d.LeaseToken}
}

// IDs lists the job ids of deliveries.
func IDs(ds []engine.Delivery) []engine.JobID {
	out := make([]engine.JobID, len(ds))
	for i, d := range ds {
		out[i] = d.Job.ID
	}
	return out
}

// RequireInvariants fails t unless e's state is consistent: the engine's own
// structural checks pass, every queue's counts add up (every job accounted
// for), and a snapshot restores to an engine with the same digest, the
// same snapshot bytes and the same count of held bytes.
func RequireInvariants(t testing.TB, e *engine.Engine) {
	t.Helper()
	if err := e.CheckInvariants(); err != nil {
		t.Fatalf("invariants: %v", err)
	}
	for _, s := range e.Stats(time.Time{}) {
		var died uint64
		for _, n := range s.DeadLettered {
			died += n
		}
		live := uint64(s.Scheduled + s.Ready + s.Reserved + s.Blocked)
		if s.Enqueued+s.DeadRequeued != live+s.Acked+died+s.Purged {
			t.Fatalf("queue %q: enqueued %d + requeued %d != live %d + acked %d + dead-lettered %d + purged %d",
				s.Name, s.Enqueued, s.DeadRequeued, live, s.Acked, died, s.Purged)
		}
		if died != uint64(s.Dead)+s.Dropped+s.DeadRequeued+s.DeadDrained+s.DeadDeleted+s.DeadExpired {
			t.Fatalf("queue %q: dead-lettered %d not accounted for: %+v", s.Name, died, s)
		}
	}
	var buf bytes.Buffer
	if err := e.Snapshot(&buf); err != nil {
		t.Fatalf("snapshot: %v", err)
	}
	snap := bytes.Clone(buf.Bytes())
	restored := engine.New(engine.DefaultConfig())
	if err := restored.Restore(&buf); err != nil {
		t.Fatalf("restore of a fresh snapshot: %v", err)
	}
	if restored.Digest() != e.Digest() {
		t.Fatalf("restored engine has a different digest")
	}
	if got, want := restored.MemoryHeld(), e.MemoryHeld(); !reflect.DeepEqual(got, want) {
		t.Fatalf("restored engine counts held bytes %+v, the original %+v", got, want)
	}
	var again bytes.Buffer
	if err := restored.Snapshot(&again); err != nil {
		t.Fatalf("snapshot of restored engine: %v", err)
	}
	if !bytes.Equal(snap, again.Bytes()) {
		t.Fatalf("snapshot of restored engine differs (%d vs %d bytes)", len(snap), again.Len())
	}
	RequireProtoRoundTrip(t, e, snap)
}

// RequireProtoRoundTrip checks the protobuf form of e's snapshot (layout
// 19) against the hand-written one, legacy (e's Snapshot): restored from
// the protobuf form, the state must write legacy again, byte for byte,
// count the same held bytes and pass its invariants; and the protobuf
// form must be the deterministic encoding of an EngineSnapshot, which
// protobuf's own decoder reads and writes back the same.
func RequireProtoRoundTrip(t testing.TB, e *engine.Engine, legacy []byte) {
	t.Helper()
	var pb bytes.Buffer
	if err := e.SnapshotWith(&pb, engine.SnapshotOptions{Protobuf: true}); err != nil {
		t.Fatalf("protobuf snapshot: %v", err)
	}
	form := bytes.Clone(pb.Bytes())
	restored := engine.New(engine.DefaultConfig())
	if err := restored.Restore(&pb); err != nil {
		t.Fatalf("restore of a protobuf snapshot: %v", err)
	}
	if err := restored.CheckInvariants(); err != nil {
		t.Fatalf("restored from the protobuf form: invariants: %v", err)
	}
	var again bytes.Buffer
	if err := restored.Snapshot(&again); err != nil {
		t.Fatalf("snapshot of the engine restored from the protobuf form: %v", err)
	}
	if !bytes.Equal(legacy, again.Bytes()) {
		t.Fatalf("restored from the protobuf form, the state writes other bytes (%d vs %d): %s", len(legacy), again.Len(), firstDifference(legacy, again.Bytes()))
	}
	if got, want := restored.MemoryHeld(), e.MemoryHeld(); !reflect.DeepEqual(got, want) {
		t.Fatalf("restored from the protobuf form, the engine counts held bytes %+v, the original %+v", got, want)
	}
	var twice bytes.Buffer
	if err := restored.SnapshotWith(&twice, engine.SnapshotOptions{Protobuf: true}); err != nil {
		t.Fatalf("protobuf snapshot of the restored engine: %v", err)
	}
	if !bytes.Equal(form, twice.Bytes()) {
		t.Fatalf("restored from the protobuf form, the state writes another protobuf form: %s", firstDifference(form, twice.Bytes()))
	}
	body := form[len("SEPPENG\x00")+1 : len(form)-4]
	var whole storepb.EngineSnapshot
	if err := proto.Unmarshal(body, &whole); err != nil {
		t.Fatalf("the protobuf form is not an EngineSnapshot: %v", err)
	}
	if out, err := (proto.MarshalOptions{Deterministic: true}).Marshal(&whole); err != nil || !bytes.Equal(out, body) {
		t.Fatalf("the protobuf form is not the deterministic encoding of its EngineSnapshot (err %v): %s", err, firstDifference(body, out))
	}
}

// firstDifference describes where a and b first differ.
func firstDifference(a, b []byte) string {
	i := 0
	for i < len(a) && i < len(b) && a[i] == b[i] {
		i++
	}
	lo := max(i-16, 0)
	return fmt.Sprintf("first difference at byte %d of %d/%d: % x | % x", i, len(a), len(b), a[lo:min(i+16, len(a))], b[lo:min(i+16, len(b))])
}
