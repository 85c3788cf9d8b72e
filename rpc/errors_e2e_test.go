package rpc_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/sepp-io/sepp/cluster"
	"github.com/sepp-io/sepp/engine"
	seppv1 "github.com/sepp-io/sepp/proto/sepp/v1"
	"github.com/sepp-io/sepp/rpc"
	"github.com/sepp-io/sepp/rpc/rpctest"
)

// Every mapping of the status table, end to end: the backend fails the way
// a cluster node would, and the client sees the code and the detail.
func TestErrorMapping_EndToEnd(t *testing.T) {
	t.Parallel()
	leader := cluster.NodeInfo{ID: "node-2", RaftAddr: "10.0.0.2:7000", GRPCAddr: "10.0.0.2:50051", HTTPAddr: "10.0.0.2:8080"}

	t.Run("FollowerNamesLeader", func(t *testing.T) {
		env := start(t, nil)
		env.Backend.SetLeader(leader)
		_, err := env.Queue.Enqueue(ctxT(t), &seppv1.EnqueueRequest{Queue: "q", JobType: "t"})
		st := requireCode(t, err, codes.Unavailable)
		nl, ok := detail[*seppv1.NotLeader](st)
		if !ok || nl.GetLeaderId() != "node-2" || nl.GetLeaderGrpcAddr() != "10.0.0.2:50051" {
			t.Errorf("NotLeader = %v, want node-2 at 10.0.0.2:50051", nl)
		}
		// A consistent read is refused too; a stale one answers and says so.
		_, err = env.Queue.GetServerInfo(ctxT(t), &seppv1.GetServerInfoRequest{})
		requireCode(t, err, codes.Unavailable)
		info, err := env.Queue.GetServerInfo(ctxT(t), &seppv1.GetServerInfoRequest{AllowStale: true})
		if err != nil || !info.GetStale() || info.GetLeaderGrpcAddr() != "10.0.0.2:50051" {
			t.Errorf("stale GetServerInfo on a follower = %v, %v; want stale=true naming the leader", info, err)
		}
		qs, err := env.Admin.ListQueues(ctxT(t), &seppv1.ListQueuesRequest{AllowStale: true})
		if err != nil || !qs.GetStale() {
			t.Errorf("stale ListQueues on a follower = %v, %v; want stale=true", qs, err)
		}
	})
	t.Run("NoLeaderIsUnavailable", func(t *testing.T) {
		env := start(t, nil)
		env.Backend.SetLeader(cluster.NodeInfo{})
		_, err := env.Queue.Enqueue(ctxT(t), &seppv1.EnqueueRequest{Queue: "q", JobType: "t"})
		st := requireCode(t, err, codes.Unavailable)
		if !strings.Contains(st.Message(), "no leader") {
			t.Errorf("message %q does not say there is no leader", st.Message())
		}
	})
	t.Run("UnknownOutcomeIsAborted", func(t *testing.T) {
		env := start(t, nil)
		env.Backend.FailWith(func(op string) error {
			if op == "Enqueue" {
				return fmt.Errorf("leadership lost while committing: %w", cluster.ErrUnknownOutcome)
			}
			return nil
		})
		_, err := env.Queue.Enqueue(ctxT(t), &seppv1.EnqueueRequest{Queue: "q", JobType: "t", IdempotencyKey: "k1"})
		st := requireCode(t, err, codes.Aborted)
		if _, ok := detail[*seppv1.UnknownOutcome](st); !ok {
			t.Error("no UnknownOutcome detail")
		}
	})
	t.Run("ShutdownIsUnavailableAndNotServing", func(t *testing.T) {
		env := start(t, nil)
		env.Backend.Close()
		_, err := env.Queue.Enqueue(ctxT(t), &seppv1.EnqueueRequest{Queue: "q", JobType: "t"})
		requireCode(t, err, codes.Unavailable)
		h, err := healthpb.NewHealthClient(env.Conn).Check(ctxT(t), &healthpb.HealthCheckRequest{})
		if err != nil || h.GetStatus() != healthpb.HealthCheckResponse_NOT_SERVING {
			t.Errorf("health after shutdown = %v, %v; want NOT_SERVING", h, err)
		}
	})
	t.Run("UnexpectedErrorIsInternal", func(t *testing.T) {
		env := start(t, nil)
		env.Backend.FailWith(func(op string) error { return errors.New("disk on fire") })
		_, err := env.Queue.Enqueue(ctxT(t), &seppv1.EnqueueRequest{Queue: "q", JobType: "t"})
		requireCode(t, err, codes.Internal)
	})
	t.Run("QueueFullIsResourceExhausted", func(t *testing.T) {
		cfg := &engine.Config{Limits: engine.DefaultLimits()}
		cfg.Limits.MaxQueueLength = 1
		env := start(t, cfg)
		enqueue(t, env, &seppv1.EnqueueRequest{Queue: "q"})
		_, err := env.Queue.Enqueue(ctxT(t), &seppv1.EnqueueRequest{Queue: "q", JobType: "t"})
		st := requireCode(t, err, codes.ResourceExhausted)
		if !strings.Contains(st.Message(), "1") {
			t.Errorf("message %q does not name the limit", st.Message())
		}
	})
	t.Run("StrictUnknownQueueIsNotFound", func(t *testing.T) {
		cfg := &engine.Config{Limits: engine.DefaultLimits(), Queues: []engine.QueueConfig{{Name: "known"}}}
		cfg.Limits.Strict = true
		env := start(t, cfg)
		_, err := env.Queue.Enqueue(ctxT(t), &seppv1.EnqueueRequest{Queue: "unknown", JobType: "t"})
		st := requireCode(t, err, codes.NotFound)
		if fv, ok := detail[*seppv1.FieldViolation](st); !ok || fv.GetField() != "queue" {
			t.Errorf("FieldViolation = %v, want queue", fv)
		}
	})
	t.Run("UnknownJobIsNotFound", func(t *testing.T) {
		env := start(t, nil)
		_, err := env.Admin.GetJob(ctxT(t), &seppv1.GetJobRequest{JobId: 999})
		requireCode(t, err, codes.NotFound)
	})
	t.Run("IdempotencyKeyStoreFullIsResourceExhausted", func(t *testing.T) {
		cfg := &engine.Config{Limits: engine.DefaultLimits()}
		cfg.Limits.MaxIdempotencyKeys = 1
		env := start(t, cfg)
		enqueue(t, env, &seppv1.EnqueueRequest{Queue: "q", IdempotencyKey: "a"})
		_, err := env.Queue.Enqueue(ctxT(t), &seppv1.EnqueueRequest{Queue: "q", JobType: "t", IdempotencyKey: "b"})
		requireCode(t, err, codes.ResourceExhausted)
	})
	t.Run("ClientDeadlinePassesThrough", func(t *testing.T) {
		env := start(t, nil)
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		_, err := env.Queue.Reserve(ctx, &seppv1.ReserveRequest{Queue: "q", Wait: durationpb.New(10 * time.Second)})
		requireCode(t, err, codes.DeadlineExceeded)
	})
}

