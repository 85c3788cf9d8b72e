package rpc_test

import (
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"

	seppv1 "github.com/sepp-io/sepp/proto/sepp/v1"
)

// TestExtendLease_Progress: progress rides an ExtendLease; a report out of
// bounds is InvalidArgument naming the field and its limit and extends
// nothing; GetJob, ListJobs' rows and WaitJob's answer show the last
// report; GetServerInfo advertises the message bound.
func TestExtendLease_Progress(t *testing.T) {
	env := start(t, nil)
	info, err := env.Queue.GetServerInfo(ctxT(t), &seppv1.GetServerInfoRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if got := info.GetLimits().GetMaxProgressMessageBytes(); got != 256 {
		t.Fatalf("max_progress_message_bytes = %d, want 256", got)
	}
	id := enqueue(t, env, &seppv1.EnqueueRequest{Queue: "q"}).GetJobId()
	d := reserveOne(t, env, "q")

	refusals := []struct {
		name         string
		progress     *seppv1.Progress
		field, limit string
	}{
		{"PercentAbove100", &seppv1.Progress{Percent: 101}, "progress.percent", "at most 100"},
		{"MessageTooLong", &seppv1.Progress{Percent: 1, Message: strings.Repeat("m", 257)}, "progress.message", "limit of 256"},
	}
	for _, tt := range refusals {
		t.Run(tt.name, func(t *testing.T) {
			_, err := env.Queue.ExtendLease(ctxT(t), &seppv1.ExtendLeaseRequest{Ctx: d.GetCtx(), Progress: tt.progress})
			requireFieldViolation(t, requireCode(t, err, codes.InvalidArgument), tt.field, tt.limit)
		})
	}

	want := &seppv1.Progress{Percent: 256 / 4, Message: strings.Repeat("é", 128)} // 256 bytes: the bound holds
	if _, err := env.Queue.ExtendLease(ctxT(t), &seppv1.ExtendLeaseRequest{Ctx: d.GetCtx(), Progress: want}); err != nil {
		t.Fatal(err)
	}
	got, err := env.Admin.GetJob(ctxT(t), &seppv1.GetJobRequest{JobId: id})
	if err != nil || !proto.Equal(got.GetJob().GetProgress(), want) {
		t.Fatalf("GetJob progress %v (%v), want %v", got.GetJob().GetProgress(), err, want)
	}
	list, err := env.Admin.ListJobs(ctxT(t), &seppv1.ListJobsRequest{Queue: "q", State: seppv1.JobState_JOB_STATE_RESERVED})
	if err != nil || len(list.GetJobs()) != 1 || !proto.Equal(list.GetJobs()[0].GetProgress(), want) {
		t.Fatalf("ListJobs %v (%v), want the row with the progress", list, err)
	}
	wait, err := env.Queue.WaitJob(ctxT(t), &seppv1.WaitJobRequest{JobId: id, TimeoutMs: 10})
	if err != nil || !proto.Equal(wait.GetJob().GetProgress(), want) {
		t.Fatalf("WaitJob %v (%v), want the job with the progress", wait, err)
	}

	// The ack ends the delivery and its progress: a queue keeping no
	// completed job, the job is gone.
	if _, err := env.Queue.Ack(ctxT(t), &seppv1.AckRequest{Ctx: d.GetCtx()}); err != nil {
		t.Fatal(err)
	}
}
