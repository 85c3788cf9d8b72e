package engine

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"slices"
	"time"
)

// Queues as managed objects: an operator creates, updates, deletes and
// purges queues while the cluster runs, and the configuration lives in the
// replicated state (Config.Queues) and its snapshots, so every replica
// agrees and a restart keeps it.
//
// The [[queues]] of a node's file are a declarative starting set that meets
// runtime changes by one rule (ApplyDeclared): each distinct definition of a
// queue is applied once, the first time the cluster sees it. The engine
// remembers a fingerprint of every definition it applied, per queue, so
//   - a runtime update of a declared queue survives restarts and leader
//     changes until someone edits that queue's entry in the file;
//   - a queue deleted at runtime stays deleted until its entry changes;
//   - two nodes whose files differ flip a queue at most once each, never at
//     every leader change (each definition is applied once only).
//
// This is the RabbitMQ definitions rule (imported definitions are applied,
// runtime state then rules) made safe for a cluster whose members' files
// may differ; JetStream's stream configs are edited the same way, through
// the API, with the file only seeding them.
//
// A queue's reserve limits follow the same rule once the cluster runs
// declaredLimits (ApplyDeclaredReserveLimits): a definition's fingerprint
// then covers them, so an entry whose only change is its reserve limits is
// applied like any edited entry. Before, the fingerprint left them out
// (they could not be set at runtime), and such an edit was never applied.

var (
	// ErrAlreadyExists: a create named a queue that is already configured.
	ErrAlreadyExists = errors.New("already exists")
	// ErrQueueNotEmpty: a delete without force named a queue that still
	// holds jobs or dead-letter records.
	ErrQueueNotEmpty = errors.New("queue not empty")
	// ErrQueueInUse: a delete named a queue another queue forwards its dead
	// jobs to.
	ErrQueueInUse = errors.New("queue in use")
)

// maxDeclarationsKept bounds the fingerprints kept per queue: a file whose
// entry for one queue went through more distinct versions than this may
// see an old version applied again.
const maxDeclarationsKept = 8

// QueueUpdate changes some settings of a queue; what it does not name
// stays as it is.
type QueueUpdate struct {
	Name string
	// Set: every non-nil override replaces the queue's own.
	Set QueueConfig
	// SetDeadLetterQueue makes Set.DeadLetterQueue replace the queue's
	// (empty: forward nowhere).
	SetDeadLetterQueue bool
	// Inherit lists overrides to drop, so the queue takes the global value
	// again, by their config keys (QueueSettingKeys). A reserve limit has
	// no global value: inheriting one drops it (none).
	Inherit []string
	// Paused, when set, pauses or resumes the queue.
	Paused *bool
	// KeepReserveLimits leaves the queue's reserve limits as they are,
	// whatever Set says of them, and refuses their keys in Inherit as
	// unknown: what every update did before fsm command version 15, whose
	// older entries the fsm applies with it.
	KeepReserveLimits bool
	// SetTags makes Set.Tags replace the queue's tags, the whole set (nil:
	// none). KeepTags leaves the tags as they are whatever SetTags says and
	// refuses "tags" in Inherit as unknown: what every update did before
	// fsm command version 18, whose older entries the fsm applies with it.
	SetTags  bool
	KeepTags bool
}

// QueueSettingKeys are the config keys of a queue's overrides, in the order
// of QueueConfig.
var QueueSettingKeys = []string{
	"default_priority", "default_max_attempts", "retry_delay_ms", "retry_backoff",
	"retry_delay_max_ms", "max_schedule_horizon_ms", "max_length", "max_memory_bytes",
	"dead_letter_queue", "max_reserved", "rate_limit", "rate_period_ms", "rate_burst",
	"concurrency_key", "max_per_key", "max_wait_ms", "fairness_key", "tags",
	"completed_retention_ms",
}

// ReserveLimitKeys are the config keys of a queue's reserve limits, in the
// order of QueueConfig: a QueueUpdate that sets one, or inherits one, needs
// fsm command version 15.
var ReserveLimitKeys = []string{"max_reserved", "rate_limit", "rate_period_ms", "rate_burst", "concurrency_key", "max_per_key"}

