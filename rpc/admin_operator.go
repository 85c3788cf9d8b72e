package rpc

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/sepp-io/sepp/engine"
	seppv1 "github.com/sepp-io/sepp/proto/sepp/v1"
)

// Queues as managed objects (engine/queues.go) on the AdminService: GetQueue
// reads (viewer); CreateQueue, UpdateQueue, DeleteQueue and PurgeQueue act
// (operator) through the log.

func (s *adminService) GetQueue(ctx context.Context, req *seppv1.GetQueueRequest) (*seppv1.GetQueueResponse, error) {
	var stats engine.QueueStats
	var own engine.QueueConfig
	var lim engine.Limits
	if err := s.b.Read(ctx, req.GetAllowStale(), func(e engine.View) error {
		var err error
		if stats, err = e.QueueStats(s.now(), req.GetName()); err != nil {
			return renameField(err, "queue", "name")
		}
		cfg := e.Config()
		lim = cfg.Limits
		own = engine.QueueConfig{Name: req.GetName()}
		for _, q := range cfg.Queues {
			if q.Name == req.GetName() {
				own = q
			}
		}
		return nil
	}); err != nil {
		return nil, err
	}
	return &seppv1.GetQueueResponse{
		Summary:   queueStatsToProto(stats),
		Settings:  queueSettingsToProto(own),
		Effective: queueLimitsToProto(own, lim),
		Stale:     s.isStale(req.GetAllowStale()),
	}, nil
}

func (s *adminService) CreateQueue(ctx context.Context, req *seppv1.CreateQueueRequest) (*seppv1.CreateQueueResponse, error) {
	qc, err := queueSettingsFromProto(req.GetName(), req.GetSettings())
	if err != nil {
		return nil, err
	}
	if _, err := Propose(ctx, s.b, engine.CreateQueueOp{Config: qc, Paused: req.GetPaused()}); err != nil {
		return nil, err
	}
	eff, err := s.effective(ctx, req.GetName())
	if err != nil {
		return nil, err
	}
	return &seppv1.CreateQueueResponse{Effective: eff}, nil
}

func (s *adminService) UpdateQueue(ctx context.Context, req *seppv1.UpdateQueueRequest) (*seppv1.UpdateQueueResponse, error) {
	set, err := queueSettingsFromProto(req.GetName(), req.GetSettings())
	if err != nil {
		return nil, err
	}
	u := engine.QueueUpdate{
		Name:               req.GetName(),
		Set:                set,
		SetDeadLetterQueue: req.GetSettings() != nil && req.GetSettings().DeadLetterQueue != nil,
		// A present QueueTags replaces the whole set, an empty one too.
		SetTags: req.GetSettings().GetTags() != nil,
		// A reserve limit set to 0 (or an empty concurrency_key) is
		// dropped, as when inherit names it: none has a global value.
		Inherit: append(slices.Clone(req.GetInherit()), reserveLimitsZeroed(req.GetSettings())...),
		Paused:  req.Paused,
	}
	u.Set.Name = ""
	if _, err := Propose(ctx, s.b, engine.UpdateQueueOp{Update: u}); err != nil {
		return nil, renameField(err, "queue", "name")
	}
	eff, err := s.effective(ctx, req.GetName())
	if err != nil {
		return nil, err
	}
	return &seppv1.UpdateQueueResponse{Effective: eff}, nil
}

func (s *adminService) DeleteQueue(ctx context.Context, req *seppv1.DeleteQueueRequest) (*seppv1.DeleteQueueResponse, error) {
	res, err := Propose(ctx, s.b, engine.DeleteQueueOp{Queue: req.GetName(), Force: req.GetForce()})
	if err != nil {
		return nil, renameField(err, "queue", "name")
	}
	return &seppv1.DeleteQueueResponse{JobsRemoved: uint64(res.Jobs), DeadLettersRemoved: uint64(res.DeadLetters)}, nil
}

func (s *adminService) PurgeQueue(ctx context.Context, req *seppv1.PurgeQueueRequest) (*seppv1.PurgeQueueResponse, error) {
	var target engine.PurgeTarget
	switch req.GetTarget() {
	case seppv1.PurgeTarget_PURGE_TARGET_WAITING:
		target = engine.PurgeWaiting
	case seppv1.PurgeTarget_PURGE_TARGET_DEAD_LETTERS:
		target = engine.PurgeDeadLetters
	default:
		return nil, invalidField("target", "PURGE_TARGET_WAITING or PURGE_TARGET_DEAD_LETTERS", "must be PURGE_TARGET_WAITING or PURGE_TARGET_DEAD_LETTERS, got %v", req.GetTarget())
	}
	res, err := Propose(ctx, s.b, engine.PurgeQueueOp{Queue: req.GetName(), Target: target})
	if err != nil {
		return nil, renameField(err, "queue", "name")
	}
	return &seppv1.PurgeQueueResponse{JobsRemoved: uint64(res.Jobs), DeadLettersRemoved: uint64(res.DeadLetters)}, nil
}

