package client

import (
	"context"
	"fmt"
	"time"

	seppv1 "github.com/sepp-io/sepp/proto/sepp/v1"
)

// Queues as managed objects: create, read, update, delete and purge queues
// while the cluster runs. The settings live in the replicated state, so
// every node runs them and a restart keeps them.

// QueueSettings are a queue's own settings; a nil field inherits the
// server's [limits] value (on update: stays as it is).
type QueueSettings struct {
	DefaultPriority    *uint32
	DefaultMaxAttempts *uint32
	RetryDelay         *time.Duration // kept in whole milliseconds
	// RetryBackoff is "none" or "exponential".
	RetryBackoff       *string
	RetryDelayMax      *time.Duration
	MaxScheduleHorizon *time.Duration
	MaxLength          *uint64 // 0: unbounded
	MaxMemoryBytes     *uint64 // 0: no budget of its own
	// DeadLetterQueue receives a copy of every job that dies on the queue;
	// on update, a pointer to "" stops forwarding.
	DeadLetterQueue *string
	// MaxWait dead-letters a job (CauseExpired) not reserved this long
	// after it first became due (whole milliseconds, at least 1ms); drop it
	// with Inherit "max_wait_ms". In Effective, 0 is none.
	MaxWait *time.Duration
	// FairnessKey names the custom field whose values take turns within a
	// priority level; drop it with Inherit "fairness_key". In Effective,
	// "" is none.
	FairnessKey *string
	// CompletedRetention keeps each acked job, with its result, this long
	// (whole milliseconds, 1ms..30 days): GetJob, ListJobs with
	// StateCompleted and WaitJob answer for it, and AckWithResult is
	// accepted. Drop it with Inherit "completed_retention_ms". In
	// Effective, 0 is none.
	CompletedRetention *time.Duration
	// The reserve limits (docs/reserve-limits.md); none has a global
	// value, so nil and 0 (or "") both mean none, and on update a pointer
	// to 0 (or "") drops the limit, as Inherit of its key does. MaxReserved
	// caps the queue's jobs reserved at once, across all workers;
	// RateLimit reservations per RatePeriod (whole milliseconds, 1ms..1h;
	// 0: 1s), up to RateBurst at once (0: RateLimit); MaxPerKey caps the
	// jobs reserved at once per value of the custom field ConcurrencyKey
	// (set both). Counts are 0..1,000,000. In Effective, every one is set
	// (0 and "" for none; RatePeriod 0 without a rate limit).
	MaxReserved    *uint64
	RateLimit      *uint64
	RatePeriod     *time.Duration
	RateBurst      *uint64
	ConcurrencyKey *string
	MaxPerKey      *uint64
	// Tags are key/value labels to find the queue by (ListQueuesByTag);
	// they change nothing about how it runs. At most 50; a key is 1..128
	// bytes of letters, digits, spaces and _ . : / = + - @, a value at most
	// 256 bytes. On update nil leaves them and a non-nil map replaces the
	// whole set: an empty one drops them, as Inherit "tags" does. Not in
	// Effective (tags have no global value). Needs the server's capability
	// queue_tags.
	Tags map[string]string
}

// QueueInfo is one queue: its counts, its own settings and what it runs
// with (Effective, its settings over the global limits).
type QueueInfo struct {
	Stats     QueueStats
	Settings  QueueSettings
	Effective QueueSettings // every field set
}

// QueueUpdate changes a queue: the set fields of Settings replace the
// queue's own, Inherit drops settings by name (default_priority,
// retry_delay_ms, max_reserved, ...) so the queue takes the global value
// again (a reserve limit: none), Paused pauses or resumes it.
type QueueUpdate struct {
	Settings QueueSettings
	Inherit  []string
	Paused   *bool
}

// QueueRemoval counts what a delete or purge removed.
type QueueRemoval struct {
	Jobs        uint64
	DeadLetters uint64
}

// PurgeTarget says what PurgeQueue removes.
type PurgeTarget int

const (
	// PurgeWaiting removes Ready and Scheduled jobs; reserved ones stay.
	PurgeWaiting PurgeTarget = iota + 1
	// PurgeDeadLetters removes the queue's retained dead letters.
	PurgeDeadLetters
)

// CreateQueue adds a queue (AlreadyExists when it is configured already)
// and returns its effective settings. It is not retried once it may have
// been applied: a retry would answer AlreadyExists.
func (c *Client) CreateQueue(ctx context.Context, name string, s QueueSettings, paused bool) (QueueSettings, error) {
	ps, err := queueSettingsToProto(s)
	if err != nil {
		return QueueSettings{}, err
	}
	var out QueueSettings
	err = c.call(ctx, "create queue", retryNotSent, 0, func(ctx context.Context, a *attempt) error {
		resp, err := seppv1.NewAdminServiceClient(a.cc).CreateQueue(ctx, &seppv1.CreateQueueRequest{Name: name, Settings: ps, Paused: paused}, c.opts.callOptions...)
		if err != nil {
			return err
		}
		out = queueLimitsFromProto(resp.GetEffective())
		return nil
	})
	return out, err
}

