package rpc_test

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/sepp-io/sepp/cluster/clustertest"
	"github.com/sepp-io/sepp/engine"
	seppv1 "github.com/sepp-io/sepp/proto/sepp/v1"
	"github.com/sepp-io/sepp/rpc"
	"github.com/sepp-io/sepp/rpc/rpctest"
)

// testTimeout bounds every call of a test; generous, since the machine is
// shared, and never asserted on.
const testTimeout = 30 * time.Second

func ctxT(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	t.Cleanup(cancel)
	return ctx
}

// retentionConfig keeps dead letters for a week, so records can be seen.
func retentionConfig() *engine.Config {
	l := engine.DefaultLimits()
	l.DeadLetterRetention = 7 * 24 * time.Hour
	return &engine.Config{Limits: l}
}

func start(t *testing.T, cfg *engine.Config) *rpctest.Env {
	t.Helper()
	return rpctest.Start(t, cfg, rpc.Options{Version: "test"})
}

func enqueue(t *testing.T, env *rpctest.Env, req *seppv1.EnqueueRequest) *seppv1.EnqueueResponse {
	t.Helper()
	if req.JobType == "" {
		req.JobType = "test"
	}
	resp, err := env.Queue.Enqueue(ctxT(t), req)
	if err != nil {
		t.Fatalf("Enqueue(%v): %v", req, err)
	}
	return resp
}

func reserve(t *testing.T, env *rpctest.Env, req *seppv1.ReserveRequest) []*seppv1.ReservedJob {
	t.Helper()
	resp, err := env.Queue.Reserve(ctxT(t), req)
	if err != nil {
		t.Fatalf("Reserve(%v): %v", req, err)
	}
	return resp.GetJobs()
}

func reserveOne(t *testing.T, env *rpctest.Env, queue string) *seppv1.ReservedJob {
	t.Helper()
	jobs := reserve(t, env, &seppv1.ReserveRequest{Queue: queue, WorkerId: "w1"})
	if len(jobs) != 1 {
		t.Fatalf("Reserve(%s) returned %d jobs, want 1", queue, len(jobs))
	}
	return jobs[0]
}

func nack(t *testing.T, env *rpctest.Env, ctx *seppv1.JobContext, d *seppv1.RetryDirective, reason string) *seppv1.NackResponse {
	t.Helper()
	resp, err := env.Queue.Nack(ctxT(t), &seppv1.NackRequest{Ctx: ctx, Directive: d, Reason: reason})
	if err != nil {
		t.Fatalf("Nack(job %d): %v", ctx.GetJobId(), err)
	}
	return resp
}

func directiveDefault() *seppv1.RetryDirective {
	return &seppv1.RetryDirective{Directive: &seppv1.RetryDirective_Default{Default: &emptypb.Empty{}}}
}

func directiveDeadLetter() *seppv1.RetryDirective {
	return &seppv1.RetryDirective{Directive: &seppv1.RetryDirective_DeadLetter{DeadLetter: &emptypb.Empty{}}}
}

func directiveAfter(d time.Duration) *seppv1.RetryDirective {
	return &seppv1.RetryDirective{Directive: &seppv1.RetryDirective_After{After: durationpb.New(d)}}
}

func prio(p uint32) *uint32 { return &p }

// requireCode fails unless err is a status with code; it returns the status.
func requireCode(t *testing.T, err error, code codes.Code) *status.Status {
	t.Helper()
	st, ok := status.FromError(err)
	if !ok {
		t.Fatalf("error %v is not a gRPC status", err)
	}
	if st.Code() != code {
		t.Fatalf("code = %v (%q), want %v", st.Code(), st.Message(), code)
	}
	return st
}

func detail[T proto.Message](st *status.Status) (T, bool) {
	var zero T
	for _, d := range st.Details() {
		if m, ok := d.(T); ok {
			return m, true
		}
	}
	return zero, false
}

// requireFieldViolation checks that st names field (in the message and in
// both the sepp and the standard detail) and that the message names limit.
func requireFieldViolation(t *testing.T, st *status.Status, field, limit string) {
	t.Helper()
	if !strings.Contains(st.Message(), field) {
		t.Errorf("message %q does not name field %q", st.Message(), field)
	}
	if !strings.Contains(st.Message(), limit) {
		t.Errorf("message %q does not name limit %q", st.Message(), limit)
	}
	fv, ok := detail[*seppv1.FieldViolation](st)
	if !ok || fv.GetField() != field {
		t.Errorf("FieldViolation = %v, want field %q", fv, field)
	}
	br, ok := detail[*errdetails.BadRequest](st)
	if !ok || len(br.GetFieldViolations()) != 1 || br.GetFieldViolations()[0].GetField() != field {
		t.Errorf("BadRequest = %v, want field %q", br, field)
	}
}

func rpcOptions() rpc.Options { return rpc.Options{Version: "v-test"} }

// listenedCluster starts n raft nodes whose configs name, for every peer,
// the gRPC address of a loopback listener already open for it, so a test
// can serve the API on lis[i] with options of its own and followers name
// the leader's real address. A test that serves every node alike uses
// rpctest.ServeCluster instead.
func listenedCluster(t *testing.T, n int) (nodes *clustertest.Cluster, lis []net.Listener, addrs []string) {
	t.Helper()
	nodes = clustertest.New(t, n, clustertest.WithGRPCListeners())
	for i := range n {
		lis = append(lis, nodes.Listener(i))
	}
	return nodes, lis, nodes.GRPCAddrs()
}
