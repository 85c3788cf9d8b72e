package client

import (
	"fmt"
	"math"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/emptypb"
	"google.golang.org/protobuf/types/known/timestamppb"

	seppv1 "github.com/sepp-io/sepp/proto/sepp/v1"
)

// Priority orders Ready jobs: every priority 9 job is handed out before any
// priority 8 job, and so on down; FIFO within one priority.
type Priority uint32

// The ten priorities; MinPriority and MaxPriority are aliases of P0 and P9.
const (
	P0 Priority = iota
	P1
	P2
	P3
	P4
	P5
	P6
	P7
	P8
	P9

	MinPriority = P0
	MaxPriority = P9
)

// JobState is where a job is in its lifecycle.
type JobState int32

// The job states a live or retained job can be in.
const (
	StateUnknown   JobState = JobState(seppv1.JobState_JOB_STATE_UNSPECIFIED)
	StateScheduled JobState = JobState(seppv1.JobState_JOB_STATE_SCHEDULED)
	StateReady     JobState = JobState(seppv1.JobState_JOB_STATE_READY)
	StateReserved  JobState = JobState(seppv1.JobState_JOB_STATE_RESERVED)
	StateDead      JobState = JobState(seppv1.JobState_JOB_STATE_DEAD)
	// StateCompleted: acked. Only a unique-key duplicate reports it, of a
	// holder that keeps its key for UniqueOptions.CompletedFor.
	StateCompleted JobState = JobState(seppv1.JobState_JOB_STATE_COMPLETED)
	// StateBlocked: waiting for the jobs it was enqueued after
	// (EnqueueRequest.WithAfter) to end.
	StateBlocked JobState = JobState(seppv1.JobState_JOB_STATE_BLOCKED)
)

func (s JobState) String() string {
	switch s {
	case StateScheduled:
		return "scheduled"
	case StateReady:
		return "ready"
	case StateReserved:
		return "reserved"
	case StateDead:
		return "dead"
	case StateCompleted:
		return "completed"
	case StateBlocked:
		return "blocked"
	default:
		return "unknown"
	}
}

// ParseJobState reads the names String returns.
func ParseJobState(s string) (JobState, error) {
	for _, st := range []JobState{StateScheduled, StateReady, StateReserved, StateDead, StateBlocked, StateCompleted} {
		if st.String() == s {
			return st, nil
		}
	}
	return StateUnknown, &FieldError{Field: "state", Description: fmt.Sprintf("state %q is not one of scheduled, ready, reserved, dead, blocked, completed", s)}
}

// DeadLetterCause says why a job was dead-lettered.
type DeadLetterCause int32

// The causes of a dead letter; exactly one per record.
const (
	CauseUnknown           DeadLetterCause = DeadLetterCause(seppv1.DeadLetterCause_DEAD_LETTER_CAUSE_UNSPECIFIED)
	CauseAttemptsExhausted DeadLetterCause = DeadLetterCause(seppv1.DeadLetterCause_DEAD_LETTER_CAUSE_ATTEMPTS_EXHAUSTED)
	CauseRejected          DeadLetterCause = DeadLetterCause(seppv1.DeadLetterCause_DEAD_LETTER_CAUSE_REJECTED)
	CauseLeaseExpired      DeadLetterCause = DeadLetterCause(seppv1.DeadLetterCause_DEAD_LETTER_CAUSE_LEASE_EXPIRED)
	CauseAdmin             DeadLetterCause = DeadLetterCause(seppv1.DeadLetterCause_DEAD_LETTER_CAUSE_ADMIN)
	CauseCancelled         DeadLetterCause = DeadLetterCause(seppv1.DeadLetterCause_DEAD_LETTER_CAUSE_CANCELLED)
	// CauseExpired: the job was not reserved by its deadline (WithTTL,
	// WithExpiresAt or the queue's max_wait_ms).
	CauseExpired DeadLetterCause = DeadLetterCause(seppv1.DeadLetterCause_DEAD_LETTER_CAUSE_EXPIRED)
)

