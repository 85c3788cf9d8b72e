package rpc_test

import (
	"slices"
	"testing"

	seppv1 "github.com/sepp-io/sepp/proto/sepp/v1"
	"github.com/sepp-io/sepp/rpc"
	"github.com/sepp-io/sepp/rpc/rpctest"
)

// TestGetJob_WaitingChildren: GetJob of a fan-out job answers the jobs
// still waiting for it, in id order, and their count; a listing and a
// delivery of it carry none; once it completed, its children are released
// and it lists none.
func TestGetJob_WaitingChildren(t *testing.T) {
	env := rpctest.Start(t, keptConfig(), rpc.Options{})
	res, err := env.Queue.EnqueueBatch(ctxT(t), &seppv1.EnqueueBatchRequest{Jobs: []*seppv1.EnqueueRequest{
		{Queue: "kept", JobType: "plan"},
		{Queue: "render", JobType: "render", After: []uint32{0}},
		{Queue: "render", JobType: "render", After: []uint32{0}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	ids := make([]uint64, 3)
	for i, r := range res.GetResults() {
		ids[i] = r.GetEnqueued().GetJobId()
	}
	getJob := func(id uint64) *seppv1.Job {
		t.Helper()
		got, err := env.Admin.GetJob(ctxT(t), &seppv1.GetJobRequest{JobId: id})
		if err != nil {
			t.Fatal(err)
		}
		return got.GetJob()
	}
	if j := getJob(ids[0]); !slices.Equal(j.GetWaitingChildren(), ids[1:]) || j.GetWaitingChildrenTotal() != 2 {
		t.Fatalf("GetJob of the parent: waiting children %v of %d, want %v of 2", j.GetWaitingChildren(), j.GetWaitingChildrenTotal(), ids[1:])
	}
	if j := getJob(ids[1]); len(j.GetWaitingChildren()) != 0 || j.GetWaitingChildrenTotal() != 0 {
		t.Fatalf("GetJob of a child: waiting children %v of %d, want none", j.GetWaitingChildren(), j.GetWaitingChildrenTotal())
	}
	list, err := env.Admin.ListJobs(ctxT(t), &seppv1.ListJobsRequest{Queue: "kept", State: seppv1.JobState_JOB_STATE_READY})
	if err != nil || len(list.GetJobs()) != 1 {
		t.Fatalf("ListJobs: %v %v", err, list)
	}
	if j := list.GetJobs()[0]; len(j.GetWaitingChildren()) != 0 || j.GetWaitingChildrenTotal() != 0 {
		t.Errorf("listed parent carries waiting children %v of %d", j.GetWaitingChildren(), j.GetWaitingChildrenTotal())
	}
	d := reserveOne(t, env, "kept")
	if j := d.GetJob(); len(j.GetWaitingChildren()) != 0 || j.GetWaitingChildrenTotal() != 0 {
		t.Errorf("delivered parent carries waiting children %v of %d", j.GetWaitingChildren(), j.GetWaitingChildrenTotal())
	}
	if _, err := env.Queue.Ack(ctxT(t), &seppv1.AckRequest{Ctx: d.GetCtx()}); err != nil {
		t.Fatal(err)
	}
	if j := getJob(ids[0]); j.GetState() != seppv1.JobState_JOB_STATE_COMPLETED || len(j.GetWaitingChildren()) != 0 || j.GetWaitingChildrenTotal() != 0 {
		t.Fatalf("GetJob of the completed parent: %v, waiting children %v of %d, want completed with none", j.GetState(), j.GetWaitingChildren(), j.GetWaitingChildrenTotal())
	}
}
