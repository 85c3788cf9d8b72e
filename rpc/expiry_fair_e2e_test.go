package rpc_test

import (
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/sepp-io/sepp/engine"
	seppv1 "github.com/sepp-io/sepp/proto/sepp/v1"
)

// Expiry and fairness through gRPC: ttl_ms gives a job an expires_at,
// GetServerInfo shows a queue's max_wait_ms and fairness_key, GetQueue its
// settings, ListQueues the keys taking turns; a bad deadline is
// INVALID_ARGUMENT naming its field.
func TestExpiryFairness_ThroughGRPC(t *testing.T) {
	t.Parallel()
	cfg := engine.DefaultConfig()
	cfg.Queues = []engine.QueueConfig{{Name: "fair", MaxWait: time.Hour, FairnessKey: "tenant"}}
	env := start(t, &cfg)
	res := enqueue(t, env, &seppv1.EnqueueRequest{Queue: "fair", Custom: map[string]string{"tenant": "a"}, TtlMs: 60_000})
	job, err := env.Admin.GetJob(ctxT(t), &seppv1.GetJobRequest{JobId: res.GetJobId()})
	if err != nil {
		t.Fatal(err)
	}
	if exp, enq := job.GetJob().GetExpiresAt().AsTime(), job.GetJob().GetEnqueuedAt().AsTime(); exp.Sub(enq) != time.Minute {
		t.Fatalf("expires_at %v, enqueued_at %v: want a minute apart", exp, enq)
	}
	info, err := env.Queue.GetServerInfo(ctxT(t), &seppv1.GetServerInfoRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var found bool
	for _, q := range info.GetQueues() {
		if q.GetName() == "fair" {
			found = q.GetMaxWaitMs() == 3_600_000 && q.GetFairnessKey() == "tenant"
		}
	}
	if !found {
		t.Fatalf("server info queues %v: want fair with max_wait_ms and fairness_key", info.GetQueues())
	}
	q, err := env.Admin.GetQueue(ctxT(t), &seppv1.GetQueueRequest{Name: "fair"})
	if err != nil {
		t.Fatal(err)
	}
	if q.GetSettings().GetFairnessKey() != "tenant" || q.GetSummary().GetFairnessActiveKeys() != 1 {
		t.Fatalf("get queue %v", q)
	}

	for _, tt := range []struct {
		req   *seppv1.EnqueueRequest
		field string
	}{
		{&seppv1.EnqueueRequest{Queue: "fair", JobType: "t", TtlMs: -1}, "ttl_ms"},
		{&seppv1.EnqueueRequest{Queue: "fair", JobType: "t", ExpiresAt: timestamppb.New(time.Unix(1, 0))}, "expires_at"},
	} {
		_, err := env.Queue.Enqueue(ctxT(t), tt.req)
		st := requireCode(t, err, codes.InvalidArgument)
		if !strings.Contains(st.Message(), tt.field) {
			t.Fatalf("message %q does not name %s", st.Message(), tt.field)
		}
	}
}
