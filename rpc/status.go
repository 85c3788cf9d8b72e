package rpc

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/protoadapt"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/sepp-io/sepp/cluster"
	"github.com/sepp-io/sepp/engine"
	seppv1 "github.com/sepp-io/sepp/proto/sepp/v1"
)

// statusFor is the one mapping from the errors of engine and cluster to gRPC
// statuses. The code says what kind of failure it is and whether a retry is
// safe; the typed details (proto/sepp/v1/errors.proto) say what to do:
//
//	cluster *NotLeaderError          Unavailable + NotLeader (leader's gRPC address)
//	cluster ErrNoLeader, ErrShutdown Unavailable: nothing was applied, retry later
//	cluster *DiskFullError           ResourceExhausted "disk full on <data dir>" + ResourceInfo(disk)
//	cluster ErrUnknownOutcome        Aborted + UnknownOutcome: may have been applied
//	cluster ErrSchedulesUnavailable  FailedPrecondition + PreconditionFailure(UPGRADE)
//	engine *ScheduledTooFarError     InvalidArgument + ScheduledTooFar + BadRequest
//	engine ErrInvalidArgument        InvalidArgument + FieldViolation + BadRequest
//	engine ErrLeaseCancelled         FailedPrecondition + PreconditionFailure(LEASE_CANCELLED)
//	engine ErrLeaseLost              FailedPrecondition + PreconditionFailure(LEASE)
//	engine ErrWrongState             FailedPrecondition + PreconditionFailure(STATE)
//	cluster *CommandVersionError     FailedPrecondition + PreconditionFailure(VERSION)
//	engine *UniqueConflictError      AlreadyExists + ResourceInfo(the holding job)
//	engine ErrNotFound, ErrUnknownQueue  NotFound
//	engine ErrAlreadyExists          AlreadyExists
//	engine ErrQueueNotEmpty, ErrQueueInUse  FailedPrecondition + PreconditionFailure(QUEUE)
//	cluster ErrUpgradeInProgress     FailedPrecondition + PreconditionFailure(VERSION)
//	rpc ErrResultNotKept             FailedPrecondition + PreconditionFailure(VERSION, feature=results)
//	cluster ErrProgressUnsupported  FailedPrecondition + PreconditionFailure(VERSION, feature=progress)
//	cluster ErrFollowUpsUnsupported FailedPrecondition + PreconditionFailure(VERSION, feature=follow_ups)
//	engine ErrNoCompletedRetention   FailedPrecondition + PreconditionFailure(QUEUE, completed_retention_ms)
//	cluster ErrUnknownMember         NotFound (no such voter to transfer to)
//	engine ErrQueueFull, ErrCapacity ResourceExhausted
//	engine *MemoryFullError          ResourceExhausted + QuotaFailure(the budget's key)
//	context.Canceled / DeadlineExceeded  Canceled / DeadlineExceeded
//	a *status.Status error           passed through unchanged
//	anything else                    Internal (the caller logs it)
//
// Why Aborted for an unknown outcome: Unavailable must keep meaning "nothing
// was applied", so that a client may resend anything on Unavailable. An
// outcome that is unknown is different: resending is safe only with the same
// idempotency_key or request_id. A distinct code lets a client tell the two
// apart even before it reads the detail.
//
// Why InvalidArgument, not FailedPrecondition, for ScheduledTooFar: the
// producer must change the request (schedule sooner); nothing the server can
// do in the meantime will make it succeed, which is the line gRPC draws
// between the two codes. FailedPrecondition is kept for lease and state
// conflicts, which a worker handles by dropping the delivery.
//
// Why ResourceExhausted for a full disk: it is gRPC's own example of the
// code ("the entire file system is out of space"), and it is a definite
// refusal: the write that failed is in no log, so nothing was applied and
// the request may be resent as is. (A leader with followers whose own
// write fails has already sent the entry out; the cluster reports that as
// an unknown outcome, not as a full disk: cluster/DESIGN.md, "Full disks".) Unavailable would not do: clients must
// read an Unavailable without a NotLeader detail as "maybe applied" (a
// transport failure looks the same), and would retry into the full disk
// until their deadline. A follower with a full disk that knows a leader
// still answers NotLeader, so clients reach a leader that has space.
//
// The cluster errors are tested first: an unknown outcome caused by a
// deadline is still unknown, and must not read as a plain DeadlineExceeded.
func statusFor(err error) *status.Status {
	if err == nil {
		return status.New(codes.OK, "")
	}
	var notLeader *cluster.NotLeaderError
	var diskFull *cluster.DiskFullError
	var tooFar *engine.ScheduledTooFarError
	var field *engine.FieldError
	var version *cluster.CommandVersionError
	var conflict *engine.UniqueConflictError
	var budget interface{ LimitKey() string } // engine.MemoryFullError, engine.DiskFullError
	switch {
	case errors.As(err, &notLeader):
		return withDetails(codes.Unavailable, err.Error(), &seppv1.NotLeader{
			LeaderId:       notLeader.Leader.ID,
			LeaderGrpcAddr: notLeader.Leader.GRPCAddr,
			LeaderHttpAddr: notLeader.Leader.HTTPAddr,
		})
	case errors.Is(err, cluster.ErrNotLeader):
		return withDetails(codes.Unavailable, err.Error(), &seppv1.NotLeader{})
	case errors.As(err, &diskFull):
		return withDetails(codes.ResourceExhausted, err.Error(), &errdetails.ResourceInfo{
			ResourceType: "disk", ResourceName: diskFull.Dir,
			Description: "the node's data directory is out of space; nothing was applied; free space, then retry",
		})
	case errors.Is(err, cluster.ErrUnknownOutcome):
		return withDetails(codes.Aborted, err.Error()+
			" (the operation may or may not have been applied; retry with the same idempotency_key or request_id)",
			&seppv1.UnknownOutcome{Reason: err.Error()})
	case errors.Is(err, cluster.ErrNoLeader), errors.Is(err, cluster.ErrShutdown), errors.Is(err, cluster.ErrCatchingUp):
		return status.New(codes.Unavailable, err.Error())
	case errors.Is(err, cluster.ErrSchedulesUnavailable):
		return withDetails(codes.FailedPrecondition, err.Error(), &errdetails.PreconditionFailure{
			Violations: []*errdetails.PreconditionFailure_Violation{{
				Type: "UPGRADE", Subject: "cluster",
				Description: "a member does not apply schedules yet; retry once every member runs this release",
			}},
		})

	case errors.As(err, &tooFar):
		return withDetails(codes.InvalidArgument, err.Error(),
			&seppv1.ScheduledTooFar{
				Queue:         tooFar.Queue,
				HorizonMs:     tooFar.Horizon.Milliseconds(),
				RequestedAt:   timestamppb.New(tooFar.Requested),
				LatestAllowed: timestamppb.New(tooFar.Latest),
			},
			&seppv1.FieldViolation{Field: "scheduled_at", Limit: fmt.Sprintf("max_schedule_horizon_ms=%d", tooFar.Horizon.Milliseconds()), Description: err.Error()},
			badRequest("scheduled_at", err.Error()))
	case errors.Is(err, engine.ErrScheduledTooFar):
		return withDetails(codes.InvalidArgument, err.Error(), badRequest("scheduled_at", err.Error()))
	case errors.Is(err, engine.ErrInvalidArgument):
		if errors.As(err, &field) {
			return fieldStatus(codes.InvalidArgument, err.Error(), field.Field, field.Limit, field.Reason)
		}
		return status.New(codes.InvalidArgument, err.Error())
	case errors.Is(err, engine.ErrLeaseCancelled):
		return withDetails(codes.FailedPrecondition, err.Error(), &errdetails.PreconditionFailure{
			Violations: []*errdetails.PreconditionFailure_Violation{{
				Type: "LEASE_CANCELLED", Subject: "ctx.lease_token",
				Description: "the lease was revoked: an operator cancelled the job",
			}},
		})
	case errors.Is(err, engine.ErrLeaseLost):
		return withDetails(codes.FailedPrecondition, err.Error(), &errdetails.PreconditionFailure{
			Violations: []*errdetails.PreconditionFailure_Violation{{
				Type: "LEASE", Subject: "ctx.lease_token",
				Description: "the lease is no longer held (expired, or the job was acked, released or redelivered)",
			}},
		})
	case errors.Is(err, engine.ErrWrongState):
		return withDetails(codes.FailedPrecondition, err.Error(), &errdetails.PreconditionFailure{
			Violations: []*errdetails.PreconditionFailure_Violation{{
				Type: "STATE", Subject: "job", Description: err.Error(),
			}},
		})
	case errors.As(err, &version):
		return withDetails(codes.FailedPrecondition, err.Error(), &errdetails.PreconditionFailure{
			Violations: []*errdetails.PreconditionFailure_Violation{{
				Type: "VERSION", Subject: fmt.Sprintf("command_version=%d", version.Version), Description: err.Error(),
			}},
		})
	case errors.As(err, &conflict):
		return withDetails(codes.AlreadyExists, err.Error(), &errdetails.ResourceInfo{
			ResourceType: "job", ResourceName: strconv.FormatUint(uint64(conflict.Existing), 10),
			Owner: conflict.Queue, Description: err.Error(),
		})
	case errors.Is(err, engine.ErrNotFound), errors.Is(err, engine.ErrUnknownQueue), errors.Is(err, cluster.ErrUnknownMember):
		return fromFieldError(codes.NotFound, err)
	case errors.Is(err, engine.ErrAlreadyExists):
		return fromFieldError(codes.AlreadyExists, err)
	case errors.Is(err, engine.ErrQueueNotEmpty), errors.Is(err, engine.ErrQueueInUse):
		return withDetails(codes.FailedPrecondition, err.Error(), &errdetails.PreconditionFailure{
			Violations: []*errdetails.PreconditionFailure_Violation{{Type: "QUEUE", Subject: "queue", Description: err.Error()}},
		})
	case errors.Is(err, engine.ErrNoCompletedRetention):
		// The cluster keeps results, this queue does not: the queue's
		// setting is the precondition to change.
		return withDetails(codes.FailedPrecondition, err.Error(), &errdetails.PreconditionFailure{
			Violations: []*errdetails.PreconditionFailure_Violation{{Type: "QUEUE", Subject: "completed_retention_ms", Description: err.Error()}},
		})
	case errors.Is(err, ErrResultNotKept):
		return withDetails(codes.FailedPrecondition, err.Error(), &errdetails.PreconditionFailure{
			Violations: []*errdetails.PreconditionFailure_Violation{{Type: "VERSION", Subject: "feature=results", Description: err.Error()}},
		})
	case errors.Is(err, cluster.ErrFollowUpsUnsupported):
		return withDetails(codes.FailedPrecondition, err.Error(), &errdetails.PreconditionFailure{
			Violations: []*errdetails.PreconditionFailure_Violation{{Type: "VERSION", Subject: "feature=follow_ups", Description: err.Error()}},
		})
	case errors.Is(err, cluster.ErrProgressUnsupported):
		return withDetails(codes.FailedPrecondition, err.Error(), &errdetails.PreconditionFailure{
			Violations: []*errdetails.PreconditionFailure_Violation{{Type: "VERSION", Subject: "feature=progress", Description: err.Error()}},
		})
	case errors.Is(err, cluster.ErrUpgradeInProgress):
		return withDetails(codes.FailedPrecondition, err.Error(), &errdetails.PreconditionFailure{
			Violations: []*errdetails.PreconditionFailure_Violation{{Type: "VERSION", Subject: "cluster", Description: err.Error()}},
		})
	case errors.As(err, &budget):
		// No request field is at fault: a QuotaFailure names the budget.
		return withDetails(codes.ResourceExhausted, err.Error(), &errdetails.QuotaFailure{
			Violations: []*errdetails.QuotaFailure_Violation{{Subject: budget.LimitKey(), Description: err.Error()}},
		})
	case errors.Is(err, engine.ErrQueueFull), errors.Is(err, engine.ErrCapacity), errors.Is(err, engine.ErrMemoryFull), errors.Is(err, engine.ErrDiskFull):
		return fromFieldError(codes.ResourceExhausted, err)

	case errors.Is(err, context.DeadlineExceeded):
		return status.New(codes.DeadlineExceeded, err.Error())
	case errors.Is(err, context.Canceled):
		return status.New(codes.Canceled, err.Error())
	}
	if st, ok := status.FromError(err); ok {
		return st
	}
	return status.New(codes.Internal, "internal error: "+err.Error())
}

