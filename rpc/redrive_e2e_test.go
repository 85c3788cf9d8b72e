package rpc_test

import (
	"testing"

	"google.golang.org/grpc/codes"

	seppv1 "github.com/sepp-io/sepp/proto/sepp/v1"
)

// Redrive through gRPC: a preview counts and samples, a start answers the
// task, its steps (the leader's, here the test's) move the records, pause,
// resume and cancel answer the task or FailedPrecondition, and bad input
// names its field.
func TestAdminRedrive(t *testing.T) {
	env := start(t, retentionConfig())
	ctx := ctxT(t)
	var ids []uint64
	for range 3 {
		ids = append(ids, enqueue(t, env, &seppv1.EnqueueRequest{Queue: "q", JobType: "email"}).GetJobId())
	}
	if _, err := env.Admin.DeadLetterJobs(ctx, &seppv1.DeadLetterJobsRequest{JobIds: ids, Reason: "smtp down"}); err != nil {
		t.Fatal(err)
	}
	sel := &seppv1.RedriveSelection{Queue: "q", Cause: seppv1.DeadLetterCause_DEAD_LETTER_CAUSE_ADMIN, ReasonContains: "smtp"}
	pv, err := env.Admin.PreviewRedrive(ctx, &seppv1.PreviewRedriveRequest{Redrive: &seppv1.StartRedriveRequest{Selection: sel}, Sample: 2})
	if err != nil || pv.GetMatching() != 3 || len(pv.GetSample()) != 2 || pv.GetSample()[0].GetJob().GetId() != ids[0] {
		t.Fatalf("preview: %v %v", pv, err)
	}
	if got, _ := env.Admin.ListRedrives(ctx, &seppv1.ListRedrivesRequest{}); len(got.GetTasks()) != 0 {
		t.Fatalf("a preview started a task: %v", got)
	}

	for _, tc := range []struct {
		name  string
		req   *seppv1.StartRedriveRequest
		code  codes.Code
		field string
	}{
		{"rate", &seppv1.StartRedriveRequest{Rate: 10001}, codes.InvalidArgument, "rate"},
		{"same id to another queue", &seppv1.StartRedriveRequest{ToQueue: "q"}, codes.InvalidArgument, "to_queue"},
		{"unknown cause", &seppv1.StartRedriveRequest{Selection: &seppv1.RedriveSelection{Cause: 42}}, codes.InvalidArgument, "selection.cause"},
	} {
		_, err := env.Admin.StartRedrive(ctx, tc.req)
		requireFieldViolation(t, requireCode(t, err, tc.code), tc.field, "")
	}
	_, err = env.Admin.StartRedrive(ctx, &seppv1.StartRedriveRequest{Selection: &seppv1.RedriveSelection{Queue: "nosuch"}})
	requireCode(t, err, codes.NotFound)

	st, err := env.Admin.StartRedrive(ctx, &seppv1.StartRedriveRequest{Selection: sel, Rate: 5})
	if err != nil || st.GetTask().GetState() != seppv1.RedriveState_REDRIVE_STATE_RUNNING || st.GetTask().GetRemaining() != 3 || st.GetTask().GetRate() != 5 {
		t.Fatalf("start: %v %v", st, err)
	}
	id := st.GetTask().GetId()
	if _, err := env.Backend.RedriveStep(ctx, id, 1); err != nil {
		t.Fatal(err)
	}
	p, err := env.Admin.PauseRedrive(ctx, &seppv1.PauseRedriveRequest{Id: id})
	if err != nil || p.GetTask().GetState() != seppv1.RedriveState_REDRIVE_STATE_PAUSED || p.GetTask().GetMoved() != 1 || p.GetTask().GetCursor() != ids[0] {
		t.Fatalf("pause: %v %v", p, err)
	}
	_, err = env.Admin.PauseRedrive(ctx, &seppv1.PauseRedriveRequest{Id: id})
	requireCode(t, err, codes.FailedPrecondition)
	if _, err := env.Admin.ResumeRedrive(ctx, &seppv1.ResumeRedriveRequest{Id: id}); err != nil {
		t.Fatal(err)
	}
	c, err := env.Admin.CancelRedrive(ctx, &seppv1.CancelRedriveRequest{Id: id})
	if err != nil || c.GetTask().GetState() != seppv1.RedriveState_REDRIVE_STATE_CANCELLED || c.GetTask().GetEndedAt() == nil {
		t.Fatalf("cancel: %v %v", c, err)
	}
	_, err = env.Admin.GetRedrive(ctx, &seppv1.GetRedriveRequest{Id: id + 1})
	requireCode(t, err, codes.NotFound)
	g, err := env.Admin.GetRedrive(ctx, &seppv1.GetRedriveRequest{Id: id})
	if err != nil || g.GetTask().GetMoved() != 1 || g.GetTask().GetSelection().GetReasonContains() != "smtp" {
		t.Fatalf("audit record: %v %v", g, err)
	}
	if got, err := env.Admin.GetJob(ctx, &seppv1.GetJobRequest{JobId: ids[0]}); err != nil || got.GetJob().GetState() != seppv1.JobState_JOB_STATE_READY {
		t.Fatalf("the moved job: %v %v", got, err)
	}
}
