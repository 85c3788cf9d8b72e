package rpc_test

import (
	"fmt"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/types/known/timestamppb"

	seppv1 "github.com/sepp-io/sepp/proto/sepp/v1"
)

// A batch of many jobs of one queue, as producers send them, with items
// that fail in the rpc layer and in the engine: each failed item names its
// position and field, every result sits at its item's position, and the
// jobs enqueued hold what was sent.
func TestEnqueueBatch_ResultsAndContents(t *testing.T) {
	t.Parallel()
	env := start(t, nil)
	badTime := &timestamppb.Timestamp{Seconds: 1 << 62} // past year 9999: the rpc layer refuses it
	jobs := []*seppv1.EnqueueRequest{
		{Queue: "q", JobType: "t", Payload: []byte("p0"), IdempotencyKey: "k0"},
		{Queue: "q", JobType: "t", Payload: []byte("p1"), ScheduledAt: badTime},
		{Queue: "q", JobType: "t", Payload: []byte("p2"), IdempotencyKey: "k2", Custom: map[string]string{"c": "v"}},
		{Queue: "q", JobType: "t", Payload: []byte("p3"), Priority: prio(12)}, // the engine refuses it
		{Queue: "other", JobType: "u", Payload: []byte("p4"), Priority: prio(9)},
	}
	resp, err := env.Queue.EnqueueBatch(ctxT(t), &seppv1.EnqueueBatchRequest{Jobs: jobs})
	if err != nil {
		t.Fatal(err)
	}
	res := resp.GetResults()
	if len(res) != len(jobs) {
		t.Fatalf("%d results for %d jobs", len(res), len(jobs))
	}
	for i, want := range []string{"", "jobs[1].scheduled_at", "", "jobs[3].priority", ""} {
		e := res[i].GetError()
		switch {
		case want == "" && (e != nil || res[i].GetEnqueued().GetJobId() == 0):
			t.Errorf("item %d = %v, want enqueued", i, res[i])
		case want != "" && (e.GetCode() != int32(codes.InvalidArgument) || !strings.Contains(e.GetMessage(), want)):
			t.Errorf("item %d = %v, want InvalidArgument naming %s", i, res[i], want)
		}
	}
	// What was enqueued is what was sent.
	for _, i := range []int{0, 2, 4} {
		job, err := env.Admin.GetJob(ctxT(t), &seppv1.GetJobRequest{JobId: res[i].GetEnqueued().GetJobId()})
		if err != nil {
			t.Fatal(err)
		}
		j, sent := job.GetJob(), jobs[i]
		if j.GetQueue() != sent.GetQueue() || j.GetJobType() != sent.GetJobType() || string(j.GetPayload()) != string(sent.GetPayload()) ||
			fmt.Sprint(j.GetCustom()) != fmt.Sprint(sent.GetCustom()) || (sent.Priority != nil && j.GetPriority() != sent.GetPriority()) {
			t.Errorf("item %d enqueued as %v, sent %v", i, j, sent)
		}
	}
	// The keys were remembered: a retry is a duplicate.
	again, err := env.Queue.EnqueueBatch(ctxT(t), &seppv1.EnqueueBatchRequest{Jobs: []*seppv1.EnqueueRequest{jobs[2], jobs[0]}})
	if err != nil {
		t.Fatal(err)
	}
	if r := again.GetResults(); !r[0].GetEnqueued().GetDuplicate() || r[0].GetEnqueued().GetJobId() != res[2].GetEnqueued().GetJobId() ||
		!r[1].GetEnqueued().GetDuplicate() || r[1].GetEnqueued().GetJobId() != res[0].GetEnqueued().GetJobId() {
		t.Errorf("retried batch = %v, want duplicates of jobs %d and %d", r, res[2].GetEnqueued().GetJobId(), res[0].GetEnqueued().GetJobId())
	}
}
