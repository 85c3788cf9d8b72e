package engine

import (
	"container/heap"
	"slices"
)

// job is the engine's record of a live or retained-dead job. It is kept lean
// (a million waiting jobs must fit in a few hundred MB): times are unix
// nanoseconds, rarely used fields live in ext, allocated on first use, and the
// worker id of a reserved job lives in Engine.workers.
type job struct {
	id         JobID
	q          *queue
	enqueuedAt int64
	// due is the run time while Scheduled and the lease deadline while
	// Reserved; zero otherwise.
	due         int64
	ext         *jobExt
	heapIdx     int32  // position in the one heap holding the job, or -1
	attempt     uint32 // deliveries burned so far (the current one while Reserved)
	maxAttempts uint32
	// payloadLen is the payload's length; the payload itself is kept by
	// the engine's PayloadStore under the job's id (payloads.go), off the
	// job so that a backlog's bodies need not live in the Go heap.
	payloadLen uint32
	// typ is the job type's index in q.types, or typeInExt when the queue
	// interns no more types (its ext.jobType holds it): two bytes rather
	// than an 8-byte pointer, which with the lease token kept beside the
	// lease heap (leaseOf) puts the struct in the 64-byte size class.
	typ      uint16
	priority uint8
	state    State
	flags    uint8
	// No field of its count of held bytes: it would take the struct out
	// of the 64-byte size class. jobCharge recomputes it from the
	// content, which changes only where the count follows.
}

// typeInExt is job.typ of a job whose type its queue does not intern.
const typeInExt = 1<<16 - 1

// jobType is j's job type.
func (j *job) jobType() string {
	if j.typ == typeInExt {
		return j.ext.jobType
	}
	return j.q.types[j.typ]
}

// setJobType files s as j's type (j.q must be set): interned in j.q when
// it can be, else in j's extension.
func (j *job) setJobType(s string) {
	if i, ok := j.q.internJobType(s); ok {
		j.typ = i
		return
	}
	j.typ = typeInExt
	j.extension().jobType = string([]byte(s)) // own a copy
}

// setJobTypeBytes is setJobType of a decoder's view: the lookup of a
// known type does not allocate.
func (j *job) setJobTypeBytes(b []byte) {
	if i, ok := j.q.jobTypes[string(b)]; ok {
		j.typ = i
		return
	}
	j.setJobType(string(b))
}

const (
	// flagInRing marks a Ready job held in its level's FIFO ring; a ring slot
	// whose job lacks the flag is a tombstone.
	flagInRing uint8 = 1 << iota
	// flagRetryWait marks a Scheduled job waiting for a retry (its due time
	// is NextAttemptAt, not a producer's scheduled_at).
	flagRetryWait
	// flagParked marks a Ready job set aside in its queue's key index
	// while its concurrency key is full (reserve_limits.go); it is on no
	// priority level meanwhile.
	flagParked
)

// jobExt holds what most jobs never need.
type jobExt struct {
	// jobType is the job's type when its queue interns no more types
	// (job.typ is typeInExt); "" otherwise. Not charged here: jobCharge
	// charges the type's length whatever holds it.
	jobType     string
	custom      map[string]string
	scheduledAt int64 // the producer's scheduled_at when the job was held back
	lastReason  string
	history     []attemptRecord
	// uniqueKey is the unique key the job holds (unique.go), with the
	// states beyond live that hold it.
	uniqueKey     string
	uniqueDead    bool
	expPos        int32 // position+1 in Engine.expiry; 0: not in it (expiry.go)
	uniqueDoneFor int64
	// origin is where a job forwarded to a dead_letter_queue came from
	// (attempts.go); nil for every other job.
	origin *jobOrigin

	// expiresAt is the deadline by which the job must be reserved; 0: none
	// (expiry.go).
	expiresAt int64

	// trace is the producer's trace context (trace.go); nil for a job
	// enqueued without one.
	trace *TraceContext
}

type attemptRecord struct {
	attempt uint32
	outcome uint8
	at      int64
	worker  string
	reason  string
	// The detail recorded once the cluster runs recordFields (attempts.go,
	// snapshot layout 11): when the delivery started (0: unknown), its
	// lease token (0: not recorded) and, for a nack, its directive plus one
	// (0: none).
	startedAt int64
	lease     LeaseToken
	directive uint8
}

