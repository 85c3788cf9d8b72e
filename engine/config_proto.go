package engine

import (
	"time"

	cmdpb "github.com/sepp-io/sepp/proto/seppcmd/v1"
)

// ConfigToProto is cfg in the form the log carries it (a ConfigSet) and
// the engine's snapshot keeps it.
func ConfigToProto(cfg Config) *cmdpb.EngineConfig {
	l := cfg.Limits
	out := &cmdpb.EngineConfig{Limits: &cmdpb.Limits{
		DefaultPriority:           l.DefaultPriority,
		DefaultMaxAttempts:        l.DefaultMaxAttempts,
		MaxAttemptsCeiling:        l.MaxAttemptsCeiling,
		RetryDelayNanos:           int64(l.RetryDelay),
		RetryBackoff:              uint32(l.RetryBackoff),
		RetryDelayMaxNanos:        int64(l.RetryDelayMax),
		MaxScheduleHorizonNanos:   int64(l.MaxScheduleHorizon),
		MaxReserveBatch:           int64(l.MaxReserveBatch),
		DefaultLeaseNanos:         int64(l.DefaultLease),
		MaxLeaseNanos:             int64(l.MaxLease),
		MaxPayloadBytes:           int64(l.MaxPayloadBytes),
		MaxBatchSize:              int64(l.MaxBatchSize),
		MaxCustomFields:           int64(l.MaxCustomFields),
		MaxCustomFieldBytes:       int64(l.MaxCustomFieldBytes),
		MaxJobTypeBytes:           int64(l.MaxJobTypeBytes),
		IdempotencyWindowNanos:    int64(l.IdempotencyWindow),
		MaxIdempotencyKeys:        int64(l.MaxIdempotencyKeys),
		MaxQueueLength:            int64(l.MaxQueueLength),
		MaxDeadLetters:            int64(l.MaxDeadLetters),
		AttemptHistory:            int64(l.AttemptHistory),
		DeadLetterRetentionNanos:  int64(l.DeadLetterRetention),
		Strict:                    l.Strict,
		IdempotencyMinWindowNanos: int64(l.IdempotencyMinWindow),
		MaxMemoryBytes:            l.MaxMemoryBytes,
		MaxDiskBytes:              l.MaxDiskBytes,
	}}
	for _, q := range cfg.Queues {
		pq := &cmdpb.QueueConfig{
			Name:                    q.Name,
			DefaultPriority:         q.DefaultPriority,
			DefaultMaxAttempts:      q.DefaultMaxAttempts,
			RetryDelayNanos:         durationPtrToProto(q.RetryDelay),
			RetryDelayMaxNanos:      durationPtrToProto(q.RetryDelayMax),
			MaxScheduleHorizonNanos: durationPtrToProto(q.MaxScheduleHorizon),
			DeadLetterQueue:         q.DeadLetterQueue,
			MaxMemoryBytes:          cloneInt64Ptr(q.MaxMemoryBytes),
			MaxReserved:             int64(q.MaxReserved),
			RateLimit:               int64(q.RateLimit),
			RatePeriodNanos:         int64(q.RatePeriod),
			RateBurst:               int64(q.RateBurst),
			ConcurrencyKey:          q.ConcurrencyKey,
			MaxPerKey:               int64(q.MaxPerKey),
			MaxWaitNanos:            int64(q.MaxWait),
			FairnessKey:             q.FairnessKey,
			CompletedRetentionNanos: int64(q.CompletedRetention),
		}
		for _, t := range q.Tags { // sorted by key already (Tag)
			pq.Tags = append(pq.Tags, &cmdpb.QueueTag{Key: t.Key, Value: t.Value})
		}
		if q.RetryBackoff != nil {
			b := uint32(*q.RetryBackoff)
			pq.RetryBackoff = &b
		}
		if q.MaxLength != nil {
			n := int64(*q.MaxLength)
			pq.MaxLength = &n
		}
		out.Queues = append(out.Queues, pq)
	}
	return out
}

