package rpc_test

import (
	"testing"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/types/known/timestamppb"

	seppv1 "github.com/sepp-io/sepp/proto/sepp/v1"
)

func u32(v uint32) *uint32 { return &v }
func u64(v uint64) *uint64 { return &v }
func i64(v int64) *int64   { return &v }
func str(v string) *string { return &v }
func yes() *bool           { v := true; return &v }

// Queues as managed objects through gRPC: each call's exact answer and code.
func TestAdminQueues_CreateUpdateDeletePurge(t *testing.T) {
	env := start(t, retentionConfig())
	ctx := ctxT(t)

	created, err := env.Admin.CreateQueue(ctx, &seppv1.CreateQueueRequest{Name: "emails", Settings: &seppv1.QueueSettings{
		DefaultPriority: u32(4), DefaultMaxAttempts: u32(7), RetryDelayMs: i64(1500),
		RetryBackoff: seppv1.RetryBackoff_RETRY_BACKOFF_EXPONENTIAL.Enum(), RetryDelayMaxMs: i64(60000), MaxLength: u64(100),
	}})
	if err != nil {
		t.Fatal(err)
	}
	if e := created.GetEffective(); e.GetDefaultPriority() != 4 || e.GetDefaultMaxAttempts() != 7 || e.GetRetryDelayMs() != 1500 || e.GetMaxLength() != 100 {
		t.Fatalf("effective after create: %v", e)
	}
	_, err = env.Admin.CreateQueue(ctx, &seppv1.CreateQueueRequest{Name: "emails"})
	requireCode(t, err, codes.AlreadyExists)

	_, err = env.Admin.CreateQueue(ctx, &seppv1.CreateQueueRequest{Name: "bad", Settings: &seppv1.QueueSettings{DefaultPriority: u32(12)}})
	requireFieldViolation(t, requireCode(t, err, codes.InvalidArgument), `queues["bad"].default_priority`, "0..9")
	_, err = env.Admin.CreateQueue(ctx, &seppv1.CreateQueueRequest{Name: "bad", Settings: &seppv1.QueueSettings{RetryBackoff: seppv1.RetryBackoff_RETRY_BACKOFF_UNSPECIFIED.Enum()}})
	requireFieldViolation(t, requireCode(t, err, codes.InvalidArgument), "settings.retry_backoff", "RETRY_BACKOFF_NONE")

	// Enqueued jobs take the queue's default priority.
	enqueue(t, env, &seppv1.EnqueueRequest{Queue: "emails"})
	enqueue(t, env, &seppv1.EnqueueRequest{Queue: "emails"})
	got, err := env.Admin.GetQueue(ctx, &seppv1.GetQueueRequest{Name: "emails"})
	if err != nil || got.GetSummary().GetReady() != 2 || !got.GetSummary().GetConfigured() || got.GetSettings().GetDefaultPriority() != 4 || got.GetSettings().RetryDelayMaxMs == nil {
		t.Fatalf("GetQueue: %v %v", got, err)
	}

	// Update: a new retry delay, priority back to the global default, paused,
	// and a dead_letter_queue (which must exist).
	if _, err := env.Admin.CreateQueue(ctx, &seppv1.CreateQueueRequest{Name: "emails.dead"}); err != nil {
		t.Fatal(err)
	}
	upd, err := env.Admin.UpdateQueue(ctx, &seppv1.UpdateQueueRequest{Name: "emails",
		Settings: &seppv1.QueueSettings{RetryDelayMs: i64(2000), DeadLetterQueue: str("emails.dead")},
		Inherit:  []string{"default_priority"}, Paused: yes()})
	if err != nil {
		t.Fatal(err)
	}
	if e := upd.GetEffective(); e.GetRetryDelayMs() != 2000 || e.GetDefaultPriority() != 0 || e.GetDeadLetterQueue() != "emails.dead" {
		t.Fatalf("effective after update: %v", e)
	}
	_, err = env.Admin.UpdateQueue(ctx, &seppv1.UpdateQueueRequest{Name: "emails", Inherit: []string{"colour"}})
	requireFieldViolation(t, requireCode(t, err, codes.InvalidArgument), "inherit", "default_priority")

	// No ghost queues: operations on an unknown queue are NotFound.
	for name, call := range map[string]func() error{
		"PauseQueue": func() error {
			_, err := env.Admin.PauseQueue(ctx, &seppv1.PauseQueueRequest{Queue: "nosuchqueue"})
			return err
		},
		"ResumeQueue": func() error {
			_, err := env.Admin.ResumeQueue(ctx, &seppv1.ResumeQueueRequest{Queue: "nosuchqueue"})
			return err
		},
		"GetQueue": func() error {
			_, err := env.Admin.GetQueue(ctx, &seppv1.GetQueueRequest{Name: "nosuchqueue"})
			return err
		},
		"UpdateQueue": func() error {
			_, err := env.Admin.UpdateQueue(ctx, &seppv1.UpdateQueueRequest{Name: "nosuchqueue", Paused: yes()})
			return err
		},
		"DeleteQueue": func() error {
			_, err := env.Admin.DeleteQueue(ctx, &seppv1.DeleteQueueRequest{Name: "nosuchqueue", Force: true})
			return err
		},
		"PurgeQueue": func() error {
			_, err := env.Admin.PurgeQueue(ctx, &seppv1.PurgeQueueRequest{Name: "nosuchqueue", Target: seppv1.PurgeTarget_PURGE_TARGET_WAITING})
			return err
		},
	} {
		t.Run(name, func(t *testing.T) { requireCode(t, call(), codes.NotFound) })
	}
	// A refused enqueue leaves no queue behind.
	_, err = env.Queue.Enqueue(ctx, &seppv1.EnqueueRequest{Queue: "typo", JobType: "t", ScheduledAt: timestamppb.New(env.Clock.Now().AddDate(5, 0, 0))})
	requireCode(t, err, codes.InvalidArgument)
	_, err = env.Admin.GetQueue(ctx, &seppv1.GetQueueRequest{Name: "typo"})
	requireCode(t, err, codes.NotFound)

	// Delete refuses a queue holding jobs, names what it holds; forced, it
	// counts what it removed.
	_, err = env.Admin.DeleteQueue(ctx, &seppv1.DeleteQueueRequest{Name: "emails"})
	st := requireCode(t, err, codes.FailedPrecondition)
	if pf, ok := detail[*errdetails.PreconditionFailure](st); !ok || pf.GetViolations()[0].GetType() != "QUEUE" {
		t.Fatalf("PreconditionFailure %v", pf)
	}
	_, err = env.Admin.PurgeQueue(ctx, &seppv1.PurgeQueueRequest{Name: "emails"})
	requireFieldViolation(t, requireCode(t, err, codes.InvalidArgument), "target", "PURGE_TARGET_WAITING")
	purged, err := env.Admin.PurgeQueue(ctx, &seppv1.PurgeQueueRequest{Name: "emails", Target: seppv1.PurgeTarget_PURGE_TARGET_WAITING})
	if err != nil || purged.GetJobsRemoved() != 2 {
		t.Fatalf("purge: %v %v", purged, err)
	}
	enqueue(t, env, &seppv1.EnqueueRequest{Queue: "emails"})
	del, err := env.Admin.DeleteQueue(ctx, &seppv1.DeleteQueueRequest{Name: "emails", Force: true})
	if err != nil || del.GetJobsRemoved() != 1 || del.GetDeadLettersRemoved() != 0 {
		t.Fatalf("forced delete: %v %v", del, err)
	}
	list, err := env.Admin.ListQueues(ctx, &seppv1.ListQueuesRequest{})
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range list.GetQueues() {
		if q.GetName() == "emails" {
			t.Fatalf("deleted queue still listed: %v", q)
		}
	}
}
