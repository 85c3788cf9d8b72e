package fsm

import (
	"bytes"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/sepp-io/sepp/engine"
)

// TestFollowUps_EntryRoundTrips: a JobAck with follow-ups is of
// CommandVersionFollowUps, carries the public EnqueueRequests through the
// entry codec, applies as one transition (the follow-ups' results in the
// Result), enqueues nothing for a lost lease or when one follow-up is
// refused, and survives the FSM's snapshot and restore.
func TestFollowUps_EntryRoundTrips(t *testing.T) {
	ref := engine.LeaseRef{JobID: 1, LeaseToken: 1}
	fus := []engine.EnqueueParams{
		{Queue: "next", JobType: "t2", Payload: []byte("p"), IdempotencyKey: "step-2"},
		{Queue: "next", JobType: "t3", Expiry: &engine.ExpiryOpts{TTL: time.Minute}},
	}
	cmd := AckFollowUpsCommand(ref, nil, fus)
	if v := cmd.GetVersion(); v != CommandVersionFollowUps {
		t.Fatalf("an ack with follow-ups is of version %d, want %d", v, CommandVersionFollowUps)
	}
	data, err := EncodeEntry(stamped(t0, cmd))
	if err != nil {
		t.Fatal(err)
	}
	entry, err := DecodeEntry(data)
	if err != nil {
		t.Fatal(err)
	}
	if got := entry.GetCommands()[0].GetJobAck().GetFollowUps(); len(got) != 2 || got[0].GetIdempotencyKey() != "step-2" || got[1].GetTtlMs() != 60000 {
		t.Fatalf("decoded follow-ups %v", got)
	}
	if err := CheckEntry(data); err != nil {
		t.Fatal(err)
	}

	f := newTestFSM(t)
	applyCommands(t, f, t0, EnqueueCommand(enqueueParams("q", 1)), EnqueueCommand(enqueueParams("q", 1)),
		ReserveCommand(engine.ReserveParams{Queue: "q", WorkerID: "w", N: 2, Lease: time.Minute}))
	ref2 := engine.LeaseRef{JobID: 2, LeaseToken: 2}
	res := applyCommands(t, f, t0.Add(time.Second),
		AckFollowUpsCommand(ref, nil, fus),
		AckFollowUpsCommand(ref, nil, fus), // a retry: the lease is gone
		AckFollowUpsCommand(ref2, nil, []engine.EnqueueParams{{Queue: "next", JobType: "t"}, {Queue: "next"}}))
	if res[0].Err != nil || len(res[0].FollowUps) != 2 || res[0].FollowUps[0].JobID != 3 || res[0].FollowUps[1].JobID != 4 {
		t.Fatalf("ack: %v, follow-ups %+v", res[0].Err, res[0].FollowUps)
	}
	if !errors.Is(res[1].Err, engine.ErrLeaseLost) || res[1].FollowUps != nil {
		t.Fatalf("retried ack: %v, %+v: want ErrLeaseLost and nothing", res[1].Err, res[1].FollowUps)
	}
	var fe *engine.FieldError
	if !errors.As(res[2].Err, &fe) || fe.Field != "follow_ups[1].job_type" {
		t.Fatalf("ack with a bad follow-up: %v, want follow_ups[1].job_type", res[2].Err)
	}
	check := func(f *FSM) {
		t.Helper()
		if err := f.Read(func(e *engine.Engine) error {
			st, err := e.QueueStats(t0.Add(time.Second), "next")
			if err != nil {
				return err
			}
			if st.Ready != 2 {
				t.Fatalf("queue next holds %d ready jobs, want the 2 follow-ups", st.Ready)
			}
			j, err := e.GetJob(2)
			if err != nil || j.State != engine.StateReserved {
				t.Fatalf("job 2 after a refused ack: %+v, %v: want reserved", j.State, err)
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