func (c DeadLetterCause) String() string {
	switch c {
	case CauseAttemptsExhausted:
		return "attempts_exhausted"
	case CauseRejected:
		return "rejected"
	case CauseLeaseExpired:
		return "lease_expired"
	case CauseAdmin:
		return "admin"
	case CauseCancelled:
		return "cancelled"
	case CauseExpired:
		return "expired"
	default:
		return "unknown"
	}
}

// Job, JobAttempt, JobOrigin, JobParent, Progress and TraceContext, the
// read side of a job, and their conversions from the wire (jobFromProto
// and its kin) are generated from sepp.v1.Job by
// tools/protoc-gen-sepp-sdk (job_gen.go, make generate): a field added to
// the proto reaches them with no edit here. The enums' types and
// constants (JobState, DeadLetterCause, ParentFailure) are kept here; the
// generated code converts to them.

// ParentFailure is what a job enqueued after others does when one of them
// ends other than completed (dead-lettered, cancelled, expired, deleted).
type ParentFailure int32

const (
	// ParentFailureCancel cancels the job at once (the default): it is
	// dead-lettered with CauseCancelled, and its own dependents follow
	// their policies.
	ParentFailureCancel ParentFailure = ParentFailure(seppv1.ParentFailurePolicy_PARENT_FAILURE_POLICY_CANCEL)
	// ParentFailureRun runs the job once every parent has ended, whatever
	// the outcomes: a batch's callback, which reads them in Job.Parents.
	ParentFailureRun ParentFailure = ParentFailure(seppv1.ParentFailurePolicy_PARENT_FAILURE_POLICY_RUN)
)

// JobContext identifies one delivery. Ack, Nack, Release and ExtendLease
// take it back: JobID and LeaseToken fence the delivery. Attempt and
// MaxAttempts tell a handler where this delivery stands.
type JobContext struct {
	JobID         uint64
	LeaseToken    uint64
	Attempt       uint32 // 1 on the first delivery
	MaxAttempts   uint32
	LeaseDeadline time.Time // by the server's clock
	Queue         string
	WorkerID      string
}

// LastAttempt reports whether a failure of this delivery dead-letters the job.
func (jc JobContext) LastAttempt() bool { return jc.Attempt >= jc.MaxAttempts }

// Delivery is one reserved job: the context to answer with and the job.
type Delivery struct {
	Ctx JobContext
	Job Job

	// result is what a handler set with SetResult: a Worker acks with it.
	result []byte
	// followUps are what a handler added with AddFollowUp: a Worker
	// enqueues them with the ack (AckWithFollowUps).
	followUps []*EnqueueRequest
	// progress carries the handler's reports (Progress) to the Worker's
	// lease keeper; nil outside a Worker.
	progress *progressBox
}

// SetResult gives the job a result, for a handler run by a Worker: when the
// handler then returns nil, the Worker acks with it (AckWithResult), so a
// producer waiting on the job (WaitJob) or reading it (GetJob) gets it. The
// job's queue must keep completed jobs (QueueSettings.CompletedRetention);
// a server that refuses the result leaves the lease held, and the Worker
// then acks without it and reports the refusal (WorkerOptions.OnError),
// so the job is not run again. At most the server's max_result_bytes.
func (d *Delivery) SetResult(result []byte) { d.result = result }

// DeadLetterRecord is a retained dead job.
type DeadLetterRecord struct {
	Job          Job // snapshot at failure time, payload inline
	Cause        DeadLetterCause
	FailedAt     time.Time
	FinalAttempt uint32
	LastReason   string // empty when no worker nacked it
}

// JobID is the dead job's id.
func (r *DeadLetterRecord) JobID() uint64 { return r.Job.ID }

