package engine

import (
	"fmt"
	"slices"
	"time"
)

// MaxPriority is the highest priority; 0 is the lowest.
const MaxPriority = 9

// MaxQueueNameBytes bounds a queue name.
const MaxQueueNameBytes = 128

// Internal bounds on strings the config does not size.
const (
	maxIdempotencyKeyBytes = 256
	maxWorkerIDBytes       = 256
	maxRequestIDBytes      = 256
	// maxReasonBytes bounds a nack or admin reason kept in history and
	// dead-letter records; a longer one is cut at a UTF-8 boundary.
	maxReasonBytes = 4096
	// maxAttemptHistory bounds Limits.AttemptHistory.
	maxAttemptHistory = 1000
)

// DefaultLimits returns the documented defaults of every limit.
func DefaultLimits() Limits {
	return Limits{
		DefaultPriority:      0,
		DefaultMaxAttempts:   3,
		MaxAttemptsCeiling:   100,
		RetryDelay:           0,
		RetryBackoff:         BackoffNone,
		RetryDelayMax:        time.Hour,
		MaxScheduleHorizon:   30 * 24 * time.Hour,
		MaxReserveBatch:      100,
		DefaultLease:         30 * time.Second,
		MaxLease:             12 * time.Hour,
		MaxPayloadBytes:      1 << 20,
		MaxBatchSize:         1000,
		MaxCustomFields:      64,
		MaxCustomFieldBytes:  4096,
		MaxJobTypeBytes:      256,
		IdempotencyWindow:    2 * time.Minute,
		MaxIdempotencyKeys:   4_000_000,
		IdempotencyMinWindow: 20 * time.Second,
		MaxQueueLength:       0,
		MaxDeadLetters:       1_000_000,
		AttemptHistory:       DefaultAttemptHistory,
		DeadLetterRetention:  0,
		Strict:               false,
	}
}

// DefaultConfig is DefaultLimits with no configured queues.
func DefaultConfig() Config { return Config{Limits: DefaultLimits()} }

// ValidQueueName reports whether name is 1..128 bytes of [A-Za-z0-9._:-].
func ValidQueueName(name string) bool {
	if len(name) == 0 || len(name) > MaxQueueNameBytes {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case c == '.', c == '_', c == ':', c == '-':
		default:
			return false
		}
	}
	return true
}

func checkQueueName(field, name string) error {
	if ValidQueueName(name) {
		return nil
	}
	return invalid(field, "must be 1..%d bytes of [A-Za-z0-9._:-], got %s", MaxQueueNameBytes, quoteShort(name))
}

// quoteShort quotes s for an error message, cutting it so a hostile input
// cannot blow up the message.
func quoteShort(s string) string {
	const max = 64
	if len(s) > max {
		return fmt.Sprintf("%q... (%d bytes)", s[:max], len(s))
	}
	return fmt.Sprintf("%q", s)
}

