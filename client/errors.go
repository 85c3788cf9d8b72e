package client

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	spb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	seppv1 "github.com/sepp-io/sepp/proto/sepp/v1"
)

// Sentinel errors. Every error a call returns wraps one or more of these;
// test them with errors.Is.
var (
	// ErrInvalidArgument: the request broke a rule; a *FieldError names the
	// field and the limit. Nothing changed.
	ErrInvalidArgument = errors.New("invalid argument")
	// ErrScheduledTooFar: scheduled_at lies beyond the queue's schedule
	// horizon; a *ScheduledTooFarError carries both. It also matches
	// ErrInvalidArgument.
	ErrScheduledTooFar = errors.New("scheduled too far")
	// ErrNotFound: no such job, dead-letter record or queue.
	ErrNotFound = errors.New("not found")
	// ErrUnsupported: the request uses a feature the server, or a member
	// of its cluster during a rolling upgrade, does not apply yet (a
	// PreconditionFailure of type VERSION; GetServerInfo's capabilities
	// say which): nothing changed, and a lease the request carried is
	// still held. It also matches ErrWrongState.
	ErrUnsupported = errors.New("unsupported by the server")
	// ErrLeaseLost: the delivery's lease is no longer the job's current one
	// (it expired, or the job was redelivered, acked or released). The call
	// changed nothing; the job belongs to someone else now.
	ErrLeaseLost = errors.New("lease lost")
	// ErrWrongState: the job is not in a state the operation accepts (or
	// a queue to delete still holds jobs).
	ErrWrongState = errors.New("wrong state")
	// ErrAlreadyExists: CreateQueue named a queue that is configured
	// already, or a unique job's key is held by another job of its queue
	// and the request asked to be refused (Unique.Refuse; the
	// *UniqueConflictError detail names that job).
	ErrAlreadyExists = errors.New("already exists")
	// ErrQueueFull: the queue is at its max length; nothing was added.
	// It also matches ErrResourceExhausted.
	ErrQueueFull = errors.New("queue full")
	// ErrResourceExhausted: a server limit refused the call (a full queue,
	// a full bounded store, a rate limit); nothing was added.
	ErrResourceExhausted = errors.New("resource exhausted")
	// ErrUnavailable: no leader could be reached within the retry budget.
	ErrUnavailable = errors.New("unavailable")
	// ErrNotLeader: the node answered that it does not lead; it also matches
	// ErrUnavailable. The client follows it by itself; callers see it only
	// when the retry budget ran out.
	ErrNotLeader = errors.New("not the leader")
	// ErrUnknownOutcome: the call may or may not have taken effect, and the
	// client could not settle it within its retry budget (or, for
	// DrainDeadLetters, must not retry). Never treat it as success or as a
	// clean failure.
	ErrUnknownOutcome = errors.New("outcome unknown")
	// ErrJobCancelled: an operator cancelled the job (CancelJobs) while a
	// worker held its lease. A call on that lease fails with it and with
	// ErrLeaseLost; a Worker's handler context ends with it as its cause
	// (context.Cause), and not with ErrLeaseLost, so a handler tells the
	// two apart. (A cancel that deleted the job leaves no trace: that lease
	// reads as lost.)
	ErrJobCancelled = errors.New("job cancelled by an operator")
	// ErrPermissionDenied and ErrUnauthenticated come from admin auth.
	ErrPermissionDenied = errors.New("permission denied")
	ErrUnauthenticated  = errors.New("unauthenticated")
	// ErrClosed: the Client (or Producer) was closed.
	ErrClosed = errors.New("client closed")
	// ErrInternal: the server failed in a way it did not classify.
	ErrInternal = errors.New("internal server error")
)

// UniqueConflictError names the job holding a unique key.
type UniqueConflictError struct {
	Queue       string
	JobID       uint64
	Description string
}

func (e *UniqueConflictError) Error() string { return e.Description }

// Error is a failed call: the operation, the gRPC status, its meaning (Kind,
// one of the sentinels) and its typed detail when the server sent one.
type Error struct {
	Op      string // "enqueue", "reserve", "ack", ...
	Code    codes.Code
	Message string
	Kinds   []error // the sentinels it matches
	Detail  error   // *FieldError, *ScheduledTooFarError, *NotLeaderError, *UniqueConflictError or nil
	status  *status.Status
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("sepp: ")
	if e.Op != "" {
		b.WriteString(e.Op)
		b.WriteString(": ")
	}
	if e.Detail != nil {
		b.WriteString(e.Detail.Error())
	} else if e.Message != "" {
		b.WriteString(e.Message)
	} else if len(e.Kinds) > 0 {
		b.WriteString(e.Kinds[0].Error())
	} else {
		b.WriteString(e.Code.String())
	}
	return b.String()
}

