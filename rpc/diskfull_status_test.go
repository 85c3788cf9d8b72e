package rpc

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"syscall"
	"testing"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"

	"github.com/sepp-io/sepp/cluster"
)

// A full disk on the node is refused as ResourceExhausted naming the data
// directory, whether the client's own write failed or it arrived while the
// node, stepped down by the failed write, has no leader; never as Aborted
// (unknown outcome) or a plain Unavailable/DeadlineExceeded.
func TestStatusForDiskFull(t *testing.T) {
	const dir = "/var/lib/sepp/data"
	cause := fmt.Errorf("store logs: write %s/raft.db: %w", dir, syscall.ENOSPC)
	tests := []struct {
		name string
		err  error
	}{
		{"OwnWriteFailed", &cluster.DiskFullError{Dir: dir, Cause: cause}},
		{"NoLeaderWhileFull", fmt.Errorf("enqueue: %w", &cluster.DiskFullError{Dir: dir, Cause: cause, Err: cluster.ErrNoLeader})},
		{"WaitedForReadinessWhileFull", &cluster.DiskFullError{Dir: dir, Cause: cause,
			Err: fmt.Errorf("cluster: not proposed: waiting for the new leader to be ready: %w", context.DeadlineExceeded)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if !errors.Is(tt.err, cluster.ErrDiskFull) {
				t.Fatalf("%v does not wrap ErrDiskFull", tt.err)
			}
			st := statusFor(tt.err)
			if st.Code() != codes.ResourceExhausted {
				t.Fatalf("code = %v, want ResourceExhausted (%s)", st.Code(), st.Message())
			}
			if want := "disk full on " + dir; !strings.Contains(st.Message(), want) {
				t.Errorf("message %q does not say %q", st.Message(), want)
			}
			info, ok := detailOf[*errdetails.ResourceInfo](t, st)
			if !ok || info.GetResourceType() != "disk" || info.GetResourceName() != dir {
				t.Errorf("ResourceInfo detail = %v, want disk %s", info, dir)
			}
		})
	}
}