// Attempt outcomes as recorded in history.
const (
	outcomeNack uint8 = iota + 1
	outcomeLeaseExpired
	outcomeReleased
	outcomeCancelled // an operator cancelled the attempt (snapshot layout 8)
)

var outcomeNames = [...]string{outcomeNack: "nack", outcomeLeaseExpired: "lease_expired", outcomeReleased: "released", outcomeCancelled: "cancelled"}

func (j *job) extension() *jobExt {
	if j.ext == nil {
		j.ext = &jobExt{}
	}
	return j.ext
}

// queue is one named queue.
type queue struct {
	name       string
	configured bool
	paused     bool
	set        settings
	ready      [MaxPriority + 1]readyLevel

	nReady, nScheduled, nReserved int
	// nBlocked counts the queue's jobs waiting for their parents
	// (dependencies.go).
	nBlocked int

	// held is the bytes this queue's jobs, records, keys and worker ids
	// are counted to hold (memory.go).
	held int64

	// rateTAT is the rate limit's token bucket: the theoretical arrival
	// time of the next token (reserve_limits.go). Part of the state; 0
	// while the queue has no rate limit.
	rateTAT int64
	// keys indexes the reserved and parked jobs per concurrency key value
	// while the queue sets max_per_key; nil otherwise. Derived.
	keys *keyLimits

	// completed is the queue's completed jobs kept for its
	// completed_retention, in completion order (completed.go).
	completed completedFIFO

	// Retained dead-letter records of this queue, in failed_at order.
	deadHead, deadTail *deadRecord
	nDead              int

	enqueued, acked uint64
	deadLettered    [maxCause + 1]uint64
	dropped         uint64
	deadRequeued    uint64
	deadDrained     uint64
	deadDeleted     uint64
	deadExpired     uint64
	// purged counts live jobs an operator removed before they ran
	// (PurgeQueue).
	purged uint64
	// act counts deliveries, nacks, releases and expiries since this engine
	// created the queue or restored it. Not part of the state (activity.go).
	act QueueActivity

	// types interns job type strings so a million jobs of one type share
	// one string, named by a 2-byte index (job.typ); jobTypes finds a
	// type's index. Not part of the state: the indexes depend on the order
	// in which this engine met the types.
	types    []string
	jobTypes map[string]uint16
	// nameHash is the name's hash for the idempotency key index (0 until
	// first needed). Not part of the state.
	nameHash uint64
	// keysNumber is the queue's number in the idempotency key index
	// (idemKeys.queues), 1-based; 0, or a number the index gives another
	// queue, until the queue's first key is remembered.
	keysNumber uint32
}

const maxInternedJobTypes = 1024

// internJobType returns s's index in q.types, adding it while the queue
// interns fewer than maxInternedJobTypes; ok is false once it is full.
func (q *queue) internJobType(s string) (i uint16, ok bool) {
	if v, ok := q.jobTypes[s]; ok {
		return v, true
	}
	if len(q.types) >= maxInternedJobTypes {
		return 0, false
	}
	if q.jobTypes == nil {
		q.jobTypes = make(map[string]uint16)
	}
	own := string([]byte(s)) // own a copy, not a slice of someone's buffer
	i = uint16(len(q.types))
	q.types = append(q.types, own)
	q.jobTypes[own] = i
	return i, true
}

func (q *queue) live() int { return q.nReady + q.nScheduled + q.nReserved + q.nBlocked }

// readyLevel holds one priority level's Ready jobs in original enqueue order
// (job id order). Fresh jobs always carry the largest id so far and are
// appended to a FIFO ring in O(1); a job returning to Ready (promoted,
// retried, released, requeued) goes back to the ring when its id is above the
// ring's last, else into a min-heap by id. The next job is the smaller of the
// ring's front and the heap's top.
//
// When its queue sets a fairness key, the level's jobs sit instead in one
// such line per key value, taking turns (fair, fairness.go).
type readyLevel struct {
	ring    deque[*job]
	live    int // live jobs in ring
	returns jobHeap
	fair    *fairLevel
	// compact holds the level's compact jobs (compact.go) in id order,
	// nCompact of its entries live; only on a level without fairness.
	compact  chunkFIFO[readyEntry]
	nCompact int
}