// Unwrap exposes the sentinels and the detail to errors.Is and errors.As.
func (e *Error) Unwrap() []error {
	out := append([]error(nil), e.Kinds...)
	if e.Detail != nil {
		out = append(out, e.Detail)
	}
	return out
}

// GRPCStatus lets status.FromError see the status the server sent.
func (e *Error) GRPCStatus() *status.Status { return e.status }

// FieldError names a rejected request field and the limit it broke.
type FieldError struct {
	Field       string // e.g. "priority", "jobs[3].queue"
	Limit       string // e.g. "0..9"; empty when not a numeric limit
	Description string
}

func (e *FieldError) Error() string {
	if e.Description != "" {
		// A description that begins with the field names it; one that only
		// mentions it ("is 9 bytes, above limits.max_payload_bytes") does not.
		if e.Field == "" || strings.HasPrefix(e.Description, e.Field) {
			return e.Description
		}
		return e.Field + ": " + e.Description
	}
	if e.Limit != "" {
		return e.Field + ": exceeds " + e.Limit
	}
	return e.Field + ": invalid"
}

// Is makes a FieldError match ErrInvalidArgument.
func (e *FieldError) Is(target error) bool { return target == ErrInvalidArgument }

// ScheduledTooFarError rejects a scheduled_at beyond the queue's horizon.
type ScheduledTooFarError struct {
	Queue     string
	Horizon   time.Duration // the queue's max_schedule_horizon_ms
	Requested time.Time     // the scheduled_at asked for
	Latest    time.Time     // the latest scheduled_at the server would accept
}

func (e *ScheduledTooFarError) Error() string {
	return fmt.Sprintf("scheduled_at %s is beyond the schedule horizon of queue %q (max_schedule_horizon_ms=%d, latest allowed %s)",
		e.Requested.UTC().Format(time.RFC3339Nano), e.Queue, e.Horizon.Milliseconds(), e.Latest.UTC().Format(time.RFC3339Nano))
}

// Is makes it match ErrScheduledTooFar and ErrInvalidArgument.
func (e *ScheduledTooFarError) Is(target error) bool {
	return target == ErrScheduledTooFar || target == ErrInvalidArgument
}

// NotLeaderError is a node's answer that it does not lead; nothing applied.
type NotLeaderError struct {
	LeaderID   string // empty when no leader is known
	LeaderAddr string // the leader's gRPC address
}

func (e *NotLeaderError) Error() string {
	if e.LeaderAddr == "" {
		return "not the leader; no leader known"
	}
	return fmt.Sprintf("not the leader; leader is %s at %s", e.LeaderID, e.LeaderAddr)
}

// Is makes it match ErrNotLeader and ErrUnavailable.
func (e *NotLeaderError) Is(target error) bool {
	return target == ErrNotLeader || target == ErrUnavailable
}

// unknownOutcomeError ends a call whose earlier attempt may have applied.
type unknownOutcomeError struct {
	op   string
	last error
}

func (e *unknownOutcomeError) Error() string {
	return fmt.Sprintf("sepp: %s: outcome unknown (an attempt may have taken effect): %v", e.op, e.last)
}

func (e *unknownOutcomeError) Unwrap() []error { return []error{ErrUnknownOutcome, e.last} }

// leaseOps are the calls fenced by a lease token: for them a missing job or
// a failed precondition means the lease is gone.
var leaseOps = map[string]bool{"ack": true, "nack": true, "release": true, "extend lease": true}

// fromStatus turns a gRPC error into an *Error. Context errors of the
// caller pass through unchanged.
func fromStatus(op string, err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	st, ok := status.FromError(err)
	if !ok {
		return &Error{Op: op, Code: codes.Unknown, Message: err.Error(), Kinds: []error{ErrInternal}}
	}
	return fromStatusValue(op, st)
}