// fromFieldError keeps the field of a wrapped *engine.FieldError as details
// for non-InvalidArgument codes (e.g. a full queue names "queue").
func fromFieldError(code codes.Code, err error) *status.Status {
	var field *engine.FieldError
	if errors.As(err, &field) {
		return fieldStatus(code, err.Error(), field.Field, field.Limit, field.Reason)
	}
	return status.New(code, err.Error())
}

// fieldStatus builds a status naming one field and its limit, with both the
// sepp FieldViolation and the standard google.rpc.BadRequest, so generic
// tools (grpcurl) show the field too.
func fieldStatus(code codes.Code, msg, field, limit, description string) *status.Status {
	return withDetails(code, msg,
		&seppv1.FieldViolation{Field: field, Limit: limit, Description: description},
		badRequest(field, description))
}

func badRequest(field, description string) *errdetails.BadRequest {
	return &errdetails.BadRequest{FieldViolations: []*errdetails.BadRequest_FieldViolation{{
		Field: field, Description: description,
	}}}
}

func withDetails(code codes.Code, msg string, details ...protoadapt.MessageV1) *status.Status {
	st := status.New(code, msg)
	withDetails, err := st.WithDetails(details...)
	if err != nil {
		// Only a detail that cannot be marshalled fails here; keep the code
		// and message rather than lose the error.
		return st
	}
	return withDetails
}

// fieldError is a request field the rpc layer rejects before the engine sees
// it. It maps to InvalidArgument with both field and limit in the details.
type fieldError struct {
	Field  string
	Limit  string // e.g. "max 255 bytes"; empty when not a numeric limit
	Reason string // names the limit, e.g. "must be at most 255 bytes, got 300"
}

func (e *fieldError) Error() string { return e.Field + ": " + e.Reason }

// GRPCStatus lets status.FromError (and so statusFor) read a fieldError.
func (e *fieldError) GRPCStatus() *status.Status {
	return fieldStatus(codes.InvalidArgument, e.Error(), e.Field, e.Limit, e.Reason)
}

func invalidField(field, limit, format string, args ...any) error {
	return &fieldError{Field: field, Limit: limit, Reason: fmt.Sprintf(format, args...)}
}
