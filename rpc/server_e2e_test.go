package rpc_test

import (
	"io"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	reflectionpb "google.golang.org/grpc/reflection/grpc_reflection_v1"
	"google.golang.org/protobuf/types/known/durationpb"

	seppv1 "github.com/sepp-io/sepp/proto/sepp/v1"
	"github.com/sepp-io/sepp/rpc"
	"github.com/sepp-io/sepp/rpc/rpctest"
)

func TestHealthAndReflection(t *testing.T) {
	t.Parallel()
	env := start(t, nil)
	for _, svc := range []string{"", "sepp.v1.QueueService", "sepp.v1.AdminService", "sepp.v1.ClusterService"} {
		h, err := healthpb.NewHealthClient(env.Conn).Check(ctxT(t), &healthpb.HealthCheckRequest{Service: svc})
		if err != nil || h.GetStatus() != healthpb.HealthCheckResponse_SERVING {
			t.Errorf("health %q = %v, %v; want SERVING", svc, h, err)
		}
	}
	stream, err := reflectionpb.NewServerReflectionClient(env.Conn).ServerReflectionInfo(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := stream.Send(&reflectionpb.ServerReflectionRequest{MessageRequest: &reflectionpb.ServerReflectionRequest_ListServices{}}); err != nil {
		t.Fatal(err)
	}
	resp, err := stream.Recv()
	if err != nil {
		t.Fatal(err)
	}
	_ = stream.CloseSend()
	var names []string
	for _, s := range resp.GetListServicesResponse().GetService() {
		names = append(names, s.GetName())
	}
	for _, want := range []string{"sepp.v1.QueueService", "sepp.v1.AdminService", "sepp.v1.ClusterService", "grpc.health.v1.Health"} {
		if !strings.Contains(strings.Join(names, " "), want) {
			t.Errorf("reflection lists %v, missing %s", names, want)
		}
	}
}

func TestQueueService_LeaseOperations(t *testing.T) {
	t.Parallel()
	env := start(t, nil)
	first := enqueue(t, env, &seppv1.EnqueueRequest{Queue: "q", IdempotencyKey: "order-1"})
	dup := enqueue(t, env, &seppv1.EnqueueRequest{Queue: "q", IdempotencyKey: "order-1"})
	if !dup.GetDuplicate() || dup.GetJobId() != first.GetJobId() {
		t.Errorf("repeat with the same idempotency key = %v, want duplicate of job %d", dup, first.GetJobId())
	}
	job := reserveOne(t, env, "q")
	env.Clock.Advance(5 * time.Second)
	ext, err := env.Queue.ExtendLease(ctxT(t), &seppv1.ExtendLeaseRequest{Ctx: job.GetCtx(), Lease: durationpb.New(time.Minute)})
	if err != nil || !ext.GetLeaseDeadline().AsTime().Equal(env.Clock.Now().Add(time.Minute)) {
		t.Fatalf("ExtendLease = %v, %v; want now+1m", ext, err)
	}
	if _, err := env.Queue.Release(ctxT(t), &seppv1.ReleaseRequest{Ctx: job.GetCtx()}); err != nil {
		t.Fatal(err)
	}
	again := reserveOne(t, env, "q")
	if again.GetCtx().GetAttempt() != 1 {
		t.Errorf("after release, attempt = %d, want 1 (release burns no attempt)", again.GetCtx().GetAttempt())
	}
	if _, err := env.Queue.Ack(ctxT(t), &seppv1.AckRequest{Ctx: again.GetCtx()}); err != nil {
		t.Fatal(err)
	}
	qs, err := env.Admin.ListQueues(ctxT(t), &seppv1.ListQueuesRequest{})
	if err != nil || len(qs.GetQueues()) != 1 || qs.GetQueues()[0].GetAckedTotal() != 1 || qs.GetQueues()[0].GetReady() != 0 {
		t.Errorf("ListQueues = %v, %v; want q with 1 acked and none ready", qs, err)
	}
}

func TestAdminService_ListJobsPages(t *testing.T) {
	t.Parallel()
	env := start(t, nil)
	for range 5 {
		enqueue(t, env, &seppv1.EnqueueRequest{Queue: "q"})
	}
	var seen []uint64
	after := uint64(0)
	for page := 0; ; page++ {
		if page > 5 {
			t.Fatal("paging does not end")
		}
		resp, err := env.Admin.ListJobs(ctxT(t), &seppv1.ListJobsRequest{Queue: "q", State: seppv1.JobState_JOB_STATE_READY, AfterJobId: after, Limit: 2})
		if err != nil {
			t.Fatal(err)
		}
		for _, j := range resp.GetJobs() {
			seen = append(seen, j.GetId())
		}
		if resp.GetNextAfterJobId() == 0 {
			break
		}
		after = resp.GetNextAfterJobId()
	}
	if len(seen) != 5 || seen[0] != 1 || seen[4] != 5 {
		t.Errorf("paged ids = %v, want 1..5", seen)
	}
	got, err := env.Admin.GetJob(ctxT(t), &seppv1.GetJobRequest{JobId: 3})
	if err != nil || got.GetJob().GetState() != seppv1.JobState_JOB_STATE_READY {
		t.Errorf("GetJob(3) = %v, %v", got, err)
	}
}

func TestClusterService(t *testing.T) {
	t.Parallel()
	env := start(t, nil)
	node := &seppv1.NodeInfo{Id: "node-2", RaftAddr: "127.0.0.1:7001", GrpcAddr: "127.0.0.1:50052"}
	if _, err := env.Cluster.Join(ctxT(t), &seppv1.JoinRequest{Node: node}); err != nil {
		t.Fatal(err)
	}
	st, err := env.Cluster.Status(ctxT(t), &seppv1.StatusRequest{})
	if err != nil || st.GetState() != "Leader" || st.GetLeader().GetId() != "node-1" || len(st.GetMembers()) != 2 {
		t.Fatalf("Status = %v, %v; want a leader with 2 members", st, err)
	}
	if _, err := env.Cluster.Remove(ctxT(t), &seppv1.RemoveRequest{NodeId: "node-2"}); err != nil {
		t.Fatal(err)
	}
	st, err = env.Cluster.Status(ctxT(t), &seppv1.StatusRequest{})
	if err != nil || len(st.GetMembers()) != 1 {
		t.Errorf("after Remove, Status = %v, %v; want 1 member", st, err)
	}
}

func TestMetrics(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	env := rpctest.Start(t, retentionConfig(), rpc.Options{Registerer: reg})
	enqueue(t, env, &seppv1.EnqueueRequest{Queue: "emails"})
	enqueue(t, env, &seppv1.EnqueueRequest{Queue: "emails", IdempotencyKey: "order-7"})
	nack(t, env, reserveOne(t, env, "emails").GetCtx(), directiveDeadLetter(), "bad")
	if _, err := env.Admin.CreateSchedule(ctxT(t), &seppv1.CreateScheduleRequest{Schedule: &seppv1.Schedule{
		Name: "hourly", Cron: "@hourly", Template: &seppv1.JobTemplate{Queue: "emails", JobType: "digest"}}}); err != nil {
		t.Fatal(err)
	}

	srv := httptest.NewServer(rpc.MetricsHandler(reg))
	defer srv.Close()
	resp, err := srv.Client().Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	text := string(body)
	for _, want := range []string{
		`sepp_jobs{node="node-1",queue="emails",state="ready"} 1`,
		`sepp_jobs{node="node-1",queue="emails",state="dead"} 1`,
		`sepp_dead_lettered_total{cause="rejected",node="node-1",queue="emails"} 1`,
		`sepp_queue_oldest_ready_age_seconds{node="node-1",queue="emails"}`,
		`sepp_raft_state{node="node-1",state="Leader"} 1`,
		`sepp_raft_term{node="node-1"} 1`,
		`sepp_raft_applied_index{node="node-1"}`,
		`sepp_remembered_keys{kind="idempotency_key",node="node-1"} 1`,
		`sepp_remembered_keys{kind="reserve_request_id",node="node-1"} 0`,
		`sepp_remembered_keys_limit{node="node-1"} 4e+06`,
		`sepp_idempotency_keys_forgotten_early_total{node="node-1"} 0`,
		`sepp_memory_budget_bytes{node="node-1"} 0`,
		`sepp_memory_held_bytes{node="node-1"}`,
		`sepp_queue_memory_held_bytes{node="node-1",queue="emails"}`,
		`sepp_rpc_requests_total{code="OK",method="/sepp.v1.QueueService/Enqueue",node="node-1"} 2`,
		`sepp_schedule_ticks_total{node="node-1",outcome="fired",schedule="hourly"} 0`,
		`sepp_schedule_paused{node="node-1",schedule="hourly"} 0`,
		// rpctest.Epoch is 2030-01-02 03:04:05 UTC: the next full hour is 04:00.
		`sepp_schedule_next_fire_timestamp_seconds{node="node-1",schedule="hourly"} 1.8935568e+09`,
		`sepp_rpc_duration_seconds_bucket{code="OK",method="/sepp.v1.QueueService/Nack",node="node-1"`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}
