package engine

import (
	"fmt"
	"slices"
	"strconv"
	"time"
)

// Follow-ups: an ack that enqueues jobs in the same transition (issue 37
// item 4). The ack and its follow-ups are one change, all or nothing:
//
//   - fenced by the lease: a delivery whose lease is lost (or that is not
//     reserved) is refused as a plain ack is, and no follow-up is enqueued;
//   - every follow-up is decided before any is applied (admit, with the
//     overlay of the earlier ones), so one that would be refused (bad
//     input, unknown queue where strict, a full queue, a memory or disk
//     budget, a refusing unique key, the key store full) refuses the whole
//     ack, naming its index, and the job stays reserved;
//   - then the follow-ups are enqueued in order (commitEnqueue, which
//     cannot fail) and the job completes.
//
// The follow-ups are enqueued before the job completes, so the acked job
// still counts towards its queue's max_length and memory budget when they
// are decided, and still holds its unique key: a follow-up with the job's
// own unique key is its duplicate (or refused, with refuse). Deciding them
// against the state the ack leaves would need the ack undone when one is
// refused; this way nothing is undone.

// The lists whose items are decided all or nothing: an ack's follow-ups,
// and a batch whose jobs wait for each other (dependencies.go).
const (
	listFollowUps = "follow_ups"
	listJobs      = "jobs"
)

// itemIndexField names item i of list in an error.
func itemIndexField(list string, i int) string { return list + "[" + strconv.Itoa(i) + "]" }

// FollowUpError is an item that refused its whole list: a follow-up that
// refused its ack (and so every other follow-up), or a job of a batch
// with dependencies that refused the batch. Index is its position, List
// the list ("follow_ups" or "jobs"; empty is "follow_ups"). Errors.As
// reaches the refusal's own type through it (a *MemoryFullError, a
// *UniqueConflictError, ...); a refusal that names a field is instead a
// *FieldError whose Field starts "follow_ups[i]." (or "jobs[i].").
type FollowUpError struct {
	Index int
	List  string
	Err   error
}

func (e *FollowUpError) Error() string {
	list := e.List
	if list == "" {
		list = listFollowUps
	}
	return itemIndexField(list, e.Index) + ": " + e.Err.Error()
}

func (e *FollowUpError) Unwrap() error { return e.Err }

// itemError names item i of list in err.
func itemError(list string, i int, err error) error {
	if fe, ok := err.(*FieldError); ok { //nolint:errorlint // only a FieldError itself names a field of the item
		c := *fe
		c.Field = itemIndexField(list, i) + "." + fe.Field
		return &c
	}
	return &FollowUpError{Index: i, List: list, Err: err}
}

// AckWithFollowUps is AckWithResult enqueueing followUps in the same
// transition (see the top of this file), and returns their results in
// order: each as Enqueue's, a Duplicate for an idempotency or unique key
// already held (by an existing job or an earlier follow-up). At most
// limits.max_batch_size follow-ups.
//
// A retried ack whose first answer was lost finds its lease gone
// (ErrLeaseLost) and enqueues nothing more; its follow-ups' idempotency
// keys let the retry's caller enqueue them again on their own without
// duplicating them.
func (e *Engine) AckWithFollowUps(now time.Time, ref LeaseRef, result []byte, followUps []EnqueueParams) ([]EnqueueResult, error) {
	if len(followUps) > e.lim.MaxBatchSize {
		return nil, &FieldError{Field: "follow_ups", Limit: "at most limits.max_batch_size=" + strconv.Itoa(e.lim.MaxBatchSize),
			Reason: fmt.Sprintf("has %d follow-ups, above limits.max_batch_size %d", len(followUps), e.lim.MaxBatchSize), Err: ErrInvalidArgument}
	}
	e.advance(now)
	j, err := e.leased(ref)
	if err != nil {
		return nil, err
	}
	if err := checkResultKept(j, result); err != nil {
		return nil, err
	}
	var out []EnqueueResult
	if len(followUps) > 0 {
		qs, as, err := e.admitAll(listFollowUps, followUps)
		if err != nil {
			return nil, err
		}
		out = make([]EnqueueResult, len(followUps))
		for i := range followUps {
			q := qs[i]
			out[i] = e.commitEnqueue(q, &followUps[i], &as[i])
			if !as[i].dup {
				e.adoptQueue(q) // a no-op for a queue that exists
			}
		}
	}
	e.ackLeased(j, result)
	return out, nil
}