// ToEnqueueRequest rebuilds an enqueue request for the record's queue with
// its type, payload, priority, custom fields, max attempts and trace context. Enqueuing it
// makes a fresh job: the server assigns a new id and the attempt count starts
// at 1. It carries no idempotency key of its own (one is generated per
// call), and no scheduled_at: a replay runs now.
func (r *DeadLetterRecord) ToEnqueueRequest() *EnqueueRequest {
	req := NewEnqueueRequest(r.Job.Queue, r.Job.Type).
		WithPayload(append([]byte(nil), r.Job.Payload...)).
		WithPriority(r.Job.Priority)
	if r.Job.MaxAttempts > 0 {
		req.WithMaxAttempts(r.Job.MaxAttempts)
	}
	for k, v := range r.Job.Custom {
		req.WithCustom(k, v)
	}
	if tc := r.Job.TraceContext; tc != nil {
		req.WithTraceContext(*tc)
	}
	return req
}

// EnqueueRequest and UniqueOptions (their fields, the With methods and
// the conversion to the wire) are generated from sepp.v1.EnqueueRequest by
// tools/protoc-gen-sepp-sdk (enqueue_gen.go, make generate): a field added
// to the proto reaches them with no edit here. What is not a plain field
// stays here: validation and the idempotency key the client sends.

// NewEnqueueRequest starts a request for a job of jobType on queue; the
// With methods set the other fields, each returning the request so calls
// chain.
func NewEnqueueRequest(queue, jobType string) *EnqueueRequest {
	return &EnqueueRequest{Queue: queue, JobType: jobType}
}

// validate catches what is certainly wrong before it costs a round trip.
// Limits the server configures (payload size, custom fields) are left to it.
func (r *EnqueueRequest) validate(field string) error {
	if r == nil {
		return &FieldError{Field: field, Description: field + ": request is nil"}
	}
	if r.Queue == "" {
		return &FieldError{Field: prefixField(field, "queue"), Description: "queue must not be empty"}
	}
	if r.Priority != nil && *r.Priority > MaxPriority {
		return &FieldError{Field: prefixField(field, "priority"), Limit: "0..9",
			Description: fmt.Sprintf("priority must be 0..9, got %d", *r.Priority)}
	}
	if r.TTL != 0 && r.TTL < time.Millisecond {
		return &FieldError{Field: prefixField(field, "ttl_ms"), Limit: ">= 1ms",
			Description: fmt.Sprintf("ttl must be at least 1ms, got %s", r.TTL)}
	}
	for k, a := range r.After {
		if a < 0 || a > math.MaxInt32 {
			return &FieldError{Field: prefixField(field, fmt.Sprintf("after[%d]", k)), Limit: "an earlier request's index",
				Description: fmt.Sprintf("after[%d] must be an earlier request's index, got %d", k, a)}
		}
	}
	if r.Unique != nil && r.Unique.CompletedFor < 0 {
		return &FieldError{Field: prefixField(field, "unique.completed_for"), Limit: ">= 0",
			Description: fmt.Sprintf("unique.completed_for must not be negative, got %s", r.Unique.CompletedFor)}
	}
	return nil
}

func prefixField(prefix, field string) string {
	if prefix == "" {
		return field
	}
	return prefix + "." + field
}

// toProto is r's wire form, sent with the idempotency key key (the
// caller's, or one the client generated).
func (r *EnqueueRequest) toProto(key string) *seppv1.EnqueueRequest {
	m := enqueueRequestToProto(r)
	m.IdempotencyKey = key
	return m
}

// setTraceContext stamps tc on m unless m carries a trace context of its
// own.
func setTraceContext(m *seppv1.EnqueueRequest, tc *TraceContext) {
	if tc != nil && m.TraceContext == nil {
		m.TraceContext = traceContextToProto(tc)
	}
}