// rawCodec sends pre-encoded request bytes, so a test can put invalid UTF-8
// on the wire (Go's protobuf refuses to encode it).
type rawCodec struct{}

func (rawCodec) Name() string { return "proto" }

func (rawCodec) Marshal(v any) (mem.BufferSlice, error) {
	return mem.BufferSlice{mem.SliceBuffer(v.([]byte))}, nil
}

func (rawCodec) Unmarshal(data mem.BufferSlice, v any) error {
	return proto.Unmarshal(data.Materialize(), v.(proto.Message))
}

// withBadUTF8 encodes m and replaces every "@@@@" with invalid UTF-8.
func withBadUTF8(t *testing.T, m proto.Message) []byte {
	t.Helper()
	b, err := proto.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return bytes.ReplaceAll(b, []byte("@@@@"), []byte{0xff, 0xfe, 0xfd, 0xfc})
}

// A table of malformed and hostile requests: each gets its code and a
// message naming the field and the limit, and the server stays healthy.
func TestBadInput(t *testing.T) {
	t.Parallel()
	env := rpctest.Start(t, nil, rpc.Options{MaxMessageBytes: 2 << 20, MaxReserveWait: time.Second})
	enqueue(t, env, &seppv1.EnqueueRequest{Queue: "q"})
	held := reserveOne(t, env, "q")
	stale := proto.Clone(held.GetCtx()).(*seppv1.JobContext)
	stale.LeaseToken++

	unknownDirective := &seppv1.RetryDirective{}
	unknownDirective.ProtoReflect().SetUnknown(protowire.AppendBytes(protowire.AppendTag(nil, 42, protowire.BytesType), nil))

	manyJobs := make([]*seppv1.EnqueueRequest, 1001)
	for i := range manyJobs {
		manyJobs[i] = &seppv1.EnqueueRequest{Queue: "q", JobType: "t"}
	}
	manyCustom := map[string]string{}
	for i := range 65 {
		manyCustom[fmt.Sprintf("k%d", i)] = "v"
	}
	manyIDs := make([]uint64, 1001)
	for i := range manyIDs {
		manyIDs[i] = uint64(i + 1)
	}
	q, neg := "q", durationpb.New(-time.Second)
	enq := "/sepp.v1.QueueService/Enqueue"

	tests := []struct {
		name   string
		call   func(ctx context.Context) error
		code   codes.Code
		field  string // "" when the code is not InvalidArgument with a field
		limit  string
		detail func(t *testing.T, err error)
	}{
		{name: "OversizePayload", code: codes.InvalidArgument, field: "payload", limit: "max_payload_bytes 1048576",
			call: func(ctx context.Context) error {
				_, err := env.Queue.Enqueue(ctx, &seppv1.EnqueueRequest{Queue: q, JobType: "t", Payload: make([]byte, 1<<20+1)})
				return err
			}},
		{name: "OversizeMessage", code: codes.ResourceExhausted, limit: "2097152",
			call: func(ctx context.Context) error {
				_, err := env.Queue.Enqueue(ctx, &seppv1.EnqueueRequest{Queue: q, JobType: "t", Payload: make([]byte, 3<<20)})
				return err
			}},
		// spec: PRI-2
		{name: "Priority10", code: codes.InvalidArgument, field: "priority", limit: "0..9",
			call: func(ctx context.Context) error {
				_, err := env.Queue.Enqueue(ctx, &seppv1.EnqueueRequest{Queue: q, JobType: "t", Priority: prio(10)})
				return err
			}},
		{name: "EmptyQueue", code: codes.InvalidArgument, field: "queue", limit: "1..128",
			call: func(ctx context.Context) error {
				_, err := env.Queue.Enqueue(ctx, &seppv1.EnqueueRequest{JobType: "t"})
				return err
			}},
		{name: "EmptyJobType", code: codes.InvalidArgument, field: "job_type", limit: "required",
			call: func(ctx context.Context) error {
				_, err := env.Queue.Enqueue(ctx, &seppv1.EnqueueRequest{Queue: q})
				return err
			}},
		{name: "TooManyCustomFields", code: codes.InvalidArgument, field: "custom", limit: "max_custom_fields 64",
			call: func(ctx context.Context) error {
				_, err := env.Queue.Enqueue(ctx, &seppv1.EnqueueRequest{Queue: q, JobType: "t", Custom: manyCustom})
				return err
			}},
		// spec: SCH-5
		{name: "ScheduledTooFar", code: codes.InvalidArgument, field: "scheduled_at", limit: "max_schedule_horizon_ms=2592000000",
			call: func(ctx context.Context) error {
				_, err := env.Queue.Enqueue(ctx, &seppv1.EnqueueRequest{Queue: q, JobType: "t",
					ScheduledAt: timestamppb.New(env.Clock.Now().Add(31 * 24 * time.Hour))})
				return err
			},
			detail: func(t *testing.T, err error) {
				t.Helper()
				st := requireCode(t, err, codes.InvalidArgument)
				d, ok := detail[*seppv1.ScheduledTooFar](st)
				if !ok || d.GetHorizonMs() != 2592000000 || !d.GetRequestedAt().AsTime().Equal(env.Clock.Now().Add(31*24*time.Hour)) ||
					!d.GetLatestAllowed().AsTime().Equal(env.Clock.Now().Add(30*24*time.Hour)) {
					t.Errorf("ScheduledTooFar = %v, want the horizon and the requested time", d)
				}
			}},
		{name: "InvalidTimestamp", code: codes.InvalidArgument, field: "scheduled_at", limit: "9999-12-31",
			call: func(ctx context.Context) error {
				_, err := env.Queue.Enqueue(ctx, &seppv1.EnqueueRequest{Queue: q, JobType: "t",
					ScheduledAt: &timestamppb.Timestamp{Seconds: 1 << 60}})
				return err
			}},
		{name: "UnknownDirective", code: codes.InvalidArgument, field: "directive", limit: "default, after or dead_letter",
			call: func(ctx context.Context) error {
				_, err := env.Queue.Nack(ctx, &seppv1.NackRequest{Ctx: held.GetCtx(), Directive: unknownDirective})
				return err
			}},
		{name: "NegativeAfter", code: codes.InvalidArgument, field: "directive.after", limit: ">= 0",
			call: func(ctx context.Context) error {
				_, err := env.Queue.Nack(ctx, &seppv1.NackRequest{Ctx: held.GetCtx(),
					Directive: &seppv1.RetryDirective{Directive: &seppv1.RetryDirective_After{After: neg}}})
				return err
			}},
		{name: "StaleLease", code: codes.FailedPrecondition, limit: "lease",
			call: func(ctx context.Context) error {
				_, err := env.Queue.Ack(ctx, &seppv1.AckRequest{Ctx: stale})
				return err
			}},
		{name: "MissingCtx", code: codes.InvalidArgument, field: "ctx", limit: "required",
			call: func(ctx context.Context) error {
				_, err := env.Queue.Ack(ctx, &seppv1.AckRequest{})
				return err
			}},
		{name: "HugeBatch", code: codes.InvalidArgument, field: "jobs", limit: "max_batch_size 1000",
			call: func(ctx context.Context) error {
				_, err := env.Queue.EnqueueBatch(ctx, &seppv1.EnqueueBatchRequest{Jobs: manyJobs})
				return err
			}},
		{name: "EmptyBatch", code: codes.InvalidArgument, field: "jobs", limit: "at least one",
			call: func(ctx context.Context) error {
				_, err := env.Queue.EnqueueBatch(ctx, &seppv1.EnqueueBatchRequest{})
				return err
			}},
		{name: "TooManyAdminIDs", code: codes.InvalidArgument, field: "job_ids", limit: "at most 1000",
			call: func(ctx context.Context) error {
				_, err := env.Admin.DeleteDeadLetters(ctx, &seppv1.DeleteDeadLettersRequest{JobIds: manyIDs})
				return err
			}},
		{name: "InvalidUTF8Queue", code: codes.InvalidArgument, field: "queue", limit: "UTF-8",
			call: func(ctx context.Context) error {
				raw := withBadUTF8(t, &seppv1.EnqueueRequest{Queue: "@@@@", JobType: "t"})
				return env.Conn.Invoke(ctx, enq, raw, &seppv1.EnqueueResponse{}, grpc.ForceCodecV2(rawCodec{}))
			}},
		{name: "InvalidUTF8CustomValue", code: codes.InvalidArgument, field: "custom.value", limit: "UTF-8",
			call: func(ctx context.Context) error {
				raw := withBadUTF8(t, &seppv1.EnqueueRequest{Queue: q, JobType: "t", Custom: map[string]string{"k": "@@@@"}})
				return env.Conn.Invoke(ctx, enq, raw, &seppv1.EnqueueResponse{}, grpc.ForceCodecV2(rawCodec{}))
			}},
		{name: "InvalidUTF8WorkerID", code: codes.InvalidArgument, field: "worker_id", limit: "UTF-8",
			call: func(ctx context.Context) error {
				raw := withBadUTF8(t, &seppv1.ReserveRequest{Queue: q, WorkerId: "@@@@"})
				return env.Conn.Invoke(ctx, "/sepp.v1.QueueService/Reserve", raw, &seppv1.ReserveResponse{}, grpc.ForceCodecV2(rawCodec{}))
			}},
		{name: "InvalidUTF8BatchItem", code: codes.InvalidArgument, field: "jobs[1].job_type", limit: "UTF-8",
			call: func(ctx context.Context) error {
				raw := withBadUTF8(t, &seppv1.EnqueueBatchRequest{Jobs: []*seppv1.EnqueueRequest{
					{Queue: q, JobType: "t"}, {Queue: q, JobType: "@@@@"}}})
				return env.Conn.Invoke(ctx, "/sepp.v1.QueueService/EnqueueBatch", raw, &seppv1.EnqueueBatchResponse{}, grpc.ForceCodecV2(rawCodec{}))
			}},
		{name: "NegativeLease", code: codes.InvalidArgument, field: "lease", limit: ">= 0",
			call: func(ctx context.Context) error {
				_, err := env.Queue.Reserve(ctx, &seppv1.ReserveRequest{Queue: q, Lease: neg})
				return err
			}},
		{name: "NegativeWait", code: codes.InvalidArgument, field: "wait", limit: ">= 0",
			call: func(ctx context.Context) error {
				_, err := env.Queue.Reserve(ctx, &seppv1.ReserveRequest{Queue: q, Wait: neg})
				return err
			}},
		{name: "NegativeExtend", code: codes.InvalidArgument, field: "lease", limit: ">= 0",
			call: func(ctx context.Context) error {
				_, err := env.Queue.ExtendLease(ctx, &seppv1.ExtendLeaseRequest{Ctx: held.GetCtx(), Lease: neg})
				return err
			}},
		{name: "ListJobsWithoutState", code: codes.InvalidArgument, field: "state", limit: "JOB_STATE_READY",
			call: func(ctx context.Context) error {
				_, err := env.Admin.ListJobs(ctx, &seppv1.ListJobsRequest{Queue: q})
				return err
			}},
		{name: "JoinWithoutRaftAddr", code: codes.InvalidArgument, field: "node.raft_addr", limit: "host:port",
			call: func(ctx context.Context) error {
				_, err := env.Cluster.Join(ctx, &seppv1.JoinRequest{Node: &seppv1.NodeInfo{Id: "n9"}})
				return err
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.call(ctxT(t))
			st := requireCode(t, err, tt.code)
			if tt.field != "" {
				requireFieldViolation(t, st, tt.field, tt.limit)
			} else if !strings.Contains(st.Message(), tt.limit) {
				t.Errorf("message %q does not name %q", st.Message(), tt.limit)
			}
			if tt.detail != nil {
				tt.detail(t, err)
			}
		})
	}

	// Still healthy, and nothing was lost: the held job is still held and
	// a fresh enqueue goes through.
	h, err := healthpb.NewHealthClient(env.Conn).Check(ctxT(t), &healthpb.HealthCheckRequest{Service: "sepp.v1.QueueService"})
	if err != nil || h.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		t.Fatalf("health after bad input = %v, %v; want SERVING", h, err)
	}
	if _, err := env.Queue.Ack(ctxT(t), &seppv1.AckRequest{Ctx: held.GetCtx()}); err != nil {
		t.Errorf("ack of the held job after bad input: %v", err)
	}
	enqueue(t, env, &seppv1.EnqueueRequest{Queue: "q"})
	reserveOne(t, env, "q")
}

