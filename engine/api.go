package engine

import (
	"time"
)

// JobID identifies a job. The engine assigns ids from a counter in its state,
// so every replica assigns the same id to the same enqueue.
type JobID uint64

// LeaseToken fences one delivery. Every reserve of a job gets a new token; an
// ack, nack, release or extend must present the token of the current lease.
type LeaseToken uint64

// State is where a job is in its lifecycle.
type State uint8

// The job states. Completed jobs leave the engine; dead jobs stay only while
// dead-letter retention keeps their record.
const (
	StateUnknown State = iota
	StateScheduled
	StateReady
	StateReserved
	StateDead
	// StateCompleted is never a held job's state: it is what a unique-key
	// conflict reports of a holder that was acked and keeps its key for
	// UniqueOpts.CompletedFor (unique.go).
	StateCompleted
	// StateBlocked is a job waiting for its parents to end
	// (dependencies.go).
	StateBlocked
)

// Cause says why a job was dead-lettered. Exactly one per record.
type Cause uint8

// The dead-letter causes of the spec.
const (
	CauseUnknown           Cause = iota
	CauseAttemptsExhausted       // the failing attempt reached max_attempts
	CauseRejected                // a worker nacked with DeadLetter
	CauseLeaseExpired            // the lease expired on the final attempt
	CauseAdmin                   // an operator dead-lettered a live job
	CauseCancelled               // an operator cancelled a reserved job
	CauseExpired                 // the job was not reserved by its deadline (expiry.go)

	// maxCause is the highest cause a record can hold.
	maxCause = CauseExpired
)

// Backoff is the shape of a queue's retry delays.
type Backoff uint8

// Retry backoff kinds: none waits the base delay every time; exponential
// doubles it per attempt up to the cap.
const (
	BackoffNone Backoff = iota
	BackoffExponential
)

// Directive is the worker's word on what happens after a nack.
type Directive uint8

// Nack directives.
const (
	DirectiveDefault    Directive = iota // follow the queue's retry policy
	DirectiveAfter                       // retry after the given delay
	DirectiveDeadLetter                  // skip remaining attempts
)

// Limits are the global settings ([limits] and [storage] in the config).
// Zero values are not defaults: build them with DefaultLimits.
type Limits struct {
	DefaultPriority     uint32        // default 0
	DefaultMaxAttempts  uint32        // default 3
	MaxAttemptsCeiling  uint32        // default 100
	RetryDelay          time.Duration // default 0: retry at once
	RetryBackoff        Backoff       // default none
	RetryDelayMax       time.Duration // cap of exponential backoff; default 1h
	MaxScheduleHorizon  time.Duration // default 30 days
	MaxReserveBatch     int           // default 100
	DefaultLease        time.Duration // default 30s, when a reserve names none
	MaxLease            time.Duration // default 12h; longer leases are clamped
	MaxPayloadBytes     int           // default 1 MiB
	MaxBatchSize        int           // default 1000 items per batch enqueue
	MaxCustomFields     int           // default 64 entries
	MaxCustomFieldBytes int           // default 4096 per key+value
	MaxJobTypeBytes     int           // default 256
	IdempotencyWindow   time.Duration // default 2m (covers client retries through a failover)
	MaxIdempotencyKeys  int           // default 4,000,000 remembered keys (~300 MB)
	// IdempotencyMinWindow is how long a key is kept at least once
	// MaxIdempotencyKeys are held: a new key then makes the oldest be
	// forgotten before its window ends, if it is this old; else the new key
	// is refused (ErrCapacity). 0 never forgets early; above
	// IdempotencyWindow it is the window. Default 20s, more than the Go
	// client's 15s of retries.
	IdempotencyMinWindow time.Duration
	MaxQueueLength       int // default 0: unbounded
	// MaxMemoryBytes is the budget of held bytes (memory.go): an enqueue
	// that would take the count above it is refused with ErrMemoryFull,
	// while everything that drains keeps working. 0: unbounded (the
	// engine's default; the server sets a share of its memory limit).
	MaxMemoryBytes int64
	// MaxDiskBytes is the budget of payload bytes the jobs and dead-letter
	// records hold in each node's payload store (payloads.go), counted
	// once payloads are off the heap: an enqueue that would take the count
	// above it is refused with ErrDiskFull. 0: unbounded.
	MaxDiskBytes   int64
	MaxDeadLetters int // default 1,000,000 retained records
	AttemptHistory int // default DefaultAttemptHistory (25) entries kept per job
	// DeadLetterRetention keeps dead-letter records this long; 0 drops dead
	// jobs on the spot. Restart-only ([storage] dead_letter_retention_ms).
	DeadLetterRetention time.Duration
	// Strict rejects enqueues to queues that are not configured.
	Strict bool
}

