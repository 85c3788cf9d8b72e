package engine_test

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/sepp-io/sepp/engine"
	et "github.com/sepp-io/sepp/engine/enginetest"
)

// The model is a deliberately naive reference: jobs in a map, every choice
// made by sorting everything. The engine must agree with it on every result
// and on the state after every step.

const (
	modelBase      = 2 * time.Second
	modelMaxDelay  = 10 * time.Second
	modelRetention = time.Minute
	modelWindow    = 30 * time.Second
	modelBatch     = 4
)

type mJob struct {
	id       engine.JobID
	queue    string
	prio     uint32
	state    engine.State
	due      time.Time // scheduled run time or lease deadline
	attempt  uint32
	max      uint32
	token    engine.LeaseToken
	custom   map[string]string
	failedAt time.Time
	cause    engine.Cause
}

type mKey struct {
	key     string
	id      engine.JobID
	created time.Time
}

type model struct {
	now       time.Time
	nextID    engine.JobID
	nextLease engine.LeaseToken
	jobs      map[engine.JobID]*mJob
	dead      []*mJob // failure order
	keys      []mKey
}

func modelConfig() engine.Config {
	return et.Config(func(c *engine.Config) {
		c.Limits.RetryDelay = modelBase
		c.Limits.RetryDelayMax = modelMaxDelay
		c.Limits.RetryBackoff = engine.BackoffExponential
		c.Limits.DeadLetterRetention = modelRetention
		c.Limits.IdempotencyWindow = modelWindow
		c.Limits.MaxReserveBatch = modelBatch
	}, et.WithQueue(engine.QueueConfig{Name: "a", DeadLetterQueue: "dlq"}),
		et.WithQueue(engine.QueueConfig{Name: "dlq", DefaultMaxAttempts: et.Ptr[uint32](2)}))
}

func (m *model) advance(now time.Time) {
	if now.After(m.now) {
		m.now = now
	}
	for _, j := range m.jobs {
		if j.state == engine.StateScheduled && !j.due.After(m.now) {
			j.state, j.due = engine.StateReady, time.Time{}
		}
	}
	var lapsed []*mJob
	for _, j := range m.jobs {
		if j.state == engine.StateReserved && !j.due.After(m.now) {
			lapsed = append(lapsed, j)
		}
	}
	slices.SortFunc(lapsed, func(a, b *mJob) int {
		if c := a.due.Compare(b.due); c != 0 {
			return c
		}
		return int(a.id) - int(b.id)
	})
	for _, j := range lapsed {
		j.token, j.due = 0, time.Time{}
		if j.attempt >= j.max {
			m.kill(j, engine.CauseLeaseExpired)
		} else {
			j.state = engine.StateReady
		}
	}
	m.dead = slices.DeleteFunc(m.dead, func(j *mJob) bool { return !j.failedAt.Add(modelRetention).After(m.now) })
	m.keys = slices.DeleteFunc(m.keys, func(k mKey) bool { return !k.created.Add(modelWindow).After(m.now) })
}

func (m *model) add(queue string, prio, max uint32, custom map[string]string, runAt time.Time) *mJob {
	j := &mJob{id: m.nextID, queue: queue, prio: prio, max: max, custom: custom, state: engine.StateReady}
	m.nextID++
	if runAt.After(m.now) {
		j.state, j.due = engine.StateScheduled, runAt
	}
	m.jobs[j.id] = j
	return j
}

func (m *model) kill(j *mJob, cause engine.Cause) {
	delete(m.jobs, j.id)
	if j.queue == "a" {
		custom := map[string]string{}
		for k, v := range j.custom {
			custom[k] = v
		}
		m.add("dlq", 0, 2, custom, time.Time{})
	}
	j.state, j.token, j.due, j.cause, j.failedAt = engine.StateDead, 0, time.Time{}, cause, m.now
	m.dead = append(m.dead, j)
}

