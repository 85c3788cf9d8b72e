package engine_test

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/sepp-io/sepp/engine"
	et "github.com/sepp-io/sepp/engine/enginetest"
)

// A job's type is an index into its queue's interned types (or, past the
// queue's limit of interned types, kept in the job's extension). Which
// form a job takes, and which index, depends on the order in which an
// engine met the types, which a restored replica does not share with the
// original: everything observable (answers, snapshot bytes, digests, held
// bytes) must be the same either way.
func TestJobType_FormIsNotState(t *testing.T) {
	tests := []struct {
		name     string
		types    int // distinct types enqueued, in a round of each
		ackFirst int // jobs acked before the snapshot (so the restore meets the types in another order)
	}{
		{name: "FewTypes", types: 3, ackFirst: 1},
		{name: "PastTheInternLimit", types: 1100, ackFirst: 600},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			now := et.Epoch
			a := et.New(t)
			typeOf := map[engine.JobID]string{}
			enqueue := func(e *engine.Engine, typ string) engine.JobID {
				id := et.MustEnqueue(t, e, now, engine.EnqueueParams{Queue: "q", JobType: typ, Payload: []byte("p")})
				typeOf[id] = typ
				return id
			}
			for i := range tt.types {
				enqueue(a, fmt.Sprintf("type-%04d", i))
			}
			for _, d := range et.MustReserve(t, a, now, "q", tt.ackFirst) {
				if err := a.Ack(now, et.Ref(d)); err != nil {
					t.Fatal(err)
				}
				delete(typeOf, d.Job.ID)
			}
			var snap bytes.Buffer
			if err := a.Snapshot(&snap); err != nil {
				t.Fatal(err)
			}
			b := et.New(t)
			if err := b.Restore(bytes.NewReader(snap.Bytes())); err != nil {
				t.Fatal(err)
			}
			// Both meet every type again (and a new one): a meets them in
			// its first order, b in the order the snapshot listed the jobs
			// still there, then the ones acked before.
			for _, e := range []*engine.Engine{a, b} {
				for i := range tt.types {
					id := et.MustEnqueue(t, e, now, engine.EnqueueParams{Queue: "q", JobType: fmt.Sprintf("type-%04d", i), Payload: []byte("p")})
					typeOf[id] = fmt.Sprintf("type-%04d", i)
				}
				id := et.MustEnqueue(t, e, now, engine.EnqueueParams{Queue: "q", JobType: "new", Payload: []byte("p")})
				typeOf[id] = "new"
				// A delivery reads the type from the job's form.
				ds := et.MustReserve(t, e, now, "q", 5)
				for _, d := range ds {
					if d.Job.JobType != typeOf[d.Job.ID] {
						t.Fatalf("delivery of job %d: type %q, want %q", d.Job.ID, d.Job.JobType, typeOf[d.Job.ID])
					}
				}
			}
			if da, db := a.Digest(), b.Digest(); da != db {
				t.Fatalf("digests differ: %x and %x", da, db)
			}
			var sa, sb bytes.Buffer
			if err := a.Snapshot(&sa); err != nil {
				t.Fatal(err)
			}
			if err := b.Snapshot(&sb); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(sa.Bytes(), sb.Bytes()) {
				t.Fatal("snapshots differ")
			}
			if ha, hb := a.MemoryHeldTotal(), b.MemoryHeldTotal(); ha != hb {
				t.Fatalf("held bytes differ: %d and %d", ha, hb)
			}
			for id, want := range typeOf {
				for name, e := range map[string]*engine.Engine{"original": a, "restored": b} {
					j, err := e.GetJob(id)
					if err != nil {
						t.Fatalf("%s: job %d: %v", name, id, err)
					}
					if j.JobType != want {
						t.Fatalf("%s: job %d: type %q, want %q", name, id, j.JobType, want)
					}
				}
			}
			et.RequireInvariants(t, a)
			et.RequireInvariants(t, b)
		})
	}
}