// QueueConfig holds a queue's overrides ([[queues]]); a nil field inherits the
// global value.
type QueueConfig struct {
	Name               string
	DefaultPriority    *uint32
	DefaultMaxAttempts *uint32
	RetryDelay         *time.Duration
	RetryBackoff       *Backoff
	RetryDelayMax      *time.Duration
	MaxScheduleHorizon *time.Duration
	MaxLength          *int
	// MaxMemoryBytes is the queue's own budget of held bytes, under the
	// global one; nil or 0: none of its own.
	MaxMemoryBytes *int64
	// DeadLetterQueue, when set, receives a new job for every job that dies
	// on this queue (payload and custom fields as they arrived, plus fields
	// naming the origin, cause, last reason and final attempt).
	DeadLetterQueue string
	// Reserve limits of the queue (reserve_limits.go); zero values set
	// none. MaxReserved caps the queue's jobs reserved at once, across all
	// workers. RateLimit reservations per RatePeriod (default 1s), up to
	// RateBurst (default RateLimit) at once, is a token bucket on the
	// leader's now. MaxPerKey caps the jobs reserved at once that carry
	// the same value of the custom field ConcurrencyKey.
	MaxReserved    int
	RateLimit      int
	RatePeriod     time.Duration
	RateBurst      int
	ConcurrencyKey string
	MaxPerKey      int
	// MaxWait, when set, is how long a job of the queue may wait for its
	// first reservation, counted from when it first becomes due; a job not
	// reserved by then dies with the cause expired (expiry.go). 0: none.
	MaxWait time.Duration
	// FairnessKey, when set, names the custom field whose values take
	// turns within a priority level (fairness.go): a reserve rotates over
	// the values with Ready jobs. Jobs without the field share one turn.
	FairnessKey string
	// Tags are the queue's key/value labels (tags.go), sorted by key; nil:
	// none. They change nothing about how the queue runs.
	Tags []Tag
	// CompletedRetention is how long an acked job is kept, with its
	// result (completed.go); 0: not kept. 0..MaxCompletedRetention.
	CompletedRetention time.Duration
}

// Config is everything that shapes the engine's behaviour. It is part of the
// replicated state: the leader proposes it, so every replica runs the same.
type Config struct {
	Limits Limits
	Queues []QueueConfig
}

// EnqueueParams is one job to add.
type EnqueueParams struct {
	Queue   string
	JobType string
	Payload []byte
	// Priority 0..9; nil takes the queue's default.
	Priority *uint32
	// ScheduledAt is the earliest run time; zero or not after now means Ready.
	ScheduledAt time.Time
	// MaxAttempts 0 takes the queue's default; always clamped to the ceiling.
	MaxAttempts uint32
	Custom      map[string]string
	// IdempotencyKey, when set, makes a repeat within the window return the
	// original job instead of adding a second.
	IdempotencyKey string
	// Unique, when set, makes the job unique in its queue (unique.go).
	Unique *UniqueOpts
	// Expiry, when set, gives the job a deadline by which it must be
	// reserved (expiry.go). A pointer, as Unique: the params stay in their
	// 128-byte size class (a batch decodes into one slab of them).
	Expiry *ExpiryOpts
	// Trace, when set, is the producer's W3C trace context, kept with the
	// job and returned with it (trace.go). A pointer: a job without one
	// costs nothing.
	Trace *TraceContext
	// After names the earlier items of the same EnqueueBatch or of the
	// same ack's follow-ups this job waits for (dependencies.go): it is
	// Blocked until each has ended. Refused on a lone Enqueue.
	After []int
	// OnParentFailure is what the job does when a parent ends other than
	// completed: cancelled at once (the default) or run anyway.
	OnParentFailure ParentFailure
}

// ExpiryOpts are an enqueue's own deadline: At, when set, is the instant
// by which the job must be reserved, else it dies with the cause expired;
// TTL, when set, is the same deadline counted from the enqueue. With both
// (or a queue max_wait) the earliest applies.
type ExpiryOpts struct {
	At  time.Time
	TTL time.Duration
}

// EnqueueResult is what an enqueue did.
type EnqueueResult struct {
	JobID JobID
	State State
	// Duplicate is true when the idempotency key matched an earlier enqueue,
	// or another job holds the unique key, and no job was added; JobID is
	// then that job.
	Duplicate bool
}

// BatchItemResult is the outcome of one item of a batch enqueue: a result or
// an error, never both.
type BatchItemResult struct {
	Result EnqueueResult
	Err    error
}