func (m *model) reserve(queue string, n int, lease time.Duration) []engine.JobID {
	var ready []*mJob
	for _, j := range m.jobs {
		if j.queue == queue && j.state == engine.StateReady {
			ready = append(ready, j)
		}
	}
	slices.SortFunc(ready, func(a, b *mJob) int {
		if a.prio != b.prio {
			return int(b.prio) - int(a.prio)
		}
		return int(a.id) - int(b.id)
	})
	var ids []engine.JobID
	for _, j := range ready[:min(n, len(ready))] {
		j.attempt++
		j.token = m.nextLease
		m.nextLease++
		j.state, j.due = engine.StateReserved, m.now.Add(lease)
		ids = append(ids, j.id)
	}
	return ids
}

func (m *model) leased(ref engine.LeaseRef) *mJob {
	if j := m.jobs[ref.JobID]; j != nil && j.state == engine.StateReserved && j.token == ref.LeaseToken {
		return j
	}
	return nil
}

// modelRun drives an engine and the model with the same random operations.
type modelRun struct {
	t      *testing.T
	rng    *rand.Rand
	e      *engine.Engine
	twin   *engine.Engine // fed the same operations; must stay byte-equal
	m      *model
	clock  time.Time
	issued []engine.Delivery
	stats  map[string]int // operations run, by kind
}

func TestModel_RandomOperations(t *testing.T) {
	steps := 4000
	if testing.Short() {
		steps = 1000
	}
	for _, seed := range []int64{1, 2, 3, 20260101} {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			r := &modelRun{
				t:     t,
				rng:   rand.New(rand.NewSource(seed)),
				e:     engine.New(modelConfig()),
				twin:  engine.New(modelConfig()),
				m:     &model{nextID: 1, nextLease: 1, jobs: map[engine.JobID]*mJob{}},
				clock: et.Epoch,
				stats: map[string]int{},
			}
			for i := 0; i < steps; i++ {
				r.step(i)
			}
			if r.e.Digest() != r.twin.Digest() {
				t.Fatal("two engines fed the same operations differ")
			}
			t.Logf("ops: %v", r.stats)
		})
	}
}

func (r *modelRun) now() time.Time {
	switch x := r.rng.Intn(20); {
	case x == 0: // a stale leader's clock: time must not run backwards
		return r.clock.Add(-3 * time.Second)
	case x < 8:
		return r.clock
	}
	r.clock = r.clock.Add(time.Duration(r.rng.Intn(3000)) * time.Millisecond)
	return r.clock
}

func (r *modelRun) pickRef() engine.LeaseRef {
	if len(r.issued) == 0 {
		return engine.LeaseRef{JobID: 1, LeaseToken: 1}
	}
	// Mostly recent deliveries, sometimes long-stale ones.
	i := len(r.issued) - 1 - r.rng.Intn(min(len(r.issued), 8))
	if r.rng.Intn(5) == 0 {
		i = r.rng.Intn(len(r.issued))
	}
	return et.Ref(r.issued[i])
}

func (r *modelRun) anyID() engine.JobID {
	if r.m.nextID <= 1 {
		return 1
	}
	return engine.JobID(1 + r.rng.Intn(int(r.m.nextID-1)))
}

