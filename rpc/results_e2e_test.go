package rpc_test

import (
	"bytes"
	"testing"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"

	seppv1 "github.com/sepp-io/sepp/proto/sepp/v1"
	"github.com/sepp-io/sepp/rpc"
	"github.com/sepp-io/sepp/rpc/rpctest"
)

// TestAck_Result checks an Ack's result against max_result_bytes (advertised
// in GetServerInfo) and refuses a result the server would not keep, leaving
// the lease held so that the worker can ack without it.
func TestAck_Result(t *testing.T) {
	env := rpctest.Start(t, nil, rpc.Options{Version: "test", MaxResultBytes: 16})
	info, err := env.Queue.GetServerInfo(ctxT(t), &seppv1.GetServerInfoRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if got := info.GetLimits().GetMaxResultBytes(); got != 16 {
		t.Fatalf("GetServerInfo max_result_bytes = %d, want 16", got)
	}
	enqueue(t, env, &seppv1.EnqueueRequest{Queue: "q"})
	d := reserveOne(t, env, "q")

	_, err = env.Queue.Ack(ctxT(t), &seppv1.AckRequest{Ctx: d.GetCtx(), Result: bytes.Repeat([]byte{'r'}, 17)})
	requireFieldViolation(t, requireCode(t, err, codes.InvalidArgument), "result", "max_result_bytes=16")

	_, err = env.Queue.Ack(ctxT(t), &seppv1.AckRequest{Ctx: d.GetCtx(), Result: []byte("done")})
	st := requireCode(t, err, codes.FailedPrecondition)
	pf, ok := detail[*errdetails.PreconditionFailure](st)
	if !ok || len(pf.GetViolations()) != 1 || pf.GetViolations()[0].GetSubject() != "feature=results" {
		t.Fatalf("PreconditionFailure = %v, want one violation naming feature=results", pf)
	}

	// Neither refusal settled the delivery: the ack without a result does.
	if _, err := env.Queue.Ack(ctxT(t), &seppv1.AckRequest{Ctx: d.GetCtx()}); err != nil {
		t.Fatalf("Ack without a result after the refusals: %v", err)
	}
}

// TestAck_ResultLimitDefault: a server that sets no limit advertises 64 KiB.
func TestAck_ResultLimitDefault(t *testing.T) {
	env := start(t, nil)
	info, err := env.Queue.GetServerInfo(ctxT(t), &seppv1.GetServerInfoRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if got := info.GetLimits().GetMaxResultBytes(); got != rpc.DefaultMaxResultBytes {
		t.Fatalf("max_result_bytes = %d, want %d", got, rpc.DefaultMaxResultBytes)
	}
}
