package engine_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/sepp-io/sepp/engine"
)

// The model's dependencies (engine/dependencies.go), naive as the rest of
// it: a blocked job finds out about its parents by a scan of every job.

// mParent is a parent as its child saw it.
type mParent struct {
	id      engine.JobID
	outcome uint8
	cause   engine.Cause
}

const (
	parentOutcomePending uint8 = iota
	parentOutcomeCompleted
	parentOutcomeDead
	parentOutcomeRemoved
)

func pendingOn(c *mJob, id engine.JobID) int {
	return slices.IndexFunc(c.parents, func(p mParent) bool { return p.id == id && p.outcome == parentOutcomePending })
}

// settle is p's end (acked, dead-lettered, deleted, purged) as its
// children see it, in id order, a cancel ending its own children before
// the next sibling's turn.
func (m *model) settle(p *mJob, outcome uint8, cause engine.Cause) {
	p.parents = nil // a requeued dead job waits for nothing
	var kids []*mJob
	for _, c := range m.jobs { // sorted below: order does not matter
		if c.state == engine.StateBlocked && pendingOn(c, p.id) >= 0 {
			kids = append(kids, c)
		}
	}
	slices.SortFunc(kids, func(a, b *mJob) int { return int(a.id) - int(b.id) })
	for _, c := range kids {
		k := pendingOn(c, p.id)
		if c.state != engine.StateBlocked || k < 0 {
			continue // cancelled by a sibling's end just now
		}
		c.parents[k].outcome, c.parents[k].cause = outcome, cause
		m.decide(c)
	}
}

// decide releases or cancels c, blocked, as its parents' outcomes say.
func (m *model) decide(c *mJob) {
	pending, failed := 0, false
	for _, p := range c.parents {
		switch p.outcome {
		case parentOutcomePending:
			pending++
		case parentOutcomeCompleted:
		default:
			failed = true
		}
	}
	switch {
	case failed && c.policy == engine.ParentFailureCancel:
		delete(m.jobs, c.id)
		m.kill(c, engine.CauseCancelled)
	case pending == 0:
		if c.runAt.After(m.now) {
			c.state, c.due = engine.StateScheduled, c.runAt
		} else {
			m.setReady(c)
		}
	}
}

