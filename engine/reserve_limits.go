package engine

import (
	"container/heap"
	"fmt"
	"slices"
	"time"
)

// Reserve limits of a queue ([[queues]] max_reserved, rate_limit,
// rate_period_ms, rate_burst, concurrency_key, max_per_key):
//
//   - max_reserved caps the queue's jobs reserved at once across all
//     workers: a reserve hands out at most max_reserved - reserved jobs.
//   - rate_limit reservations per rate_period, up to rate_burst at once,
//     is a token bucket kept as a theoretical arrival time (GCRA) on the
//     leader's now that the command carries: integer arithmetic on the
//     replicated clock, so every replica grants alike.
//   - max_per_key caps the reserved jobs carrying the same value of the
//     custom field concurrency_key (jobs without the field are not
//     limited by it). A Ready job whose key is full is parked aside, off
//     its priority level, and goes back to its place (by id) when a job of
//     its key leaves Reserved: each job is parked at most once per
//     blocking, so reserve stays O(log n) amortised however many jobs of a
//     busy key wait. Parked jobs are Ready jobs; the parking is an index,
//     not state (a restored engine parks them again as it meets them).
//
// The order among the jobs a reserve may take is unchanged: priority, then
// id; a limit only stops the walk or skips a key that is full.

// Bounds of the reserve limits, so the token arithmetic cannot overflow
// (rate_burst times the per-token interval stays below an hour times a
// million).
const (
	maxReserveLimit = 1_000_000
	minRatePeriod   = time.Millisecond
	maxRatePeriod   = time.Hour
)

// reserveLimits are a queue's resolved reserve limits; zero fields set none.
type reserveLimits struct {
	maxReserved  int
	rateInterval int64 // nanoseconds one token takes to refill; 0: no rate limit
	rateBurst    int
	keyField     string
	maxPerKey    int // 0: no concurrency key limit
}

func (l reserveLimits) set() bool {
	return l.maxReserved > 0 || l.rateInterval > 0 || l.maxPerKey > 0
}

func resolveReserveLimits(q *QueueConfig) reserveLimits {
	l := reserveLimits{maxReserved: q.MaxReserved, keyField: q.ConcurrencyKey, maxPerKey: q.MaxPerKey}
	if q.RateLimit > 0 {
		period := q.RatePeriod
		if period == 0 {
			period = time.Second
		}
		l.rateInterval = max(int64(period)/int64(q.RateLimit), 1)
		l.rateBurst = q.RateBurst
		if l.rateBurst == 0 {
			l.rateBurst = q.RateLimit
		}
	}
	if l.maxPerKey == 0 {
		l.keyField = ""
	}
	return l
}

// HasReserveLimits reports whether cfg sets a reserve limit on any queue
// (which a replica must apply alike: see fsm CommandVersionReserveLimits).
func HasReserveLimits(cfg Config) bool {
	for i := range cfg.Queues {
		if resolveReserveLimits(&cfg.Queues[i]).set() || cfg.Queues[i].ConcurrencyKey != "" {
			return true
		}
	}
	return false
}

// StripReserveLimits returns cfg without any queue's reserve limits (for a
// cluster with a member that does not apply them).
func StripReserveLimits(cfg Config) Config {
	out := cloneConfig(cfg)
	for i := range out.Queues {
		q := &out.Queues[i]
		q.MaxReserved, q.RateLimit, q.RatePeriod, q.RateBurst, q.ConcurrencyKey, q.MaxPerKey = 0, 0, 0, 0, "", 0
	}
	return out
}