// A batch item the rpc layer or the engine rejects fails alone, naming its
// position; the other items are enqueued.
func TestEnqueueBatch_ItemsFailAlone(t *testing.T) {
	t.Parallel()
	env := start(t, nil)
	resp, err := env.Queue.EnqueueBatch(ctxT(t), &seppv1.EnqueueBatchRequest{Jobs: []*seppv1.EnqueueRequest{
		{Queue: "q", JobType: "t"},
		{Queue: "q", JobType: "t", Priority: prio(12)},
		{Queue: "q", JobType: "t", ScheduledAt: &timestamppb.Timestamp{Seconds: -1 << 60}},
		{Queue: "q", JobType: "t"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	rs := resp.GetResults()
	if len(rs) != 4 || rs[0].GetEnqueued() == nil || rs[3].GetEnqueued() == nil {
		t.Fatalf("results = %v, want items 0 and 3 enqueued", rs)
	}
	for i, field := range map[int]string{1: "jobs[1].priority", 2: "jobs[2].scheduled_at"} {
		e := rs[i].GetError()
		if codes.Code(e.GetCode()) != codes.InvalidArgument || !strings.Contains(e.GetMessage(), field) || len(e.GetDetails()) == 0 {
			t.Errorf("item %d error = %v, want InvalidArgument naming %s with details", i, e, field)
		}
	}
	if jobs := reserve(t, env, &seppv1.ReserveRequest{Queue: "q", Max: 10}); len(jobs) != 2 {
		t.Errorf("reserved %d jobs, want the 2 good items", len(jobs))
	}
}