func (r *readyLevel) len() int {
	if r.fair != nil {
		return r.fair.n
	}
	return r.live + r.returns.Len() + r.nCompact
}

func (r *readyLevel) push(j *job) {
	if r.fair != nil {
		r.fair.push(j)
		return
	}
	j.state = StateReady
	j.due = 0
	if n := r.ring.Len(); n == 0 || r.ring.At(n-1).id < j.id {
		j.flags |= flagInRing
		j.heapIdx = -1
		r.ring.PushBack(j)
		r.live++
		return
	}
	heap.Push(&r.returns, j)
}

// dropTombstones removes dead slots at the ring's front.
func (r *readyLevel) dropTombstones() {
	for r.ring.Len() > 0 && r.ring.Front().flags&flagInRing == 0 {
		r.ring.PopFront()
	}
}

// peek returns the next job without changing anything (read methods use it).
func (r *readyLevel) peek() *job {
	if r.fair != nil {
		return r.fair.peek()
	}
	var front *job
	for i := 0; i < r.ring.Len(); i++ {
		if j := r.ring.At(i); j.flags&flagInRing != 0 {
			front = j
			break
		}
	}
	if r.returns.Len() > 0 {
		if top := r.returns.items[0]; front == nil || top.id < front.id {
			return top
		}
	}
	return front
}

// pop removes and returns the next job, or nil.
func (r *readyLevel) pop() *job {
	if r.fair != nil {
		return r.fair.pop()
	}
	r.dropTombstones()
	var front *job
	if r.ring.Len() > 0 {
		front = r.ring.Front()
	}
	if r.returns.Len() > 0 && (front == nil || r.returns.items[0].id < front.id) {
		return heap.Pop(&r.returns).(*job)
	}
	if front == nil {
		return nil
	}
	r.ring.PopFront()
	front.flags &^= flagInRing
	r.live--
	return front
}

// remove takes j out of the level wherever it is.
func (r *readyLevel) remove(j *job) {
	if r.fair != nil {
		r.fair.remove(j)
		return
	}
	if j.flags&flagInRing != 0 {
		j.flags &^= flagInRing // leaves a tombstone, dropped when it reaches the front
		r.live--
		// The slot gets a tombstone of its own: j may take the flag again
		// in another level's ring (a priority change), which must not
		// bring this slot back to life as a second place of j. The ring's
		// ids increase, so the slot is found by binary search.
		lo, hi := 0, r.ring.Len()
		for lo < hi {
			mid := int(uint(lo+hi) >> 1)
			if r.ring.At(mid).id < j.id {
				lo = mid + 1
			} else {
				hi = mid
			}
		}
		if lo < r.ring.Len() && r.ring.At(lo) == j {
			r.ring.Set(lo, &job{id: j.id, heapIdx: -1})
		}
		r.dropTombstones()
		return
	}
	heap.Remove(&r.returns, int(j.heapIdx))
}

// deque is a FIFO ring buffer with random access.
type deque[T any] struct {
	buf  []T // len is zero or a power of two
	head int
	n    int
}

func (d *deque[T]) Len() int { return d.n }

func (d *deque[T]) At(i int) T { return d.buf[(d.head+i)&(len(d.buf)-1)] }

func (d *deque[T]) Front() T { return d.buf[d.head] }

func (d *deque[T]) Set(i int, v T) { d.buf[(d.head+i)&(len(d.buf)-1)] = v }

func (d *deque[T]) PushBack(v T) {
	if d.n == len(d.buf) {
		d.resize(max(16, 2*len(d.buf)))
	}
	d.buf[(d.head+d.n)&(len(d.buf)-1)] = v
	d.n++
}

// PopBack removes the last element (no shrink: the next push refills it).
func (d *deque[T]) PopBack() T {
	var zero T
	i := (d.head + d.n - 1) & (len(d.buf) - 1)
	v := d.buf[i]
	d.buf[i] = zero
	d.n--
	return v
}

func (d *deque[T]) PopFront() T {
	var zero T
	v := d.buf[d.head]
	d.buf[d.head] = zero
	d.head = (d.head + 1) & (len(d.buf) - 1)
	d.n--
	if len(d.buf) > 64 && d.n < len(d.buf)/4 {
		d.resize(len(d.buf) / 2)
	}
	return v
}

