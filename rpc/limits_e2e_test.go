package rpc_test

import (
	"context"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/proto"

	"github.com/sepp-io/sepp/cluster"
	"github.com/sepp-io/sepp/cluster/clustertest"
	"github.com/sepp-io/sepp/engine"
	seppv1 "github.com/sepp-io/sepp/proto/sepp/v1"
	"github.com/sepp-io/sepp/rpc"
)

// limitsEnv is the gRPC API over a real raft node, so that requests go
// through the proposer, the log entry encoding, the raft log and the state
// machine, where the entry size limits live (rpctest's local backend has
// none of them). One node: a cluster of three adds replication of the same
// entries, and on a loaded machine elections that would make the test
// about retries instead of limits.
type limitsEnv struct {
	queue seppv1.QueueServiceClient
	admin seppv1.AdminServiceClient
}

func startLimitsEnv(t *testing.T) limitsEnv {
	t.Helper()
	nodes := clustertest.New(t, 1, clustertest.WithConfig(func(_ int, cfg *cluster.Config) {
		cfg.Engine.Limits.DeadLetterRetention = time.Hour // keep records, for the drain test
	}))
	leader := nodes.WaitLeader()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := rpc.NewGRPCServer(nodes.Node(leader), rpc.Options{MaxReserveWait: time.Second})
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(srv.Stop)
	// The client accepts any response; the server is what must keep its
	// answers within max_message_bytes.
	cc, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(1<<30)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	return limitsEnv{queue: seppv1.NewQueueServiceClient(cc), admin: seppv1.NewAdminServiceClient(cc)}
}

// maximalJob is a job at every size limit at once (default limits):
// max_payload_bytes of payload, max_custom_fields fields of
// max_custom_field_bytes each, a job type of max_job_type_bytes, a queue
// name of the longest allowed and an idempotency key of the longest.
func maximalJob(queue string, n int) *seppv1.EnqueueRequest {
	l := engine.DefaultLimits()
	custom := make(map[string]string, l.MaxCustomFields)
	for i := range l.MaxCustomFields {
		k := fmt.Sprintf("k%02d", i)
		custom[k] = strings.Repeat("v", l.MaxCustomFieldBytes-len(k))
	}
	key := fmt.Sprintf("%d-", n)
	return &seppv1.EnqueueRequest{
		Queue:          queue,
		JobType:        strings.Repeat("t", l.MaxJobTypeBytes),
		Payload:        make([]byte, l.MaxPayloadBytes),
		Custom:         custom,
		IdempotencyKey: key + strings.Repeat("k", 256-len(key)),
	}
}

// TestLimits_EveryLimitReachable: a request at each advertised limit is
// accepted through Enqueue and EnqueueBatch, one unit above is
// InvalidArgument naming the field and the limit, never INTERNAL.
func TestLimits_EveryLimitReachable(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a raft node and writes tens of MiB")
	}
	env := startLimitsEnv(t)
	l := engine.DefaultLimits()
	longQueue := strings.Repeat("q", engine.MaxQueueNameBytes)
	ctx := func() context.Context {
		c, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		t.Cleanup(cancel)
		return c
	}
	tests := []struct {
		name   string
		change func(r *seppv1.EnqueueRequest) // nil: every field at its limit
		field  string                         // "" for accepted
		limit  string
	}{
		{name: "AllAtLimit"},
		{name: "PayloadAbove", change: func(r *seppv1.EnqueueRequest) { r.Payload = make([]byte, l.MaxPayloadBytes+1) },
			field: "payload", limit: "max_payload_bytes 1048576"},
		{name: "CustomFieldAbove", change: func(r *seppv1.EnqueueRequest) { r.Custom["k00"] += "v" },
			field: `custom["k00"]`, limit: "max_custom_field_bytes 4096"},
		{name: "CustomFieldsAbove", change: func(r *seppv1.EnqueueRequest) { r.Custom["extra"] = "v" },
			field: "custom", limit: "64"},
		{name: "JobTypeAbove", change: func(r *seppv1.EnqueueRequest) { r.JobType += "t" },
			field: "job_type", limit: "256"},
		{name: "QueueNameAbove", change: func(r *seppv1.EnqueueRequest) { r.Queue += "q" },
			field: "queue", limit: "128"},
		{name: "IdempotencyKeyAbove", change: func(r *seppv1.EnqueueRequest) { r.IdempotencyKey += "k" },
			field: "idempotency_key", limit: "256"},
	}
	// Distinct idempotency keys throughout, so no job is a repeat.
	seq := 0
	job := func(change func(r *seppv1.EnqueueRequest)) *seppv1.EnqueueRequest {
		seq++
		r := maximalJob(longQueue, seq)
		if change != nil {
			change(r)
		}
		return r
	}
	for _, tt := range tests {
		t.Run("Enqueue/"+tt.name, func(t *testing.T) {
			resp, err := env.queue.Enqueue(ctx(), job(tt.change))
			if tt.field == "" {
				if err != nil || resp.GetJobId() == 0 {
					t.Fatalf("enqueue at the limits = %v, %v; want accepted", resp, err)
				}
				return
			}
			requireFieldViolation(t, requireCode(t, err, codes.InvalidArgument), tt.field, tt.limit)
		})
		t.Run("EnqueueBatch/"+tt.name, func(t *testing.T) {
			// The item between two maximal jobs: the batch is several
			// times max_entry_bytes, and only the bad item may fail.
			resp, err := env.queue.EnqueueBatch(ctx(), &seppv1.EnqueueBatchRequest{Jobs: []*seppv1.EnqueueRequest{
				job(nil), job(tt.change), job(nil),
			}})
			if err != nil {
				t.Fatalf("batch failed whole: %v", err)
			}
			rs := resp.GetResults()
			if len(rs) != 3 || rs[0].GetEnqueued().GetJobId() == 0 || rs[2].GetEnqueued().GetJobId() == 0 {
				t.Fatalf("results = %v, want the maximal jobs around the item enqueued", rs)
			}
			if tt.field == "" {
				if rs[1].GetEnqueued().GetJobId() == 0 {
					t.Fatalf("item at the limits = %v, want enqueued", rs[1])
				}
				return
			}
			ie := rs[1].GetError()
			if codes.Code(ie.GetCode()) != codes.InvalidArgument || !strings.Contains(ie.GetMessage(), tt.field) ||
				!strings.Contains(ie.GetMessage(), tt.limit) {
				t.Errorf("item error = %v, want InvalidArgument naming %q and %q", ie, tt.field, tt.limit)
			}
		})
	}
}