// effective reads a queue's effective settings after a write (on the
// leader, which has just applied it).
func (s *adminService) effective(ctx context.Context, name string) (*seppv1.QueueLimits, error) {
	var out *seppv1.QueueLimits
	err := s.b.Read(ctx, true, func(e engine.View) error {
		cfg := e.Config()
		own := engine.QueueConfig{Name: name}
		for _, q := range cfg.Queues {
			if q.Name == name {
				own = q
			}
		}
		out = queueLimitsToProto(own, cfg.Limits)
		return nil
	})
	return out, err
}

// queueSettingsFromProto turns the API's settings (milliseconds, enums)
// into engine overrides; the engine checks the values against the limits.
func queueSettingsFromProto(name string, p *seppv1.QueueSettings) (engine.QueueConfig, error) {
	qc := engine.QueueConfig{Name: name}
	if p == nil {
		return qc, nil
	}
	qc.DefaultPriority = p.DefaultPriority
	qc.DefaultMaxAttempts = p.DefaultMaxAttempts
	ms := func(field string, v *int64) (*time.Duration, error) {
		if v == nil {
			return nil, nil
		}
		if *v > math.MaxInt64/int64(time.Millisecond) || *v < math.MinInt64/int64(time.Millisecond) {
			return nil, invalidField("settings."+field, "milliseconds in an int64 of nanoseconds", "is %d ms, too large", *v)
		}
		d := time.Duration(*v) * time.Millisecond
		return &d, nil
	}
	var err error
	if qc.RetryDelay, err = ms("retry_delay_ms", p.RetryDelayMs); err != nil {
		return qc, err
	}
	if qc.RetryDelayMax, err = ms("retry_delay_max_ms", p.RetryDelayMaxMs); err != nil {
		return qc, err
	}
	if qc.MaxScheduleHorizon, err = ms("max_schedule_horizon_ms", p.MaxScheduleHorizonMs); err != nil {
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
			return qc, invalidField("settings.retry_backoff", "RETRY_BACKOFF_NONE or RETRY_BACKOFF_EXPONENTIAL", "must be RETRY_BACKOFF_NONE or RETRY_BACKOFF_EXPONENTIAL, got %v", p.GetRetryBackoff())
		}
		qc.RetryBackoff = &b
	}
	if p.MaxLength != nil {
		if *p.MaxLength > math.MaxInt32 {
			return qc, invalidField("settings.max_length", "0..2147483647", "is %d, above 2147483647", *p.MaxLength)
		}
		n := int(*p.MaxLength)
		qc.MaxLength = &n
	}
	if p.MaxMemoryBytes != nil {
		if *p.MaxMemoryBytes > math.MaxInt64 {
			return qc, invalidField("settings.max_memory_bytes", "0..2^63-1", "is %d, too large", *p.MaxMemoryBytes)
		}
		n := int64(*p.MaxMemoryBytes)
		qc.MaxMemoryBytes = &n
	}
	qc.DeadLetterQueue = p.GetDeadLetterQueue()
	if p.MaxWaitMs != nil {
		d, err := ms("max_wait_ms", p.MaxWaitMs)
		if err != nil {
			return qc, err
		}
		if *d == 0 {
			return qc, invalidField("settings.max_wait_ms", ">= 1", "is 0; to drop it, list max_wait_ms in inherit")
		}
		qc.MaxWait = *d
	}
	if p.CompletedRetentionMs != nil {
		// As max_wait_ms: 0 is the default, and dropping a retention is
		// inherit's, so an explicit 0 is a mistake worth naming.
		v, limit := p.GetCompletedRetentionMs(), engine.MaxCompletedRetention.Milliseconds()
		switch {
		case v == 0:
			return qc, invalidField("settings.completed_retention_ms", "1.."+strconv.FormatInt(limit, 10),
				"must be 1..%d ms, got 0; 0 (keep no completed job) is the default: leave it unset, or to drop it list completed_retention_ms in inherit", limit)
		case v < 0 || v > limit:
			return qc, invalidField("settings.completed_retention_ms", "1.."+strconv.FormatInt(limit, 10),
				"must be 1..%d ms (30 days), got %d", limit, v)
		}
		qc.CompletedRetention = time.Duration(v) * time.Millisecond
	}
	if p.FairnessKey != nil {
		if p.GetFairnessKey() == "" {
			return qc, invalidField("settings.fairness_key", "a custom field name", "is empty; to drop it, list fairness_key in inherit")
		}
		qc.FairnessKey = p.GetFairnessKey()
	}
	if err := reserveLimitsFromProto(&qc, p); err != nil {
		return qc, err
	}
	if p.Tags != nil {
		tags, err := queueTagsFromProto(p.GetTags().GetTags())
		if err != nil {
			return qc, err
		}
		qc.Tags = tags
	}
	return qc, nil
}