// GetQueue returns one queue (NotFound when it does not exist).
func (c *Client) GetQueue(ctx context.Context, name string, stale bool) (*QueueInfo, error) {
	var out *QueueInfo
	err := c.call(ctx, "get queue", retrySafe, 0, func(ctx context.Context, a *attempt) error {
		resp, err := seppv1.NewAdminServiceClient(a.cc).GetQueue(ctx, &seppv1.GetQueueRequest{Name: name, AllowStale: stale}, c.opts.callOptions...)
		if err != nil {
			return err
		}
		out = &QueueInfo{
			Stats:     queueStatsFromProto(resp.GetSummary()),
			Settings:  queueSettingsFromProto(resp.GetSettings()),
			Effective: queueLimitsFromProto(resp.GetEffective()),
		}
		return nil
	})
	return out, err
}

// UpdateQueue changes a queue and returns its effective settings. It is
// idempotent, so it is retried like a read.
func (c *Client) UpdateQueue(ctx context.Context, name string, u QueueUpdate) (QueueSettings, error) {
	ps, err := queueSettingsToProto(u.Settings)
	if err != nil {
		return QueueSettings{}, err
	}
	var out QueueSettings
	err = c.call(ctx, "update queue", retrySafe, 0, func(ctx context.Context, a *attempt) error {
		resp, err := seppv1.NewAdminServiceClient(a.cc).UpdateQueue(ctx, &seppv1.UpdateQueueRequest{Name: name, Settings: ps, Inherit: u.Inherit, Paused: u.Paused}, c.opts.callOptions...)
		if err != nil {
			return err
		}
		out = queueLimitsFromProto(resp.GetEffective())
		return nil
	})
	return out, err
}

// DeleteQueue removes a queue; one holding jobs or dead letters is refused
// (FailedPrecondition) unless force is set, and a forced delete counts
// what it removed. Not retried once it may have been applied.
func (c *Client) DeleteQueue(ctx context.Context, name string, force bool) (QueueRemoval, error) {
	var out QueueRemoval
	err := c.call(ctx, "delete queue", retryNotSent, 0, func(ctx context.Context, a *attempt) error {
		resp, err := seppv1.NewAdminServiceClient(a.cc).DeleteQueue(ctx, &seppv1.DeleteQueueRequest{Name: name, Force: force}, c.opts.callOptions...)
		if err != nil {
			return err
		}
		out = QueueRemoval{Jobs: resp.GetJobsRemoved(), DeadLetters: resp.GetDeadLettersRemoved()}
		return nil
	})
	return out, err
}

// PurgeQueue removes a queue's waiting jobs or dead letters and counts
// them. Not retried once it may have been applied.
func (c *Client) PurgeQueue(ctx context.Context, name string, target PurgeTarget) (QueueRemoval, error) {
	var pt seppv1.PurgeTarget
	switch target {
	case PurgeWaiting:
		pt = seppv1.PurgeTarget_PURGE_TARGET_WAITING
	case PurgeDeadLetters:
		pt = seppv1.PurgeTarget_PURGE_TARGET_DEAD_LETTERS
	default:
		return QueueRemoval{}, fmt.Errorf("sepp: purge target must be PurgeWaiting or PurgeDeadLetters, got %d", target)
	}
	var out QueueRemoval
	err := c.call(ctx, "purge queue", retryNotSent, 0, func(ctx context.Context, a *attempt) error {
		resp, err := seppv1.NewAdminServiceClient(a.cc).PurgeQueue(ctx, &seppv1.PurgeQueueRequest{Name: name, Target: pt}, c.opts.callOptions...)
		if err != nil {
			return err
		}
		out = QueueRemoval{Jobs: resp.GetJobsRemoved(), DeadLetters: resp.GetDeadLettersRemoved()}
		return nil
	})
	return out, err
}