func (d *deque[T]) resize(size int) {
	buf := make([]T, size)
	for i := 0; i < d.n; i++ {
		buf[i] = d.At(i)
	}
	d.buf, d.head = buf, 0
}

// jobHeap is a min-heap of jobs with each job's index kept in job.heapIdx, so
// a job can be removed or re-keyed in O(log n). byID orders by id alone (the
// Ready returns); otherwise by (due, id) (the scheduled set, the leases).
//
// The leases heap (withTokens) keeps each Reserved job's lease token in
// tokens, beside its item: only a Reserved job has one, and a job is
// Reserved exactly while it is in this heap, so the token costs 8 bytes per
// lease here instead of 8 bytes in every job's struct (which took the
// struct out of the 64-byte size class). Engine.leaseOf reads it.
type jobHeap struct {
	items      []*job
	tokens     []LeaseToken // withTokens only: tokens[i] is items[i]'s lease
	byID       bool
	withTokens bool
}

func (h *jobHeap) Len() int { return len(h.items) }

func (h *jobHeap) Less(a, b int) bool {
	x, y := h.items[a], h.items[b]
	if !h.byID && x.due != y.due {
		return x.due < y.due
	}
	return x.id < y.id
}

func (h *jobHeap) Swap(a, b int) {
	h.items[a], h.items[b] = h.items[b], h.items[a]
	if h.withTokens {
		h.tokens[a], h.tokens[b] = h.tokens[b], h.tokens[a]
	}
	h.items[a].heapIdx = int32(a)
	h.items[b].heapIdx = int32(b)
}

func (h *jobHeap) Push(x any) {
	j := x.(*job)
	j.heapIdx = int32(len(h.items))
	h.items = append(h.items, j)
	if h.withTokens {
		h.tokens = append(h.tokens, 0) // the caller sets it (Engine.deliver)
	}
}

func (h *jobHeap) Pop() any {
	n := len(h.items) - 1
	j := h.items[n]
	h.items[n] = nil
	h.items = h.items[:n]
	j.heapIdx = -1
	if h.withTokens {
		h.tokens = h.tokens[:n]
	}
	if cap(h.items) > 1024 && len(h.items) < cap(h.items)/4 {
		h.items = append([]*job(nil), h.items...)
		if h.withTokens {
			h.tokens = append([]LeaseToken(nil), h.tokens...)
		}
	}
	return j
}

func (h *jobHeap) top() *job {
	if len(h.items) == 0 {
		return nil
	}
	return h.items[0]
}

// deadRecord is a retained dead job. Records sit on two doubly linked lists in
// failed_at order (all queues, and the job's queue) and in a heap by expiry.
type deadRecord struct {
	j            *job
	cause        Cause
	failedAt     int64
	expiresAt    int64
	finalAttempt uint32
	expIdx       int

	prev, next   *deadRecord // all queues
	qprev, qnext *deadRecord // this queue
}

type deadExpiryHeap []*deadRecord

func (h deadExpiryHeap) Len() int { return len(h) }
func (h deadExpiryHeap) Less(a, b int) bool {
	if h[a].expiresAt != h[b].expiresAt {
		return h[a].expiresAt < h[b].expiresAt
	}
	return h[a].j.id < h[b].j.id
}
func (h deadExpiryHeap) Swap(a, b int) {
	h[a], h[b] = h[b], h[a]
	h[a].expIdx, h[b].expIdx = a, b
}
func (h *deadExpiryHeap) Push(x any) {
	r := x.(*deadRecord)
	r.expIdx = len(*h)
	*h = append(*h, r)
}
func (h *deadExpiryHeap) Pop() any {
	old := *h
	r := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	r.expIdx = -1
	return r
}

// reservation remembers a reserve's request id and what it handed out, so a
// retried reserve returns the same deliveries while their leases are live.
//
// A reservation made with ReserveParams.RetryWindow ends with the pair
// (0, retryWindowMark) (no job has id 0), is remembered until its leases'
// deadline plus the idempotency window, and its slots record what became
// of a delivery whose lease expired unseen: its token is replaced by
// expiredSlot|attempt (lease.go). The mark and the slots are plain ids and
// tokens, so the snapshot layout is unchanged.
type reservation struct {
	requestID string
	expiresAt int64 // the lease deadline granted by that reserve
	ids       []JobID
	tokens    []LeaseToken
	idx       int
}

