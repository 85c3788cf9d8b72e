package engine

import (
	"fmt"
	"strings"
	"testing"

	storepb "github.com/sepp-io/sepp/proto/seppstore/v1"
)

// The checks restoreSchedule, restoreUniqueHold and restoreRedrive make,
// each element against the ones before it, as the legacy decoders check
// their sections.
func TestPBRestoreSchedulesHoldsRedrivesChecks(t *testing.T) {
	fresh := func() *pbRestore {
		e := newEmpty()
		e.nextID, e.nextRedrive = 100, 10
		q := &queue{name: "q"}
		e.queues["q"] = q
		e.dead[7] = &deadRecord{j: &job{id: 7, q: q}}
		return &pbRestore{e: e, qs: []*queue{q}}
	}
	sched := func(name string, kind, overlap, catchUp uint32) *storepb.EngineSchedule {
		return &storepb.EngineSchedule{Name: name, Kind: kind, Overlap: overlap, CatchUp: catchUp}
	}
	hold := func(q uint32, key string, id uint64, until int64) *storepb.EngineUniqueHold {
		return &storepb.EngineUniqueHold{Queue: q, Key: key, JobId: id, DoneUntil: until}
	}
	redrive := func(id uint64, state uint32, mod func(*storepb.EngineRedrive)) *storepb.EngineRedrive {
		m := &storepb.EngineRedrive{Id: id, State: state, Rate: 1}
		if RedriveState(state).Ended() {
			m.EndedAt = 1
		}
		if mod != nil {
			mod(m)
		}
		return m
	}
	type step func(r *pbRestore) error
	s := func(m *storepb.EngineSchedule) step { return func(r *pbRestore) error { return r.restoreSchedule(m) } }
	h := func(m *storepb.EngineUniqueHold) step {
		return func(r *pbRestore) error { return r.restoreUniqueHold(m) }
	}
	d := func(m *storepb.EngineRedrive) step { return func(r *pbRestore) error { return r.restoreRedrive(m) } }
	cases := []struct {
		name  string
		steps []step
		want  string // "" when every step is accepted
	}{
		{"schedules in order", []step{s(sched("a", 1, 0, 0)), s(sched("b", 2, 1, 1))}, ""},
		{"schedule names repeat", []step{s(sched("a", 1, 0, 0)), s(sched("a", 1, 0, 0))}, "out of name order"},
		{"schedule names descend", []step{s(sched("b", 1, 0, 0)), s(sched("a", 1, 0, 0))}, "out of name order"},
		{"schedule without a name", []step{s(sched("", 1, 0, 0))}, "must not be empty"},
		{"schedule kind 0", []step{s(sched("a", 0, 0, 0))}, "out of range"},
		{"schedule kind 257", []step{s(sched("a", 257, 0, 0))}, "out of range"},
		{"schedule overlap 2", []step{s(sched("a", 1, 2, 0))}, "out of range"},
		{"schedule catch-up 257", []step{s(sched("a", 1, 0, 257))}, "out of range"},
		{"holds in order", []step{h(hold(0, "k", 5, 1)), h(hold(0, "l", 6, 1)), h(hold(0, "m", 1, 2))}, ""},
		{"hold of a queue out of range", []step{h(hold(1, "k", 5, 1))}, "bad queue or empty key"},
		{"hold of an empty key", []step{h(hold(0, "", 5, 1))}, "bad queue or empty key"},
		{"hold of job 0", []step{h(hold(0, "k", 0, 1))}, "bad job"},
		{"hold of a job not given yet", []step{h(hold(0, "k", 100, 1))}, "bad job"},
		{"hold without an end", []step{h(hold(0, "k", 5, 0))}, "bad job"},
		{"hold of a kept record", []step{h(hold(0, "k", 7, 1))}, "still kept"},
		{"holds out of order", []step{h(hold(0, "k", 6, 1)), h(hold(0, "l", 5, 1))}, "out of order"},
		{"key held twice", []step{h(hold(0, "k", 5, 1)), h(hold(0, "k", 6, 1))}, "held twice"},
		{"redrives in order", []step{d(redrive(1, 1, nil)), d(redrive(10, 4, nil))}, ""},
		{"redrive id 0", []step{d(redrive(0, 1, nil))}, "out of order or above"},
		{"redrive id above the last given", []step{d(redrive(11, 1, nil))}, "out of order or above"},
		{"redrive ids repeat", []step{d(redrive(2, 1, nil)), d(redrive(2, 1, nil))}, "out of order or above"},
		{"redrive state 0", []step{d(redrive(1, 0, nil))}, "unknown state"},
		{"redrive state 261", []step{d(redrive(1, 261, nil))}, "unknown state"},
		{"redrive cause out of range", []step{d(redrive(1, 1, func(m *storepb.EngineRedrive) { m.Cause = storepb.Cause(maxCause) + 1 }))}, "unknown cause"},
		{"redrive cause 256", []step{d(redrive(1, 1, func(m *storepb.EngineRedrive) { m.Cause = 256 }))}, "unknown cause"},
		{"redrive cause negative", []step{d(redrive(1, 1, func(m *storepb.EngineRedrive) { m.Cause = -1 }))}, "unknown cause"},
		{"redrive rate 0", []step{d(redrive(1, 1, func(m *storepb.EngineRedrive) { m.Rate = 0 }))}, "rate"},
		{"redrive rate too high", []step{d(redrive(1, 1, func(m *storepb.EngineRedrive) { m.Rate = MaxRedriveRate + 1 }))}, "rate"},
		{"same-id redrive to a queue", []step{d(redrive(1, 1, func(m *storepb.EngineRedrive) { m.ToQueue = "q" }))}, "target queue"},
		{"running redrive with an end", []step{d(redrive(1, 1, func(m *storepb.EngineRedrive) { m.EndedAt = 5 }))}, "ended_at"},
		{"done redrive without an end", []step{d(redrive(1, 4, func(m *storepb.EngineRedrive) { m.EndedAt = 0 }))}, "ended_at"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := fresh()
			var err error
			for _, st := range c.steps {
				if err = st(r); err != nil {
					break
				}
			}
			switch {
			case c.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
				t.Fatalf("got %v, want an error with %q", err, c.want)
			}
		})
	}

	// The bounds on the active and ended tasks hold across elements.
	for _, c := range []struct {
		state uint32
		bound int
	}{{uint32(RedriveRunning), MaxActiveRedrives}, {uint32(RedriveDone), MaxRedriveAudit}} {
		r := fresh()
		r.e.nextRedrive = 1000
		for i := 1; i <= c.bound; i++ {
			if err := r.restoreRedrive(redrive(uint64(i), c.state, nil)); err != nil {
				t.Fatalf("state %d: task %d of %d refused: %v", c.state, i, c.bound, err)
			}
		}
		if err := r.restoreRedrive(redrive(uint64(c.bound+1), c.state, nil)); err == nil || !strings.Contains(err.Error(), "above the bounds") {
			t.Fatalf("state %d: task %d above the bound %d: got %v", c.state, c.bound+1, c.bound, err)
		}
	}
	// So does the bound on the schedules.
	r := fresh()
	for i := range MaxSchedules {
		r.e.schedules[fmt.Sprintf("s%05d", i)] = &schedule{}
	}
	r.lastSchedule = "s99999"
	if err := r.restoreSchedule(sched("t", 1, 0, 0)); err == nil || !strings.Contains(err.Error(), "more than") {
		t.Fatalf("schedule above the bound: got %v", err)
	}
}