func validateReserveLimits(q QueueConfig, key func(string) string) error {
	bounded := func(name string, v int) error {
		if v < 0 || v > maxReserveLimit {
			return invalid(key(name), "must be 0..%d (0 is none), got %d", maxReserveLimit, v)
		}
		return nil
	}
	if err := bounded("max_reserved", q.MaxReserved); err != nil {
		return err
	}
	if err := bounded("rate_limit", q.RateLimit); err != nil {
		return err
	}
	if err := bounded("rate_burst", q.RateBurst); err != nil {
		return err
	}
	if err := bounded("max_per_key", q.MaxPerKey); err != nil {
		return err
	}
	switch {
	case q.RatePeriod != 0 && (q.RatePeriod < minRatePeriod || q.RatePeriod > maxRatePeriod):
		return invalid(key("rate_period_ms"), "must be %s..%s (0 is 1s), got %s", minRatePeriod, maxRatePeriod, q.RatePeriod)
	case q.RateLimit == 0 && (q.RatePeriod != 0 || q.RateBurst != 0):
		return invalid(key("rate_limit"), "must be set when rate_period_ms or rate_burst is")
	case q.MaxPerKey > 0 && q.ConcurrencyKey == "":
		return invalid(key("concurrency_key"), "must name a custom field when max_per_key is set")
	case q.ConcurrencyKey != "" && q.MaxPerKey == 0:
		return invalid(key("max_per_key"), "must be at least 1 when concurrency_key is set")
	case len(q.ConcurrencyKey) > 256:
		return invalid(key("concurrency_key"), "is %d bytes, above the limit of 256", len(q.ConcurrencyKey))
	}
	return nil
}

// keyLimits is a queue's index for max_per_key: derived from the state
// (Restore and a config change rebuild it), never part of the snapshot.
type keyLimits struct {
	reserved map[string]int         // reserved jobs per key value
	parked   map[string]*parkedHeap // Ready jobs set aside while their key is full
	nParked  int
}

// jobKey returns the value of the queue's concurrency key on j.
func jobKey(j *job) (string, bool) {
	if j.ext == nil || j.ext.custom == nil {
		return "", false
	}
	v, ok := j.ext.custom[j.q.set.limits.keyField]
	return v, ok
}

// keyFull reports whether j's key has max_per_key jobs reserved.
func (k *keyLimits) keyFull(j *job) bool {
	v, ok := jobKey(j)
	return ok && k.reserved[v] >= j.q.set.limits.maxPerKey
}

// park sets aside j, just popped off its level, until its key frees.
func (k *keyLimits) park(j *job) {
	v, _ := jobKey(j)
	h := k.parked[v]
	if h == nil {
		h = &parkedHeap{}
		k.parked[v] = h
	}
	j.flags |= flagParked
	heap.Push(h, j)
	k.nParked++
}

// unpark takes a parked job out of its key's heap (not onto a level).
func (k *keyLimits) unpark(j *job) {
	v, _ := jobKey(j)
	h := k.parked[v]
	heap.Remove(h, int(j.heapIdx))
	if h.Len() == 0 {
		delete(k.parked, v)
	}
	j.flags &^= flagParked
	k.nParked--
}

// reserved counts a delivery of j against its key.
func (e *Engine) keyReserved(j *job) {
	if k := j.q.keys; k != nil {
		if v, ok := jobKey(j); ok {
			k.reserved[v]++
		}
	}
}

// keyUnreserved counts j leaving Reserved and, as that frees a place of its
// key, puts the key's first parked job (in reserve order) back in line.
func (e *Engine) keyUnreserved(j *job) {
	k := j.q.keys
	if k == nil {
		return
	}
	v, ok := jobKey(j)
	if !ok {
		return
	}
	if k.reserved[v]--; k.reserved[v] <= 0 {
		delete(k.reserved, v)
	}
	k.unparkFirst(j.q, v)
}

// keyLeftReady is called when a Ready job on its level leaves Ready other
// than by a reserve (an operator action): it may have been the job put back
// in line for a free place of its key, so the next parked one takes its turn.
// A job back in line that finds its key full again is parked again; one too
// many back in line costs a park, one too few would let a later job of the
// key overtake an earlier one.
func (k *keyLimits) keyLeftReady(j *job) {
	if v, ok := jobKey(j); ok {
		k.unparkFirst(j.q, v)
	}
}

// unparkFirst puts key v's first parked job back on its level while v has
// a free place.
func (k *keyLimits) unparkFirst(q *queue, v string) {
	if h := k.parked[v]; h != nil && k.reserved[v] < q.set.limits.maxPerKey {
		p := h.items[0]
		k.unpark(p)
		q.ready[p.priority].push(p)
	}
}

