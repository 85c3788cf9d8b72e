package engine

import (
	"fmt"
	"slices"
	"strconv"
)

// Dependencies: a job enqueued after other jobs of the same call (its
// parents: EnqueueParams.After names earlier items of an EnqueueBatch or
// of an ack's follow-ups) is Blocked until every parent has ended. Then
// it is Ready (or Scheduled until its scheduled_at) when every parent
// completed, or whatever the outcomes under ParentFailureRun (a batch's
// callback); under ParentFailureCancel, the default, the first parent to
// end otherwise (dead-lettered, cancelled, expired, deleted, purged)
// cancels it at once: it is dead-lettered with the cause cancelled, which
// cancels its own dependents in turn.
//
// A parent's end is its first: a dead parent an operator requeues later
// is a new run its children do not wait for.
//
// State: deps holds, per live job that has parents, its policy and each
// parent's outcome as it saw it, for as long as the job is live (so that a
// worker running it reads which parents it had, and how they ended, with
// GetJob). children is derived from deps (a parent's children still
// waiting on it, in id order; GetJob shows them as WaitingChildren) and
// rebuilt on restore. Both are in the
// snapshot's dependencies section (layout snapshotVersionDependencies) and
// charged to the child's queue (depsCharge).

// ParentFailure says what a blocked job does when a parent ends other
// than completed.
type ParentFailure uint8

const (
	// ParentFailureCancel cancels the job at once (the default).
	ParentFailureCancel ParentFailure = iota
	// ParentFailureRun runs the job once every parent has ended, whatever
	// the outcomes: a batch's callback, which reads them.
	ParentFailureRun
	maxParentFailure = ParentFailureRun
)

// The outcomes of a parent as its child records them.
const (
	parentPending    uint8 = iota // not ended yet
	parentCompleted               // acked
	parentDead                    // dead-lettered (cause kept)
	parentRemoved                 // deleted or purged without a record
	maxParentOutcome = parentRemoved
)

// ParentLink is one parent of a job as GetJob shows it.
type ParentLink struct {
	ID JobID
	// State is StateCompleted or StateDead once the parent ended that
	// way, StateUnknown when it was removed (deleted, purged) or is still
	// running: Ended tells which.
	State State
	// Cause is the dead parent's cause.
	Cause Cause
	Ended bool
}

type parentLink struct {
	id      JobID
	outcome uint8
	cause   Cause
}

type jobDeps struct {
	policy  ParentFailure
	pending int
	parents []parentLink
}

// depsCharge is what a job's dependency record costs in the memory count:
// the record and its map entry, plus per parent the link and the child's
// place in the parent's children list.
func depsCharge(d *jobDeps) int64 { return 64 + 32*int64(len(d.parents)) }

// MaxParents bounds the parents one job waits for (a batch's callback
// waits for the whole batch, which limits.max_batch_size bounds too).
const MaxParents = 10_000

// checkAfter checks item i's After against the items before it (indexes
// of earlier items, each once) and its policy.
func checkAfter(i int, p *EnqueueParams) error {
	if p.OnParentFailure > maxParentFailure {
		return invalid("on_parent_failure", "must be cancel or run, got %d", p.OnParentFailure)
	}
	for k, a := range p.After {
		switch {
		case i == 0:
			return invalid("after["+strconv.Itoa(k)+"]", "must name an earlier request of the same call, and the first has none; got %d", a)
		case a < 0 || a >= i:
			return invalid("after["+strconv.Itoa(k)+"]", "must name an earlier request of the same call (0..%d), got %d", i-1, a)
		case slices.Contains(p.After[:k], a):
			return invalid("after["+strconv.Itoa(k)+"]", "names request %d twice", a)
		}
	}
	return nil
}

func hasAfter(items []EnqueueParams) bool {
	for i := range items {
		if len(items[i].After) > 0 {
			return true
		}
	}
	return false
}

// enqueueAll applies a batch whose items wait for each other, all or
// nothing, as an ack's follow-ups are: a workflow is created whole.
func (e *Engine) enqueueAll(items []EnqueueParams) ([]BatchItemResult, error) {
	qs, as, err := e.admitAll(listJobs, items)
	if err != nil {
		return nil, err
	}
	out := make([]BatchItemResult, len(items))
	for i := range items {
		out[i].Result = e.commitEnqueue(qs[i], &items[i], &as[i])
		if !as[i].dup {
			e.adoptQueue(qs[i])
		}
	}
	return out, nil
}

