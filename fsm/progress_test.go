package fsm

import (
	"bytes"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/sepp-io/sepp/engine"
)

// TestProgress_EntryRoundTrips: a LeaseExtend carrying progress is of
// CommandVersionProgress, encodes and decodes with its progress, applies
// to the job, and survives the FSM's snapshot and restore; a plain
// extension stays version 1 and keeps the progress; one out of bounds is
// the engine's refusal, the same on every replica.
func TestProgress_EntryRoundTrips(t *testing.T) {
	ref := engine.LeaseRef{JobID: 1, LeaseToken: 1}
	report := ExtendLeaseCommand(engine.ExtendParams{LeaseRef: ref, Lease: time.Minute, Progress: &engine.Progress{Percent: 40, Message: "2 of 5"}})
	if v := report.GetVersion(); v != CommandVersionProgress {
		t.Fatalf("an extension with progress is of version %d, want %d", v, CommandVersionProgress)
	}
	data, err := EncodeEntry(stamped(t0, report))
	if err != nil {
		t.Fatal(err)
	}
	entry, err := DecodeEntry(data)
	if err != nil {
		t.Fatal(err)
	}
	got := entry.GetCommands()[0]
	if got.GetVersion() != CommandVersionProgress || got.GetLeaseExtend().GetProgress().GetPercent() != 40 || got.GetLeaseExtend().GetProgress().GetMessage() != "2 of 5" {
		t.Fatalf("decoded %v", got)
	}
	if err := CheckEntry(data); err != nil {
		t.Fatal(err)
	}

	f := newTestFSM(t)
	applyCommands(t, f, t0, EnqueueCommand(enqueueParams("q", 1)), ReserveCommand(engine.ReserveParams{Queue: "q", WorkerID: "w", N: 1, Lease: time.Minute}))
	res := applyCommands(t, f, t0.Add(time.Second),
		ExtendLeaseCommand(engine.ExtendParams{LeaseRef: ref, Lease: time.Minute, Progress: &engine.Progress{Percent: 40, Message: "2 of 5"}}),
		ExtendLeaseCommand(engine.ExtendParams{LeaseRef: ref, Lease: time.Minute}),
		ExtendLeaseCommand(engine.ExtendParams{LeaseRef: ref, Progress: &engine.Progress{Percent: 101}}))
	if res[0].Err != nil || res[1].Err != nil || !errors.Is(res[2].Err, engine.ErrInvalidArgument) {
		t.Fatalf("results %v, %v, %v: want two extensions and a refusal", res[0].Err, res[1].Err, res[2].Err)
	}
	if v := ExtendLeaseCommand(engine.ExtendParams{LeaseRef: ref}).GetVersion(); v > commandV1 {
		t.Fatalf("a plain extension is of version %d", v)
	}
	want := engine.Progress{Percent: 40, Message: "2 of 5"}
	check := func(f *FSM) {
		t.Helper()
		if err := f.Read(func(e *engine.Engine) error {
			j, err := e.GetJob(1)
			if err != nil {
				return err
			}
			if j.Progress == nil || *j.Progress != want {
				t.Fatalf("progress %+v, want %+v", j.Progress, want)
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	check(f)
	restored := newTestFSM(t)
	if err := restored.Restore(io.NopCloser(bytes.NewReader(snapshotBytes(t, f)))); err != nil {
		t.Fatal(err)
	}
	check(restored)
	if restored.Digest() != f.Digest() {
		t.Fatal("the restored FSM differs")
	}
}