// TestLimits_LargeBatches: a batch of maximal jobs tens of times
// max_entry_bytes is accepted whole, in order; max_batch_size items are
// accepted and one more is refused naming the limit, whether or not the
// batch is large enough to be split across log entries.
func TestLimits_LargeBatches(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a raft node and writes tens of MiB")
	}
	env := startLimitsEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	l := engine.DefaultLimits()

	// Ten maximal jobs: about 13 MiB, under max_message_bytes (16 MiB).
	jobs := make([]*seppv1.EnqueueRequest, 10)
	for i := range jobs {
		jobs[i] = maximalJob("big", i)
	}
	resp, err := env.queue.EnqueueBatch(ctx, &seppv1.EnqueueBatchRequest{Jobs: jobs})
	if err != nil {
		t.Fatalf("batch of ten maximal jobs: %v", err)
	}
	var last uint64
	for i, r := range resp.GetResults() {
		id := r.GetEnqueued().GetJobId()
		if id <= last {
			t.Fatalf("item %d: %v, want a job id after %d (enqueued, in order)", i, r, last)
		}
		last = id
	}
	if len(resp.GetResults()) != len(jobs) {
		t.Fatalf("%d results for %d jobs", len(resp.GetResults()), len(jobs))
	}

	small := func(n, payload int) []*seppv1.EnqueueRequest {
		out := make([]*seppv1.EnqueueRequest, n)
		for i := range out {
			out[i] = &seppv1.EnqueueRequest{Queue: "small", JobType: "t", Payload: make([]byte, payload)}
		}
		return out
	}
	for _, tt := range []struct {
		name           string
		items, payload int
		ok             bool
	}{
		{name: "AtMaxBatchSize", items: l.MaxBatchSize, payload: 8, ok: true},
		{name: "AboveMaxBatchSize", items: l.MaxBatchSize + 1, payload: 8},
		// About 2 MiB and 4 MiB: split across entries.
		{name: "AtMaxBatchSizeSplit", items: l.MaxBatchSize, payload: 2048, ok: true},
		{name: "AboveMaxBatchSizeSplit", items: l.MaxBatchSize + 1, payload: 4096},
	} {
		t.Run(tt.name, func(t *testing.T) {
			resp, err := env.queue.EnqueueBatch(ctx, &seppv1.EnqueueBatchRequest{Jobs: small(tt.items, tt.payload)})
			if !tt.ok {
				requireFieldViolation(t, requireCode(t, err, codes.InvalidArgument), "jobs", "max_batch_size 1000")
				return
			}
			if err != nil {
				t.Fatalf("batch of %d: %v", tt.items, err)
			}
			for i, r := range resp.GetResults() {
				if r.GetEnqueued().GetJobId() == 0 {
					t.Fatalf("item %d: %v", i, r)
				}
			}
		})
	}
}