// legacyQueueSettingKeys are QueueSettingKeys without the reserve limits:
// the keys an update with KeepReserveLimits knows.
var legacyQueueSettingKeys = slices.DeleteFunc(slices.Clone(QueueSettingKeys), func(k string) bool {
	return k == "tags" || k == "completed_retention_ms" || slices.Contains(ReserveLimitKeys, k)
})

// untaggedQueueSettingKeys are QueueSettingKeys without "tags": the keys an
// update with KeepTags (before command version 18) knows.
var untaggedQueueSettingKeys = slices.DeleteFunc(slices.Clone(QueueSettingKeys), func(k string) bool { return k == "tags" || k == "completed_retention_ms" })

// TouchesTags reports whether u sets or inherits the queue's tags.
func (u QueueUpdate) TouchesTags() bool {
	return u.SetTags || slices.Contains(u.Inherit, "tags")
}

// TouchesReserveLimits reports whether u sets or inherits a reserve limit.
func (u QueueUpdate) TouchesReserveLimits() bool {
	s := u.Set
	if s.MaxReserved != 0 || s.RateLimit != 0 || s.RatePeriod != 0 || s.RateBurst != 0 || s.ConcurrencyKey != "" || s.MaxPerKey != 0 {
		return true
	}
	return slices.ContainsFunc(u.Inherit, func(k string) bool { return slices.Contains(ReserveLimitKeys, k) })
}

// QueueRemoval counts what a delete or purge removed.
type QueueRemoval struct {
	Jobs        int // live jobs (waiting, scheduled or, on a forced delete, reserved)
	DeadLetters int // retained dead-letter records
}

// PurgeTarget says what a purge removes.
type PurgeTarget uint8

// Purge targets.
const (
	PurgeUnknown     PurgeTarget = iota
	PurgeWaiting                 // Ready and Scheduled jobs (retries waiting included); reserved ones stay
	PurgeDeadLetters             // the queue's retained dead-letter records
)

// CreateQueue adds qc as a configured queue, paused when asked. A queue
// that exists only by first use (an enqueue, a forward) becomes configured
// and keeps its jobs; a configured one is ErrAlreadyExists.
func (e *Engine) CreateQueue(now time.Time, qc QueueConfig, paused bool) error {
	if err := checkQueueName("name", qc.Name); err != nil {
		return err
	}
	if e.configIndex(qc.Name) >= 0 {
		return &FieldError{Field: "name", Reason: fmt.Sprintf("queue %q already exists", qc.Name), Err: ErrAlreadyExists}
	}
	next := cloneConfig(e.cfg)
	next.Queues = append(next.Queues, cloneConfig(Config{Queues: []QueueConfig{qc}}).Queues[0])
	if err := next.Validate(); err != nil {
		return err
	}
	e.advance(now)
	if e.queues[qc.Name] == nil {
		e.createQueue(qc.Name)
	}
	e.applyConfig(next)
	e.queues[qc.Name].paused = paused
	return nil
}

