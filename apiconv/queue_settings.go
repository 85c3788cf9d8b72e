package apiconv

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/sepp-io/sepp/engine"
	seppv1 "github.com/sepp-io/sepp/proto/sepp/v1"
)

// Queue settings: the public QueueSettings and the engine's QueueConfig.
// A new queue setting is a field of QueueSettings, of engine.QueueConfig,
// and a line in each direction here; the log needs nothing of its own,
// since a QueueCreate or QueueUpdate of command version 21 holds the
// public message itself.

// QueueConfig turns the API's settings of queue name (milliseconds,
// enums; an unset field inherits) into the engine's overrides. It checks
// what the API states (units, ranges, tags); the engine checks the values
// against the limits.
func QueueConfig(name string, p *seppv1.QueueSettings) (engine.QueueConfig, error) {
	qc := engine.QueueConfig{Name: name}
	if p == nil {
		return qc, nil
	}
	qc.DefaultPriority = clonePtr(p.DefaultPriority)
	qc.DefaultMaxAttempts = clonePtr(p.DefaultMaxAttempts)
	var err error
	if qc.RetryDelay, err = millis("retry_delay_ms", p.RetryDelayMs); err != nil {
		return qc, err
	}
	if qc.RetryDelayMax, err = millis("retry_delay_max_ms", p.RetryDelayMaxMs); err != nil {
		return qc, err
	}
	if qc.MaxScheduleHorizon, err = millis("max_schedule_horizon_ms", p.MaxScheduleHorizonMs); err != nil {
		return qc, err
	}
	if p.RetryBackoff != nil {
		var b engine.Backoff
		switch p.GetRetryBackoff() {
		case seppv1.RetryBackoff_RETRY_BACKOFF_NONE:
			b = engine.BackoffNone
		case seppv1.RetryBackoff_RETRY_BACKOFF_EXPONENTIAL:
			b = engine.BackoffExponential
		default:
			return qc, invalid("settings.retry_backoff", "RETRY_BACKOFF_NONE or RETRY_BACKOFF_EXPONENTIAL", "must be RETRY_BACKOFF_NONE or RETRY_BACKOFF_EXPONENTIAL, got %v", p.GetRetryBackoff())
		}
		qc.RetryBackoff = &b
	}
	if p.MaxLength != nil {
		if *p.MaxLength > math.MaxInt32 {
			return qc, invalid("settings.max_length", "0..2147483647", "is %d, above 2147483647", *p.MaxLength)
		}
		n := int(*p.MaxLength)
		qc.MaxLength = &n
	}
	if p.MaxMemoryBytes != nil {
		if *p.MaxMemoryBytes > math.MaxInt64 {
			return qc, invalid("settings.max_memory_bytes", "0..2^63-1", "is %d, too large", *p.MaxMemoryBytes)
		}
		n := int64(*p.MaxMemoryBytes)
		qc.MaxMemoryBytes = &n
	}
	qc.DeadLetterQueue = p.GetDeadLetterQueue()
	if p.MaxWaitMs != nil {
		d, err := millis("max_wait_ms", p.MaxWaitMs)
		if err != nil {
			return qc, err
		}
		if *d == 0 {
			return qc, invalid("settings.max_wait_ms", ">= 1", "is 0; to drop it, list max_wait_ms in inherit")
		}
		qc.MaxWait = *d
	}
	if p.CompletedRetentionMs != nil {
		// As max_wait_ms: 0 is the default, and dropping a retention is
		// inherit's, so an explicit 0 is a mistake worth naming.
		v, limit := p.GetCompletedRetentionMs(), engine.MaxCompletedRetention.Milliseconds()
		switch {
		case v == 0:
			return qc, invalid("settings.completed_retention_ms", "1.."+strconv.FormatInt(limit, 10),
				"must be 1..%d ms, got 0; 0 (keep no completed job) is the default: leave it unset, or to drop it list completed_retention_ms in inherit", limit)
		case v < 0 || v > limit:
			return qc, invalid("settings.completed_retention_ms", "1.."+strconv.FormatInt(limit, 10),
				"must be 1..%d ms (30 days), got %d", limit, v)
		}
		qc.CompletedRetention = time.Duration(v) * time.Millisecond
	}
	if p.FairnessKey != nil {
		if p.GetFairnessKey() == "" {
			return qc, invalid("settings.fairness_key", "a custom field name", "is empty; to drop it, list fairness_key in inherit")
		}
		qc.FairnessKey = p.GetFairnessKey()
	}
	if err := reserveLimits(&qc, p); err != nil {
		return qc, err
	}
	if p.Tags != nil {
		tags, err := queueTags(p.GetTags().GetTags())
		if err != nil {
			return qc, err
		}
		qc.Tags = tags
	}
	return qc, nil
}