// EnqueueResult is what an enqueue did.
type EnqueueResult struct {
	JobID uint64
	State JobState // StateReady or StateScheduled
	// Duplicate is true when the idempotency key matched an enqueue made by
	// an earlier call, so nothing was added. A retry inside one call whose
	// earlier attempt may have applied never reports Duplicate: the job the
	// server found is this call's own.
	Duplicate bool
	// IdempotencyKey is the key the enqueue carried (generated unless set).
	IdempotencyKey string
}

// RetryDirective is a worker's word on what happens after a nack: the
// queue's retry policy (DefaultRetry), a retry after a delay (After), or
// straight to the dead-letter store (DeadLetter).
type RetryDirective struct {
	kind  directiveKind
	delay time.Duration
}

type directiveKind uint8

const (
	directiveDefault directiveKind = iota
	directiveAfter
	directiveDeadLetter
)

// DefaultRetry retries per the queue's retry policy (immediately out of the
// box) while attempts remain.
func DefaultRetry() RetryDirective { return RetryDirective{kind: directiveDefault} }

// After retries once d has passed (the job waits in Scheduled); the server
// clamps d to the queue's schedule horizon.
func After(d time.Duration) RetryDirective { return RetryDirective{kind: directiveAfter, delay: d} }

// DeadLetter skips the remaining attempts: the job is dead-lettered at once
// with cause rejected.
func DeadLetter() RetryDirective { return RetryDirective{kind: directiveDeadLetter} }

// IsDeadLetter reports whether the directive is DeadLetter.
func (d RetryDirective) IsDeadLetter() bool { return d.kind == directiveDeadLetter }

// Delay is After's delay; zero for the other directives.
func (d RetryDirective) Delay() time.Duration { return d.delay }

func (d RetryDirective) String() string {
	switch d.kind {
	case directiveAfter:
		return "after(" + d.delay.String() + ")"
	case directiveDeadLetter:
		return "dead_letter"
	default:
		return "default"
	}
}

func (d RetryDirective) toProto() *seppv1.RetryDirective {
	switch d.kind {
	case directiveAfter:
		return &seppv1.RetryDirective{Directive: &seppv1.RetryDirective_After{After: durationpb.New(d.delay)}}
	case directiveDeadLetter:
		return &seppv1.RetryDirective{Directive: &seppv1.RetryDirective_DeadLetter{DeadLetter: &emptypb.Empty{}}}
	default:
		return &seppv1.RetryDirective{Directive: &seppv1.RetryDirective_Default{Default: &emptypb.Empty{}}}
	}
}

func timeFrom(ts *timestamppb.Timestamp) time.Time {
	if ts == nil {
		return time.Time{}
	}
	return ts.AsTime()
}

func jobContextFromProto(m *seppv1.JobContext) JobContext {
	return JobContext{
		JobID:         m.GetJobId(),
		LeaseToken:    m.GetLeaseToken(),
		Attempt:       m.GetAttempt(),
		MaxAttempts:   m.GetMaxAttempts(),
		LeaseDeadline: timeFrom(m.GetLeaseDeadline()),
		Queue:         m.GetQueue(),
		WorkerID:      m.GetWorkerId(),
	}
}

func (jc JobContext) toProto() *seppv1.JobContext {
	m := &seppv1.JobContext{
		JobId:       jc.JobID,
		LeaseToken:  jc.LeaseToken,
		Attempt:     jc.Attempt,
		MaxAttempts: jc.MaxAttempts,
		Queue:       jc.Queue,
		WorkerId:    jc.WorkerID,
	}
	if !jc.LeaseDeadline.IsZero() {
		m.LeaseDeadline = timestamppb.New(jc.LeaseDeadline)
	}
	return m
}

func deadLetterFromProto(m *seppv1.DeadLetterRecord) DeadLetterRecord {
	return DeadLetterRecord{
		Job:          jobFromProto(m.GetJob()),
		Cause:        DeadLetterCause(m.GetCause()),
		FailedAt:     timeFrom(m.GetFailedAt()),
		FinalAttempt: m.GetFinalAttempt(),
		LastReason:   m.GetLastReason(),
	}
}
