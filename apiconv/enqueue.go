package apiconv

import (
	"errors"
	"math"
	"strconv"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/sepp-io/sepp/engine"
	seppv1 "github.com/sepp-io/sepp/proto/sepp/v1"
)

// EnqueueParams is the engine's enqueue of the public EnqueueRequest r, its
// fields named with prefix in an error ("" for an Enqueue, "jobs[3]." for a
// batch item, "follow_ups[0]." for an ack's follow-up). It checks what the
// engine cannot (timestamps, the range of durations in milliseconds, the
// trace context's form with its limits); the engine checks the rest at
// apply. The params share r's memory (payload, custom, priority): the
// engine copies what it keeps.
func EnqueueParams(prefix string, r *seppv1.EnqueueRequest) (engine.EnqueueParams, error) {
	var p engine.EnqueueParams
	err := FillEnqueueParams(&p, prefix, r)
	return p, err
}

// FillEnqueueParams is EnqueueParams into *p (a zero value, filled in place
// because an EnqueueParams is large); on error it leaves *p as it was.
func FillEnqueueParams(p *engine.EnqueueParams, prefix string, r *seppv1.EnqueueRequest) error {
	at, err := timestamp(prefix+"scheduled_at", r.GetScheduledAt())
	if err != nil {
		return err
	}
	// Beyond this the duration overflows; the engine bounds it by the
	// queue's horizon.
	if ms := r.GetUnique().GetCompletedForMs(); ms > uint64(math.MaxInt64/int64(time.Millisecond)) {
		return invalid(prefix+"unique.completed_for_ms", "max_schedule_horizon_ms", "is %d, out of range", ms)
	}
	expiresAt, err := timestamp(prefix+"expires_at", r.GetExpiresAt())
	if err != nil {
		return err
	}
	// The engine checks the deadline against its now and scheduled_at.
	if ms := r.GetTtlMs(); ms < 0 || ms > math.MaxInt64/int64(time.Millisecond) {
		return invalid(prefix+"ttl_ms", ">= 1 (0 is none)", "is %d, out of range", ms)
	}
	policy, err := parentFailure(prefix, r.GetOnParentFailure())
	if err != nil {
		return err
	}
	var after []int
	if a := r.GetAfter(); len(a) > 0 {
		if len(a) > engine.MaxParents {
			return invalid(prefix+"after", "at most "+strconv.Itoa(engine.MaxParents), "names %d requests, above the limit of %d", len(a), engine.MaxParents)
		}
		after = make([]int, len(a))
		for i, v := range a {
			if v > math.MaxInt32 {
				return invalid(prefix+"after["+strconv.Itoa(i)+"]", "an earlier request's index", "is %d, out of range", v)
			}
			after[i] = int(v)
		}
	} else if policy != engine.ParentFailureCancel {
		return invalid(prefix+"on_parent_failure", "with after", "is set, but the job waits for nothing (after is empty)")
	}
	if tc := r.GetTraceContext(); tc != nil {
		t := &engine.TraceContext{Traceparent: tc.GetTraceparent(), Tracestate: tc.GetTracestate()}
		if err := checkTraceContext(prefix, t); err != nil {
			return err
		}
		p.Trace = t
	} else {
		p.Trace = nil
	}
	p.Queue = r.GetQueue()
	p.JobType = r.GetJobType()
	p.Payload = r.GetPayload()
	p.ScheduledAt = at
	if !expiresAt.IsZero() || r.GetTtlMs() != 0 {
		p.Expiry = &engine.ExpiryOpts{At: expiresAt, TTL: time.Duration(r.GetTtlMs()) * time.Millisecond}
	}
	p.MaxAttempts = r.GetMaxAttempts()
	p.Custom = r.GetCustom()
	p.IdempotencyKey = r.GetIdempotencyKey()
	p.Priority = r.Priority // read, never written: no copy needed
	p.After, p.OnParentFailure = after, policy
	if u := r.GetUnique(); u != nil {
		p.Unique = &engine.UniqueOpts{
			Key: u.GetKey(), Fields: u.GetFields(), CoverDead: u.GetCoverDead(),
			CompletedFor: time.Duration(u.GetCompletedForMs()) * time.Millisecond, Refuse: u.GetRefuse(),
		}
	}
	return nil
}