// QueueUpdate turns an UpdateQueueRequest's parts (the queue's name, the
// settings to set, the keys to inherit, the pause to set) into the
// engine's update. The settings' field presence says what is set: a
// present dead_letter_queue sets it (empty: none), a present QueueTags
// replaces the whole set (empty: none), and a reserve limit set to 0 (or
// an empty concurrency_key) is dropped, as when inherit names it, since
// none has a global value.
func QueueUpdate(name string, p *seppv1.QueueSettings, inherit []string, paused *bool) (engine.QueueUpdate, error) {
	set, err := QueueConfig(name, p)
	if err != nil {
		return engine.QueueUpdate{}, err
	}
	set.Name = ""
	return engine.QueueUpdate{
		Name:               name,
		Set:                set,
		SetDeadLetterQueue: p != nil && p.DeadLetterQueue != nil,
		SetTags:            p.GetTags() != nil,
		Inherit:            append(slices.Clone(inherit), reserveLimitsZeroed(p)...),
		Paused:             clonePtr(paused),
	}, nil
}

// QueueSettings is a queue's own settings in the API's form; unset ones
// inherit. It is QueueConfig's inverse for every config QueueConfig
// returns: durations the API states in milliseconds are whole
// milliseconds there.
func QueueSettings(q engine.QueueConfig) *seppv1.QueueSettings {
	out := &seppv1.QueueSettings{
		DefaultPriority:    clonePtr(q.DefaultPriority),
		DefaultMaxAttempts: clonePtr(q.DefaultMaxAttempts),
	}
	msOf := func(d *time.Duration) *int64 {
		if d == nil {
			return nil
		}
		v := d.Milliseconds()
		return &v
	}
	out.RetryDelayMs = msOf(q.RetryDelay)
	out.RetryDelayMaxMs = msOf(q.RetryDelayMax)
	out.MaxScheduleHorizonMs = msOf(q.MaxScheduleHorizon)
	if q.RetryBackoff != nil {
		b := Backoff(*q.RetryBackoff)
		out.RetryBackoff = &b
	}
	if q.MaxLength != nil {
		n := Uint64OrZero(*q.MaxLength)
		out.MaxLength = &n
	}
	if q.MaxMemoryBytes != nil {
		n := uint64(max(*q.MaxMemoryBytes, 0))
		out.MaxMemoryBytes = &n
	}
	if q.MaxWait != 0 {
		v := q.MaxWait.Milliseconds()
		out.MaxWaitMs = &v
	}
	if q.FairnessKey != "" {
		k := q.FairnessKey
		out.FairnessKey = &k
	}
	if q.CompletedRetention != 0 {
		v := q.CompletedRetention.Milliseconds()
		out.CompletedRetentionMs = &v
	}
	if q.DeadLetterQueue != "" {
		d := q.DeadLetterQueue
		out.DeadLetterQueue = &d
	}
	// The reserve limits the queue sets (0 and "" are none).
	count := func(v int) *uint64 {
		if v == 0 {
			return nil
		}
		n := uint64(max(v, 0))
		return &n
	}
	out.MaxReserved, out.RateLimit, out.RateBurst, out.MaxPerKey = count(q.MaxReserved), count(q.RateLimit), count(q.RateBurst), count(q.MaxPerKey)
	if q.RatePeriod != 0 {
		v := q.RatePeriod.Milliseconds()
		out.RatePeriodMs = &v
	}
	if q.ConcurrencyKey != "" {
		k := q.ConcurrencyKey
		out.ConcurrencyKey = &k
	}
	if len(q.Tags) > 0 {
		out.Tags = &seppv1.QueueTags{Tags: engine.TagsMap(q.Tags)}
	}
	return out
}

// QueueUpdateSettings is QueueUpdate's inverse: the settings and inherit
// list of an UpdateQueueRequest that QueueUpdate turns back into u, for
// every u QueueUpdate returns. The leader writes a QueueUpdate command of
// version 21 from it (fsm.UpdateQueueCommand), where the rpc layer
// proposed the engine's form.
func QueueUpdateSettings(u engine.QueueUpdate) (settings *seppv1.QueueSettings, inherit []string) {
	set := u.Set
	set.Name = ""
	if !u.SetTags {
		set.Tags = nil // tags that are not set are not the update's
	}
	settings = QueueSettings(set)
	if u.SetDeadLetterQueue {
		// Present, even empty: it sets the queue's target (or none).
		d := u.Set.DeadLetterQueue
		settings.DeadLetterQueue = &d
	} else {
		settings.DeadLetterQueue = nil
	}
	if u.SetTags {
		// Present, even empty: it replaces the whole set.
		settings.Tags = &seppv1.QueueTags{Tags: engine.TagsMap(u.Set.Tags)}
	}
	return settings, slices.Clone(u.Inherit)
}

// Backoff is the API's name of a retry backoff.
func Backoff(b engine.Backoff) seppv1.RetryBackoff {
	switch b {
	case engine.BackoffNone:
		return seppv1.RetryBackoff_RETRY_BACKOFF_NONE
	case engine.BackoffExponential:
		return seppv1.RetryBackoff_RETRY_BACKOFF_EXPONENTIAL
	}
	return seppv1.RetryBackoff_RETRY_BACKOFF_UNSPECIFIED
}

// Uint64OrZero is n for the API's unsigned fields, a negative n as 0.
func Uint64OrZero(n int) uint64 {
	if n < 0 {
		return 0
	}
	return uint64(n)
}