// UpdateQueue changes a queue's settings. A queue that exists only by first
// use becomes configured; an unknown one is ErrNotFound. The queue's jobs
// keep what they were given at enqueue (priority, max attempts); retries,
// horizons and lengths follow the new settings from now on.
func (e *Engine) UpdateQueue(now time.Time, u QueueUpdate) error {
	if _, err := e.queueForRead("name", u.Name); err != nil {
		return err
	}
	next := cloneConfig(e.cfg)
	i := e.configIndex(u.Name)
	if i < 0 {
		next.Queues = append(next.Queues, QueueConfig{Name: u.Name})
		i = len(next.Queues) - 1
	}
	qc := &next.Queues[i]
	for _, k := range u.Inherit {
		if u.KeepReserveLimits && (k == "tags" || slices.Contains(ReserveLimitKeys, k)) {
			return invalid("inherit", "unknown setting %s; one of %v", quoteShort(k), legacyQueueSettingKeys)
		}
		if u.KeepTags && k == "tags" {
			return invalid("inherit", "unknown setting %s; one of %v", quoteShort(k), untaggedQueueSettingKeys)
		}
		switch k {
		case "default_priority":
			qc.DefaultPriority = nil
		case "default_max_attempts":
			qc.DefaultMaxAttempts = nil
		case "retry_delay_ms":
			qc.RetryDelay = nil
		case "retry_backoff":
			qc.RetryBackoff = nil
		case "retry_delay_max_ms":
			qc.RetryDelayMax = nil
		case "max_schedule_horizon_ms":
			qc.MaxScheduleHorizon = nil
		case "max_length":
			qc.MaxLength = nil
		case "max_memory_bytes":
			qc.MaxMemoryBytes = nil
		case "dead_letter_queue":
			qc.DeadLetterQueue = ""
		case "max_reserved":
			qc.MaxReserved = 0
		case "rate_limit":
			qc.RateLimit = 0
		case "rate_period_ms":
			qc.RatePeriod = 0
		case "rate_burst":
			qc.RateBurst = 0
		case "concurrency_key":
			qc.ConcurrencyKey = ""
		case "max_per_key":
			qc.MaxPerKey = 0
		case "max_wait_ms":
			qc.MaxWait = 0
		case "fairness_key":
			qc.FairnessKey = ""
		case "tags":
			qc.Tags = nil
		case "completed_retention_ms":
			qc.CompletedRetention = 0
		default:
			return invalid("inherit", "unknown setting %s; one of %v", quoteShort(k), QueueSettingKeys)
		}
	}
	s := u.Set
	setIf(&qc.DefaultPriority, s.DefaultPriority)
	setIf(&qc.DefaultMaxAttempts, s.DefaultMaxAttempts)
	setIf(&qc.RetryDelay, s.RetryDelay)
	setIf(&qc.RetryBackoff, s.RetryBackoff)
	setIf(&qc.RetryDelayMax, s.RetryDelayMax)
	setIf(&qc.MaxScheduleHorizon, s.MaxScheduleHorizon)
	setIf(&qc.MaxLength, s.MaxLength)
	setIf(&qc.MaxMemoryBytes, s.MaxMemoryBytes)
	if u.SetDeadLetterQueue {
		qc.DeadLetterQueue = s.DeadLetterQueue
	}
	// The reserve limits, max_wait and fairness_key: a set (non-zero)
	// value replaces the queue's; inheriting the key drops it.
	if !u.KeepReserveLimits {
		setNonZero(&qc.MaxReserved, s.MaxReserved)
		setNonZero(&qc.RateLimit, s.RateLimit)
		setNonZero(&qc.RatePeriod, s.RatePeriod)
		setNonZero(&qc.RateBurst, s.RateBurst)
		setNonZero(&qc.ConcurrencyKey, s.ConcurrencyKey)
		setNonZero(&qc.MaxPerKey, s.MaxPerKey)
	}
	if s.MaxWait != 0 {
		qc.MaxWait = s.MaxWait
	}
	// completed_retention as max_wait: a set value replaces, inherit drops
	// it (0: the kept completed jobs expire at the next tick).
	if s.CompletedRetention != 0 {
		qc.CompletedRetention = s.CompletedRetention
	}
	if s.FairnessKey != "" {
		qc.FairnessKey = s.FairnessKey
	}
	// Tags are one setting: a set replaces the whole set.
	if u.SetTags && !u.KeepTags {
		qc.Tags = slices.Clone(s.Tags)
		if len(qc.Tags) == 0 {
			qc.Tags = nil
		}
	}
	if err := next.Validate(); err != nil {
		return err
	}
	e.advance(now)
	e.applyConfig(next)
	if u.Paused != nil {
		e.queues[u.Name].paused = *u.Paused
	}
	return nil
}

func setIf[T any](dst **T, v *T) {
	if v != nil {
		c := *v
		*dst = &c
	}
}

func setNonZero[T comparable](dst *T, v T) {
	var zero T
	if v != zero {
		*dst = v
	}
}

