package rpc_test

import (
	"strings"
	"testing"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"

	seppv1 "github.com/sepp-io/sepp/proto/sepp/v1"
)

// Unique jobs through gRPC: a conflict returns the holder as a duplicate,
// or with refuse fails with ALREADY_EXISTS naming it; batches (through the
// general decoder) do the same per item; a bad option names its field.
func TestUnique_EnqueueThroughGRPC(t *testing.T) {
	t.Parallel()
	env := start(t, nil)
	first := enqueue(t, env, &seppv1.EnqueueRequest{Queue: "q", Unique: &seppv1.UniqueOptions{Key: "report-42"}})
	if first.GetDuplicate() {
		t.Fatal("the first unique job is a duplicate")
	}
	again := enqueue(t, env, &seppv1.EnqueueRequest{Queue: "q", Unique: &seppv1.UniqueOptions{Key: "report-42"}})
	if !again.GetDuplicate() || again.GetJobId() != first.GetJobId() || again.GetState() != seppv1.JobState_JOB_STATE_READY {
		t.Fatalf("second enqueue %v, want a duplicate of job %d", again, first.GetJobId())
	}

	_, err := env.Queue.Enqueue(ctxT(t), &seppv1.EnqueueRequest{Queue: "q", JobType: "test", Unique: &seppv1.UniqueOptions{Key: "report-42", Refuse: true}})
	st := requireCode(t, err, codes.AlreadyExists)
	info, ok := detail[*errdetails.ResourceInfo](st)
	if !ok || info.GetResourceType() != "job" || info.GetResourceName() != "1" || info.GetOwner() != "q" {
		t.Fatalf("details %v, want a ResourceInfo naming job 1 of queue q", st.Details())
	}

	batch, err := env.Queue.EnqueueBatch(ctxT(t), &seppv1.EnqueueBatchRequest{Jobs: []*seppv1.EnqueueRequest{
		{Queue: "q", JobType: "test", Payload: []byte("a"), Unique: &seppv1.UniqueOptions{}},
		{Queue: "q", JobType: "test", Payload: []byte("a"), Unique: &seppv1.UniqueOptions{}},
		{Queue: "q", JobType: "test", Payload: []byte("a"), Unique: &seppv1.UniqueOptions{Refuse: true}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	rs := batch.GetResults()
	if len(rs) != 3 || rs[0].GetError() != nil || rs[1].GetEnqueued().GetJobId() != rs[0].GetEnqueued().GetJobId() || !rs[1].GetEnqueued().GetDuplicate() {
		t.Fatalf("batch results %v: want a job and its duplicate", rs)
	}
	if e := rs[2].GetError(); e == nil || codes.Code(e.GetCode()) != codes.AlreadyExists {
		t.Fatalf("third item %v, want ALREADY_EXISTS", rs[2])
	}

	_, err = env.Queue.Enqueue(ctxT(t), &seppv1.EnqueueRequest{Queue: "q", JobType: "test", Unique: &seppv1.UniqueOptions{Key: strings.Repeat("k", 300)}})
	st = requireCode(t, err, codes.InvalidArgument)
	if !strings.Contains(st.Message(), "unique.key") || !strings.Contains(st.Message(), "256") {
		t.Fatalf("message %q does not name unique.key and its limit", st.Message())
	}
}