// parkedHeap holds one key's parked jobs in reserve order: highest priority
// first, then by id, so the job a free place goes to is the one a reserve
// would take first. Each job's index is kept in job.heapIdx.
type parkedHeap struct{ items []*job }

func (h *parkedHeap) Len() int { return len(h.items) }
func (h *parkedHeap) Less(a, b int) bool {
	x, y := h.items[a], h.items[b]
	if x.priority != y.priority {
		return x.priority > y.priority
	}
	return x.id < y.id
}
func (h *parkedHeap) Swap(a, b int) {
	h.items[a], h.items[b] = h.items[b], h.items[a]
	h.items[a].heapIdx = int32(a)
	h.items[b].heapIdx = int32(b)
}
func (h *parkedHeap) Push(x any) {
	j := x.(*job)
	j.heapIdx = int32(len(h.items))
	h.items = append(h.items, j)
}
func (h *parkedHeap) Pop() any {
	n := len(h.items) - 1
	j := h.items[n]
	h.items[n] = nil
	h.items = h.items[:n]
	j.heapIdx = -1
	return j
}

// rebuildKeyLimits makes q's key index match its settings and the state:
// every parked job back in its place, the reserved jobs counted again.
// O(jobs of the queue); it runs on a config change of the queue's limits and
// on Restore, never on the hot path.
func (e *Engine) rebuildKeyLimits(q *queue) {
	if q.keys != nil && q.keys.nParked > 0 {
		var parked []*job
		for _, h := range q.keys.parked { // collected, then sorted: order does not matter
			parked = append(parked, h.items...)
		}
		slices.SortFunc(parked, func(a, b *job) int { return cmpID(a.id, b.id) })
		for _, j := range parked {
			j.flags &^= flagParked
			j.heapIdx = -1
			q.ready[j.priority].push(j)
		}
	}
	q.keys = nil
	if q.set.limits.maxPerKey == 0 {
		return
	}
	q.keys = &keyLimits{reserved: map[string]int{}, parked: map[string]*parkedHeap{}}
	for _, j := range e.leases.items {
		if j.q == q {
			e.keyReserved(j)
		}
	}
}

// rateTokens is how many tokens q's bucket holds at t.
func rateTokens(q *queue, t int64) int {
	l := q.set.limits
	if l.rateInterval == 0 {
		return maxReserveLimit
	}
	if q.rateTAT <= t {
		return l.rateBurst
	}
	room := addSat(t, int64(l.rateBurst)*l.rateInterval) - q.rateTAT
	if room <= 0 {
		return 0
	}
	return int(min(room/l.rateInterval, int64(l.rateBurst)))
}

// takeTokens spends n tokens of q's bucket at t.
func takeTokens(q *queue, n int, t int64) {
	if l := q.set.limits; l.rateInterval > 0 && n > 0 {
		q.rateTAT = addSat(max(q.rateTAT, t), int64(n)*l.rateInterval)
	}
}

// nextTokenAt is when q's empty bucket holds a token again.
func nextTokenAt(q *queue) int64 {
	l := q.set.limits
	return q.rateTAT - int64(l.rateBurst-1)*l.rateInterval
}

// reserveAllowance is how many jobs q's limits let a reserve take at t, at
// most n.
func reserveAllowance(q *queue, n int, t int64) int {
	l := q.set.limits
	if l.maxReserved > 0 {
		n = min(n, max(l.maxReserved-q.nReserved, 0))
	}
	if l.rateInterval > 0 {
		n = min(n, rateTokens(q, t))
	}
	return n
}

// limitsWakeAt is the earliest time after the engine's clock at which a
// rate-limited queue with Ready jobs gets a token back: a tick then wakes
// the reserves waiting on it. ok is false when no queue waits on its rate.
func (e *Engine) limitsWakeAt() (at int64, ok bool) {
	for _, q := range e.rateLimited {
		if q.paused || q.nReady-q.parkedCount() == 0 || rateTokens(q, e.now) > 0 {
			continue
		}
		if l := q.set.limits; l.maxReserved > 0 && q.nReserved >= l.maxReserved {
			continue // an ack, not time, frees it
		}
		if t := nextTokenAt(q); t > e.now && (!ok || t < at) {
			at, ok = t, true
		}
	}
	return at, ok
}