// Validate reports the first contradiction in cfg (for example a
// default_max_attempts above the ceiling), naming the key. The checks run in
// a fixed order, so the same config always gives the same error.
func (c Config) Validate() error {
	l := c.Limits
	switch {
	case l.MaxAttemptsCeiling < 1:
		return invalid("limits.max_attempts_ceiling", "must be at least 1, got %d", l.MaxAttemptsCeiling)
	case l.DefaultMaxAttempts < 1:
		return invalid("limits.default_max_attempts", "must be at least 1, got %d", l.DefaultMaxAttempts)
	case l.DefaultMaxAttempts > l.MaxAttemptsCeiling:
		return invalid("limits.default_max_attempts", "%d is above limits.max_attempts_ceiling %d", l.DefaultMaxAttempts, l.MaxAttemptsCeiling)
	case l.DefaultPriority > MaxPriority:
		return invalid("limits.default_priority", "must be 0..%d, got %d", MaxPriority, l.DefaultPriority)
	case l.RetryDelay < 0:
		return invalid("limits.retry_delay_ms", "must not be negative, got %s", l.RetryDelay)
	case l.RetryDelayMax < 0:
		return invalid("limits.retry_delay_max_ms", "must not be negative, got %s", l.RetryDelayMax)
	case l.RetryBackoff > BackoffExponential:
		return invalid("limits.retry_backoff", "must be none or exponential, got %d", l.RetryBackoff)
	case l.RetryBackoff == BackoffExponential && l.RetryDelayMax < l.RetryDelay:
		return invalid("limits.retry_delay_max_ms", "%s is below limits.retry_delay_ms %s", l.RetryDelayMax, l.RetryDelay)
	case l.MaxScheduleHorizon <= 0:
		return invalid("limits.max_schedule_horizon_ms", "must be positive, got %s", l.MaxScheduleHorizon)
	case l.MaxReserveBatch < 1:
		return invalid("limits.max_reserve_batch", "must be at least 1, got %d", l.MaxReserveBatch)
	case l.DefaultLease <= 0:
		return invalid("limits.default_lease_ms", "must be positive, got %s", l.DefaultLease)
	case l.MaxLease < l.DefaultLease:
		return invalid("limits.max_lease_ms", "%s is below limits.default_lease_ms %s", l.MaxLease, l.DefaultLease)
	case l.MaxPayloadBytes < 1:
		return invalid("limits.max_payload_bytes", "must be at least 1, got %d", l.MaxPayloadBytes)
	case l.MaxBatchSize < 1:
		return invalid("limits.max_batch_size", "must be at least 1, got %d", l.MaxBatchSize)
	case l.MaxCustomFields < 0:
		return invalid("limits.max_custom_fields", "must not be negative, got %d", l.MaxCustomFields)
	case l.MaxCustomFieldBytes < 1:
		return invalid("limits.max_custom_field_bytes", "must be at least 1, got %d", l.MaxCustomFieldBytes)
	case l.MaxJobTypeBytes < 1:
		return invalid("limits.max_job_type_bytes", "must be at least 1, got %d", l.MaxJobTypeBytes)
	case l.IdempotencyWindow < 0:
		return invalid("limits.idempotency_window_ms", "must not be negative, got %s", l.IdempotencyWindow)
	case l.MaxIdempotencyKeys < 1:
		return invalid("limits.max_idempotency_keys", "must be at least 1, got %d", l.MaxIdempotencyKeys)
	case l.IdempotencyMinWindow < 0:
		return invalid("limits.idempotency_min_window_ms", "must not be negative, got %s", l.IdempotencyMinWindow)
	case l.MaxQueueLength < 0:
		return invalid("limits.max_queue_length", "must not be negative (0 is unbounded), got %d", l.MaxQueueLength)
	case l.MaxDiskBytes < 0:
		return invalid("limits.max_disk_bytes", "must not be negative (0 is unbounded), got %d", l.MaxDiskBytes)
	case l.MaxMemoryBytes < 0:
		return invalid("limits.max_memory_bytes", "must not be negative (0 is unbounded), got %d", l.MaxMemoryBytes)
	case l.MaxDeadLetters < 1:
		return invalid("limits.max_dead_letters", "must be at least 1, got %d", l.MaxDeadLetters)
	case l.AttemptHistory < 0 || l.AttemptHistory > maxAttemptHistory:
		return invalid("limits.attempt_history", "must be 0..%d, got %d", maxAttemptHistory, l.AttemptHistory)
	case l.DeadLetterRetention < 0:
		return invalid("storage.dead_letter_retention_ms", "must not be negative (0 disables the store), got %s", l.DeadLetterRetention)
	}

	names := make(map[string]int, len(c.Queues))
	for i, q := range c.Queues {
		if err := checkQueueName(fmt.Sprintf("queues[%d].name", i), q.Name); err != nil {
			return err
		}
		if j, dup := names[q.Name]; dup {
			return invalid(fmt.Sprintf("queues[%d].name", i), "queue %q is already configured at queues[%d]", q.Name, j)
		}
		names[q.Name] = i
	}
	for _, q := range c.Queues {
		if err := c.validateQueue(q, names); err != nil {
			return err
		}
	}
	return c.checkDeadLetterCycles(names)
}