// DeleteQueue removes a queue, its configuration and its counters. While it
// holds jobs or dead-letter records it is refused with ErrQueueNotEmpty
// unless force is set; a forced delete removes them all (a reserved job's
// worker then gets ErrNotFound or ErrLeaseLost on its next call) and says
// how many. A queue another queue forwards its dead jobs to is refused with
// ErrQueueInUse whatever force says: that queue's next death would bring
// it back.
func (e *Engine) DeleteQueue(now time.Time, name string, force bool) (QueueRemoval, error) {
	q, err := e.queueForRead("name", name)
	if err != nil {
		return QueueRemoval{}, err
	}
	for _, qc := range e.cfg.Queues {
		if qc.DeadLetterQueue == name {
			return QueueRemoval{}, &FieldError{Field: "name",
				Reason: fmt.Sprintf("queue %q is the dead_letter_queue of queue %q; change that queue first", name, qc.Name), Err: ErrQueueInUse}
		}
	}
	e.advance(now)
	if !force && (q.live() > 0 || q.nDead > 0) {
		return QueueRemoval{}, &FieldError{Field: "force",
			Reason: fmt.Sprintf("queue %q holds %d jobs and %d dead-letter records; purge it first or delete with force", name, q.live(), q.nDead),
			Err:    ErrQueueNotEmpty}
	}
	var res QueueRemoval
	for _, j := range e.queueJobs(q, false) {
		if e.jobs.get(j.id) != j {
			continue // cancelled already, its parent removed before it: its record goes below
		}
		e.detach(j)
		e.jobs.del(j.id)
		e.charge(q, -e.jobHeld(j))
		e.releasePayload(j)
		res.Jobs++
		e.settle(j, parentRemoved, CauseUnknown)
	}
	for q.deadHead != nil {
		e.dropDead(q.deadHead)
		res.DeadLetters++
	}
	// Its completed jobs go with it: their records name a queue that no
	// longer exists, and nothing would expire them.
	e.dropQueueCompleted(q)
	e.forgetKeysOf(q)
	if q.held != 0 {
		panic(fmt.Sprintf("engine: deleted queue %q still counts %d held bytes", name, q.held))
	}
	delete(e.queues, name)
	if i := e.configIndex(name); i >= 0 {
		next := cloneConfig(e.cfg)
		next.Queues = slices.Delete(next.Queues, i, i+1)
		e.applyConfig(next)
	}
	return res, nil
}

// PurgeQueue removes a queue's waiting jobs or its dead-letter records and
// says how many. Purged jobs are counted in the queue's stats (Purged;
// records as DeadDeleted).
func (e *Engine) PurgeQueue(now time.Time, name string, target PurgeTarget) (QueueRemoval, error) {
	q, err := e.queueForRead("name", name)
	if err != nil {
		return QueueRemoval{}, err
	}
	if target != PurgeWaiting && target != PurgeDeadLetters {
		return QueueRemoval{}, invalid("target", "must be waiting or dead_letters, got %d", target)
	}
	e.advance(now)
	var res QueueRemoval
	if target == PurgeDeadLetters {
		for q.deadHead != nil {
			e.dropDead(q.deadHead)
			q.deadDeleted++
			res.DeadLetters++
		}
		return res, nil
	}
	for _, j := range e.queueJobs(q, true) {
		if e.jobs.get(j.id) != j {
			continue // cancelled already, its parent purged before it
		}
		e.removeLive(j)
		res.Jobs++
	}
	return res, nil
}

// removeLive takes a waiting job out of the engine for good on an
// operator's word, counted as purged.
func (e *Engine) removeLive(j *job) {
	e.detach(j)
	e.jobs.del(j.id)
	e.charge(j.q, -e.jobHeld(j))
	e.releasePayload(j)
	j.q.purged++
	e.settle(j, parentRemoved, CauseUnknown)
}

// queueJobs lists q's live jobs in id order, only the waiting ones (Ready
// and Scheduled) when waitingOnly. O(jobs held): an operator action.
func (e *Engine) queueJobs(q *queue, waitingOnly bool) []*job {
	e.materializeQueue(q) // the caller changes them
	var out []*job
	e.jobs.each(func(j *job) bool {
		if j.q == q && (!waitingOnly || j.state != StateReserved) {
			out = append(out, j)
		}
		return true
	})
	return out
}

// forgetKeysOf drops the idempotency keys of q, keeping the others in
// creation order: the index is rebuilt, O(keys), an operator action.
func (e *Engine) forgetKeysOf(q *queue) {
	type keptKey struct {
		q         *queue
		sk        storedKey
		id        JobID
		createdAt int64
	}
	n := e.keys.len()
	kept := make([]keptKey, 0, n)
	for i := 0; i < n; i++ {
		ent := e.keys.at(i)
		if e.keys.queueOf(ent) == q {
			e.charge(q, -e.keys.chargeOf(ent))
			continue
		}
		sk := storedKey{packed: ent.packed(), bytes: ent.packedKey}
		if !sk.packed {
			sk.plain = e.keys.plain[ent.plainIndex()]
		}
		kept = append(kept, keptKey{q: e.keys.queueOf(ent), sk: sk, id: ent.jobID(), createdAt: ent.createdAt})
	}
	if len(kept) == n {
		e.keys.dropQueue(q) // it may have had keys that expired since
		return
	}
	e.keys = idemKeys{}
	e.keys.reserve(len(kept))
	for i := range kept {
		e.keys.add(kept[i].q, &kept[i].sk, kept[i].id, kept[i].createdAt)
	}
}

