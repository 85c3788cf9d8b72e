package engine_test

import (
	"errors"
	"fmt"
	"math/rand"
	"testing"
	"time"

	"github.com/sepp-io/sepp/engine"
	et "github.com/sepp-io/sepp/engine/enginetest"
)

// uniqueModel is the reference of the unique index: which job holds each
// key, and until when once acked. The engine's every enqueue answer must
// match it, so the engine never holds two jobs with one key in the states
// the key covers.
type uniqueModel struct {
	holder map[string]*uJob // key -> holder
	jobs   map[engine.JobID]*uJob
}

type uJob struct {
	id        engine.JobID
	key       string
	opts      engine.UniqueOpts
	state     string // "ready", "reserved", "dead", "done"
	doneUntil time.Time
	lease     engine.LeaseToken
}

func (m *uniqueModel) held(key string, now time.Time) *uJob {
	h := m.holder[key]
	if h != nil && h.state == "done" && !now.Before(h.doneUntil) {
		delete(m.holder, key)
		return nil
	}
	return h
}

func (m *uniqueModel) release(j *uJob) {
	if m.holder[j.key] == j {
		delete(m.holder, j.key)
	}
}

// TestUnique_RandomOperationsModel: random unique enqueues over a few keys,
// reserves, acks, dead-lettering, drains and time, against the reference.
func TestUnique_RandomOperationsModel(t *testing.T) {
	for seed := int64(1); seed <= 20; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rng := rand.New(rand.NewSource(seed))
			e := et.New(t, et.WithRetention(24*time.Hour))
			clock := et.NewClock()
			m := &uniqueModel{holder: map[string]*uJob{}, jobs: map[engine.JobID]*uJob{}}
			keys := []string{"a", "b", "c"}
			periods := []time.Duration{0, 30 * time.Second, 2 * time.Minute}
			for step := range 400 {
				now := clock.Advance(time.Duration(rng.Intn(10)) * time.Second)
				switch op := rng.Intn(10); {
				case op < 5:
					u := engine.UniqueOpts{
						Key: keys[rng.Intn(len(keys))], CoverDead: rng.Intn(2) == 0,
						CompletedFor: periods[rng.Intn(len(periods))], Refuse: rng.Intn(2) == 0,
					}
					p := et.Job("q")
					p.Unique = &u
					res, err := e.Enqueue(now, p)
					h := m.held(u.Key, now)
					switch {
					case h != nil && u.Refuse:
						var ce *engine.UniqueConflictError
						if !errors.As(err, &ce) || ce.Existing != h.id {
							t.Fatalf("step %d: enqueue %q = %+v, %v; want refused naming job %d", step, u.Key, res, err, h.id)
						}
					case h != nil:
						if err != nil || !res.Duplicate || res.JobID != h.id {
							t.Fatalf("step %d: enqueue %q = %+v, %v; want duplicate of job %d", step, u.Key, res, err, h.id)
						}
					default:
						if err != nil || res.Duplicate {
							t.Fatalf("step %d: enqueue %q = %+v, %v; want a new job (key free)", step, u.Key, res, err)
						}
						j := &uJob{id: res.JobID, key: u.Key, opts: u, state: "ready"}
						m.jobs[j.id] = j
						m.holder[u.Key] = j
					}
				case op < 7:
					ds, err := e.Reserve(now, engine.ReserveParams{Queue: "q", N: 1, Lease: 12 * time.Hour})
					if err != nil {
						t.Fatal(err)
					}
					for _, d := range ds {
						j := m.jobs[d.Job.ID]
						if j == nil || j.state != "ready" {
							t.Fatalf("step %d: reserved job %d, not ready in the model", step, d.Job.ID)
						}
						j.state, j.lease = "reserved", d.LeaseToken
					}
				case op < 9:
					var j *uJob
					for _, c := range m.jobs { // pick the lowest reserved id: no map order
						if c.state == "reserved" && (j == nil || c.id < j.id) {
							j = c
						}
					}
					if j == nil {
						continue
					}
					ref := engine.LeaseRef{JobID: j.id, LeaseToken: j.lease}
					if op == 7 {
						if err := e.Ack(now, ref); err != nil {
							t.Fatal(err)
						}
						if j.opts.CompletedFor > 0 {
							j.state, j.doneUntil = "done", now.Add(j.opts.CompletedFor)
						} else {
							m.release(j)
							delete(m.jobs, j.id)
						}
					} else {
						if _, err := e.Nack(now, engine.NackParams{LeaseRef: ref, Directive: engine.DirectiveDeadLetter}); err != nil {
							t.Fatal(err)
						}
						j.state = "dead"
						if !j.opts.CoverDead {
							m.release(j)
						}
					}
				default:
					if _, err := e.DrainDeadLetters(now, engine.DrainParams{Queue: "q", Max: 100}); err != nil {
						t.Fatal(err)
					}
					for id, j := range m.jobs {
						if j.state == "dead" {
							m.release(j)
							delete(m.jobs, id)
						}
					}
				}
				if err := e.CheckInvariants(); err != nil {
					t.Fatalf("step %d: %v", step, err)
				}
				for _, k := range keys {
					id, ok := e.UniqueHolder("q", k)
					h := m.held(k, now)
					if ok != (h != nil) || (ok && id != h.id) {
						t.Fatalf("step %d: key %q held by %d (%v), model %+v", step, k, id, ok, h)
					}
				}
				if step%50 == 0 {
					et.RequireInvariants(t, e)
				}
			}
		})
	}
}