// admitAll decides every item of list (follow-ups, or a batch's jobs that
// wait for each other), in order, each against the state plus the earlier
// ones; it changes nothing an enqueue's checks would not.
func (e *Engine) admitAll(list string, items []EnqueueParams) ([]*queue, []admission, error) {
	ov := &enqueueOverlay{nextID: JobID(e.nextID)}
	qs := make([]*queue, len(items))
	as := make([]admission, len(items))
	for i := range items {
		p := &items[i]
		if err := e.checkParams(p); err != nil {
			return nil, nil, itemError(list, i, err)
		}
		q := ov.fresh[p.Queue]
		if q == nil {
			var fresh bool
			var err error
			if q, fresh, err = e.queueForWrite("queue", p.Queue); err != nil {
				return nil, nil, itemError(list, i, err)
			}
			if fresh {
				// Later follow-ups to the same new queue see this one.
				if ov.fresh == nil {
					ov.fresh = make(map[string]*queue)
				}
				ov.fresh[p.Queue] = q
			}
		}
		a, err := e.admit(q, p, ov)
		if err != nil {
			return nil, nil, itemError(list, i, err)
		}
		if len(p.After) > 0 {
			if err := checkAfter(i, p); err != nil {
				return nil, nil, itemError(list, i, err)
			}
			if !a.dup { // a duplicate is the job it names, parents and all
				if a.parents, err = e.itemParents(p, as); err != nil {
					return nil, nil, itemError(list, i, err)
				}
			}
		}
		if a.dup {
			a.id = a.res.JobID
		} else {
			a.id = ov.nextID // what ov.add gives it
		}
		qs[i], as[i] = q, a
		if !a.dup {
			ov.add(q, p, &a)
		}
	}
	return qs, as, nil
}

// itemParents resolves item i's After against the earlier items'
// admissions: a new one is live once committed (before i), a duplicate is
// the job it names, whatever that job's state now.
func (e *Engine) itemParents(p *EnqueueParams, as []admission) ([]parentLink, error) {
	parents := make([]parentLink, 0, len(p.After))
	for k, a := range p.After {
		pa := &as[a]
		if slices.ContainsFunc(parents, func(l parentLink) bool { return l.id == pa.id }) {
			continue // two requests of the call that are one job (a duplicate key): one parent
		}
		if !pa.dup || pa.dupInBatch {
			parents = append(parents, parentLink{id: pa.id})
			continue
		}
		link, ok := e.parentOutcomeOf(pa.id)
		if !ok {
			return nil, &ParentUnknownError{Field: "after[" + strconv.Itoa(k) + "]", Index: a, JobID: pa.id}
		}
		parents = append(parents, link)
	}
	return parents, nil
}

// enqueueOverlay is what the admitted follow-ups of one ack will add once
// applied, for admit to decide the next one as if they were: the checks
// that count (a queue's length, the memory and disk budgets, the key
// store) and the keys they will hold. Its methods take a nil overlay as
// empty. Its maps are only looked up, never ranged over.
type enqueueOverlay struct {
	nextID  JobID // the id the next admitted job gets
	live    map[*queue]int
	held    map[*queue]int64
	heldAll int64
	disk    int64
	keys    int
	keyIDs  map[[2]string]JobID
	unique  map[[2]string]overlayJob
	fresh   map[string]*queue
}

type overlayJob struct {
	id    JobID
	state State
}

// add counts an admitted job that commitEnqueue will add.
func (ov *enqueueOverlay) add(q *queue, p *EnqueueParams, a *admission) {
	id := ov.nextID
	ov.nextID++
	if ov.live == nil {
		ov.live, ov.held = make(map[*queue]int), make(map[*queue]int64)
	}
	ov.live[q]++
	ov.held[q] += a.need
	ov.heldAll += a.need
	ov.disk += int64(len(p.Payload))
	if p.IdempotencyKey != "" {
		ov.keys++
		if ov.keyIDs == nil {
			ov.keyIDs = make(map[[2]string]JobID)
		}
		ov.keyIDs[[2]string{q.name, p.IdempotencyKey}] = id
	}
	if a.uniqueKey != "" {
		if ov.unique == nil {
			ov.unique = make(map[[2]string]overlayJob)
		}
		state := StateReady
		switch {
		case len(p.After) > 0:
			state = StateBlocked
		case a.due != 0:
			state = StateScheduled
		}
		ov.unique[[2]string{q.name, a.uniqueKey}] = overlayJob{id: id, state: state}
	}
}

func (ov *enqueueOverlay) keyHolder(queue, key string) (JobID, bool) {
	if ov == nil {
		return 0, false
	}
	id, ok := ov.keyIDs[[2]string{queue, key}]
	return id, ok
}

func (ov *enqueueOverlay) uniqueHolder(queue, key string) (JobID, State, bool) {
	if ov == nil {
		return 0, StateUnknown, false
	}
	j, ok := ov.unique[[2]string{queue, key}]
	return j.id, j.state, ok
}

func (ov *enqueueOverlay) liveIn(q *queue) int {
	if ov == nil {
		return 0
	}
	return ov.live[q]
}

func (ov *enqueueOverlay) diskBytes() int64 {
	if ov == nil {
		return 0
	}
	return ov.disk
}

func (ov *enqueueOverlay) keyCount() int {
	if ov == nil {
		return 0
	}
	return ov.keys
}

// checkMemoryOver is checkMemory with what ov will have added held already.
func (e *Engine) checkMemoryOver(q *queue, need int64, ov *enqueueOverlay) error {
	if ov == nil {
		return e.checkMemory(q, need)
	}
	all, inQ := e.held+ov.heldAll, q.held+ov.held[q]
	if m := e.lim.MaxMemoryBytes; m > 0 && all+need > m {
		return &MemoryFullError{Held: all, Need: need, Limit: m}
	}
	if m := q.set.maxMemory; m > 0 && inQ+need > m {
		return &MemoryFullError{Queue: q.name, Held: inQ, Need: need, Limit: m}
	}
	return nil
}