// ConfigFromProto is the configuration pc carries (ConfigToProto).
func ConfigFromProto(pc *cmdpb.EngineConfig) Config {
	l := pc.GetLimits()
	cfg := Config{Limits: Limits{
		DefaultPriority:      l.GetDefaultPriority(),
		DefaultMaxAttempts:   l.GetDefaultMaxAttempts(),
		MaxAttemptsCeiling:   l.GetMaxAttemptsCeiling(),
		RetryDelay:           time.Duration(l.GetRetryDelayNanos()),
		RetryBackoff:         Backoff(l.GetRetryBackoff()),
		RetryDelayMax:        time.Duration(l.GetRetryDelayMaxNanos()),
		MaxScheduleHorizon:   time.Duration(l.GetMaxScheduleHorizonNanos()),
		MaxReserveBatch:      int(l.GetMaxReserveBatch()),
		DefaultLease:         time.Duration(l.GetDefaultLeaseNanos()),
		MaxLease:             time.Duration(l.GetMaxLeaseNanos()),
		MaxPayloadBytes:      int(l.GetMaxPayloadBytes()),
		MaxBatchSize:         int(l.GetMaxBatchSize()),
		MaxCustomFields:      int(l.GetMaxCustomFields()),
		MaxCustomFieldBytes:  int(l.GetMaxCustomFieldBytes()),
		MaxJobTypeBytes:      int(l.GetMaxJobTypeBytes()),
		IdempotencyWindow:    time.Duration(l.GetIdempotencyWindowNanos()),
		MaxIdempotencyKeys:   int(l.GetMaxIdempotencyKeys()),
		MaxQueueLength:       int(l.GetMaxQueueLength()),
		MaxDeadLetters:       int(l.GetMaxDeadLetters()),
		AttemptHistory:       int(l.GetAttemptHistory()),
		DeadLetterRetention:  time.Duration(l.GetDeadLetterRetentionNanos()),
		Strict:               l.GetStrict(),
		IdempotencyMinWindow: time.Duration(l.GetIdempotencyMinWindowNanos()),
		MaxMemoryBytes:       l.GetMaxMemoryBytes(),
		MaxDiskBytes:         l.GetMaxDiskBytes(),
	}}
	for _, pq := range pc.GetQueues() {
		q := QueueConfig{
			Name:               pq.GetName(),
			RetryDelay:         durationPtrFromProto(pq.RetryDelayNanos),
			RetryDelayMax:      durationPtrFromProto(pq.RetryDelayMaxNanos),
			MaxScheduleHorizon: durationPtrFromProto(pq.MaxScheduleHorizonNanos),
			DeadLetterQueue:    pq.GetDeadLetterQueue(),
			MaxMemoryBytes:     cloneInt64Ptr(pq.MaxMemoryBytes),
			MaxReserved:        int(pq.GetMaxReserved()),
			RateLimit:          int(pq.GetRateLimit()),
			RatePeriod:         time.Duration(pq.GetRatePeriodNanos()),
			RateBurst:          int(pq.GetRateBurst()),
			ConcurrencyKey:     pq.GetConcurrencyKey(),
			MaxPerKey:          int(pq.GetMaxPerKey()),
			MaxWait:            time.Duration(pq.GetMaxWaitNanos()),
			FairnessKey:        pq.GetFairnessKey(),
			CompletedRetention: time.Duration(pq.GetCompletedRetentionNanos()),
		}
		// In the entry's order: the engine refuses tags not sorted by key,
		// so a damaged entry fails alike on every replica.
		for _, t := range pq.GetTags() {
			q.Tags = append(q.Tags, Tag{Key: t.GetKey(), Value: t.GetValue()})
		}
		if pq.DefaultPriority != nil {
			v := pq.GetDefaultPriority()
			q.DefaultPriority = &v
		}
		if pq.DefaultMaxAttempts != nil {
			v := pq.GetDefaultMaxAttempts()
			q.DefaultMaxAttempts = &v
		}
		if pq.RetryBackoff != nil {
			b := Backoff(pq.GetRetryBackoff())
			q.RetryBackoff = &b
		}
		if pq.MaxLength != nil {
			n := int(pq.GetMaxLength())
			q.MaxLength = &n
		}
		cfg.Queues = append(cfg.Queues, q)
	}
	return cfg
}

func durationPtrToProto(d *time.Duration) *int64 {
	if d == nil {
		return nil
	}
	n := int64(*d)
	return &n
}

func durationPtrFromProto(n *int64) *time.Duration {
	if n == nil {
		return nil
	}
	d := time.Duration(*n)
	return &d
}

func cloneInt64Ptr(p *int64) *int64 {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}
