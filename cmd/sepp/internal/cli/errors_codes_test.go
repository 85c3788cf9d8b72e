package cli

import (
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Every gRPC code the server may answer prints its own label and exits with
// the code codeClasses documents.
func TestCLI_ErrorLabelPerCode(t *testing.T) {
	clearContextEnv(t)
	addr, backend := startBackend(t)
	tests := []struct {
		code  codes.Code
		class string
		exit  int
	}{
		{codes.Canceled, ClassCanceled, ExitError},
		{codes.Unknown, ClassServerError, ExitError},
		{codes.InvalidArgument, ClassInvalid, ExitRejected},
		{codes.NotFound, ClassNotFound, ExitNotFound},
		{codes.AlreadyExists, ClassAlreadyExists, ExitRejected},
		{codes.PermissionDenied, ClassPermission, ExitError},
		{codes.ResourceExhausted, ClassLimit, ExitRejected},
		{codes.FailedPrecondition, ClassWrongState, ExitLeaseLost},
		{codes.OutOfRange, ClassInvalid, ExitRejected},
		{codes.Unimplemented, ClassUnsupported, ExitError},
		{codes.Internal, ClassServerError, ExitError},
		{codes.DataLoss, ClassServerError, ExitError},
		{codes.Unauthenticated, ClassUnauthenticated, ExitError},
	}
	seen := map[codes.Code]bool{}
	for _, tt := range tests {
		seen[tt.code] = true
		t.Run(tt.code.String(), func(t *testing.T) {
			backend.FailWith(func(string) error { return status.Error(tt.code, "the server says no") })
			defer backend.FailWith(nil)
			// A read: its failure is reported by its code, never as an unknown outcome.
			_, exit, err := seppErr(t, addr, "jobs", "get", "1", "--timeout", "1s")
			if err == nil {
				t.Fatal("no error")
			}
			if want := tt.class + ": "; !strings.HasPrefix(err.Error(), want) {
				t.Errorf("message %q does not start with %q", err, want)
			}
			if !strings.Contains(err.Error(), "the server says no") {
				t.Errorf("message %q drops the server's message", err)
			}
			if exit != tt.exit {
				t.Errorf("exit %d, want %d", exit, tt.exit)
			}
		})
	}
	// The table covers every code but OK; the ones not served above
	// (Unavailable, DeadlineExceeded, Aborted) are retried by the client
	// and tested through TestCLI_ErrorClasses.
	for c := codes.Canceled; c <= codes.Unauthenticated; c++ {
		if _, ok := codeClasses[c]; !ok {
			t.Errorf("codeClasses has no entry for %s", c)
		}
	}
}

// The real refusals print their own label and name the field.
func TestCLI_RefusalsPrintHonestLabels(t *testing.T) {
	clearContextEnv(t)
	addr, _ := startBackend(t)
	mustRun(t, addr, "queues", "create", "taken")
	mustRun(t, addr, "queues", "create", "tiny", "--max-length", "1")
	mustRun(t, addr, "enqueue", "tiny", "t")
	tests := []struct {
		name     string
		args     []string
		class    string
		exit     int
		contains string
	}{
		{"QueueExists", []string{"queues", "create", "taken"}, ClassAlreadyExists, ExitRejected, `queue "taken" already exists`},
		{"QueueFull", []string{"enqueue", "tiny", "t"}, ClassLimit, ExitRejected, "max_length"},
		{"PayloadTooLarge", []string{"enqueue", "taken", "t", "--payload", strings.Repeat("a", 1<<20+1)}, ClassInvalid, ExitRejected, "enqueue: payload: is 1048577 bytes, above limits.max_payload_bytes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, exit, err := seppErr(t, addr, tt.args...)
			if err == nil {
				t.Fatal("no error")
			}
			if want := tt.class + ": "; !strings.HasPrefix(err.Error(), want) {
				t.Errorf("message %q does not start with %q", err, want)
			}
			if !strings.Contains(err.Error(), tt.contains) {
				t.Errorf("message %q does not contain %q", err, tt.contains)
			}
			if exit != tt.exit {
				t.Errorf("exit %d, want %d", exit, tt.exit)
			}
		})
	}
}

// A per-id action that fails reports each failure once: in the error (on
// stderr), not on stdout as well.
func TestCLI_ActionFailurePrintedOnce(t *testing.T) {
	clearContextEnv(t)
	addr, _ := startBackend(t)
	mustRun(t, addr, "enqueue", "q", "t")
	mustRun(t, addr, "reserve", "q")
	out, exit, err := seppErr(t, addr, "jobs", "cancel", "1", "999")
	if err == nil || exit != ExitNotFound {
		t.Fatalf("exit %d, err %v; want exit %d", exit, err, ExitNotFound)
	}
	if out != "cancelled job 1\n" && out != "canceled job 1\n" {
		t.Errorf("stdout %q: want only the job that was cancelled", out)
	}
	if strings.Count(err.Error(), "999") != 1 {
		t.Errorf("error %q should name job 999 once", err)
	}
}