// queueTagsFromProto checks the API's tags against the limits, naming the
// offending tag as the request spells it, and sorts them by key (the
// engine's form; the map's order is random).
func queueTagsFromProto(m map[string]string) ([]engine.Tag, error) {
	if len(m) > engine.MaxQueueTags {
		return nil, invalidField("settings.tags.tags", "at most 50 tags", "holds %d tags, above the limit of %d", len(m), engine.MaxQueueTags)
	}
	tags := engine.TagsFromMap(m)
	for _, t := range tags { // sorted: the first bad key is the same on every call
		if reason := engine.CheckTag(t.Key, t.Value); reason != "" {
			return nil, invalidField(fmt.Sprintf("settings.tags.tags[%q]", t.Key), tagLimitText, "%s", reason)
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

// reserveLimitsFromProto sets qc's reserve limits from the API's; 0 (or
// "") leaves one unset, which on update drops it (reserveLimitsZeroed).
func reserveLimitsFromProto(qc *engine.QueueConfig, p *seppv1.QueueSettings) error {
	count := func(field string, v *uint64, dst *int) error {
		if v == nil {
			return nil
		}
		if *v > maxReserveLimitCount {
			return invalidField("settings."+field, reserveLimitCountText, "is %d, above %d (0 is none)", *v, maxReserveLimitCount)
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
			return invalidField("settings.rate_period_ms", "1..3600000", "is %d ms; must be 1..%d (1 ms to 1 h; 0 is 1000)", v, maxRatePeriodMs)
		}
		qc.RatePeriod = time.Duration(p.GetRatePeriodMs()) * time.Millisecond
	}
	if p.ConcurrencyKey != nil {
		if n := len(p.GetConcurrencyKey()); n > maxConcurrencyKeyLen {
			return invalidField("settings.concurrency_key", "256 bytes", "is %d bytes, above the limit of %d", n, maxConcurrencyKeyLen)
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

// queueSettingsToProto is a queue's own settings; unset ones inherit.
func queueSettingsToProto(q engine.QueueConfig) *seppv1.QueueSettings {
	out := &seppv1.QueueSettings{
		DefaultPriority:    q.DefaultPriority,
		DefaultMaxAttempts: q.DefaultMaxAttempts,
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
		b := backoffToProto(*q.RetryBackoff)
		out.RetryBackoff = &b
	}
	if q.MaxLength != nil {
		n := uint64OrZero(*q.MaxLength)
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

// Actions on live jobs (engine/jobactions.go).

func (s *adminService) actOnJobs(ctx context.Context, rawIDs []uint64, p engine.JobActionParams) ([]*seppv1.JobActionResult, error) {
	ids, err := jobIDs("job_ids", rawIDs)
	if err != nil {
		return nil, err
	}
	p.IDs = ids
	res, err := Propose(ctx, s.b, engine.ActOnJobsOp{Params: p})
	if err != nil {
		return nil, err
	}
	return itemResultsToProto(res), nil
}

func (s *adminService) DeleteJobs(ctx context.Context, req *seppv1.DeleteJobsRequest) (*seppv1.DeleteJobsResponse, error) {
	res, err := s.actOnJobs(ctx, req.GetJobIds(), engine.JobActionParams{Action: engine.JobActionDelete})
	if err != nil {
		return nil, err
	}
	return &seppv1.DeleteJobsResponse{Results: res}, nil
}

func (s *adminService) RunJobsNow(ctx context.Context, req *seppv1.RunJobsNowRequest) (*seppv1.RunJobsNowResponse, error) {
	res, err := s.actOnJobs(ctx, req.GetJobIds(), engine.JobActionParams{Action: engine.JobActionRunNow})
	if err != nil {
		return nil, err
	}
	return &seppv1.RunJobsNowResponse{Results: res}, nil
}

func (s *adminService) RescheduleJobs(ctx context.Context, req *seppv1.RescheduleJobsRequest) (*seppv1.RescheduleJobsResponse, error) {
	if req.GetRunAt() == nil {
		return nil, invalidField("run_at", "a timestamp", "is required: the timestamp the jobs become Ready at")
	}
	if err := req.GetRunAt().CheckValid(); err != nil {
		return nil, invalidField("run_at", "a valid timestamp", "is not a valid timestamp: %v", err)
	}
	res, err := s.actOnJobs(ctx, req.GetJobIds(), engine.JobActionParams{Action: engine.JobActionReschedule, RunAt: req.GetRunAt().AsTime()})
	if err != nil {
		return nil, err
	}
	return &seppv1.RescheduleJobsResponse{Results: res}, nil
}

func (s *adminService) SetJobsPriority(ctx context.Context, req *seppv1.SetJobsPriorityRequest) (*seppv1.SetJobsPriorityResponse, error) {
	res, err := s.actOnJobs(ctx, req.GetJobIds(), engine.JobActionParams{Action: engine.JobActionPriority, Priority: req.GetPriority()})
	if err != nil {
		return nil, err
	}
	return &seppv1.SetJobsPriorityResponse{Results: res}, nil
}

func (s *adminService) CancelJobs(ctx context.Context, req *seppv1.CancelJobsRequest) (*seppv1.CancelJobsResponse, error) {
	action := engine.JobActionCancel
	if req.GetDelete() {
		action = engine.JobActionCancelDelete
	}
	res, err := s.actOnJobs(ctx, req.GetJobIds(), engine.JobActionParams{Action: action, Reason: req.GetReason()})
	if err != nil {
		return nil, err
	}
	return &seppv1.CancelJobsResponse{Results: res}, nil
}