func fromStatusValue(op string, st *status.Status) *Error {
	e := &Error{Op: op, Code: st.Code(), Message: st.Message(), status: st}
	var precondition *errdetails.PreconditionFailure
	for _, d := range st.Details() {
		switch d := d.(type) {
		case *seppv1.FieldViolation:
			if e.Detail == nil {
				e.Detail = &FieldError{Field: d.GetField(), Limit: d.GetLimit(), Description: d.GetDescription()}
			}
		case *errdetails.BadRequest:
			if e.Detail == nil && len(d.GetFieldViolations()) > 0 {
				v := d.GetFieldViolations()[0]
				e.Detail = &FieldError{Field: v.GetField(), Description: v.GetDescription()}
			}
		case *seppv1.ScheduledTooFar:
			e.Detail = &ScheduledTooFarError{
				Queue:     d.GetQueue(),
				Horizon:   time.Duration(d.GetHorizonMs()) * time.Millisecond,
				Requested: timeFrom(d.GetRequestedAt()),
				Latest:    timeFrom(d.GetLatestAllowed()),
			}
		case *seppv1.NotLeader:
			e.Detail = &NotLeaderError{LeaderID: d.GetLeaderId(), LeaderAddr: d.GetLeaderGrpcAddr()}
		case *errdetails.PreconditionFailure:
			precondition = d
		case *errdetails.ResourceInfo:
			if d.GetResourceType() == "job" {
				id, _ := strconv.ParseUint(d.GetResourceName(), 10, 64)
				e.Detail = &UniqueConflictError{Queue: d.GetOwner(), JobID: id, Description: d.GetDescription()}
			}
		}
	}
	switch st.Code() {
	case codes.InvalidArgument, codes.OutOfRange:
		e.Kinds = []error{ErrInvalidArgument}
	case codes.NotFound:
		e.Kinds = []error{ErrNotFound}
		if leaseOps[op] {
			e.Kinds = append(e.Kinds, ErrLeaseLost)
		}
	case codes.FailedPrecondition:
		if preconditionIs(precondition, "VERSION") {
			e.Kinds = []error{ErrUnsupported, ErrWrongState}
		} else if preconditionIs(precondition, "QUEUE") {
			// The queue's settings refuse it (an ack's result where the
			// queue keeps no completed job): the lease still holds.
			e.Kinds = []error{ErrWrongState}
		} else if preconditionIs(precondition, "LEASE_CANCELLED") {
			e.Kinds = []error{ErrLeaseLost, ErrJobCancelled}
		} else if leaseOps[op] || preconditionIsLease(precondition) {
			e.Kinds = []error{ErrLeaseLost}
		} else {
			e.Kinds = []error{ErrWrongState}
		}
	case codes.AlreadyExists:
		e.Kinds = []error{ErrAlreadyExists}
	case codes.ResourceExhausted:
		e.Kinds = []error{ErrResourceExhausted}
		if isQueueFull(st, e.Detail) {
			e.Kinds = append(e.Kinds, ErrQueueFull)
		}
	case codes.Unavailable:
		e.Kinds = []error{ErrUnavailable}
	case codes.Aborted:
		e.Kinds = []error{ErrUnknownOutcome}
	case codes.PermissionDenied:
		e.Kinds = []error{ErrPermissionDenied}
	case codes.Unauthenticated:
		e.Kinds = []error{ErrUnauthenticated}
	case codes.DeadlineExceeded:
		e.Kinds = []error{context.DeadlineExceeded}
	case codes.Canceled:
		e.Kinds = []error{context.Canceled}
	default:
		e.Kinds = []error{ErrInternal}
	}
	return e
}

func preconditionIs(p *errdetails.PreconditionFailure, typ string) bool {
	for _, v := range p.GetViolations() {
		if v.GetType() == typ {
			return true
		}
	}
	return false
}

func preconditionIsLease(p *errdetails.PreconditionFailure) bool {
	for _, v := range p.GetViolations() {
		if strings.Contains(strings.ToLower(v.GetType()), "lease") {
			return true
		}
	}
	return false
}

func isQueueFull(st *status.Status, detail error) bool {
	var fe *FieldError
	if errors.As(detail, &fe) && (fe.Field == "queue" || strings.Contains(fe.Limit, "max_length")) {
		return true
	}
	return strings.Contains(strings.ToLower(st.Message()), "queue full") ||
		strings.Contains(st.Message(), "max_length") || strings.Contains(st.Message(), "max_queue_length")
}

// itemError turns one item's failure in a batch or multi-id response into
// an *Error, decoded like a whole-call status.
func itemError(op string, m *seppv1.ItemError) error {
	if m == nil {
		return nil
	}
	return fromStatusValue(op, status.FromProto(&spb.Status{Code: m.GetCode(), Message: m.GetMessage(), Details: m.GetDetails()}))
}
