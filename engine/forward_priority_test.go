package engine_test

import (
	"bytes"
	"testing"

	"github.com/sepp-io/sepp/engine"
	et "github.com/sepp-io/sepp/engine/enginetest"
)

// spec: SUB-2
// A job forwarded to a dead_letter_queue arrives with the priority it had
// once the cluster runs forwardKeepsPriority (command version 13), whatever
// that queue's default_priority. Before, as older binaries do: kept unless
// that queue sets a default_priority of its own once the cluster runs
// forwardAsArrived (its first declarative config), else that queue's
// default. The older rules stay so that an older log replays alike.
func TestDeadLetterForwarding_KeepsPriority(t *testing.T) {
	for _, tc := range []struct {
		name     string
		declared bool
		keep     bool
		dlqPrio  *uint32
		wantPrio uint32
	}{
		{name: "the dead-letter queue sets none: kept", declared: true, wantPrio: 8},
		{name: "the dead-letter queue sets its own: taken", declared: true, dlqPrio: et.Ptr[uint32](1), wantPrio: 1},
		{name: "before the first declarative config: the queue's default", wantPrio: 0},
		{name: "keeps priority: the dead-letter queue's own default does not override", declared: true, keep: true, dlqPrio: et.Ptr[uint32](2), wantPrio: 8},
		{name: "keeps priority: none set", declared: true, keep: true, wantPrio: 8},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clock := et.NewClock()
			e := et.New(t, et.WithQueue(engine.QueueConfig{Name: "q", DeadLetterQueue: "q.dead"}),
				et.WithQueue(engine.QueueConfig{Name: "q.dead", DefaultPriority: tc.dlqPrio}))
			if tc.declared {
				if err := e.ApplyDeclared(clock.Now(), e.Config()); err != nil {
					t.Fatal(err)
				}
			}
			if tc.keep {
				e.EnableForwardKeepsPriority(clock.Now())
			}
			p := et.Job("q")
			p.Priority = et.Ptr[uint32](8)
			id := et.MustEnqueue(t, e, clock.Now(), p)
			if r := e.DeadLetterJobs(clock.Now(), []engine.JobID{id}, "bad"); r[0].Err != nil {
				t.Fatal(r[0].Err)
			}
			if d := et.MustReserveOne(t, e, clock.Now(), "q.dead"); d.Job.Priority != tc.wantPrio {
				t.Fatalf("forwarded priority %d, want %d", d.Job.Priority, tc.wantPrio)
			}
			et.RequireInvariants(t, e)
			// The flag survives a snapshot: a restored replica forwards alike.
			var buf bytes.Buffer
			if err := e.Snapshot(&buf); err != nil {
				t.Fatal(err)
			}
			restored := engine.New(engine.DefaultConfig())
			if err := restored.Restore(&buf); err != nil {
				t.Fatal(err)
			}
			if restored.ForwardKeepsPriority() != tc.keep || restored.Digest() != e.Digest() {
				t.Fatalf("restored: keeps priority %v, want %v (or the digest differs)", restored.ForwardKeepsPriority(), tc.keep)
			}
		})
	}
}