// parentFailure is the engine's policy of the public one.
func parentFailure(prefix string, p seppv1.ParentFailurePolicy) (engine.ParentFailure, error) {
	switch p {
	case seppv1.ParentFailurePolicy_PARENT_FAILURE_POLICY_UNSPECIFIED, seppv1.ParentFailurePolicy_PARENT_FAILURE_POLICY_CANCEL:
		return engine.ParentFailureCancel, nil
	case seppv1.ParentFailurePolicy_PARENT_FAILURE_POLICY_RUN:
		return engine.ParentFailureRun, nil
	}
	return 0, invalid(prefix+"on_parent_failure", "cancel or run", "is %d, not a known policy", int32(p))
}

// ParentFailurePolicy is the public form of an engine policy.
func ParentFailurePolicy(p engine.ParentFailure) seppv1.ParentFailurePolicy {
	if p == engine.ParentFailureRun {
		return seppv1.ParentFailurePolicy_PARENT_FAILURE_POLICY_RUN
	}
	return seppv1.ParentFailurePolicy_PARENT_FAILURE_POLICY_CANCEL
}

// timestamp reads an optional timestamp; nil is the zero time.
func timestamp(field string, ts *timestamppb.Timestamp) (time.Time, error) {
	if ts == nil {
		return time.Time{}, nil
	}
	if err := ts.CheckValid(); err != nil {
		return time.Time{}, invalid(field, "0001-01-01..9999-12-31", "is not a valid timestamp: %v", err)
	}
	return ts.AsTime(), nil
}

// checkTraceContext is engine.CheckTraceContext as an invalid field of
// the request, with its limit: trace_context.traceparent (at most
// engine.MaxTraceparentBytes, W3C format) or trace_context.tracestate (at
// most engine.MaxTracestateBytes of printable ASCII).
func checkTraceContext(prefix string, t *engine.TraceContext) error {
	err := engine.CheckTraceContext(t)
	var fe *engine.FieldError
	if !errors.As(err, &fe) {
		return err
	}
	limit := "W3C traceparent, at most " + strconv.Itoa(engine.MaxTraceparentBytes) + " bytes"
	if fe.Field == "trace_context.tracestate" {
		limit = "at most " + strconv.Itoa(engine.MaxTracestateBytes) + " bytes of printable ASCII"
	}
	return invalid(prefix+fe.Field, limit, "%s", fe.Reason)
}

// EnqueueRequest is the public form of an enqueue, the inverse of
// EnqueueParams for the params it makes: what the log holds of an enqueue
// (fsm.CommandVersionPublicEnqueue) and of an ack's follow-ups
// (fsm.CommandVersionFollowUps), built by the leader from the params the
// API checked. It shares p's memory (payload, custom, priority).
func EnqueueRequest(p *engine.EnqueueParams) *seppv1.EnqueueRequest {
	r := new(seppv1.EnqueueRequest)
	fillEnqueueRequest(r, nil, p)
	return r
}

// EnqueueRequests is EnqueueRequest of each item, the messages (and the
// scheduled times' timestamps) in one allocation each: a batch's requests
// live and die together, encoded into one log entry.
func EnqueueRequests(items []engine.EnqueueParams) []*seppv1.EnqueueRequest {
	out := make([]*seppv1.EnqueueRequest, len(items))
	slab := make([]seppv1.EnqueueRequest, len(items))
	var times []timestamppb.Timestamp // allocated on the first scheduled item
	for i := range items {
		var ts *timestamppb.Timestamp
		if !items[i].ScheduledAt.IsZero() {
			if times == nil {
				times = make([]timestamppb.Timestamp, len(items))
			}
			ts = &times[i]
		}
		fillEnqueueRequest(&slab[i], ts, &items[i])
		out[i] = &slab[i]
	}
	return out
}