func (q *queue) parkedCount() int {
	if q.keys == nil {
		return 0
	}
	return q.keys.nParked
}

// ReserveLimits are a queue's effective reserve limits and their use, for
// GetServerInfo, the admin UI and metrics.
type ReserveLimits struct {
	MaxReserved    int
	RateLimit      int           // reservations per RatePeriod; 0: none
	RatePeriod     time.Duration // 1s unless configured
	RateBurst      int
	RateTokens     int // tokens the bucket holds now (RateBurst when idle)
	ConcurrencyKey string
	MaxPerKey      int
	// KeysAtLimit counts key values with MaxPerKey jobs reserved; Parked
	// the Ready jobs set aside until their key frees.
	KeysAtLimit int
	Parked      int
}

// reserveLimitsView describes q's limits at t.
func reserveLimitsView(q *queue, qc *QueueConfig, t int64) ReserveLimits {
	l := q.set.limits
	if !l.set() {
		return ReserveLimits{}
	}
	v := ReserveLimits{MaxReserved: l.maxReserved, ConcurrencyKey: l.keyField, MaxPerKey: l.maxPerKey}
	if l.rateInterval > 0 && qc != nil {
		v.RateLimit, v.RatePeriod, v.RateBurst = qc.RateLimit, qc.RatePeriod, l.rateBurst
		if v.RatePeriod == 0 {
			v.RatePeriod = time.Second
		}
		v.RateTokens = rateTokens(q, t)
	}
	if q.keys != nil {
		v.Parked = q.keys.nParked
		for _, n := range q.keys.reserved { // a count: order does not matter
			if n >= l.maxPerKey {
				v.KeysAtLimit++
			}
		}
	}
	return v
}

// checkKeyLimits verifies q's key index (CheckInvariants): the counts match
// the leases, no key holds more than max_per_key, and every parked job is a
// marked Ready job of its key.
func (e *Engine) checkKeyLimits(q *queue, mark func(*job, uint8)) (parkedReady int, err error) {
	k := q.keys
	if (k != nil) != (q.set.limits.maxPerKey > 0) {
		return 0, fmt.Errorf("queue %q: key index present %v, max_per_key %d", q.name, k != nil, q.set.limits.maxPerKey)
	}
	if k == nil {
		return 0, nil
	}
	want := map[string]int{}
	for _, j := range e.leases.items {
		if j.q == q {
			if v, ok := jobKey(j); ok {
				want[v]++
			}
		}
	}
	if len(want) != len(k.reserved) {
		return 0, fmt.Errorf("queue %q: %d keys reserved, counted %d", q.name, len(want), len(k.reserved))
	}
	for v, n := range want {
		if k.reserved[v] != n {
			return 0, fmt.Errorf("queue %q key %q: %d reserved, counted %d", q.name, v, n, k.reserved[v])
		}
	}
	n := 0
	for v, h := range k.parked {
		for i, j := range h.items {
			if int(j.heapIdx) != i || (i > 0 && h.Less(i, (i-1)/2)) {
				return 0, fmt.Errorf("queue %q key %q parked: heap broken at job %d", q.name, v, j.id)
			}
		}
		if h.Len() == 0 {
			return 0, fmt.Errorf("queue %q key %q: empty parked heap kept", q.name, v)
		}
		for _, j := range h.items {
			mark(j, whereParked)
			if kv, ok := jobKey(j); j.state != StateReady || j.q != q || j.flags&flagParked == 0 || !ok || kv != v {
				return 0, fmt.Errorf("job %d: parked under key %q of queue %q but is %v", j.id, v, q.name, j.state)
			}
			n++
		}
	}
	if n != k.nParked {
		return 0, fmt.Errorf("queue %q: %d parked jobs, counted %d", q.name, n, k.nParked)
	}
	return n, nil
}

// queueConfig returns the configuration of a configured queue, or nil.
func (e *Engine) queueConfig(name string) *QueueConfig {
	for i := range e.cfg.Queues {
		if e.cfg.Queues[i].Name == name {
			return &e.cfg.Queues[i]
		}
	}
	return nil
}