// configIndex is the position of name in the running config, or -1.
func (e *Engine) configIndex(name string) int {
	return slices.IndexFunc(e.cfg.Queues, func(q QueueConfig) bool { return q.Name == name })
}

// ApplyDeclared installs the limits of cfg and applies each of its queues
// whose definition the engine has not applied before (see the rule at the
// top of this file); a queue of the running config that cfg does not name
// is left as it is. The result must validate as a whole, else nothing
// changes.
func (e *Engine) ApplyDeclared(now time.Time, cfg Config) error {
	return e.applyDeclared(now, cfg, false)
}

// ApplyDeclaredReserveLimits is ApplyDeclared that turns declaredLimits on
// first (the leader proposes it, fsm command version 15, once every member
// applies it): from then on a definition's fingerprint covers its reserve
// limits. The call that turns it on converts the queues cfg names: a
// definition applied before under the older fingerprint counts as applied
// (its queue is left as it is, runtime changes included) and its queue's
// fingerprints are replaced by the new one; the others are applied as new.
// Once on, it is ApplyDeclared; a refused config turns nothing on.
func (e *Engine) ApplyDeclaredReserveLimits(now time.Time, cfg Config) error {
	return e.applyDeclared(now, cfg, !e.declaredLimits)
}

// DeclaredReserveLimits reports whether declaredLimits is on: a file
// definition's reserve limits are part of it (ApplyDeclaredReserveLimits).
func (e *Engine) DeclaredReserveLimits() bool { return e.declaredLimits }

func (e *Engine) applyDeclared(now time.Time, cfg Config, convert bool) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	withLimits := e.declaredLimits || convert
	next := cloneConfig(e.cfg)
	next.Limits = cfg.Limits
	var applied, converted []QueueConfig
	for _, qc := range cfg.Queues {
		switch {
		case e.declarationSeen(qc, withLimits):
			continue
		case convert && slices.Contains(e.declared[qc.Name], declarationFingerprint(qc, false)):
			converted = append(converted, qc)
			continue
		}
		applied = append(applied, qc)
		if i := slices.IndexFunc(next.Queues, func(r QueueConfig) bool { return r.Name == qc.Name }); i >= 0 {
			next.Queues[i] = cloneConfig(Config{Queues: []QueueConfig{qc}}).Queues[0]
		} else {
			next.Queues = append(next.Queues, cloneConfig(Config{Queues: []QueueConfig{qc}}).Queues[0])
		}
	}
	if err := next.Validate(); err != nil {
		return fmt.Errorf("the declared config meets the running queues: %w", err)
	}
	e.advance(now)
	if e.declared == nil && len(applied)+len(converted) > 0 {
		e.declared = make(map[string][]uint64)
	}
	for _, qc := range applied {
		fps := append(e.declared[qc.Name], declarationFingerprint(qc, withLimits))
		if len(fps) > maxDeclarationsKept {
			fps = slices.Delete(fps, 0, len(fps)-maxDeclarationsKept)
		}
		e.declared[qc.Name] = fps
	}
	if convert {
		// The older fingerprints of the queues cfg names mean nothing
		// under the new rule: each keeps the one of its definition, applied
		// now or before. (A queue cfg does not name keeps its older ones,
		// which no new fingerprint equals: its next definition is applied.)
		for _, qc := range append(applied, converted...) {
			e.declared[qc.Name] = []uint64{declarationFingerprint(qc, true)}
		}
		e.declaredLimits = true
	}
	e.forwardAsArrived = true
	e.applyConfig(next)
	return nil
}

