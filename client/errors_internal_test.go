package client

import (
	"errors"
	"testing"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// A FieldError's message names its field, even when the description only
// mentions the field inside a limit's name.
func TestFieldError_ErrorNamesField(t *testing.T) {
	tests := []struct {
		name string
		err  FieldError
		want string
	}{
		{"DescriptionMentionsFieldInLimit", FieldError{Field: "payload", Description: "is 1048577 bytes, above limits.max_payload_bytes 1048576"},
			"payload: is 1048577 bytes, above limits.max_payload_bytes 1048576"},
		{"DescriptionStartsWithField", FieldError{Field: "priority", Description: "priority must be 0..9, got 10"}, "priority must be 0..9, got 10"},
		{"NoField", FieldError{Description: "bad request"}, "bad request"},
		{"LimitOnly", FieldError{Field: "max", Limit: "0..1000"}, "max: exceeds 0..1000"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.err.Error(); got != tt.want {
				t.Errorf("Error() = %q, want %q", got, tt.want)
			}
		})
	}
}

// A FailedPrecondition of type VERSION is ErrUnsupported, never a lost
// lease, even on a lease operation: the server refused a feature and the
// lease is still held (an Ack whose result the server would not keep).
func TestFromStatus_VersionIsUnsupported(t *testing.T) {
	st, err := status.New(codes.FailedPrecondition, "result: not kept").WithDetails(&errdetails.PreconditionFailure{
		Violations: []*errdetails.PreconditionFailure_Violation{{Type: "VERSION", Subject: "feature=results"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	got := fromStatus("ack", st.Err())
	if !errors.Is(got, ErrUnsupported) || errors.Is(got, ErrLeaseLost) {
		t.Fatalf("fromStatus(ack, VERSION) = %v: want ErrUnsupported and not ErrLeaseLost", got)
	}
	lease, _ := status.New(codes.FailedPrecondition, "lease lost").WithDetails(&errdetails.PreconditionFailure{
		Violations: []*errdetails.PreconditionFailure_Violation{{Type: "LEASE", Subject: "job"}},
	})
	if got := fromStatus("ack", lease.Err()); !errors.Is(got, ErrLeaseLost) || errors.Is(got, ErrUnsupported) {
		t.Fatalf("fromStatus(ack, LEASE) = %v: want ErrLeaseLost only", got)
	}
	// A result the queue does not keep (completed_retention_ms 0): the
	// lease still holds, so never a lost lease.
	queue, _ := status.New(codes.FailedPrecondition, "keeps no completed jobs").WithDetails(&errdetails.PreconditionFailure{
		Violations: []*errdetails.PreconditionFailure_Violation{{Type: "QUEUE", Subject: "completed_retention_ms"}},
	})
	if got := fromStatus("ack", queue.Err()); !errors.Is(got, ErrWrongState) || errors.Is(got, ErrLeaseLost) {
		t.Fatalf("fromStatus(ack, QUEUE) = %v: want ErrWrongState and not ErrLeaseLost", got)
	}
}