// TestLimits_ReserveFitsTheMessageLimit: a reserve of max_reserve_batch
// maximal jobs, far more bytes than max_message_bytes, answers with as many
// as fit and leaves the rest Ready for the next reserve, attempt untouched.
func TestLimits_ReserveFitsTheMessageLimit(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a raft node and writes tens of MiB")
	}
	env := startLimitsEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	const total = 20 // about 26 MiB
	for i := range total {
		if _, err := env.queue.Enqueue(ctx, maximalJob("big", i)); err != nil {
			t.Fatalf("enqueue %d: %v", i, err)
		}
	}
	seen := map[uint64]bool{}
	for round := 1; len(seen) < total; round++ {
		if round > total {
			t.Fatalf("%d reserves got %d of %d jobs", round-1, len(seen), total)
		}
		resp, err := env.queue.Reserve(ctx, &seppv1.ReserveRequest{Queue: "big", Max: 100})
		if err != nil {
			t.Fatalf("reserve %d: %v", round, err)
		}
		if size := proto.Size(resp); size > rpc.DefaultMaxMessageBytes {
			t.Fatalf("reserve %d answered %d bytes, above max_message_bytes %d", round, size, rpc.DefaultMaxMessageBytes)
		}
		jobs := resp.GetJobs()
		if len(jobs) == 0 {
			t.Fatalf("reserve %d got nothing with %d jobs left", round, total-len(seen))
		}
		if round == 1 && len(jobs) == total {
			t.Fatalf("the first reserve got all %d jobs (%d bytes): the test does not exceed the limit", total, proto.Size(resp))
		}
		for _, j := range jobs {
			if seen[j.GetCtx().GetJobId()] {
				t.Fatalf("job %d delivered twice", j.GetCtx().GetJobId())
			}
			seen[j.GetCtx().GetJobId()] = true
			if a := j.GetCtx().GetAttempt(); a != 1 {
				t.Errorf("job %d on attempt %d, want 1: a job given back when the answer was cut must keep its attempt", j.GetCtx().GetJobId(), a)
			}
			if len(j.GetJob().GetPayload()) != engine.DefaultLimits().MaxPayloadBytes {
				t.Fatalf("job %d payload of %d bytes", j.GetCtx().GetJobId(), len(j.GetJob().GetPayload()))
			}
		}
		t.Logf("reserve %d: %d jobs, %d bytes", round, len(jobs), proto.Size(resp))
	}
}

// TestLimits_DrainFitsTheMessageLimit: draining dead letters of maximal
// jobs, more than one response holds, takes only as many records as fit:
// a drained record is gone, so one that did not fit the answer would be
// lost. Every record comes out over a few drains.
func TestLimits_DrainFitsTheMessageLimit(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a raft node and writes tens of MiB")
	}
	env := startLimitsEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	const total = 16 // about 21 MiB of records
	for i := range total {
		if _, err := env.queue.Enqueue(ctx, maximalJob("dead", i)); err != nil {
			t.Fatalf("enqueue %d: %v", i, err)
		}
	}
	for killed := 0; killed < total; {
		resp, err := env.queue.Reserve(ctx, &seppv1.ReserveRequest{Queue: "dead", Max: 100})
		if err != nil || len(resp.GetJobs()) == 0 {
			t.Fatalf("reserve: %v, %d jobs, with %d left", err, len(resp.GetJobs()), total-killed)
		}
		for _, j := range resp.GetJobs() {
			if _, err := env.queue.Nack(ctx, &seppv1.NackRequest{Ctx: j.GetCtx(), Directive: directiveDeadLetter(), Reason: "poison"}); err != nil {
				t.Fatalf("nack: %v", err)
			}
			killed++
		}
	}
	queue := "dead"
	seen := map[uint64]bool{}
	for round := 1; len(seen) < total; round++ {
		if round > total {
			t.Fatalf("%d drains got %d of %d records", round-1, len(seen), total)
		}
		resp, err := env.queue.DrainDeadLetters(ctx, &seppv1.DrainDeadLettersRequest{Queue: &queue, Max: 100})
		if err != nil {
			t.Fatalf("drain %d: %v", round, err)
		}
		if size := proto.Size(resp); size > rpc.DefaultMaxMessageBytes {
			t.Fatalf("drain %d answered %d bytes, above max_message_bytes", round, size)
		}
		recs := resp.GetRecords()
		if len(recs) == 0 {
			t.Fatalf("drain %d got nothing with %d records left", round, total-len(seen))
		}
		if round == 1 && len(recs) == total {
			t.Fatalf("the first drain got all %d records: the test does not exceed the limit", total)
		}
		for _, r := range recs {
			if seen[r.GetJob().GetId()] || len(r.GetJob().GetPayload()) != engine.DefaultLimits().MaxPayloadBytes {
				t.Fatalf("record of job %d: repeated or payload of %d bytes", r.GetJob().GetId(), len(r.GetJob().GetPayload()))
			}
			seen[r.GetJob().GetId()] = true
		}
		t.Logf("drain %d: %d records, %d bytes", round, len(recs), proto.Size(resp))
	}
}