// DeclaredPending reports whether ApplyDeclared(cfg) would change anything:
// other limits, a queue definition not applied yet, or no ApplyDeclared
// applied at all (which turns forwardAsArrived on). The leader proposes
// its file's config only then (or to turn declaredLimits on).
func (e *Engine) DeclaredPending(cfg Config) bool {
	if !e.forwardAsArrived || e.cfg.Limits != cfg.Limits {
		return true
	}
	for _, qc := range cfg.Queues {
		if !e.declarationSeen(qc, e.declaredLimits) {
			return true
		}
	}
	return false
}

func (e *Engine) declarationSeen(qc QueueConfig, withLimits bool) bool {
	return slices.Contains(e.declared[qc.Name], declarationFingerprint(qc, withLimits))
}

// declarationFingerprint is a 64-bit FNV-1a hash of qc's canonical
// encoding: equal definitions give equal fingerprints on every replica.
// withLimits (declaredLimits) adds the reserve limits, always, so that no
// fingerprint of the new rule equals one of the older rule, which left
// them out.
func declarationFingerprint(qc QueueConfig, withLimits bool) uint64 {
	h := fnv.New64a()
	var b []byte
	b = binary.AppendUvarint(b, uint64(len(qc.Name)))
	b = append(b, qc.Name...)
	opt := func(set bool, v int64) {
		if !set {
			b = append(b, 0)
			return
		}
		b = append(b, 1)
		b = binary.AppendVarint(b, v)
	}
	opt(qc.DefaultPriority != nil, int64(derefOr(qc.DefaultPriority)))
	opt(qc.DefaultMaxAttempts != nil, int64(derefOr(qc.DefaultMaxAttempts)))
	opt(qc.RetryDelay != nil, int64(derefOr(qc.RetryDelay)))
	opt(qc.RetryBackoff != nil, int64(derefOr(qc.RetryBackoff)))
	opt(qc.RetryDelayMax != nil, int64(derefOr(qc.RetryDelayMax)))
	opt(qc.MaxScheduleHorizon != nil, int64(derefOr(qc.MaxScheduleHorizon)))
	opt(qc.MaxLength != nil, int64(derefOr(qc.MaxLength)))
	opt(qc.MaxMemoryBytes != nil, derefOr(qc.MaxMemoryBytes))
	b = binary.AppendUvarint(b, uint64(len(qc.DeadLetterQueue)))
	b = append(b, qc.DeadLetterQueue...)
	if qc.MaxWait != 0 || qc.FairnessKey != "" {
		// Only when set, so the definitions written before keep their
		// fingerprints (and are not applied again).
		b = append(b, 'x')
		b = binary.AppendVarint(b, int64(qc.MaxWait))
		b = binary.AppendUvarint(b, uint64(len(qc.FairnessKey)))
		b = append(b, qc.FairnessKey...)
	}
	if len(qc.Tags) > 0 {
		// Only when set, as above, so a definition without tags keeps
		// the fingerprint it had before tags existed.
		b = append(b, 't')
		b = binary.AppendUvarint(b, uint64(len(qc.Tags)))
		for _, t := range qc.Tags {
			b = binary.AppendUvarint(b, uint64(len(t.Key)))
			b = append(b, t.Key...)
			b = binary.AppendUvarint(b, uint64(len(t.Value)))
			b = append(b, t.Value...)
		}
	}
	if qc.CompletedRetention != 0 {
		// Only when set, as tags, so a definition without one keeps the
		// fingerprint it had before the setting existed.
		b = append(b, 'c')
		b = binary.AppendVarint(b, int64(qc.CompletedRetention))
	}
	if withLimits {
		b = append(b, 'r')
		for _, v := range []int64{int64(qc.MaxReserved), int64(qc.RateLimit), int64(qc.RatePeriod), int64(qc.RateBurst), int64(qc.MaxPerKey)} {
			b = binary.AppendVarint(b, v)
		}
		b = binary.AppendUvarint(b, uint64(len(qc.ConcurrencyKey)))
		b = append(b, qc.ConcurrencyKey...)
	}
	h.Write(b)
	return h.Sum64()
}

func derefOr[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

// Declarations returns, per queue name, the fingerprints of the file
// definitions applied (for tests and the snapshot).
func (e *Engine) Declarations() map[string][]uint64 {
	out := make(map[string][]uint64, len(e.declared))
	for k, v := range e.declared { // a copy: order does not matter
		out[k] = slices.Clone(v)
	}
	return out
}
