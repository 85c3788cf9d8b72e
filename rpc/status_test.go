package rpc

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/sepp-io/sepp/cluster"
	"github.com/sepp-io/sepp/engine"
	seppv1 "github.com/sepp-io/sepp/proto/sepp/v1"
)

// detailOf returns the first detail of st with the type of want.
func detailOf[T proto.Message](t *testing.T, st *status.Status) (T, bool) {
	t.Helper()
	var zero T
	for _, d := range st.Details() {
		if m, ok := d.(T); ok {
			return m, true
		}
	}
	return zero, false
}

func TestStatusFor(t *testing.T) {
	requested := time.Date(2031, 1, 1, 0, 0, 0, 0, time.UTC)
	latest := time.Date(2030, 2, 1, 0, 0, 0, 0, time.UTC)
	leader := cluster.NodeInfo{ID: "n2", RaftAddr: "10.0.0.2:7000", GRPCAddr: "10.0.0.2:50051", HTTPAddr: "10.0.0.2:8080"}

	tests := []struct {
		name     string
		err      error
		code     codes.Code
		inMsg    string                                // substring of the message
		check    func(t *testing.T, st *status.Status) // the details
		internal bool
	}{
		{
			name: "NotLeaderNamesLeaderGRPCAddress",
			err:  fmt.Errorf("propose enqueue: %w", &cluster.NotLeaderError{Leader: leader}),
			code: codes.Unavailable, inMsg: "10.0.0.2:50051",
			check: func(t *testing.T, st *status.Status) {
				t.Helper()
				d, ok := detailOf[*seppv1.NotLeader](t, st)
				if !ok || d.GetLeaderId() != "n2" || d.GetLeaderGrpcAddr() != "10.0.0.2:50051" || d.GetLeaderHttpAddr() != "10.0.0.2:8080" {
					t.Errorf("NotLeader detail = %v, want leader n2 at 10.0.0.2:50051", d)
				}
			},
		},
		{
			name: "ResultNotKeptNamesTheFeature",
			err:  fmt.Errorf("%w (member n3 applies 19)", cluster.ErrResultNotKept),
			code: codes.FailedPrecondition, inMsg: "results",
			check: func(t *testing.T, st *status.Status) {
				t.Helper()
				pf, ok := detailOf[*errdetails.PreconditionFailure](t, st)
				if !ok || pf.GetViolations()[0].GetType() != "VERSION" || pf.GetViolations()[0].GetSubject() != "feature=results" {
					t.Errorf("PreconditionFailure = %v, want VERSION feature=results", pf)
				}
			},
		},
		{
			name: "ProgressUnsupportedNamesTheFeature",
			err:  fmt.Errorf("%w (member n3 applies 22)", cluster.ErrProgressUnsupported),
			code: codes.FailedPrecondition, inMsg: "progress",
			check: func(t *testing.T, st *status.Status) {
				t.Helper()
				pf, ok := detailOf[*errdetails.PreconditionFailure](t, st)
				if !ok || pf.GetViolations()[0].GetType() != "VERSION" || pf.GetViolations()[0].GetSubject() != "feature=progress" {
					t.Errorf("PreconditionFailure = %v, want VERSION feature=progress", pf)
				}
			},
		},
		{
			name: "FollowUpsUnsupportedNamesTheFeature",
			err:  fmt.Errorf("%w (member n3 applies 23)", cluster.ErrFollowUpsUnsupported),
			code: codes.FailedPrecondition, inMsg: "follow_ups",
			check: func(t *testing.T, st *status.Status) {
				t.Helper()
				pf, ok := detailOf[*errdetails.PreconditionFailure](t, st)
				if !ok || pf.GetViolations()[0].GetType() != "VERSION" || pf.GetViolations()[0].GetSubject() != "feature=follow_ups" {
					t.Errorf("PreconditionFailure = %v, want VERSION feature=follow_ups", pf)
				}
			},
		},
		{
			name: "RefusedFollowUpKeepsItsCode",
			err:  &engine.FollowUpError{Index: 2, Err: &engine.MemoryFullError{Queue: "q", Held: 10, Need: 5, Limit: 12}},
			code: codes.ResourceExhausted, inMsg: "follow_ups[2]",
		},
		{
			name: "NoCompletedRetentionNamesTheSetting",
			err:  &engine.FieldError{Field: "result", Reason: "queue \"q\" keeps no completed jobs", Err: engine.ErrNoCompletedRetention},
			code: codes.FailedPrecondition, inMsg: "keeps no completed jobs",
			check: func(t *testing.T, st *status.Status) {
				t.Helper()
				pf, ok := detailOf[*errdetails.PreconditionFailure](t, st)
				if !ok || pf.GetViolations()[0].GetType() != "QUEUE" || pf.GetViolations()[0].GetSubject() != "completed_retention_ms" {
					t.Errorf("PreconditionFailure = %v, want QUEUE completed_retention_ms", pf)
				}
			},
		},
		{
			name: "NotLeaderUnknownLeader",
			err:  &cluster.NotLeaderError{},
			code: codes.Unavailable, inMsg: "leader unknown",
			check: func(t *testing.T, st *status.Status) {
				t.Helper()
				if d, ok := detailOf[*seppv1.NotLeader](t, st); !ok || d.GetLeaderGrpcAddr() != "" {
					t.Errorf("NotLeader detail = %v, want an empty one", d)
				}
			},
		},
		{name: "BareErrNotLeader", err: cluster.ErrNotLeader, code: codes.Unavailable, inMsg: "not the leader",
			check: func(t *testing.T, st *status.Status) {
				t.Helper()
				if _, ok := detailOf[*seppv1.NotLeader](t, st); !ok {
					t.Error("no NotLeader detail")
				}
			}},
		{name: "NoLeader", err: fmt.Errorf("enqueue: %w", cluster.ErrNoLeader), code: codes.Unavailable, inMsg: "no leader"},
		{name: "Shutdown", err: cluster.ErrShutdown, code: codes.Unavailable, inMsg: "shutting down"},
		{name: "CatchingUp", err: cluster.ErrCatchingUp, code: codes.Unavailable, inMsg: "replaying its log after a restart"},
		{
			name: "UnknownOutcomeIsAbortedWithDetail",
			err:  fmt.Errorf("enqueue: %w", cluster.ErrUnknownOutcome),
			code: codes.Aborted, inMsg: "same idempotency_key",
			check: func(t *testing.T, st *status.Status) {
				t.Helper()
				if _, ok := detailOf[*seppv1.UnknownOutcome](t, st); !ok {
					t.Error("no UnknownOutcome detail")
				}
			},
		},
		{
			name: "UnknownOutcomeWinsOverDeadline",
			err:  fmt.Errorf("%w: %w", cluster.ErrUnknownOutcome, context.DeadlineExceeded),
			code: codes.Aborted, inMsg: "outcome unknown",
		},
		{
			name: "ScheduledTooFarCarriesHorizonAndRequestedTime",
			err: &engine.ScheduledTooFarError{Queue: "reports", Horizon: 30 * 24 * time.Hour,
				Requested: requested, Latest: latest},
			code: codes.InvalidArgument, inMsg: "max_schedule_horizon_ms=2592000000",
			check: func(t *testing.T, st *status.Status) {
				t.Helper()
				d, ok := detailOf[*seppv1.ScheduledTooFar](t, st)
				if !ok {
					t.Fatal("no ScheduledTooFar detail")
				}
				want := &seppv1.ScheduledTooFar{Queue: "reports", HorizonMs: 2592000000,
					RequestedAt: timestamppb.New(requested), LatestAllowed: timestamppb.New(latest)}
				if !proto.Equal(d, want) {
					t.Errorf("ScheduledTooFar = %v, want %v", d, want)
				}
				if br, ok := detailOf[*errdetails.BadRequest](t, st); !ok || br.GetFieldViolations()[0].GetField() != "scheduled_at" {
					t.Errorf("BadRequest = %v, want field scheduled_at", br)
				}
			},
		},
		{
			name: "InvalidArgumentNamesFieldAndLimit",
			err:  fmt.Errorf("enqueue: %w", &engine.FieldError{Field: "priority", Reason: "must be 0..9, got 10", Err: engine.ErrInvalidArgument}),
			code: codes.InvalidArgument, inMsg: "priority: must be 0..9, got 10",
			check: func(t *testing.T, st *status.Status) {
				t.Helper()
				fv, ok := detailOf[*seppv1.FieldViolation](t, st)
				if !ok || fv.GetField() != "priority" || !strings.Contains(fv.GetDescription(), "0..9") {
					t.Errorf("FieldViolation = %v, want priority naming 0..9", fv)
				}
				br, ok := detailOf[*errdetails.BadRequest](t, st)
				if !ok || br.GetFieldViolations()[0].GetField() != "priority" {
					t.Errorf("BadRequest = %v, want field priority", br)
				}
			},
		},
		{name: "BareInvalidArgument", err: engine.ErrInvalidArgument, code: codes.InvalidArgument, inMsg: "invalid argument"},
		{
			name: "RPCFieldErrorKeepsLimit",
			err:  invalidField("wait", ">= 0", "must be >= 0, got -1s"),
			code: codes.InvalidArgument, inMsg: "wait: must be >= 0",
			check: func(t *testing.T, st *status.Status) {
				t.Helper()
				fv, ok := detailOf[*seppv1.FieldViolation](t, st)
				if !ok || fv.GetField() != "wait" || fv.GetLimit() != ">= 0" {
					t.Errorf("FieldViolation = %v, want wait with limit >= 0", fv)
				}
			},
		},
		{
			name: "StaleLeaseIsFailedPrecondition",
			err:  fmt.Errorf("ack job 7: %w", engine.ErrLeaseLost),
			code: codes.FailedPrecondition, inMsg: "lease lost",
			check: func(t *testing.T, st *status.Status) {
				t.Helper()
				pf, ok := detailOf[*errdetails.PreconditionFailure](t, st)
				if !ok || pf.GetViolations()[0].GetType() != "LEASE" {
					t.Errorf("PreconditionFailure = %v, want type LEASE", pf)
				}
			},
		},
		{
			name: "CancelledLeaseSaysSo",
			err:  fmt.Errorf("extend job 7: %w", engine.ErrLeaseCancelled),
			code: codes.FailedPrecondition, inMsg: "cancelled",
			check: func(t *testing.T, st *status.Status) {
				t.Helper()
				pf, ok := detailOf[*errdetails.PreconditionFailure](t, st)
				if !ok || pf.GetViolations()[0].GetType() != "LEASE_CANCELLED" {
					t.Errorf("PreconditionFailure = %v, want type LEASE_CANCELLED", pf)
				}
			},
		},
		{
			name: "WrongStateIsFailedPrecondition",
			err:  fmt.Errorf("job 7 is reserved: %w", engine.ErrWrongState),
			code: codes.FailedPrecondition, inMsg: "reserved",
			check: func(t *testing.T, st *status.Status) {
				t.Helper()
				pf, ok := detailOf[*errdetails.PreconditionFailure](t, st)
				if !ok || pf.GetViolations()[0].GetType() != "STATE" {
					t.Errorf("PreconditionFailure = %v, want type STATE", pf)
				}
			},
		},
		{name: "NotFound", err: fmt.Errorf("job 9: %w", engine.ErrNotFound), code: codes.NotFound, inMsg: "job 9"},
		{name: "UnknownMemberIsNotFound", err: fmt.Errorf(`transfer leadership: "sepp-9" is not a voter: %w`, cluster.ErrUnknownMember), code: codes.NotFound, inMsg: "sepp-9"},
		{
			name: "UnknownQueueIsNotFoundNamingQueue",
			err:  &engine.FieldError{Field: "queue", Reason: `queue "x" is not configured and the server runs strict`, Err: engine.ErrUnknownQueue},
			code: codes.NotFound, inMsg: "strict",
			check: func(t *testing.T, st *status.Status) {
				t.Helper()
				if fv, ok := detailOf[*seppv1.FieldViolation](t, st); !ok || fv.GetField() != "queue" {
					t.Errorf("FieldViolation = %v, want queue", fv)
				}
			},
		},
		{name: "QueueFull", err: &engine.FieldError{Field: "queue", Reason: "queue \"q\" holds 10 jobs, its max_length", Err: engine.ErrQueueFull},
			code: codes.ResourceExhausted, inMsg: "max_length"},
		{name: "Capacity", err: fmt.Errorf("keys: %w", engine.ErrCapacity), code: codes.ResourceExhausted, inMsg: "capacity"},
		{name: "MemoryBudgetNamesTheLimit", err: &engine.MemoryFullError{Held: 100, Need: 10, Limit: 105},
			code: codes.ResourceExhausted, inMsg: "limits.max_memory_bytes 105",
			check: func(t *testing.T, st *status.Status) {
				t.Helper()
				if qf, ok := detailOf[*errdetails.QuotaFailure](t, st); !ok || qf.GetViolations()[0].GetSubject() != "limits.max_memory_bytes" {
					t.Errorf("QuotaFailure = %v, want limits.max_memory_bytes", qf)
				}
			}},
		{name: "QueueMemoryBudgetNamesTheQueue", err: &engine.MemoryFullError{Queue: "q", Held: 100, Need: 10, Limit: 105},
			code: codes.ResourceExhausted, inMsg: `queue "q"`,
			check: func(t *testing.T, st *status.Status) {
				t.Helper()
				if qf, ok := detailOf[*errdetails.QuotaFailure](t, st); !ok || qf.GetViolations()[0].GetSubject() != `queues["q"].max_memory_bytes` {
					t.Errorf("QuotaFailure = %v, want the queue's key", qf)
				}
			}},
		{name: "DiskBudgetNamesTheLimit", err: fmt.Errorf("enqueue: %w", &engine.DiskFullError{Held: 100, Need: 10, Limit: 105}),
			code: codes.ResourceExhausted, inMsg: "limits.max_disk_bytes 105",
			check: func(t *testing.T, st *status.Status) {
				t.Helper()
				if qf, ok := detailOf[*errdetails.QuotaFailure](t, st); !ok || qf.GetViolations()[0].GetSubject() != "limits.max_disk_bytes" {
					t.Errorf("QuotaFailure = %v, want limits.max_disk_bytes", qf)
				}
			}},
		{name: "Canceled", err: fmt.Errorf("read: %w", context.Canceled), code: codes.Canceled},
		{name: "DeadlineExceeded", err: context.DeadlineExceeded, code: codes.DeadlineExceeded},
		{name: "StatusPassesThrough", err: status.Error(codes.PermissionDenied, "operator role needed"), code: codes.PermissionDenied, inMsg: "operator role"},
		{name: "AnythingElseIsInternal", err: errors.New("disk on fire"), code: codes.Internal, inMsg: "disk on fire", internal: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := statusFor(tt.err)
			if st.Code() != tt.code {
				t.Fatalf("code = %v, want %v (message %q)", st.Code(), tt.code, st.Message())
			}
			if !strings.Contains(st.Message(), tt.inMsg) {
				t.Errorf("message %q does not contain %q", st.Message(), tt.inMsg)
			}
			if tt.check != nil {
				tt.check(t, st)
			}
		})
	}
	if st := statusFor(nil); st.Code() != codes.OK {
		t.Errorf("statusFor(nil) = %v, want OK", st.Code())
	}
}