func (c Config) validateQueue(q QueueConfig, names map[string]int) error {
	l := c.Limits
	key := func(k string) string { return fmt.Sprintf("queues[%q].%s", q.Name, k) }
	if q.DefaultPriority != nil && *q.DefaultPriority > MaxPriority {
		return invalid(key("default_priority"), "must be 0..%d, got %d", MaxPriority, *q.DefaultPriority)
	}
	if q.DefaultMaxAttempts != nil {
		switch v := *q.DefaultMaxAttempts; {
		case v < 1:
			return invalid(key("default_max_attempts"), "must be at least 1, got %d", v)
		case v > l.MaxAttemptsCeiling:
			return invalid(key("default_max_attempts"), "%d is above limits.max_attempts_ceiling %d", v, l.MaxAttemptsCeiling)
		}
	}
	if q.RetryDelay != nil && *q.RetryDelay < 0 {
		return invalid(key("retry_delay_ms"), "must not be negative, got %s", *q.RetryDelay)
	}
	if q.RetryDelayMax != nil && *q.RetryDelayMax < 0 {
		return invalid(key("retry_delay_max_ms"), "must not be negative, got %s", *q.RetryDelayMax)
	}
	if q.RetryBackoff != nil && *q.RetryBackoff > BackoffExponential {
		return invalid(key("retry_backoff"), "must be none or exponential, got %d", *q.RetryBackoff)
	}
	s := resolveSettings(l, &q)
	if s.backoff == BackoffExponential && s.retryDelayMax < s.retryDelay {
		return invalid(key("retry_delay_max_ms"), "%s is below the queue's retry_delay_ms %s",
			time.Duration(s.retryDelayMax), time.Duration(s.retryDelay))
	}
	if q.MaxScheduleHorizon != nil && *q.MaxScheduleHorizon <= 0 {
		return invalid(key("max_schedule_horizon_ms"), "must be positive, got %s", *q.MaxScheduleHorizon)
	}
	if q.MaxLength != nil && *q.MaxLength < 0 {
		return invalid(key("max_length"), "must not be negative (0 is unbounded), got %d", *q.MaxLength)
	}
	if q.MaxMemoryBytes != nil && *q.MaxMemoryBytes < 0 {
		return invalid(key("max_memory_bytes"), "must not be negative (0 is none of its own), got %d", *q.MaxMemoryBytes)
	}
	if err := validateReserveLimits(q, key); err != nil {
		return err
	}
	if err := validateExpiryFairness(q, key); err != nil {
		return err
	}
	if err := validateTags(q, key); err != nil {
		return err
	}
	if err := validateCompletedRetention(q, key); err != nil {
		return err
	}
	if q.DeadLetterQueue != "" {
		if err := checkQueueName(key("dead_letter_queue"), q.DeadLetterQueue); err != nil {
			return err
		}
		if q.DeadLetterQueue == q.Name {
			return invalid(key("dead_letter_queue"), "names the queue itself")
		}
		if _, ok := names[q.DeadLetterQueue]; !ok && l.Strict {
			return invalid(key("dead_letter_queue"), "queue %q is not configured and limits.strict is on", q.DeadLetterQueue)
		}
	}
	return nil
}

// checkDeadLetterCycles rejects dead_letter_queue chains that loop back, so
// a dead job can never circle between queues.
func (c Config) checkDeadLetterCycles(names map[string]int) error {
	for _, q := range c.Queues {
		seen := map[string]bool{q.Name: true}
		next := q.DeadLetterQueue
		for next != "" {
			if seen[next] {
				return invalid(fmt.Sprintf("queues[%q].dead_letter_queue", q.Name), "dead-letter chain from %q loops back to %q", q.Name, next)
			}
			seen[next] = true
			i, ok := names[next]
			if !ok {
				break
			}
			next = c.Queues[i].DeadLetterQueue
		}
	}
	return nil
}

