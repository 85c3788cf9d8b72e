package rpc_test

import (
	"strings"
	"testing"

	"google.golang.org/grpc/codes"

	seppv1 "github.com/sepp-io/sepp/proto/sepp/v1"
)

// TestAdminQueues_DeadLetterQueueMustExist: a dead_letter_queue naming no
// queue is NotFound naming it, on create and update, and no queue appears;
// a queue another queue forwards to cannot be deleted (FailedPrecondition
// naming the referrer).
func TestAdminQueues_DeadLetterQueueMustExist(t *testing.T) {
	env := start(t, nil)
	ctx := ctxT(t)
	_, err := env.Admin.CreateQueue(ctx, &seppv1.CreateQueueRequest{Name: "src", Settings: &seppv1.QueueSettings{DeadLetterQueue: str("does-not-exist")}})
	if st := requireCode(t, err, codes.NotFound); !strings.Contains(st.Message(), `"does-not-exist"`) || !strings.Contains(st.Message(), "dead_letter_queue") {
		t.Fatalf("create: %q does not name the field and the missing queue", st.Message())
	}
	qs, err := env.Admin.ListQueues(ctx, &seppv1.ListQueuesRequest{})
	if err != nil || len(qs.GetQueues()) != 0 {
		t.Fatalf("a refused create left queues: %v %v", qs, err)
	}
	if _, err := env.Admin.CreateQueue(ctx, &seppv1.CreateQueueRequest{Name: "src.dead"}); err != nil {
		t.Fatal(err)
	}
	if _, err := env.Admin.CreateQueue(ctx, &seppv1.CreateQueueRequest{Name: "src", Settings: &seppv1.QueueSettings{DeadLetterQueue: str("src.dead")}}); err != nil {
		t.Fatalf("create with an existing dead-letter queue: %v", err)
	}
	_, err = env.Admin.UpdateQueue(ctx, &seppv1.UpdateQueueRequest{Name: "src", Settings: &seppv1.QueueSettings{DeadLetterQueue: str("src.typo")}})
	if st := requireCode(t, err, codes.NotFound); !strings.Contains(st.Message(), `"src.typo"`) {
		t.Fatalf("update: %q does not name the missing queue", st.Message())
	}
	_, err = env.Admin.DeleteQueue(ctx, &seppv1.DeleteQueueRequest{Name: "src.dead", Force: true})
	if st := requireCode(t, err, codes.FailedPrecondition); !strings.Contains(st.Message(), `"src"`) {
		t.Fatalf("delete of a dead-letter queue: %q does not name the referrer", st.Message())
	}
}

// TestAdminRedrive_CancelledAndExpiredCauses: the API selects the dead
// letters of cause cancelled and expired, and with admin auth off the
// audit record names an anonymous caller by address.
func TestAdminRedrive_CancelledAndExpiredCauses(t *testing.T) {
	env := start(t, retentionConfig())
	ctx := ctxT(t)
	id := enqueue(t, env, &seppv1.EnqueueRequest{Queue: "q", JobType: "email"}).GetJobId()
	if _, err := env.Queue.Reserve(ctx, &seppv1.ReserveRequest{Queue: "q", Max: 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := env.Admin.CancelJobs(ctx, &seppv1.CancelJobsRequest{JobIds: []uint64{id}}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		cause seppv1.DeadLetterCause
		want  uint64
	}{
		{seppv1.DeadLetterCause_DEAD_LETTER_CAUSE_CANCELLED, 1},
		{seppv1.DeadLetterCause_DEAD_LETTER_CAUSE_EXPIRED, 0},
	} {
		pv, err := env.Admin.PreviewRedrive(ctx, &seppv1.PreviewRedriveRequest{Redrive: &seppv1.StartRedriveRequest{Selection: &seppv1.RedriveSelection{Cause: tc.cause}}})
		if err != nil || pv.GetMatching() != tc.want {
			t.Fatalf("preview of %v: %v %v; want %d", tc.cause, pv, err, tc.want)
		}
	}
	st, err := env.Admin.StartRedrive(ctx, &seppv1.StartRedriveRequest{Selection: &seppv1.RedriveSelection{Cause: seppv1.DeadLetterCause_DEAD_LETTER_CAUSE_CANCELLED}})
	if err != nil || st.GetTask().GetRemaining() != 1 {
		t.Fatalf("start: %v %v", st, err)
	}
	c, err := env.Admin.CancelRedrive(ctx, &seppv1.CancelRedriveRequest{Id: st.GetTask().GetId()})
	if err != nil {
		t.Fatal(err)
	}
	task := c.GetTask()
	if task.GetRemaining() != 1 || task.GetMoved() != 0 || !strings.HasPrefix(task.GetCreatedBy(), "anonymous (127.0.0.1:") || !strings.HasPrefix(task.GetEndedBy(), "anonymous (") {
		t.Fatalf("cancelled task's record: %v; want 1 left unmoved, an anonymous actor by address", task)
	}
}

// TestGetServerInfo_DiskFigures: the node's payload store and what its
// snapshots' checkpoints hold beyond it are its own figures, read from its
// status.
func TestGetServerInfo_DiskFigures(t *testing.T) {
	env := start(t, nil)
	for _, want := range []struct{ store, pinned uint64 }{{0, 0}, {3 << 20, 1 << 20}} {
		env.Backend.SetDiskFigures(want.store, want.pinned)
		info, err := env.Queue.GetServerInfo(ctxT(t), &seppv1.GetServerInfoRequest{})
		if err != nil {
			t.Fatal(err)
		}
		l := info.GetLimits()
		if l.GetPayloadStoreBytes() != want.store || l.GetSnapshotCheckpointPinnedBytes() != want.pinned {
			t.Errorf("payload_store_bytes %d, snapshot_checkpoint_pinned_bytes %d; want %d, %d",
				l.GetPayloadStoreBytes(), l.GetSnapshotCheckpointPinnedBytes(), want.store, want.pinned)
		}
	}
}

// TestGetServerInfo_Capabilities: every feature with its command version,
// ready cluster-wide when every member applies it.
func TestGetServerInfo_Capabilities(t *testing.T) {
	env := start(t, nil)
	info, err := env.Queue.GetServerInfo(ctxT(t), &seppv1.GetServerInfoRequest{})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]*seppv1.Capability{}
	for _, c := range info.GetCapabilities() {
		got[c.GetName()] = c
	}
	for name, v := range map[string]uint32{"ack_batch": 2, "schedules": 7, "unique_jobs": 8, "redrive": 10, "expiry_fairness": 11, "dead_letter_edges": 13, "reserve_retry_window": 14, "queue_reserve_limits": 15} {
		if c := got[name]; c == nil || c.GetCommandVersion() != v || !c.GetClusterReady() {
			t.Errorf("capability %s = %v; want version %d, ready", name, c, v)
		}
	}
}