// parentOutcomeOf is how the job id ended, for a new child linked to an
// existing job (a parent item that was a duplicate): pending while live,
// completed or dead while a record says so; ok false when the engine no
// longer knows (acked without a kept record, or its record dropped).
func (e *Engine) parentOutcomeOf(id JobID) (parentLink, bool) {
	if e.jobForRead(id) != nil {
		return parentLink{id: id}, true
	}
	if r := e.dead[id]; r != nil {
		return parentLink{id: id, outcome: parentDead, cause: r.cause}, true
	}
	if _, ok := e.getCompleted(id); ok {
		return parentLink{id: id, outcome: parentCompleted}, true
	}
	return parentLink{}, false
}

// ParentUnknownError refuses a job whose parent item was a duplicate of a
// job the engine no longer holds: its outcome is unknown, so the child
// could neither wait for it nor know it completed.
type ParentUnknownError struct {
	Field string
	Index int
	JobID JobID
}

func (e *ParentUnknownError) Error() string {
	return fmt.Sprintf("%s: request %d is a duplicate of job %d, which is no longer held (acked without a kept record, or its record dropped), so its outcome is unknown", e.Field, e.Index, e.JobID)
}

func (e *ParentUnknownError) Unwrap() error { return ErrWrongState }

// blockAfter makes j, a job just made by newJob (Ready or Scheduled, not
// yet filed in the index), wait for parents: Blocked while any is
// pending, else decided at once as a parent's end would decide it.
func (e *Engine) blockAfter(j *job, parents []parentLink, policy ParentFailure) {
	d := &jobDeps{policy: policy, parents: parents}
	for i, p := range parents {
		if p.outcome == parentPending && e.jobForRead(p.id) == nil {
			// A parent of the same call that ended while the call was
			// applied: cancelled at its own enqueue, or the job an ack
			// completes. Its outcome is what the engine still knows.
			link, ok := e.parentOutcomeOf(p.id)
			if !ok {
				link = parentLink{id: p.id, outcome: parentDead, cause: CauseCancelled}
			}
			parents[i], p = link, link
		}
		if p.outcome == parentPending {
			d.pending++
			e.children[p.id] = append(e.children[p.id], j.id)
		}
	}
	if e.deps == nil {
		e.deps = make(map[JobID]*jobDeps)
	}
	e.deps[j.id] = d
	e.charge(j.q, depsCharge(d))
	e.detach(j)
	j.state = StateBlocked
	j.q.nBlocked++
}

// decideBlocked is called for j, filed in the index, once blockAfter
// returned: a job with every parent ended already is released or
// cancelled now.
func (e *Engine) decideBlocked(j *job) {
	d := e.deps[j.id]
	if bad, ok := firstFailed(d); ok && d.policy == ParentFailureCancel {
		e.cancelBlocked(j, bad)
		return
	}
	if d.pending == 0 {
		e.release(j)
	}
}

func firstFailed(d *jobDeps) (parentLink, bool) {
	for _, p := range d.parents {
		if p.outcome != parentPending && p.outcome != parentCompleted {
			return p, true
		}
	}
	return parentLink{}, false
}

// release makes a Blocked job whose parents all ended runnable: Scheduled
// until its producer's scheduled_at if that is still ahead, else Ready.
func (e *Engine) release(j *job) {
	e.detach(j)
	if x := j.ext; x != nil && x.scheduledAt > e.now {
		e.makeScheduled(j, x.scheduledAt, false)
		return
	}
	j.state = StateReady
	e.makeReady(j)
}

// cancelBlocked dead-letters j, Blocked, because parent p did not
// complete: cause cancelled, the reason naming the parent.
func (e *Engine) cancelBlocked(j *job, p parentLink) {
	e.detach(j)
	before := e.jobCharge(j)
	j.extension().lastReason = cancelledByParentReason(p)
	e.charge(j.q, e.jobCharge(j)-before)
	e.cancelUsed = true
	e.kill(j, CauseCancelled)
}

func cancelledByParentReason(p parentLink) string {
	switch p.outcome {
	case parentDead:
		return fmt.Sprintf("parent job %d was dead-lettered (%v)", p.id, p.cause)
	default:
		return fmt.Sprintf("parent job %d was removed before it completed", p.id)
	}
}