// retryWindowMark is the token of a RetryWindow reservation's last pair;
// expiredSlot flags a slot whose lease expired unseen, the low bits holding
// the attempt it expired on.
const (
	retryWindowMark LeaseToken = 1<<64 - 1
	expiredSlot     LeaseToken = 1 << 63
)

// retryWindow reports whether r was made with ReserveParams.RetryWindow.
func (r *reservation) retryWindow() bool {
	n := len(r.ids)
	return n > 0 && r.ids[n-1] == 0 && r.tokens[n-1] == retryWindowMark
}

// liveToken reports whether a slot's token is a lease handed out (not the
// mark, not an expired slot).
func liveToken(t LeaseToken) bool { return t != 0 && t&expiredSlot == 0 }

type reservationHeap []*reservation

func (h reservationHeap) Len() int { return len(h) }
func (h reservationHeap) Less(a, b int) bool {
	if h[a].expiresAt != h[b].expiresAt {
		return h[a].expiresAt < h[b].expiresAt
	}
	return h[a].requestID < h[b].requestID
}
func (h reservationHeap) Swap(a, b int) {
	h[a], h[b] = h[b], h[a]
	h[a].idx, h[b].idx = a, b
}
func (h *reservationHeap) Push(x any) {
	r := x.(*reservation)
	r.idx = len(*h)
	*h = append(*h, r)
}
func (h *reservationHeap) Pop() any {
	old := *h
	r := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	r.idx = -1
	return r
}

// jobIndex finds a live job by id. Ids come from a counter and jobs mostly
// leave in roughly the order they came, so instead of one big hash map the
// index keeps fixed pages of slots indexed by id, found through a small map of
// page numbers: a lookup is a hit in that map (a few thousand entries per
// million jobs, so it stays in cache) and an array read next to the last one,
// a slot costs 8 bytes, and walking the pages in order yields jobs in id
// order. A page is freed once its last job leaves; one long-lived job keeps
// its page (4 KiB) alive.
type jobIndex struct {
	pages map[uint64]*idPage
	n     int
	// spare is the last page freed (all nil), kept for the next page
	// needed: with compact jobs (compact.go) outside the index, a page may
	// hold a single reserved job at a time, and reserve and ack would
	// otherwise allocate and free a 4 KiB page each.
	spare *idPage
}

const (
	idPageBits = 9
	idPageSize = 1 << idPageBits
)

type idPage struct {
	slots [idPageSize]*job
	n     int
}

func (x *jobIndex) len() int { return x.n }

func (x *jobIndex) get(id JobID) *job {
	if page := x.pages[uint64(id)>>idPageBits]; page != nil {
		return page.slots[uint64(id)&(idPageSize-1)]
	}
	return nil
}

// set files j under its id; the slot must be empty.
func (x *jobIndex) set(j *job) {
	pn := uint64(j.id) >> idPageBits
	page := x.pages[pn]
	if page == nil {
		if x.pages == nil {
			x.pages = make(map[uint64]*idPage)
		}
		page = x.spare
		x.spare = nil
		if page == nil {
			page = &idPage{}
		}
		x.pages[pn] = page
	}
	page.slots[uint64(j.id)&(idPageSize-1)] = j
	page.n++
	x.n++
}

func (x *jobIndex) del(id JobID) {
	pn := uint64(id) >> idPageBits
	page := x.pages[pn]
	page.slots[uint64(id)&(idPageSize-1)] = nil
	page.n--
	x.n--
	if page.n == 0 {
		delete(x.pages, pn)
		x.spare = page // every slot is nil again
	}
}

// each calls fn for every job in id order until fn returns false.
func (x *jobIndex) each(fn func(*job) bool) {
	pns := make([]uint64, 0, len(x.pages))
	for pn := range x.pages {
		pns = append(pns, pn)
	}
	slices.Sort(pns)
	for _, pn := range pns {
		for _, j := range x.pages[pn].slots {
			if j != nil && !fn(j) {
				return
			}
		}
	}
}
