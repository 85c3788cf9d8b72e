package engine_test

import (
	"bytes"
	"errors"
	"slices"
	"testing"

	"github.com/sepp-io/sepp/engine"
)

// mapPayloads is a PayloadStore that records what is put, for the tests.
type mapPayloads map[engine.JobID][]byte

func (m mapPayloads) PutPayload(id engine.JobID, p []byte) { m[id] = append([]byte(nil), p...) }
func (m mapPayloads) Payload(id engine.JobID) []byte       { return m[id] }
func (m mapPayloads) DeletePayload(id engine.JobID)        { delete(m, id) }

// TestSnapshot_PayloadLengths: a snapshot written with payload lengths only,
// restored with the same option and given every payload by LoadPayload, is
// the state written with payloads, byte for byte; a payload the state does
// not hold, or of another length, is refused as corrupt.
func TestSnapshot_PayloadLengths(t *testing.T) {
	t.Parallel()
	e := richEngine(t)
	full := snapshotBytes(t, e)

	bodies := mapPayloads{} // the payloads, as a store would hold them
	src := engine.New(engine.DefaultConfig())
	src.UsePayloadStore(bodies)
	if err := src.Restore(bytes.NewReader(full)); err != nil {
		t.Fatal(err)
	}

	var lengths bytes.Buffer
	if err := e.SnapshotWith(&lengths, engine.SnapshotOptions{PayloadLengths: true}); err != nil {
		t.Fatal(err)
	}
	if lengths.Len() >= len(full) {
		t.Errorf("lengths-only snapshot is %d bytes, the full one %d", lengths.Len(), len(full))
	}
	dst := engine.New(engine.DefaultConfig())
	if err := dst.RestoreWith(bytes.NewReader(lengths.Bytes()), engine.SnapshotOptions{PayloadLengths: true}); err != nil {
		t.Fatal(err)
	}
	if got, want := dst.PayloadCount(), len(bodies); got != want || want == 0 {
		t.Fatalf("PayloadCount %d, the store holds %d", got, want)
	}
	ids := make([]engine.JobID, 0, len(bodies))
	for id := range bodies {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	if err := dst.LoadPayload(ids[0], append(bodies[ids[0]], 'x')); !errors.Is(err, engine.ErrCorruptSnapshot) {
		t.Errorf("LoadPayload of another length: %v, want ErrCorruptSnapshot", err)
	}
	if err := dst.LoadPayload(1<<40, []byte("x")); !errors.Is(err, engine.ErrCorruptSnapshot) {
		t.Errorf("LoadPayload of an unknown job: %v, want ErrCorruptSnapshot", err)
	}
	for _, id := range ids {
		if err := dst.LoadPayload(id, bodies[id]); err != nil {
			t.Fatal(err)
		}
	}
	if got := snapshotBytes(t, dst); !bytes.Equal(got, full) {
		t.Error("restored state differs from the original")
	}
	if dst.Digest() != e.Digest() {
		t.Error("digests differ")
	}
}