// workflow is a batch of 2..5 jobs in queues a and b, each after a random
// set of the earlier ones, some keyed (a duplicate parent: an earlier
// job, perhaps gone), some scheduled. The batch is taken whole, or
// refused whole when a parent is a duplicate of a job no longer held.
func (r *modelRun) workflow(i int, now time.Time, both func(func(*engine.Engine) any) any) string {
	t, m, rng := r.t, r.m, r.rng
	items := make([]engine.EnqueueParams, 2+rng.Intn(4))
	for k := range items {
		p := engine.EnqueueParams{Queue: []string{"a", "b"}[rng.Intn(2)], JobType: "t", Payload: []byte{byte(i), byte(k)}}
		if rng.Intn(4) == 0 {
			p.IdempotencyKey = fmt.Sprint("k", rng.Intn(10))
		}
		if rng.Intn(5) == 0 {
			p.ScheduledAt = m.now.Add(time.Duration(rng.Intn(8000)) * time.Millisecond)
		}
		for a := range k {
			if rng.Intn(2) == 0 {
				p.After = append(p.After, a)
			}
		}
		if len(p.After) > 0 && rng.Intn(2) == 0 {
			p.OnParentFailure = engine.ParentFailureRun
		}
		items[k] = p
	}
	res := both(func(e *engine.Engine) any {
		res, err := e.EnqueueBatch(now, items)
		return [2]any{res, err}
	}).([2]any)
	got, _ := res[0].([]engine.BatchItemResult)
	err, _ := res[1].(error)
	m.advance(now)

	// Decide first, as the engine does: each item new, a duplicate of a
	// key held, or of an earlier item's key.
	ids := make([]engine.JobID, len(items))
	dup := make([]bool, len(items))
	next := m.nextID
	keyOf := func(p engine.EnqueueParams) string { return p.Queue + "/" + p.IdempotencyKey }
	for k, p := range items {
		if p.IdempotencyKey != "" {
			if at := slices.IndexFunc(m.keys, func(mk mKey) bool { return mk.key == keyOf(p) }); at >= 0 {
				ids[k], dup[k] = m.keys[at].id, true
			} else if at := slices.IndexFunc(items[:k], func(o engine.EnqueueParams) bool {
				return o.IdempotencyKey != "" && keyOf(o) == keyOf(p)
			}); at >= 0 {
				ids[k], dup[k] = ids[at], true
			}
		}
		if !dup[k] {
			ids[k] = next
			next++
		}
	}
	for k, p := range items {
		if dup[k] {
			continue
		}
		for _, a := range p.After {
			if !dup[a] || ids[a] >= m.nextID {
				continue // made by this batch
			}
			if m.jobs[ids[a]] == nil && !slices.ContainsFunc(m.dead, func(d *mJob) bool { return d.id == ids[a] }) {
				if err == nil {
					t.Fatalf("step %d: workflow item %d waits for job %d, gone, and was accepted", i, k, ids[a])
				}
				return "workflow-refused"
			}
		}
	}
	if err != nil {
		t.Fatalf("step %d: workflow: %v", i, err)
	}
	for k, p := range items {
		if dup[k] {
			if !got[k].Result.Duplicate || got[k].Result.JobID != ids[k] {
				t.Fatalf("step %d: workflow item %d: engine %+v, model a duplicate of %d", i, k, got[k].Result, ids[k])
			}
			continue
		}
		j := m.add(p.Queue, 0, 3, nil, p.ScheduledAt)
		if p.IdempotencyKey != "" {
			m.keys = append(m.keys, mKey{key: keyOf(p), id: j.id, created: m.now})
		}
		if len(p.After) > 0 {
			if p.ScheduledAt.After(m.now) {
				j.runAt = p.ScheduledAt
			}
			j.policy = p.OnParentFailure
			for _, a := range p.After {
				link := mParent{id: ids[a]}
				if slices.ContainsFunc(j.parents, func(o mParent) bool { return o.id == link.id }) {
					continue // two items that are one job: one parent
				}
				if m.jobs[link.id] == nil {
					if d := slices.IndexFunc(m.dead, func(d *mJob) bool { return d.id == link.id }); d >= 0 {
						link.outcome, link.cause = parentOutcomeDead, m.dead[d].cause
					} else {
						link.outcome, link.cause = parentOutcomeDead, engine.CauseCancelled
					}
				}
				j.parents = append(j.parents, link)
			}
			j.state, j.due = engine.StateBlocked, time.Time{}
			m.prune() // out of its line, as the engine takes it out
			m.decide(j)
		}
		wantState := j.state
		if m.jobs[j.id] == nil {
			wantState = engine.StateDead
		}
		if got[k].Result.Duplicate || got[k].Result.JobID != j.id || got[k].Result.State != wantState {
			t.Fatalf("step %d: workflow item %d: engine %+v, model id %d state %v", i, k, got[k].Result, j.id, wantState)
		}
	}
	return "workflow"
}

// compareParents checks a live job's parents as GetJob shows them.
func (r *modelRun) compareParents(i int, j *mJob, got engine.Job) {
	if len(got.Parents) != len(j.parents) {
		r.t.Fatalf("step %d: job %d has %d parents, model %d", i, j.id, len(got.Parents), len(j.parents))
	}
	for k, p := range j.parents {
		g := got.Parents[k]
		want := engine.ParentLink{ID: p.id, Ended: p.outcome != parentOutcomePending}
		switch p.outcome {
		case parentOutcomePending:
			want.State = g.State // the parent's live state, checked with that job
		case parentOutcomeCompleted:
			want.State = engine.StateCompleted
		case parentOutcomeDead:
			want.State, want.Cause = engine.StateDead, p.cause
		}
		if g != want {
			r.t.Fatalf("step %d: job %d parent %d: engine %+v, model %+v", i, j.id, k, g, want)
		}
	}
	if len(j.parents) > 0 && got.RunsAfterParentFailure != (j.policy == engine.ParentFailureRun) {
		r.t.Fatalf("step %d: job %d runs after parent failure %v, model policy %v", i, j.id, got.RunsAfterParentFailure, j.policy)
	}
}

// TestModel_Workflows is the model run with batches whose jobs wait for
// each other: every path by which a job ends (ack, nack, lease expiry,
// deadline, cancel, delete, purge, an operator's dead-letter) releases or
// cancels its children as the model says, state for state.
func TestModel_Workflows(t *testing.T) {
	t.Parallel()
	steps := 4000
	if testing.Short() {
		steps = 1000
	}
	for _, seed := range []int64{7, 8, 9, 20261205} {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			r := newModelRun(t, seed)
			r.workflows = true
			engine.HoldEveryJobFull(r.twin)
			for i := 0; i < steps; i++ {
				r.step(i)
			}
			if r.e.Digest() != r.twin.Digest() {
				t.Fatal("two engines fed the same operations differ")
			}
			if r.stats["workflow"] == 0 {
				t.Fatal("no workflow was enqueued")
			}
			t.Logf("ops: %v", r.stats)
		})
	}
}