// settle is called once j has left the live jobs for good (acked,
// dead-lettered, deleted or purged): j's own dependency record goes, and
// each child waiting on j learns its outcome, which may release or cancel
// it (and, through cancel, its own children).
func (e *Engine) settle(j *job, outcome uint8, cause Cause) {
	if len(e.deps) == 0 {
		return // children is derived from deps: empty too
	}
	if d := e.deps[j.id]; d != nil {
		delete(e.deps, j.id)
		e.charge(j.q, -depsCharge(d))
		for _, p := range d.parents { // a child gone before a parent: leave its lists
			if p.outcome == parentPending {
				e.unlinkChild(p.id, j.id)
			}
		}
	}
	kids := e.children[j.id]
	if kids == nil {
		return
	}
	delete(e.children, j.id)
	for _, cid := range kids {
		d := e.deps[cid]
		if d == nil {
			// Ended already within this settle: a sibling's cancel
			// cancelled it (it waited on that sibling too).
			continue
		}
		i := slices.IndexFunc(d.parents, func(p parentLink) bool { return p.id == j.id && p.outcome == parentPending })
		c := e.jobs.get(cid)
		if i < 0 || c == nil || c.state != StateBlocked {
			panic(fmt.Sprintf("engine: job %d waits on job %d but is not blocked", cid, j.id))
		}
		d.parents[i].outcome, d.parents[i].cause = outcome, cause
		d.pending--
		switch {
		case outcome != parentCompleted && d.policy == ParentFailureCancel:
			for _, p := range d.parents { // it waits no more
				if p.outcome == parentPending {
					e.unlinkChild(p.id, cid)
				}
			}
			d.pending = 0
			e.cancelBlocked(c, d.parents[i])
		case d.pending == 0:
			e.release(c)
		}
	}
}

// unlinkChild takes child out of parent's children list.
func (e *Engine) unlinkChild(parent, child JobID) {
	kids := e.children[parent]
	if i := slices.Index(kids, child); i >= 0 {
		kids = slices.Delete(kids, i, i+1)
	}
	if len(kids) == 0 {
		delete(e.children, parent)
	} else {
		e.children[parent] = kids
	}
}

// parentsView is what GetJob shows of j's parents (nil: none).
func (e *Engine) parentsView(id JobID) []ParentLink {
	d := e.deps[id]
	if d == nil {
		return nil
	}
	out := make([]ParentLink, len(d.parents))
	for i, p := range d.parents {
		v := ParentLink{ID: p.id, Ended: p.outcome != parentPending}
		switch p.outcome {
		case parentPending:
			v.State = e.stateOf(p.id)
		case parentCompleted:
			v.State = StateCompleted
		case parentDead:
			v.State, v.Cause = StateDead, p.cause
		}
		out[i] = v
	}
	return out
}

// MaxWaitingChildrenListed bounds Job.WaitingChildren: a fan-out job may
// have thousands of children (a batch's worth from each call that names
// it), and one GetJob answer must not grow with them.
const MaxWaitingChildrenListed = 100

// waitingChildren is what GetJob shows of the jobs waiting on id: the
// first MaxWaitingChildrenListed of its children list and the list's
// length. The list is in id order (checkDeps checks it) and holds a child
// only while it waits on id: until id ends, or the child ends first
// (cancelled by another parent, deleted, dead-lettered by an operator).
// It is what settle needs, read with no scan. A released child is in no
// list: finding those would mean scanning every dependency record under
// the read lock, on a call workers make to read their parents' results.
func (e *Engine) waitingChildren(id JobID) ([]JobID, int) {
	kids := e.children[id]
	if len(kids) == 0 {
		return nil, 0
	}
	return slices.Clone(kids[:min(len(kids), MaxWaitingChildrenListed)]), len(kids)
}

// encodeDepsSection writes, by job id, each live job's dependency record:
// id, policy, then its parents (id, outcome, cause).
func (e *Engine) encodeDepsSection(c *encoder) {
	ids := make([]JobID, 0, len(e.deps))
	for id := range e.deps { // sorted below: order does not matter
		ids = append(ids, id)
	}
	slices.Sort(ids)
	c.uvarint(uint64(len(ids)))
	for _, id := range ids {
		d := e.deps[id]
		c.uvarint(uint64(id))
		c.byte(uint8(d.policy))
		c.uvarint(uint64(len(d.parents)))
		for _, p := range d.parents {
			c.uvarint(uint64(p.id))
			c.byte(p.outcome)
			c.byte(uint8(p.cause))
		}
	}
}

