package engine

import "slices"

// ListReadyInOrder lists a queue's Ready jobs in the order Reserve would
// hand them out as the state stands: highest priority first and, within a
// priority, in original enqueue order (the order of the priority level's
// ring merged with its returned jobs; in a queue with a fairness key, the
// level's key lines taken in turn). Jobs parked behind a full
// concurrency key come last, by id: they are handed out only when their key
// frees. It skips the first offset jobs of that order and returns at most
// limit (0: 100, at most 1000). An operator call: it walks the levels up to
// offset+limit jobs.
func (e *Engine) ListReadyInOrder(queue string, offset, limit int) ([]Job, error) {
	if offset < 0 {
		return nil, invalid("offset", "must not be negative, got %d", offset)
	}
	limit, err := pageLimit(Page{Limit: limit})
	if err != nil {
		return nil, err
	}
	q, err := e.queueForRead("queue", queue)
	if err != nil {
		return nil, err
	}
	out := make([]Job, 0, limit)
	skip := offset
	take := func(j *job) bool {
		if skip > 0 {
			skip--
			return true
		}
		out = append(out, e.view(j))
		return len(out) < limit
	}
	for prio := MaxPriority; prio >= 0; prio-- {
		// A level with a fairness key hands out its lines in turn: the
		// front line's next job, then the next line's, round and round.
		var lines []*levelWalk
		q.ready[prio].lines(func(r *readyLevel) { lines = append(lines, newLevelWalk(q, prio, r)) })
		for len(lines) > 0 {
			live := lines[:0]
			for _, w := range lines {
				j := w.next()
				if j == nil {
					continue
				}
				if !take(j) {
					return out, nil
				}
				live = append(live, w)
			}
			lines = live
		}
	}
	if q.keys != nil {
		var parked []*job
		for _, h := range q.keys.parked { // collected, then sorted by id
			parked = append(parked, h.items...)
		}
		slices.SortFunc(parked, func(a, b *job) int { return cmpID(a.id, b.id) })
		for _, j := range parked {
			if !take(j) {
				break
			}
		}
	}
	return out, nil
}

// levelWalk walks one ready line (a level, or a fairness key's line) in
// hand-out order: its ring merged by id with its returned jobs.
type levelWalk struct {
	level   *readyLevel
	returns []*job
	i, ri   int
	// The level's compact jobs (compact.go), merged by id with the rest.
	q     *queue
	prio  int
	ci    int
	ahead *job // the line's next job but compact, already taken from ring or returns
}

func newLevelWalk(q *queue, prio int, r *readyLevel) *levelWalk {
	returns := slices.Clone(r.returns.items)
	slices.SortFunc(returns, func(a, b *job) int { return cmpID(a.id, b.id) })
	return &levelWalk{level: r, returns: returns, q: q, prio: prio}
}

// next is the line's next job, or nil when it has none left.
func (w *levelWalk) next() *job {
	if w.ahead == nil {
		w.ahead = w.nextFull()
	}
	c := w.level.compact.Len()
	for w.ci < c && w.level.compact.ptr(w.ci).maxAttempts == 0 {
		w.ci++
	}
	if w.ci < c {
		if ent := w.level.compact.ptr(w.ci); w.ahead == nil || ent.id < w.ahead.id {
			w.ci++
			return viewOf(w.q, w.prio, ent)
		}
	}
	j := w.ahead
	w.ahead = nil
	return j
}

// nextFull is the line's next job held as a *job, or nil.
func (w *levelWalk) nextFull() *job {
	for w.i < w.level.ring.Len() {
		j := w.level.ring.At(w.i)
		if j.flags&flagInRing == 0 {
			w.i++
			continue
		}
		if w.ri < len(w.returns) && w.returns[w.ri].id < j.id {
			w.ri++
			return w.returns[w.ri-1]
		}
		w.i++
		return j
	}
	if w.ri < len(w.returns) {
		w.ri++
		return w.returns[w.ri-1]
	}
	return nil
}
