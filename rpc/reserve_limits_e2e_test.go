package rpc_test

import (
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/sepp-io/sepp/engine"
	seppv1 "github.com/sepp-io/sepp/proto/sepp/v1"
	"github.com/sepp-io/sepp/rpc/rpctest"
)

func limitsConfig(q engine.QueueConfig) *engine.Config {
	cfg := engine.DefaultConfig()
	cfg.Queues = []engine.QueueConfig{q}
	return &cfg
}

// A waiting Reserve waits past each reserve limit and gets the job the moment
// the limit lets it through: an ack frees max_reserved or the key, a token
// returns with time (the leader's tick at the next deadline).
func TestReserveLimits_LongPollWaitsPastTheLimit(t *testing.T) {
	t.Parallel()
	long := durationpb.New(time.Minute)
	tests := []struct {
		name   string
		q      engine.QueueConfig
		custom map[string]string
		free   func(env testEnv, first *seppv1.ReservedJob)
	}{
		{
			name: "MaxReserved",
			q:    engine.QueueConfig{Name: "q", MaxReserved: 1},
			free: func(env testEnv, first *seppv1.ReservedJob) { env.ack(first) },
		},
		{
			name:   "MaxPerKey",
			q:      engine.QueueConfig{Name: "q", ConcurrencyKey: "customer", MaxPerKey: 1},
			custom: map[string]string{"customer": "acme"},
			free:   func(env testEnv, first *seppv1.ReservedJob) { env.ack(first) },
		},
		{
			name: "RateLimit",
			q:    engine.QueueConfig{Name: "q", RateLimit: 1, RatePeriod: 10 * time.Second}, // within the first job's 30s lease
			free: func(env testEnv, _ *seppv1.ReservedJob) {
				env.Clock.Advance(10 * time.Second)
				env.Backend.Tick()
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := testEnv{t: t, Env: start(t, limitsConfig(tt.q))}
			enqueue(t, env.Env, &seppv1.EnqueueRequest{Queue: "q", Custom: tt.custom})
			second := enqueue(t, env.Env, &seppv1.EnqueueRequest{Queue: "q", Custom: tt.custom}).GetJobId()
			first := reserve(t, env.Env, &seppv1.ReserveRequest{Queue: "q", Max: 5, WorkerId: "w"})
			if len(first) != 1 {
				t.Fatalf("first reserve got %d jobs, want 1 (the limit)", len(first))
			}
			waiting := waitingSignal(env.Env)
			res := reserveAsync(ctxT(t), env.Env, &seppv1.ReserveRequest{Queue: "q", Max: 5, WorkerId: "w", Wait: long})
			awaitSignal(t, waiting, "the reserve to wait")
			select {
			case r := <-res:
				t.Fatalf("the waiting reserve returned past the limit: %v, %v", r.resp, r.err)
			default:
			}
			tt.free(env, first[0])
			r := awaitReserve(t, res)
			if r.err != nil || len(r.resp.GetJobs()) != 1 || r.resp.GetJobs()[0].GetCtx().GetJobId() != second {
				t.Fatalf("long-poll = %v, %v; want job %d", r.resp, r.err, second)
			}
		})
	}
}

func TestReserveLimits_VisibleInServerInfoAndQueues(t *testing.T) {
	t.Parallel()
	env := start(t, limitsConfig(engine.QueueConfig{Name: "q", MaxReserved: 7, RateLimit: 30, RatePeriod: time.Minute, ConcurrencyKey: "customer", MaxPerKey: 1}))
	info, err := env.Queue.GetServerInfo(ctxT(t), &seppv1.GetServerInfoRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var ql *seppv1.QueueLimits
	for _, q := range info.GetQueues() {
		if q.GetName() == "q" {
			ql = q
		}
	}
	if ql.GetMaxReserved() != 7 || ql.GetRateLimit() != 30 || ql.GetRatePeriodMs() != 60000 || ql.GetRateBurst() != 30 ||
		ql.GetConcurrencyKey() != "customer" || ql.GetMaxPerKey() != 1 {
		t.Fatalf("server info queue limits %v", ql)
	}
	for range 2 {
		enqueue(t, env, &seppv1.EnqueueRequest{Queue: "q", Custom: map[string]string{"customer": "acme"}})
	}
	reserve(t, env, &seppv1.ReserveRequest{Queue: "q", Max: 5, WorkerId: "w"})
	qs, err := env.Admin.ListQueues(ctxT(t), &seppv1.ListQueuesRequest{})
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range qs.GetQueues() {
		if q.GetName() == "q" && (q.GetRateTokens() != 29 || q.GetKeysAtLimit() != 1 || q.GetHeldByKey() != 1 || q.GetReady() != 1) {
			t.Fatalf("queue summary %v", q)
		}
	}
}

// testEnv is an rpctest.Env with its test, for the table's actions.
type testEnv struct {
	t *testing.T
	*rpctest.Env
}

func (env testEnv) ack(j *seppv1.ReservedJob) {
	env.t.Helper()
	if _, err := env.Queue.Ack(ctxT(env.t), &seppv1.AckRequest{Ctx: j.GetCtx()}); err != nil {
		env.t.Fatal(err)
	}
}
