package rpc_test

import (
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/sepp-io/sepp/engine"
	seppv1 "github.com/sepp-io/sepp/proto/sepp/v1"
)

// A nack from a worker that never sets a directive follows the queue's
// retry policy instead of being refused: the request is built by hand with
// no directive field at all (field 2), as an outdated worker sends it.
func TestNackWithoutDirectiveFollowsQueuePolicy(t *testing.T) {
	t.Parallel()
	base := 10 * time.Second
	maxAttempts := uint32(2)
	cfg := &engine.Config{Limits: engine.DefaultLimits(), Queues: []engine.QueueConfig{{
		Name: "paced", RetryDelay: &base, DefaultMaxAttempts: &maxAttempts,
	}}}
	env := start(t, cfg)
	// spec: NAK-12
	rawNack := func(jc *seppv1.JobContext, directive []byte) (*seppv1.NackResponse, error) {
		ctxBytes, err := proto.Marshal(jc)
		if err != nil {
			t.Fatal(err)
		}
		raw := protowire.AppendTag(nil, 1, protowire.BytesType)
		raw = protowire.AppendBytes(raw, ctxBytes)
		if directive != nil {
			raw = protowire.AppendTag(raw, 2, protowire.BytesType)
			raw = protowire.AppendBytes(raw, directive)
		}
		raw = protowire.AppendTag(raw, 3, protowire.BytesType)
		raw = protowire.AppendString(raw, "outdated worker")
		resp := &seppv1.NackResponse{}
		err = env.Conn.Invoke(ctxT(t), "/sepp.v1.QueueService/Nack", raw, resp, grpc.ForceCodecV2(rawCodec{}))
		return resp, err
	}
	for _, tc := range []struct {
		name      string
		directive []byte // nil: no field 2 on the wire
	}{
		{name: "NoDirectiveField", directive: nil},
		{name: "EmptyDirective", directive: []byte{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			id := enqueue(t, env, &seppv1.EnqueueRequest{Queue: "paced"}).GetJobId()
			job := reserveOne(t, env, "paced")
			if job.GetCtx().GetJobId() != id {
				t.Fatalf("reserved job %d, want %d", job.GetCtx().GetJobId(), id)
			}
			r, err := rawNack(job.GetCtx(), tc.directive)
			if err != nil {
				t.Fatalf("nack without a directive: %v", err)
			}
			if r.GetDeadLettered() {
				t.Fatal("first failure of two attempts was dead-lettered")
			}
			delay := r.GetNextAttemptAt().AsTime().Sub(env.Clock.Now())
			if delay > base || delay < base*3/4 {
				t.Errorf("retry waits %v, want the queue's %v minus at most 25%% jitter", delay, base)
			}
			if jobs := reserve(t, env, &seppv1.ReserveRequest{Queue: "paced"}); len(jobs) != 0 {
				t.Fatal("job was Ready again before the queue's retry delay")
			}
			env.Clock.Advance(delay)
			env.Backend.Tick()
			again := reserveOne(t, env, "paced")
			if again.GetCtx().GetJobId() != id || again.GetCtx().GetAttempt() != 2 {
				t.Fatalf("after the delay got job %d attempt %d, want job %d attempt 2", again.GetCtx().GetJobId(), again.GetCtx().GetAttempt(), id)
			}
			// The last attempt, nacked the same way, exhausts max_attempts.
			r, err = rawNack(again.GetCtx(), tc.directive)
			if err != nil {
				t.Fatalf("second nack without a directive: %v", err)
			}
			if !r.GetDeadLettered() {
				t.Error("the final attempt's nack did not dead-letter the job")
			}
		})
	}
}