func (r *modelRun) step(i int) {
	t, m, rng := r.t, r.m, r.rng
	queues := []string{"a", "b", "dlq"}
	now := r.now()
	both := func(f func(e *engine.Engine) any) any {
		got := f(r.e)
		twin := f(r.twin)
		if fmt.Sprint(got) != fmt.Sprint(twin) {
			t.Fatalf("step %d: twin engines disagree: %v vs %v", i, got, twin)
		}
		return got
	}
	wantLease := func(ref engine.LeaseRef, err error) *mJob {
		j := m.leased(ref)
		lost := errors.Is(err, engine.ErrLeaseLost) || (errors.Is(err, engine.ErrNotFound) && ref.JobID >= m.nextID)
		if (j == nil) != lost || (j != nil && err != nil) {
			t.Fatalf("step %d: lease %+v: engine err %v, model holds %v", i, ref, err, j != nil)
		}
		return j
	}
	var kind string
	switch x := rng.Intn(100); {
	case x < 30:
		kind = "enqueue"
		p := engine.EnqueueParams{Queue: queues[rng.Intn(2)], JobType: "t", Payload: []byte{byte(i)}}
		if rng.Intn(3) > 0 {
			p.Priority = et.Ptr(uint32(rng.Intn(10)))
		}
		if rng.Intn(4) == 0 {
			p.ScheduledAt = m.now.Add(time.Duration(rng.Intn(20000)-5000) * time.Millisecond)
		}
		p.MaxAttempts = uint32(rng.Intn(4))
		if rng.Intn(4) == 0 {
			p.IdempotencyKey = fmt.Sprint("k", rng.Intn(10))
		}
		if rng.Intn(3) == 0 {
			p.Custom = map[string]string{"n": fmt.Sprint(i)}
		}
		res := both(func(e *engine.Engine) any {
			res, err := e.Enqueue(now, p)
			if err != nil {
				t.Fatalf("step %d: enqueue: %v", i, err)
			}
			return res
		}).(engine.EnqueueResult)
		m.advance(now)
		key := p.Queue + "/" + p.IdempotencyKey
		for _, k := range m.keys {
			if p.IdempotencyKey != "" && k.key == key {
				if !res.Duplicate || res.JobID != k.id {
					t.Fatalf("step %d: key %s: engine %+v, model original %d", i, key, res, k.id)
				}
				kind = "enqueue-duplicate"
				goto check
			}
		}
		{
			prio := uint32(0)
			if p.Priority != nil {
				prio = *p.Priority
			}
			maxA := p.MaxAttempts
			if maxA == 0 {
				maxA = 3
			}
			j := m.add(p.Queue, prio, maxA, p.Custom, p.ScheduledAt)
			if res.Duplicate || res.JobID != j.id || res.State != j.state {
				t.Fatalf("step %d: enqueue: engine %+v, model id %d state %v", i, res, j.id, j.state)
			}
			if p.IdempotencyKey != "" {
				m.keys = append(m.keys, mKey{key: key, id: j.id, created: m.now})
			}
		}
	case x < 50:
		kind = "reserve"
		q := queues[rng.Intn(3)]
		n := 1 + rng.Intn(6)
		lease := time.Duration(1+rng.Intn(10)) * time.Second
		ds := both(func(e *engine.Engine) any {
			ds, err := e.Reserve(now, engine.ReserveParams{Queue: q, N: n, Lease: lease, WorkerID: "w"})
			if err != nil {
				t.Fatalf("step %d: reserve: %v", i, err)
			}
			return ds
		}).([]engine.Delivery)
		m.advance(now)
		want := m.reserve(q, min(n, modelBatch), lease)
		if got := et.IDs(ds); !slices.Equal(got, want) {
			t.Fatalf("step %d: reserve %s n=%d: engine %v, model %v (priority/FIFO order)", i, q, n, got, want)
		}
		for _, d := range ds {
			j := m.jobs[d.Job.ID]
			if d.Attempt != j.attempt || d.LeaseToken != j.token || !d.LeaseDeadline.Equal(j.due) || d.MaxAttempts != j.max {
				t.Fatalf("step %d: delivery %+v, model %+v", i, d, j)
			}
		}
		r.issued = append(r.issued, ds...)
	case x < 62:
		kind = "ack"
		ref := r.pickRef()
		err, _ := both(func(e *engine.Engine) any { return e.Ack(now, ref) }).(error)
		m.advance(now)
		if j := wantLease(ref, err); j != nil {
			delete(m.jobs, j.id)
		}
	case x < 75:
		kind = "nack"
		ref := r.pickRef()
		p := engine.NackParams{LeaseRef: ref, Directive: engine.Directive(rng.Intn(3)), After: time.Duration(rng.Intn(4000)) * time.Millisecond}
		res := both(func(e *engine.Engine) any {
			res, err := e.Nack(now, p)
			return [2]any{res, err}
		}).([2]any)
		err, _ := res[1].(error)
		got := res[0].(engine.NackResult)
		m.advance(now)
		j := wantLease(ref, err)
		if j == nil {
			break
		}
		j.token = 0
		switch {
		case p.Directive == engine.DirectiveDeadLetter:
			m.kill(j, engine.CauseRejected)
		case j.attempt >= j.max:
			m.kill(j, engine.CauseAttemptsExhausted)
		default:
			delay := p.After
			if p.Directive == engine.DirectiveDefault {
				d := min(modelBase<<(j.attempt-1), modelMaxDelay)
				delay = d - engine.RetryJitter(j.id, d)
			}
			if delay <= 0 {
				j.state, j.due = engine.StateReady, time.Time{}
			} else {
				j.state, j.due = engine.StateScheduled, m.now.Add(delay)
			}
		}
		if got.DeadLettered != (j.state == engine.StateDead) {
			t.Fatalf("step %d: nack dead-lettered %v, model state %v", i, got.DeadLettered, j.state)
		}
	case x < 79:
		kind = "release"
		ref := r.pickRef()
		err, _ := both(func(e *engine.Engine) any { return e.Release(now, ref) }).(error)
		m.advance(now)
		if j := wantLease(ref, err); j != nil {
			j.attempt--
			j.state, j.token, j.due = engine.StateReady, 0, time.Time{}
		}
	case x < 83:
		kind = "extend"
		ref := r.pickRef()
		lease := time.Duration(1+rng.Intn(10)) * time.Second
		res := both(func(e *engine.Engine) any {
			dl, err := e.ExtendLease(now, engine.ExtendParams{LeaseRef: ref, Lease: lease})
			return [2]any{dl, err}
		}).([2]any)
		err, _ := res[1].(error)
		m.advance(now)
		if j := wantLease(ref, err); j != nil {
			j.due = m.now.Add(lease)
			if !res[0].(time.Time).Equal(j.due) {
				t.Fatalf("step %d: extend deadline %v, model %v", i, res[0], j.due)
			}
		}
	case x < 86:
		kind = "admin-dead-letter"
		id := r.anyID()
		res := both(func(e *engine.Engine) any { return e.DeadLetterJobs(now, []engine.JobID{id}, "op") }).([]engine.ItemResult)
		m.advance(now)
		j := m.jobs[id]
		switch {
		case j != nil && j.state != engine.StateReserved:
			if res[0].Err != nil {
				t.Fatalf("step %d: admin dead-letter of %v job: %v", i, j.state, res[0].Err)
			}
			m.kill(j, engine.CauseAdmin)
		case j != nil || slices.ContainsFunc(m.dead, func(d *mJob) bool { return d.id == id }):
			if !errors.Is(res[0].Err, engine.ErrWrongState) {
				t.Fatalf("step %d: admin dead-letter: %v, want wrong state", i, res[0].Err)
			}
		default:
			if !errors.Is(res[0].Err, engine.ErrNotFound) {
				t.Fatalf("step %d: admin dead-letter of a gone job: %v", i, res[0].Err)
			}
		}
	case x < 89:
		kind = "drain"
		q := []string{"", "a", "b"}[rng.Intn(3)]
		n := rng.Intn(6)
		recs := both(func(e *engine.Engine) any {
			recs, err := e.DrainDeadLetters(now, engine.DrainParams{Queue: q, Max: n})
			if err != nil {
				t.Fatalf("step %d: drain: %v", i, err)
			}
			return recs
		}).([]engine.DeadLetterRecord)
		m.advance(now)
		var want []engine.JobID
		m.dead = slices.DeleteFunc(m.dead, func(j *mJob) bool {
			if (q == "" || j.queue == q) && len(want) < min(max(n, 1), modelBatch) {
				want = append(want, j.id)
				return true
			}
			return false
		})
		var got []engine.JobID
		for _, rec := range recs {
			got = append(got, rec.Job.ID)
		}
		if !slices.Equal(got, want) {
			t.Fatalf("step %d: drain %q max %d: engine %v, model %v (oldest first)", i, q, n, got, want)
		}
	case x < 92:
		kind = "requeue"
		id := r.anyID()
		if len(m.dead) > 0 && rng.Intn(2) == 0 {
			id = m.dead[rng.Intn(len(m.dead))].id
		}
		res := both(func(e *engine.Engine) any { return e.RequeueDeadLetters(now, []engine.JobID{id}) }).([]engine.ItemResult)
		m.advance(now)
		k := slices.IndexFunc(m.dead, func(d *mJob) bool { return d.id == id })
		if (k >= 0) != (res[0].Err == nil) {
			t.Fatalf("step %d: requeue %d: %v, model has record %v", i, id, res[0].Err, k >= 0)
		}
		if k >= 0 {
			j := m.dead[k]
			m.dead = slices.Delete(m.dead, k, k+1)
			j.attempt, j.state = 0, engine.StateReady
			m.jobs[j.id] = j
		}
	default:
		kind = "tick"
		both(func(e *engine.Engine) any { return e.Tick(now) })
		m.advance(now)
	}
check:
	r.stats[kind]++
	r.compare(i)
	if rng.Intn(100) == 0 {
		et.RequireInvariants(t, r.e) // includes snapshot -> restore -> same digest
		if r.e.Digest() != r.twin.Digest() {
			t.Fatalf("step %d: twin digests differ", i)
		}
		// The engine has been restored along the way, its twin never: their
		// counts of held bytes must still agree.
		if got, want := r.e.MemoryHeld(), r.twin.MemoryHeld(); !reflect.DeepEqual(got, want) {
			t.Fatalf("step %d: held bytes %+v, twin %+v", i, got, want)
		}
		// Restore into the engine itself and keep going from the copy.
		var buf bytes.Buffer
		if err := r.e.Snapshot(&buf); err != nil {
			t.Fatal(err)
		}
		restored := engine.New(engine.DefaultConfig())
		if err := restored.Restore(&buf); err != nil {
			t.Fatal(err)
		}
		r.e = restored
	}
}