// ReserveParams asks for up to N jobs from one queue.
type ReserveParams struct {
	Queue    string
	WorkerID string
	N        int           // clamped to [1, MaxReserveBatch]
	Lease    time.Duration // 0 takes DefaultLease; clamped to MaxLease
	// RequestID, when set, makes a retried reserve return the deliveries of
	// the first one (while their leases are live) instead of new jobs.
	RequestID string
	// RetryWindow (with a RequestID) keeps the request id past the leases'
	// deadline, for limits.idempotency_window_ms, so that a retry whose
	// first answer was lost costs no attempt even once the leases lapsed:
	// a delivery whose lease expires while the id is remembered is held on
	// its last attempt (not dead-lettered) until the id is forgotten, and
	// on an earlier attempt goes back to Ready as usual; the retry then
	// gets those jobs back, held ones with a renewed lease, returned ones
	// (still Ready, not delivered since) on the same attempt number again.
	// The fsm sets it from the command's version (CommandVersionReserveRetry),
	// so replicas of older binaries never see such a reservation.
	RetryWindow bool
	// WithoutPayloads leaves the deliveries' Job.Payload nil: the caller
	// answers nobody with them (a replica applying a reserve another node
	// waits on), so reading each payload from the store would be work for
	// nothing. It changes only what Reserve returns, never the state.
	WithoutPayloads bool
}

// Delivery is one reserved job with its context.
type Delivery struct {
	Job           Job
	LeaseToken    LeaseToken
	Attempt       uint32
	MaxAttempts   uint32
	LeaseDeadline time.Time
}

// LeaseRef names the lease an ack, nack, release or extend acts on.
type LeaseRef struct {
	JobID      JobID
	LeaseToken LeaseToken
}

// NackParams fails a delivery.
type NackParams struct {
	LeaseRef
	Directive Directive
	After     time.Duration // with DirectiveAfter; clamped to the horizon
	Reason    string
}

// NackResult says what became of a nacked job.
type NackResult struct {
	DeadLettered bool
	// NextAttemptAt is when the retry becomes Ready (now when immediate);
	// zero when dead-lettered.
	NextAttemptAt time.Time
}

// ExtendParams pushes a lease's deadline to now+Lease.
type ExtendParams struct {
	LeaseRef
	Lease time.Duration // 0 takes DefaultLease; clamped to MaxLease
	// Progress, when set, becomes the job's progress (CheckProgress
	// bounds it); nil leaves the last one reported.
	Progress *Progress
}

// TickResult counts what a time-driven pass did.
type TickResult struct {
	Promoted      int // scheduled jobs made Ready
	LeasesExpired int // leases that lapsed (requeued or dead-lettered)
	DeadLettered  int // of those, dead-lettered on their final attempt
	Swept         int // dead-letter records removed by retention
	KeysExpired   int // idempotency keys forgotten
	// UniqueReleased counts unique keys of acked jobs whose hold ended.
	UniqueReleased int
	// Expired counts waiting jobs whose deadline passed unreserved
	// (dead-lettered with the cause expired; also counted in DeadLettered).
	Expired int
	// CompletedExpired counts completed jobs whose retention ended.
	CompletedExpired int
}

// Attempt is one entry of a job's attempt history.
type Attempt struct {
	Attempt  uint32
	WorkerID string
	At       time.Time // when the attempt ended
	Outcome  string    // "nack", "lease_expired", "released", "cancelled"
	Reason   string
	// StartedAt is when the delivery was reserved and Duration how long it
	// ran (At - StartedAt); zero when not recorded (an attempt that started
	// before the cluster ran recordFields).
	StartedAt time.Time
	Duration  time.Duration
	// LeaseToken is the delivery's lease; 0 when not recorded.
	LeaseToken LeaseToken
	// Directive is a nack's: "default", "after" or "dead_letter"; empty for
	// other outcomes and when not recorded.
	Directive string
}