// settings are a queue's effective values: its overrides over the globals.
// Durations are nanoseconds.
type settings struct {
	defaultPriority    uint8
	defaultMaxAttempts uint32
	backoff            Backoff
	retryDelay         int64
	retryDelayMax      int64
	horizon            int64
	maxLength          int
	maxMemory          int64 // the queue's own budget of held bytes; 0: none
	deadLetterQueue    string
	limits             reserveLimits
	maxWait            int64  // the queue's max_wait; 0: none (expiry.go)
	fairKey            string // the queue's fairness key; "": none (fairness.go)
	// completedRetention is how long an acked job is kept; 0: not kept
	// (completed.go).
	completedRetention int64
	// ownPriority: the queue sets default_priority itself, so a job
	// forwarded to it takes that priority instead of keeping its own.
	ownPriority bool
}

func resolveSettings(l Limits, q *QueueConfig) settings {
	s := settings{
		defaultPriority:    uint8(min(l.DefaultPriority, MaxPriority)),
		defaultMaxAttempts: l.DefaultMaxAttempts,
		backoff:            l.RetryBackoff,
		retryDelay:         int64(l.RetryDelay),
		retryDelayMax:      int64(l.RetryDelayMax),
		horizon:            int64(l.MaxScheduleHorizon),
		maxLength:          l.MaxQueueLength,
	}
	if q == nil {
		return s
	}
	if q.DefaultPriority != nil {
		s.defaultPriority = uint8(min(*q.DefaultPriority, MaxPriority))
		s.ownPriority = true
	}
	if q.DefaultMaxAttempts != nil {
		s.defaultMaxAttempts = *q.DefaultMaxAttempts
	}
	if q.RetryBackoff != nil {
		s.backoff = *q.RetryBackoff
	}
	if q.RetryDelay != nil {
		s.retryDelay = int64(*q.RetryDelay)
	}
	if q.RetryDelayMax != nil {
		s.retryDelayMax = int64(*q.RetryDelayMax)
	}
	if q.MaxScheduleHorizon != nil {
		s.horizon = int64(*q.MaxScheduleHorizon)
	}
	if q.MaxLength != nil {
		s.maxLength = *q.MaxLength
	}
	if q.MaxMemoryBytes != nil {
		s.maxMemory = *q.MaxMemoryBytes
	}
	s.deadLetterQueue = q.DeadLetterQueue
	s.limits = resolveReserveLimits(q)
	s.maxWait = int64(q.MaxWait)
	s.fairKey = q.FairnessKey
	s.completedRetention = int64(q.CompletedRetention)
	return s
}

// cloneConfig deep-copies cfg so no caller shares the engine's pointers.
func cloneConfig(cfg Config) Config {
	out := Config{Limits: cfg.Limits}
	if cfg.Queues == nil {
		return out
	}
	out.Queues = make([]QueueConfig, len(cfg.Queues))
	for i, q := range cfg.Queues {
		out.Queues[i] = QueueConfig{
			Name:               q.Name,
			DefaultPriority:    clonePtr(q.DefaultPriority),
			DefaultMaxAttempts: clonePtr(q.DefaultMaxAttempts),
			RetryDelay:         clonePtr(q.RetryDelay),
			RetryBackoff:       clonePtr(q.RetryBackoff),
			RetryDelayMax:      clonePtr(q.RetryDelayMax),
			MaxScheduleHorizon: clonePtr(q.MaxScheduleHorizon),
			MaxLength:          clonePtr(q.MaxLength),
			MaxMemoryBytes:     clonePtr(q.MaxMemoryBytes),
			DeadLetterQueue:    q.DeadLetterQueue,
			MaxReserved:        q.MaxReserved,
			RateLimit:          q.RateLimit,
			RatePeriod:         q.RatePeriod,
			RateBurst:          q.RateBurst,
			ConcurrencyKey:     q.ConcurrencyKey,
			MaxPerKey:          q.MaxPerKey,
			MaxWait:            q.MaxWait,
			FairnessKey:        q.FairnessKey,
			Tags:               slices.Clone(q.Tags),
			CompletedRetention: q.CompletedRetention,
		}
	}
	return out
}

func clonePtr[T any](p *T) *T {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}
