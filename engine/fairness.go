package engine

import "slices"

// Fairness within a priority level ([[queues]] fairness_key):
//
//   - When a queue names a fairness key (a custom field, e.g. tenant), each
//     of its priority levels holds one FIFO line per value of the field,
//     and the jobs without the field share one line of their own. The
//     lines with Ready jobs take turns: a reserve takes the next job (by
//     id) of the line at the front of the level's rotation and, when that
//     line still holds jobs, sends it to the back. A line that empties
//     leaves the rotation; a line that gets a Ready job joins at the back.
//   - Strict priority across levels still holds (a reserve empties the
//     highest level first), and so does FIFO within one key's line; only
//     the order among keys of one level changes.
//   - The rotation order is part of the state (snapshot layout 10), so a
//     restored replica hands out the same jobs as one that applied the log.
//   - Cost: a push, pop or removal is O(log n) in the line's jobs plus O(1)
//     in the rotation (a key's lines are found through a map).
//
// The reserve limits apply on top: a job whose concurrency key is full is
// parked as ever (reserve_limits.go), and comes back to its line.

// fairLevel is a priority level of a queue with a fairness key.
type fairLevel struct {
	keys map[string]*fairKey
	none *fairKey // the line of jobs without the field
	// rot holds the lines with Ready jobs in turn order. A line that left
	// the rotation (inRot false) leaves a stale entry, skipped when it
	// reaches the front; the front is always a live line.
	rot   deque[*fairKey]
	stale int
	n     int // Ready jobs in the level
}

// fairKey is one key value's line within a level.
type fairKey struct {
	value string
	none  bool
	inRot bool
	lvl   readyLevel
}

func newFairLevel() *fairLevel { return &fairLevel{keys: map[string]*fairKey{}} }

// fairValue is j's value of its queue's fairness key.
func fairValue(j *job) (string, bool) {
	if j.ext == nil || j.ext.custom == nil {
		return "", false
	}
	v, ok := j.ext.custom[j.q.set.fairKey]
	return v, ok
}

// line returns j's line, creating it when create is set (nil otherwise if
// it does not exist).
func (f *fairLevel) line(j *job, create bool) *fairKey {
	v, ok := fairValue(j)
	if !ok {
		if f.none == nil && create {
			f.none = &fairKey{none: true}
		}
		return f.none
	}
	k := f.keys[v]
	if k == nil && create {
		k = &fairKey{value: v}
		f.keys[v] = k
	}
	return k
}

func (f *fairLevel) push(j *job) {
	k := f.line(j, true)
	k.lvl.push(j)
	f.n++
	if !k.inRot {
		k.inRot = true
		f.rot.PushBack(k)
	}
}

// forget drops an empty line: it leaves the rotation (a stale entry) and
// the map, so a later job of its value starts a new line at the back.
func (f *fairLevel) forget(k *fairKey) {
	k.inRot = false
	if k.none {
		f.none = nil
	} else {
		delete(f.keys, k.value)
	}
	f.stale++
}

// dropStale pops stale entries off the rotation's front and, when stale
// entries outnumber live ones, compacts it (amortised O(1)).
func (f *fairLevel) dropStale() {
	for f.rot.Len() > 0 && !f.rot.Front().inRot {
		f.rot.PopFront()
		f.stale--
	}
	if f.stale > 16 && f.stale > f.rot.Len()/2 {
		var rot deque[*fairKey]
		for i := 0; i < f.rot.Len(); i++ {
			if k := f.rot.At(i); k.inRot {
				rot.PushBack(k)
			}
		}
		f.rot, f.stale = rot, 0
	}
}

func (f *fairLevel) peek() *job {
	if f.rot.Len() == 0 {
		return nil
	}
	return f.rot.Front().lvl.peek()
}

func (f *fairLevel) pop() *job {
	if f.rot.Len() == 0 {
		return nil
	}
	k := f.rot.PopFront()
	j := k.lvl.pop()
	f.n--
	if k.lvl.len() > 0 {
		f.rot.PushBack(k)
	} else {
		f.forget(k)
		f.stale-- // its entry is popped already
	}
	f.dropStale()
	return j
}

func (f *fairLevel) remove(j *job) {
	k := f.line(j, false)
	k.lvl.remove(j)
	f.n--
	if k.lvl.len() == 0 {
		f.forget(k)
		f.dropStale()
	}
}

// lines calls fn for each line of the level holding jobs, in turn order
// (the level itself when it has no fairness key).
func (r *readyLevel) lines(fn func(*readyLevel)) {
	if r.fair == nil {
		fn(r)
		return
	}
	for i := 0; i < r.fair.rot.Len(); i++ {
		if k := r.fair.rot.At(i); k.inRot {
			fn(&k.lvl)
		}
	}
}

// turnOrder lists the level's live lines in turn order.
func (f *fairLevel) turnOrder() []*fairKey {
	out := make([]*fairKey, 0, f.rot.Len()-f.stale)
	for i := 0; i < f.rot.Len(); i++ {
		if k := f.rot.At(i); k.inRot {
			out = append(out, k)
		}
	}
	return out
}

// setTurnOrder replaces the rotation with order (every live line exactly
// once, as Restore reads it). It reports false when order is not a
// permutation of the live lines.
func (f *fairLevel) setTurnOrder(order []*fairKey) bool {
	if len(order) != len(f.keys)+btoi(f.none != nil) {
		return false
	}
	var rot deque[*fairKey]
	seen := make(map[*fairKey]bool, len(order))
	for _, k := range order {
		if k == nil || seen[k] || !k.inRot {
			return false
		}
		seen[k] = true
		rot.PushBack(k)
	}
	f.rot, f.stale = rot, 0
	return true
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// rebuildFairness lays out q's Ready levels for its (new) fairness key:
// every Ready job on a level is collected and pushed again in id order, so
// the lines join the rotation in the order of their first job. O(Ready
// jobs of the queue): a config change, never the hot path. Parked jobs are
// not on a level and stay parked.
func (e *Engine) rebuildFairness(q *queue) {
	var jobs []*job
	for prio := range q.ready {
		level := &q.ready[prio]
		for level.len() > 0 {
			jobs = append(jobs, e.popReady(q, prio))
		}
		*level = readyLevel{}
		if q.set.fairKey != "" {
			level.fair = newFairLevel()
		}
	}
	slices.SortFunc(jobs, func(a, b *job) int { return cmpID(a.id, b.id) })
	for _, j := range jobs {
		q.ready[j.priority].push(j)
	}
}

// Fairness describes a queue's fairness key for GetServerInfo and the
// queue's settings: the field, and how many key values hold Ready jobs
// (taking turns) across its levels.
type Fairness struct {
	Key        string
	ActiveKeys int
}

func fairnessView(q *queue) Fairness {
	if q.set.fairKey == "" {
		return Fairness{}
	}
	v := Fairness{Key: q.set.fairKey}
	for prio := range q.ready {
		if f := q.ready[prio].fair; f != nil {
			v.ActiveKeys += len(f.keys) + btoi(f.none != nil)
		}
	}
	return v
}