// Job is a read-only view of a job, copied out of the engine.
type Job struct {
	ID            JobID
	Queue         string
	JobType       string
	Payload       []byte
	Priority      uint32
	State         State
	EnqueuedAt    time.Time
	ScheduledAt   time.Time // zero when never scheduled
	NextAttemptAt time.Time // when a waiting retry becomes Ready; else zero
	Attempt       uint32    // deliveries so far (the current one while reserved)
	MaxAttempts   uint32
	Custom        map[string]string
	WorkerID      string    // while reserved
	LeaseDeadline time.Time // while reserved
	LastReason    string
	History       []Attempt
	// StartedAt is when the current delivery started, while reserved (zero
	// when not recorded).
	StartedAt time.Time
	// Origin is set on a job forwarded to a dead_letter_queue: the queue,
	// id, cause and last reason of the job that died. Its Queue is empty
	// on every other job. (A value, so views stay free of pointers.)
	Origin Origin

	// ExpiresAtNanos is the deadline by which the job must be reserved,
	// else it dies as expired (expiry.go), in unix nanoseconds; 0: none.
	// (Nanoseconds, not a time.Time, keep a Delivery in its size class.)
	ExpiresAtNanos int64

	// Trace is the job's W3C trace context, nil when it has none (a
	// pointer, so that a Delivery stays in its size class); the view's own
	// copy.
	Trace *TraceContext

	// Progress is what the worker holding a reserved job last reported
	// (progress.go); nil when it reported none or the job is not reserved.
	// The view's own copy.
	Progress *Progress

	// Completed is set on a completed job's view (completed.go): its
	// result and completion time. (A pointer, as Trace is.)
	Completed *CompletedInfo

	// Parents are the jobs this one waits or waited for and how each
	// ended (dependencies.go), while it is live; nil for a job without.
	Parents []ParentLink
	// RunsAfterParentFailure: the job runs whatever its parents' outcomes
	// (ParentFailureRun); false cancels it when one fails.
	RunsAfterParentFailure bool

	// WaitingChildren are the jobs still waiting for this one to end
	// (dependencies.go): Blocked jobs that name it as a parent, in id
	// order, the first MaxWaitingChildrenListed of them;
	// WaitingChildrenTotal counts them all. Only a live job has any: when
	// it ends, each child learns the outcome and waits for it no more
	// (released, cancelled, or still Blocked on other parents), so a
	// completed or dead job lists none. A child that ends first
	// (cancelled by another parent, deleted) leaves the list. Filled by
	// GetJob only; nil in listings and deliveries.
	WaitingChildren      []JobID
	WaitingChildrenTotal int
}

// ExpiresAt is the job's deadline (ExpiresAtNanos); zero: none.
func (j Job) ExpiresAt() time.Time { return fromNanos(j.ExpiresAtNanos) }

// DeadLetterRecord is a retained dead job.
type DeadLetterRecord struct {
	Job          Job
	Cause        Cause
	FailedAt     time.Time
	FinalAttempt uint32
	LastReason   string
}

// DrainParams asks for up to Max records, oldest first.
type DrainParams struct {
	Queue string // empty: all queues
	Max   int    // 0 means 1; clamped to MaxReserveBatch
}

// Page selects a slice of a listing ordered by job id.
type Page struct {
	AfterID JobID // exclusive; 0 starts at the beginning
	Limit   int   // 0 means 100; clamped to 1000
}

// QueueStats are a queue's counts.
type QueueStats struct {
	Name       string
	Paused     bool
	Configured bool
	Scheduled  int
	Ready      int
	Reserved   int
	// Blocked counts the jobs waiting for their parents to end.
	Blocked int
	Dead    int // retained dead-letter records
	// HeldBytes is what the queue's jobs, records, keys and worker ids are
	// counted to hold against the budgets; MaxMemoryBytes the queue's own
	// budget (0: none).
	HeldBytes, MaxMemoryBytes int64
	// Limits are the queue's reserve limits and their use (zero: none).
	Limits         ReserveLimits
	OldestReadyAge time.Duration
	Enqueued       uint64 // jobs ever added
	Acked          uint64
	DeadLettered   map[Cause]uint64 // jobs ever dead-lettered, by cause
	Dropped        uint64           // dead jobs dropped because retention is off
	// What became of retained records: requeued by an operator, drained,
	// deleted, or swept when their retention passed. With these, every job
	// is accounted for:
	//   Enqueued + DeadRequeued = Scheduled + Ready + Reserved + Blocked + Acked + sum(DeadLettered) + Purged
	//   sum(DeadLettered) = Dead + Dropped + DeadRequeued + DeadDrained + DeadDeleted + DeadExpired
	DeadRequeued uint64
	DeadDrained  uint64
	DeadDeleted  uint64
	DeadExpired  uint64
	// Purged counts waiting jobs an operator purged before they ran.
	Purged uint64
	// Activity is this engine's own count of deliveries, nacks, releases,
	// expiries and first-delivery waits (not replicated state: activity.go).
	Activity QueueActivity
	// MaxWait is the queue's max_wait (expiry.go); Fairness its fairness
	// key and the key values taking turns (fairness.go).
	MaxWait  time.Duration
	Fairness Fairness
	// Tags are the queue's tags (tags.go), sorted by key; the caller's copy.
	Tags []Tag
	// Completed counts the completed jobs the queue keeps, for its
	// CompletedRetention (completed.go).
	Completed          int
	CompletedRetention time.Duration
}

// ItemResult is the outcome of one id of an operator action.
type ItemResult struct {
	JobID JobID
	Err   error
}