// fillEnqueueRequest fills a zero r from p; a scheduled time goes into ts
// when it is not nil, else into a new Timestamp.
func fillEnqueueRequest(r *seppv1.EnqueueRequest, ts *timestamppb.Timestamp, p *engine.EnqueueParams) {
	r.Queue, r.JobType, r.Payload = p.Queue, p.JobType, p.Payload
	r.Priority, r.MaxAttempts = p.Priority, p.MaxAttempts
	r.Custom, r.IdempotencyKey = p.Custom, p.IdempotencyKey
	if !p.ScheduledAt.IsZero() {
		if ts == nil {
			ts = new(timestamppb.Timestamp)
		}
		ts.Seconds, ts.Nanos = p.ScheduledAt.Unix(), int32(p.ScheduledAt.Nanosecond())
		r.ScheduledAt = ts
	}
	if x := p.Expiry; x != nil {
		if !x.At.IsZero() {
			r.ExpiresAt = timestamppb.New(x.At)
		}
		r.TtlMs = x.TTL.Milliseconds()
	}
	if u := p.Unique; u != nil {
		r.Unique = &seppv1.UniqueOptions{
			Key: u.Key, Fields: u.Fields, CoverDead: u.CoverDead,
			CompletedForMs: uint64(max(u.CompletedFor.Milliseconds(), 0)), Refuse: u.Refuse,
		}
	}
	if t := p.Trace; t != nil {
		r.TraceContext = &seppv1.TraceContext{Traceparent: t.Traceparent, Tracestate: t.Tracestate}
	}
	if len(p.After) > 0 {
		r.After = make([]uint32, len(p.After))
		for i, a := range p.After {
			r.After[i] = uint32(a) //nolint:gosec // an index of the call's requests, checked by the engine
		}
		if p.OnParentFailure != engine.ParentFailureCancel {
			r.OnParentFailure = ParentFailurePolicy(p.OnParentFailure)
		}
	}
}

// StatesExactly reports whether EnqueueRequest states p exactly, so that
// FillEnqueueParams of it gives p back: durations in whole milliseconds
// (the API's unit), times in a Timestamp's range, and an expiry that says
// something (the API cannot write an empty one).
func StatesExactly(p *engine.EnqueueParams) bool {
	if !timestampStates(p.ScheduledAt) {
		return false
	}
	if x := p.Expiry; x != nil {
		if x.TTL < 0 || x.TTL%time.Millisecond != 0 || !timestampStates(x.At) || x.TTL == 0 && x.At.IsZero() {
			return false
		}
	}
	if u := p.Unique; u != nil && (u.CompletedFor < 0 || u.CompletedFor%time.Millisecond != 0) {
		return false
	}
	for _, a := range p.After {
		if a < 0 || a > math.MaxInt32 {
			return false
		}
	}
	return p.OnParentFailure <= engine.ParentFailureRun && (len(p.After) > 0 || p.OnParentFailure == engine.ParentFailureCancel)
}

// timestampStates reports whether t is zero (no time) or a valid Timestamp.
func timestampStates(t time.Time) bool {
	return t.IsZero() || timestamppb.New(t).CheckValid() == nil
}

// EnqueueBatchParams is FillEnqueueParams of each request, its fields named
// "jobs[i]." in an error, as an EnqueueBatch's are.
func EnqueueBatchParams(reqs []*seppv1.EnqueueRequest) ([]engine.EnqueueParams, error) {
	items := make([]engine.EnqueueParams, len(reqs))
	for i, r := range reqs {
		if err := FillEnqueueParams(&items[i], "jobs["+strconv.Itoa(i)+"].", r); err != nil {
			return nil, err
		}
	}
	return items, nil
}