// millis is a duration the API states in milliseconds, nil when unset.
func millis(field string, v *int64) (*time.Duration, error) {
	if v == nil {
		return nil, nil
	}
	if *v > math.MaxInt64/int64(time.Millisecond) || *v < math.MinInt64/int64(time.Millisecond) {
		return nil, invalid("settings."+field, "milliseconds in an int64 of nanoseconds", "is %d ms, too large", *v)
	}
	d := time.Duration(*v) * time.Millisecond
	return &d, nil
}

// queueTags checks the API's tags against the limits, naming the
// offending tag as the request spells it, and sorts them by key (the
// engine's form; the map's order is random, and the state machine must not
// depend on it).
func queueTags(m map[string]string) ([]engine.Tag, error) {
	if len(m) > engine.MaxQueueTags {
		return nil, invalid("settings.tags.tags", "at most 50 tags", "holds %d tags, above the limit of %d", len(m), engine.MaxQueueTags)
	}
	tags := engine.TagsFromMap(m)
	for _, t := range tags { // sorted: the first bad key is the same on every call
		if reason := engine.CheckTag(t.Key, t.Value); reason != "" {
			return nil, invalid(fmt.Sprintf("settings.tags.tags[%q]", t.Key), tagLimitText, "%s", reason)
		}
	}
	return tags, nil
}

// tagLimitText is the limits of one tag as an error's detail states them.
const tagLimitText = "key 1..128 bytes of letters, digits, spaces and _ . : / = + - @; value 0..256 bytes; valid UTF-8"

// Bounds of the reserve limits as the API states them (the engine checks
// the same, naming the queue's config key, and how they combine).
const (
	maxReserveLimitCount  = 1_000_000
	maxRatePeriodMs       = 3_600_000
	maxConcurrencyKeyLen  = 256
	reserveLimitCountText = "0..1000000"
)

// reserveLimits sets qc's reserve limits from the API's; 0 (or "") leaves
// one unset, which on update drops it (reserveLimitsZeroed).
func reserveLimits(qc *engine.QueueConfig, p *seppv1.QueueSettings) error {
	count := func(field string, v *uint64, dst *int) error {
		if v == nil {
			return nil
		}
		if *v > maxReserveLimitCount {
			return invalid("settings."+field, reserveLimitCountText, "is %d, above %d (0 is none)", *v, maxReserveLimitCount)
		}
		*dst = int(*v)
		return nil
	}
	if err := count("max_reserved", p.MaxReserved, &qc.MaxReserved); err != nil {
		return err
	}
	if err := count("rate_limit", p.RateLimit, &qc.RateLimit); err != nil {
		return err
	}
	if err := count("rate_burst", p.RateBurst, &qc.RateBurst); err != nil {
		return err
	}
	if err := count("max_per_key", p.MaxPerKey, &qc.MaxPerKey); err != nil {
		return err
	}
	if p.RatePeriodMs != nil {
		if v := p.GetRatePeriodMs(); v < 0 || v > maxRatePeriodMs {
			return invalid("settings.rate_period_ms", "1..3600000", "is %d ms; must be 1..%d (1 ms to 1 h; 0 is 1000)", v, maxRatePeriodMs)
		}
		qc.RatePeriod = time.Duration(p.GetRatePeriodMs()) * time.Millisecond
	}
	if p.ConcurrencyKey != nil {
		if n := len(p.GetConcurrencyKey()); n > maxConcurrencyKeyLen {
			return invalid("settings.concurrency_key", "256 bytes", "is %d bytes, above the limit of %d", n, maxConcurrencyKeyLen)
		}
		qc.ConcurrencyKey = p.GetConcurrencyKey()
	}
	return nil
}

// reserveLimitsZeroed names the reserve limits p sets to 0 (or to "" for
// concurrency_key): on update they are dropped, as inherit would.
func reserveLimitsZeroed(p *seppv1.QueueSettings) []string {
	if p == nil {
		return nil
	}
	var out []string
	for _, z := range []struct {
		key  string
		zero bool
	}{
		{"max_reserved", p.MaxReserved != nil && p.GetMaxReserved() == 0},
		{"rate_limit", p.RateLimit != nil && p.GetRateLimit() == 0},
		{"rate_period_ms", p.RatePeriodMs != nil && p.GetRatePeriodMs() == 0},
		{"rate_burst", p.RateBurst != nil && p.GetRateBurst() == 0},
		{"concurrency_key", p.ConcurrencyKey != nil && p.GetConcurrencyKey() == ""},
		{"max_per_key", p.MaxPerKey != nil && p.GetMaxPerKey() == 0},
	} {
		if z.zero {
			out = append(out, z.key)
		}
	}
	return out
}

// invalid is a rejected field of the request, with the limit it broke.
func invalid(field, limit, format string, args ...any) error {
	return &engine.FieldError{Field: field, Limit: limit, Reason: fmt.Sprintf(format, args...), Err: engine.ErrInvalidArgument}
}

func clonePtr[T any](p *T) *T {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}