// compare checks the engine's whole visible state against the model.
func (r *modelRun) compare(i int) {
	t, m, e := r.t, r.m, r.e
	if err := e.CheckInvariants(); err != nil {
		t.Fatalf("step %d: %v", i, err)
	}
	if !e.Now().Equal(m.now) {
		t.Fatalf("step %d: engine clock %v, model %v", i, e.Now(), m.now)
	}
	live := 0
	for _, s := range e.Stats(time.Time{}) {
		live += s.Scheduled + s.Ready + s.Reserved
	}
	if live != len(m.jobs) {
		t.Fatalf("step %d: engine holds %d live jobs, model %d", i, live, len(m.jobs))
	}
	for id, j := range m.jobs {
		got, err := e.GetJob(id)
		if err != nil {
			t.Fatalf("step %d: job %d: %v", i, id, err)
		}
		due := got.LeaseDeadline
		if j.state == engine.StateScheduled {
			due = got.NextAttemptAt
			if due.IsZero() {
				due = got.ScheduledAt
			}
		}
		if got.State != j.state || got.Attempt != j.attempt || got.Queue != j.queue || got.Priority != j.prio || got.MaxAttempts != j.max || !due.Equal(j.due) {
			t.Fatalf("step %d: job %d: engine %v attempt %d/%d prio %d due %v; model %v attempt %d/%d prio %d due %v",
				i, id, got.State, got.Attempt, got.MaxAttempts, got.Priority, due, j.state, j.attempt, j.max, j.prio, j.due)
		}
		if j.attempt > j.max {
			t.Fatalf("step %d: job %d attempt %d above max %d", i, id, j.attempt, j.max)
		}
	}
	recs, err := e.ListDeadLetters("", engine.Page{Limit: 1000})
	if err != nil || len(recs) != len(m.dead) {
		t.Fatalf("step %d: %d dead records, model %d (%v)", i, len(recs), len(m.dead), err)
	}
	for _, d := range m.dead {
		rec, err := e.GetDeadLetter(d.id)
		if err != nil || rec.Cause != d.cause || !rec.FailedAt.Equal(d.failedAt) || rec.FinalAttempt != d.attempt {
			t.Fatalf("step %d: record %d: %+v %v; model cause %v at %v attempt %d", i, d.id, rec, err, d.cause, d.failedAt, d.attempt)
		}
	}
}