func (d *decoder) decodeDepsSection(e *Engine) error {
	n := d.count(1 << 40)
	e.deps = make(map[JobID]*jobDeps, n)
	var last JobID
	for i := 0; i < n && d.err == nil; i++ {
		id := JobID(d.uvarint())
		policy := ParentFailure(d.byte())
		np := d.count(MaxParents)
		if d.err != nil {
			break
		}
		if id <= last {
			return fmt.Errorf("dependencies section: job %d out of order", id)
		}
		last = id
		if policy > maxParentFailure {
			return fmt.Errorf("dependencies section: job %d: policy %d", id, policy)
		}
		j := e.jobForRead(id) // a released child may be held compact
		if j == nil {
			return fmt.Errorf("dependencies section: job %d, which the snapshot does not hold live", id)
		}
		dep := &jobDeps{policy: policy, parents: make([]parentLink, 0, np)}
		for k := 0; k < np && d.err == nil; k++ {
			p := parentLink{id: JobID(d.uvarint()), outcome: d.byte(), cause: Cause(d.byte())}
			if p.outcome > maxParentOutcome || p.id >= id || (p.outcome == parentDead) != (p.cause != CauseUnknown) || p.cause > maxCause {
				return fmt.Errorf("dependencies section: job %d: parent %d outcome %d cause %d", id, p.id, p.outcome, p.cause)
			}
			if p.outcome == parentPending {
				dep.pending++
				e.children[p.id] = append(e.children[p.id], id)
			}
			dep.parents = append(dep.parents, p)
		}
		if (dep.pending > 0) != (j.state == StateBlocked) {
			return fmt.Errorf("dependencies section: job %d is %v with %d parents pending", id, j.state, dep.pending)
		}
		e.deps[id] = dep
	}
	if d.err != nil {
		return d.err
	}
	if len(e.deps) == 0 && d.version == snapshotVersionDependencies {
		return fmt.Errorf("dependencies section: layout %d written without dependencies", snapshotVersionDependencies)
	}
	return nil
}

// checkDeps checks the dependency records against the jobs
// (CheckInvariants): a Blocked job has a record with a pending parent;
// every pending parent is live and lists the child once; every children
// list is made of such links, in id order.
func (e *Engine) checkDeps() error {
	links := 0
	for id, d := range e.deps { // any record breaking it fails: order does not matter
		j := e.jobs.get(id)
		if j == nil && e.jobForRead(id) == nil {
			return fmt.Errorf("job %d has a dependency record but is not live", id)
		}
		pending := 0
		for _, p := range d.parents {
			if p.outcome != parentPending {
				continue
			}
			pending++
			links++
			if e.jobForRead(p.id) == nil {
				return fmt.Errorf("job %d waits on job %d, which is not live", id, p.id)
			}
			if !slices.Contains(e.children[p.id], id) {
				return fmt.Errorf("job %d waits on job %d, which does not list it", id, p.id)
			}
		}
		if pending != d.pending {
			return fmt.Errorf("job %d: %d parents pending, counted %d", id, pending, d.pending)
		}
		if blocked := j != nil && j.state == StateBlocked; blocked != (pending > 0) {
			return fmt.Errorf("job %d: blocked %v with %d parents pending", id, blocked, pending)
		}
	}
	n := 0
	for parent, kids := range e.children {
		if len(kids) == 0 || !slices.IsSorted(kids) {
			return fmt.Errorf("job %d: children list %v empty or out of order", parent, kids)
		}
		n += len(kids)
	}
	if n != links {
		return fmt.Errorf("children lists hold %d links, the records %d", n, links)
	}
	blocked := 0
	for _, q := range e.queues {
		blocked += q.nBlocked
	}
	nb := 0
	e.jobs.each(func(j *job) bool {
		if j.state == StateBlocked {
			nb++
		}
		return true
	})
	if nb != blocked {
		return fmt.Errorf("%d jobs are blocked, counted %d", nb, blocked)
	}
	return nil
}