// Every engine and cluster sentinel has a row of its own (not Internal): a
// new sentinel without a mapping fails here.
func TestStatusFor_EverySentinelMapped(t *testing.T) {
	sentinels := []error{
		engine.ErrInvalidArgument, engine.ErrNotFound, engine.ErrLeaseLost, engine.ErrLeaseCancelled, engine.ErrScheduledTooFar,
		engine.ErrQueueFull, engine.ErrUnknownQueue, engine.ErrWrongState, engine.ErrCapacity, engine.ErrMemoryFull,
		cluster.ErrNotLeader, cluster.ErrNoLeader, cluster.ErrUnknownOutcome, cluster.ErrShutdown, cluster.ErrUnknownMember, cluster.ErrSchedulesUnavailable, cluster.ErrCatchingUp,
	}
	for _, err := range sentinels {
		if code := statusFor(fmt.Errorf("wrapped: %w", err)).Code(); code == codes.Internal || code == codes.OK {
			t.Errorf("%v maps to %v", err, code)
		}
	}
}

func TestItemErrorFor_KeepsCodeAndDetails(t *testing.T) {
	ie := itemErrorFor(&engine.FieldError{Field: "jobs[2].priority", Reason: "must be 0..9, got 12", Err: engine.ErrInvalidArgument})
	if codes.Code(ie.GetCode()) != codes.InvalidArgument || !strings.Contains(ie.GetMessage(), "jobs[2].priority") || len(ie.GetDetails()) == 0 {
		t.Errorf("ItemError = %v, want InvalidArgument naming jobs[2].priority with details", ie)
	}
}