func queueSettingsToProto(s QueueSettings) (*seppv1.QueueSettings, error) {
	ms := func(d *time.Duration) *int64 {
		if d == nil {
			return nil
		}
		v := d.Milliseconds()
		return &v
	}
	out := &seppv1.QueueSettings{
		DefaultPriority:      s.DefaultPriority,
		DefaultMaxAttempts:   s.DefaultMaxAttempts,
		RetryDelayMs:         ms(s.RetryDelay),
		RetryDelayMaxMs:      ms(s.RetryDelayMax),
		MaxScheduleHorizonMs: ms(s.MaxScheduleHorizon),
		MaxLength:            s.MaxLength,
		MaxMemoryBytes:       s.MaxMemoryBytes,
		DeadLetterQueue:      s.DeadLetterQueue,
		MaxWaitMs:            ms(s.MaxWait),
		FairnessKey:          s.FairnessKey,
		CompletedRetentionMs: ms(s.CompletedRetention),
		MaxReserved:          s.MaxReserved,
		RateLimit:            s.RateLimit,
		RatePeriodMs:         ms(s.RatePeriod),
		RateBurst:            s.RateBurst,
		ConcurrencyKey:       s.ConcurrencyKey,
		MaxPerKey:            s.MaxPerKey,
	}
	if s.Tags != nil {
		out.Tags = &seppv1.QueueTags{Tags: s.Tags}
	}
	if s.RetryBackoff != nil {
		var b seppv1.RetryBackoff
		switch *s.RetryBackoff {
		case "none":
			b = seppv1.RetryBackoff_RETRY_BACKOFF_NONE
		case "exponential":
			b = seppv1.RetryBackoff_RETRY_BACKOFF_EXPONENTIAL
		default:
			return nil, fmt.Errorf("sepp: retry backoff must be none or exponential, got %q", *s.RetryBackoff)
		}
		out.RetryBackoff = &b
	}
	return out, nil
}

func backoffName(b seppv1.RetryBackoff) string {
	if b == seppv1.RetryBackoff_RETRY_BACKOFF_EXPONENTIAL {
		return "exponential"
	}
	return "none"
}

func queueSettingsFromProto(p *seppv1.QueueSettings) QueueSettings {
	dur := func(v *int64) *time.Duration {
		if v == nil {
			return nil
		}
		d := time.Duration(*v) * time.Millisecond
		return &d
	}
	out := QueueSettings{
		DefaultPriority:    p.DefaultPriority,
		DefaultMaxAttempts: p.DefaultMaxAttempts,
		RetryDelay:         dur(p.RetryDelayMs),
		RetryDelayMax:      dur(p.RetryDelayMaxMs),
		MaxScheduleHorizon: dur(p.MaxScheduleHorizonMs),
		MaxLength:          p.MaxLength,
		MaxMemoryBytes:     p.MaxMemoryBytes,
		DeadLetterQueue:    p.DeadLetterQueue,
		MaxWait:            dur(p.MaxWaitMs),
		FairnessKey:        p.FairnessKey,
		CompletedRetention: dur(p.CompletedRetentionMs),
		MaxReserved:        p.MaxReserved,
		RateLimit:          p.RateLimit,
		RatePeriod:         dur(p.RatePeriodMs),
		RateBurst:          p.RateBurst,
		ConcurrencyKey:     p.ConcurrencyKey,
		MaxPerKey:          p.MaxPerKey,
	}
	if p.Tags != nil {
		out.Tags = p.GetTags().GetTags()
		if out.Tags == nil {
			out.Tags = map[string]string{}
		}
	}
	if p.RetryBackoff != nil {
		b := backoffName(p.GetRetryBackoff())
		out.RetryBackoff = &b
	}
	return out
}

func queueLimitsFromProto(l *seppv1.QueueLimits) QueueSettings {
	ms := func(v int64) *time.Duration { d := time.Duration(v) * time.Millisecond; return &d }
	b := backoffName(l.GetRetryBackoff())
	dlq := l.GetDeadLetterQueue()
	return QueueSettings{
		DefaultPriority:    ptrTo(l.GetDefaultPriority()),
		DefaultMaxAttempts: ptrTo(l.GetDefaultMaxAttempts()),
		RetryDelay:         ms(l.GetRetryDelayMs()),
		RetryBackoff:       &b,
		RetryDelayMax:      ms(l.GetRetryDelayMaxMs()),
		MaxScheduleHorizon: ms(l.GetMaxScheduleHorizonMs()),
		MaxLength:          ptrTo(l.GetMaxLength()),
		MaxMemoryBytes:     ptrTo(l.GetMaxMemoryBytes()),
		DeadLetterQueue:    &dlq,
		MaxWait:            ms(l.GetMaxWaitMs()),
		FairnessKey:        ptrTo(l.GetFairnessKey()),
		CompletedRetention: ms(l.GetCompletedRetentionMs()),
		MaxReserved:        ptrTo(l.GetMaxReserved()),
		RateLimit:          ptrTo(l.GetRateLimit()),
		RatePeriod:         ms(l.GetRatePeriodMs()),
		RateBurst:          ptrTo(l.GetRateBurst()),
		ConcurrencyKey:     ptrTo(l.GetConcurrencyKey()),
		MaxPerKey:          ptrTo(l.GetMaxPerKey()),
	}
}

func ptrTo[T any](v T) *T { return &v }
