package rpc_test

import (
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/sepp-io/sepp/engine"
	seppv1 "github.com/sepp-io/sepp/proto/sepp/v1"
	"github.com/sepp-io/sepp/rpc/rpctest"
)

// A sample of every spec rule, once more through real gRPC. The engine's own
// tests prove the rules in depth; these prove the API carries them.

func TestSpec_PriorityAndFIFO(t *testing.T) {
	t.Parallel()
	env := start(t, nil)
	// spec: PRI-1
	// spec: PRI-4
	// spec: PRI-5
	var want []uint64
	for _, p := range []uint32{3, 9, 3, 0, 9} {
		enqueue(t, env, &seppv1.EnqueueRequest{Queue: "emails", Priority: prio(p)})
	}
	// ids 1..5 by enqueue order: priority 9 first (ids 2, 5), then 3 (1, 3), then 0 (4).
	want = []uint64{2, 5, 1, 3, 4}
	jobs := reserve(t, env, &seppv1.ReserveRequest{Queue: "emails", Max: 10})
	if len(jobs) != len(want) {
		t.Fatalf("reserved %d jobs, want %d", len(jobs), len(want))
	}
	for i, j := range jobs {
		if j.GetCtx().GetJobId() != want[i] {
			t.Errorf("job %d = id %d (priority %d), want id %d", i, j.GetCtx().GetJobId(), j.GetJob().GetPriority(), want[i])
		}
	}
}

func TestSpec_DefaultPriority(t *testing.T) {
	t.Parallel()
	seven := uint32(7)
	cfg := &engine.Config{Limits: engine.DefaultLimits(), Queues: []engine.QueueConfig{{Name: "alerts", DefaultPriority: &seven}}}
	env := start(t, cfg)
	// spec: PRI-3
	enqueue(t, env, &seppv1.EnqueueRequest{Queue: "alerts"})
	enqueue(t, env, &seppv1.EnqueueRequest{Queue: "other"})
	if got := reserveOne(t, env, "alerts").GetJob().GetPriority(); got != 7 {
		t.Errorf("alerts job priority = %d, want the queue default 7", got)
	}
	if got := reserveOne(t, env, "other").GetJob().GetPriority(); got != 0 {
		t.Errorf("other job priority = %d, want the global default 0", got)
	}
}

func TestSpec_Scheduling(t *testing.T) {
	t.Parallel()
	env := start(t, nil)
	runAt := env.Clock.Now().Add(time.Hour)
	// spec: SCH-1
	// spec: SCH-4
	// spec: SCH-8
	resp := enqueue(t, env, &seppv1.EnqueueRequest{Queue: "reports", Priority: prio(9), ScheduledAt: timestamppb.New(runAt)})
	if resp.GetState() != seppv1.JobState_JOB_STATE_SCHEDULED {
		t.Fatalf("state = %v, want SCHEDULED", resp.GetState())
	}
	if jobs := reserve(t, env, &seppv1.ReserveRequest{Queue: "reports"}); len(jobs) != 0 {
		t.Fatalf("a scheduled job was reserved before its time: %v", jobs)
	}
	// spec: SCH-2
	// spec: SCH-3
	env.Clock.Advance(time.Hour)
	env.Backend.Tick()
	enqueue(t, env, &seppv1.EnqueueRequest{Queue: "reports", Priority: prio(9)})
	got := reserveOne(t, env, "reports")
	if got.GetCtx().GetJobId() != resp.GetJobId() {
		t.Errorf("reserved job %d, want the promoted job %d (earlier enqueue, same priority)", got.GetCtx().GetJobId(), resp.GetJobId())
	}
}

func TestSpec_AttemptsAndNack(t *testing.T) {
	t.Parallel()
	env := start(t, retentionConfig())
	// spec: ATT-1
	// spec: ATT-2
	// spec: ATT-6
	// spec: NAK-2
	// spec: NAK-3
	id := enqueue(t, env, &seppv1.EnqueueRequest{Queue: "q", MaxAttempts: 2}).GetJobId()
	first := reserveOne(t, env, "q")
	if c := first.GetCtx(); c.GetAttempt() != 1 || c.GetMaxAttempts() != 2 || c.GetJobId() != id || c.GetQueue() != "q" || c.GetWorkerId() != "w1" {
		t.Fatalf("first ctx = %v, want attempt 1 of 2 on q by w1", c)
	}
	if r := nack(t, env, first.GetCtx(), directiveDefault(), "transient"); r.GetDeadLettered() {
		t.Fatal("first nack dead-lettered the job; one attempt remains")
	}
	second := reserveOne(t, env, "q")
	if second.GetCtx().GetAttempt() != 2 {
		t.Fatalf("second delivery attempt = %d, want 2", second.GetCtx().GetAttempt())
	}
	if r := nack(t, env, second.GetCtx(), directiveDefault(), "still failing"); !r.GetDeadLettered() {
		t.Fatal("nack of the final attempt did not dead-letter the job")
	}
	// spec: DLQ-1
	// spec: DLQ-6
	recs, err := env.Queue.DrainDeadLetters(ctxT(t), &seppv1.DrainDeadLettersRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if len(recs.GetRecords()) != 1 {
		t.Fatalf("drained %d records, want 1", len(recs.GetRecords()))
	}
	r := recs.GetRecords()[0]
	if r.GetCause() != seppv1.DeadLetterCause_DEAD_LETTER_CAUSE_ATTEMPTS_EXHAUSTED || r.GetFinalAttempt() != 2 ||
		r.GetLastReason() != "still failing" || r.GetJob().GetQueue() != "q" || r.GetFailedAt() == nil {
		t.Errorf("record = %v, want attempts_exhausted on attempt 2 with last reason", r)
	}
}

func TestSpec_MaxAttemptsClampedToCeiling(t *testing.T) {
	t.Parallel()
	env := start(t, nil)
	// spec: ATT-3
	// spec: ATT-4
	enqueue(t, env, &seppv1.EnqueueRequest{Queue: "q", MaxAttempts: 1000})
	enqueue(t, env, &seppv1.EnqueueRequest{Queue: "q"})
	jobs := reserve(t, env, &seppv1.ReserveRequest{Queue: "q", Max: 2})
	if got := jobs[0].GetCtx().GetMaxAttempts(); got != 100 {
		t.Errorf("max_attempts 1000 became %d, want the ceiling 100", got)
	}
	if got := jobs[1].GetCtx().GetMaxAttempts(); got != 3 {
		t.Errorf("unset max_attempts became %d, want the default 3", got)
	}
}

func TestSpec_NackAfterAndDeadLetter(t *testing.T) {
	t.Parallel()
	env := start(t, retentionConfig())
	enqueue(t, env, &seppv1.EnqueueRequest{Queue: "q"})
	enqueue(t, env, &seppv1.EnqueueRequest{Queue: "q"})
	a, b := reserveOne(t, env, "q"), reserveOne(t, env, "q")
	// spec: NAK-1
	// spec: NAK-9
	r := nack(t, env, a.GetCtx(), directiveAfter(time.Minute), "rate limited")
	if r.GetDeadLettered() || !r.GetNextAttemptAt().AsTime().Equal(env.Clock.Now().Add(time.Minute)) {
		t.Errorf("After(1m) nack = %v, want a retry at now+1m", r)
	}
	if jobs := reserve(t, env, &seppv1.ReserveRequest{Queue: "q"}); len(jobs) != 0 {
		t.Errorf("job nacked with After(1m) was redelivered at once")
	}
	// spec: NAK-11
	far := nack(t, env, b.GetCtx(), directiveAfter(365*24*time.Hour), "much later")
	if want := env.Clock.Now().Add(30 * 24 * time.Hour); !far.GetNextAttemptAt().AsTime().Equal(want) {
		t.Errorf("After(1y) retries at %v, want clamped to the horizon %v", far.GetNextAttemptAt().AsTime(), want)
	}
	env.Clock.Advance(time.Minute)
	env.Backend.Tick()
	again := reserveOne(t, env, "q")
	if again.GetCtx().GetJobId() != a.GetCtx().GetJobId() || again.GetCtx().GetAttempt() != 2 {
		t.Fatalf("after 1m got %v, want job %d on attempt 2", again.GetCtx(), a.GetCtx().GetJobId())
	}
	// spec: NAK-10
	if r := nack(t, env, again.GetCtx(), directiveDeadLetter(), "bad payload"); !r.GetDeadLettered() {
		t.Fatal("DeadLetter directive did not dead-letter")
	}
	rec, err := env.Admin.GetDeadLetter(ctxT(t), &seppv1.GetDeadLetterRequest{JobId: a.GetCtx().GetJobId()})
	if err != nil {
		t.Fatal(err)
	}
	if rec.GetRecord().GetCause() != seppv1.DeadLetterCause_DEAD_LETTER_CAUSE_REJECTED {
		t.Errorf("cause = %v, want REJECTED", rec.GetRecord().GetCause())
	}
}

func TestSpec_LeaseExpiry(t *testing.T) {
	t.Parallel()
	env := start(t, retentionConfig())
	id := enqueue(t, env, &seppv1.EnqueueRequest{Queue: "q", MaxAttempts: 2}).GetJobId()
	lease := durationpb.New(10 * time.Second)
	first := reserve(t, env, &seppv1.ReserveRequest{Queue: "q", Lease: lease})[0]
	if !first.GetCtx().GetLeaseDeadline().AsTime().Equal(env.Clock.Now().Add(10 * time.Second)) {
		t.Errorf("lease deadline = %v, want now+10s", first.GetCtx().GetLeaseDeadline().AsTime())
	}
	// spec: LEA-1
	// spec: ATT-1
	env.Clock.Advance(11 * time.Second)
	env.Backend.Tick()
	second := reserve(t, env, &seppv1.ReserveRequest{Queue: "q", Lease: lease})
	if len(second) != 1 || second[0].GetCtx().GetAttempt() != 2 {
		t.Fatalf("after the lease expired got %v, want job %d Ready again on attempt 2", second, id)
	}
	// The first worker's lease is stale now.
	_, err := env.Queue.Ack(ctxT(t), &seppv1.AckRequest{Ctx: first.GetCtx()})
	requireCode(t, err, codes.FailedPrecondition)
	// spec: LEA-2
	env.Clock.Advance(11 * time.Second)
	env.Backend.Tick()
	rec, err := env.Admin.GetDeadLetter(ctxT(t), &seppv1.GetDeadLetterRequest{JobId: id})
	if err != nil {
		t.Fatal(err)
	}
	if rec.GetRecord().GetCause() != seppv1.DeadLetterCause_DEAD_LETTER_CAUSE_LEASE_EXPIRED {
		t.Errorf("cause = %v, want LEASE_EXPIRED", rec.GetRecord().GetCause())
	}
}

func TestSpec_RetentionOffDropsDeadJobs(t *testing.T) {
	t.Parallel()
	env := start(t, nil)
	// spec: DLQ-3
	// spec: DLQ-5
	info, err := env.Queue.GetServerInfo(ctxT(t), &seppv1.GetServerInfoRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if info.GetDeadLetterRetentionEnabled() {
		t.Error("dead_letter_retention_enabled = true with retention 0")
	}
	enqueue(t, env, &seppv1.EnqueueRequest{Queue: "q"})
	if r := nack(t, env, reserveOne(t, env, "q").GetCtx(), directiveDeadLetter(), "x"); !r.GetDeadLettered() {
		t.Fatal("not dead-lettered")
	}
	recs, err := env.Queue.DrainDeadLetters(ctxT(t), &seppv1.DrainDeadLettersRequest{Max: 10})
	if err != nil || len(recs.GetRecords()) != 0 {
		t.Errorf("drain with retention off = %v, %v; want empty", recs, err)
	}
}

func TestSpec_DrainDeadLetters(t *testing.T) {
	t.Parallel()
	env := start(t, retentionConfig())
	kill := func(queue string) uint64 {
		enqueue(t, env, &seppv1.EnqueueRequest{Queue: queue, Payload: []byte("p-" + queue), Custom: map[string]string{"k": "v"}})
		job := reserveOne(t, env, queue)
		nack(t, env, job.GetCtx(), directiveDeadLetter(), "bad")
		env.Clock.Advance(time.Second)
		return job.GetCtx().GetJobId()
	}
	a, b, c := kill("a"), kill("b"), kill("a")
	// spec: DLQ-11 — listing does not consume.
	for range 2 {
		list, err := env.Admin.ListDeadLetters(ctxT(t), &seppv1.ListDeadLettersRequest{Queue: "a"})
		if err != nil || len(list.GetRecords()) != 2 {
			t.Fatalf("ListDeadLetters(a) = %v, %v; want 2 records", list, err)
		}
	}
	// spec: DLQ-7 — max defaults to 1, oldest first, optional queue.
	// spec: DLQ-8
	one, err := env.Queue.DrainDeadLetters(ctxT(t), &seppv1.DrainDeadLettersRequest{})
	if err != nil || len(one.GetRecords()) != 1 || one.GetRecords()[0].GetJob().GetId() != a {
		t.Fatalf("default drain = %v, %v; want the oldest record (job %d)", one, err, a)
	}
	got := one.GetRecords()[0].GetJob()
	if string(got.GetPayload()) != "p-a" || got.GetCustom()["k"] != "v" {
		t.Errorf("record job = %v, want payload and custom inline", got)
	}
	queueA := "a"
	rest, err := env.Queue.DrainDeadLetters(ctxT(t), &seppv1.DrainDeadLettersRequest{Queue: &queueA, Max: 1_000_000})
	if err != nil || len(rest.GetRecords()) != 1 || rest.GetRecords()[0].GetJob().GetId() != c {
		t.Fatalf("drain of a with a huge max = %v, %v; want job %d (max is clamped, not an error)", rest, err, c)
	}
	// spec: DLQ-9 — drained records are gone.
	left, err := env.Admin.ListDeadLetters(ctxT(t), &seppv1.ListDeadLettersRequest{})
	if err != nil || len(left.GetRecords()) != 1 || left.GetRecords()[0].GetJob().GetId() != b {
		t.Errorf("after draining, records = %v, %v; want only job %d", left, err, b)
	}
	// spec: DLQ-10 — a replay is a fresh job.
	rec := left.GetRecords()[0].GetJob()
	fresh := enqueue(t, env, &seppv1.EnqueueRequest{Queue: rec.GetQueue(), JobType: rec.GetJobType(), Payload: rec.GetPayload(), Custom: rec.GetCustom()})
	if fresh.GetJobId() == b {
		t.Error("replayed record kept its job id")
	}
	if att := reserveOne(t, env, "b").GetCtx().GetAttempt(); att != 1 {
		t.Errorf("replayed job attempt = %d, want 1", att)
	}
}

func TestSpec_AdminDeadLetterActions(t *testing.T) {
	t.Parallel()
	env := start(t, retentionConfig())
	live := enqueue(t, env, &seppv1.EnqueueRequest{Queue: "q"}).GetJobId()
	sched := enqueue(t, env, &seppv1.EnqueueRequest{Queue: "q", ScheduledAt: timestamppb.New(env.Clock.Now().Add(time.Hour))}).GetJobId()
	// spec: DLQ-14
	res, err := env.Admin.DeadLetterJobs(ctxT(t), &seppv1.DeadLetterJobsRequest{JobIds: []uint64{live, sched}, Reason: "known bad"})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res.GetResults() {
		if r.GetError() != nil {
			t.Fatalf("dead-letter job %d: %v", r.GetJobId(), r.GetError())
		}
	}
	rec, err := env.Admin.GetDeadLetter(ctxT(t), &seppv1.GetDeadLetterRequest{JobId: live})
	if err != nil || rec.GetRecord().GetCause() != seppv1.DeadLetterCause_DEAD_LETTER_CAUSE_ADMIN {
		t.Fatalf("record = %v, %v; want cause ADMIN", rec, err)
	}
	// spec: DLQ-12
	rq, err := env.Admin.RequeueDeadLetters(ctxT(t), &seppv1.RequeueDeadLettersRequest{JobIds: []uint64{live}})
	if err != nil || rq.GetResults()[0].GetError() != nil {
		t.Fatalf("requeue = %v, %v", rq, err)
	}
	again := reserveOne(t, env, "q")
	if again.GetCtx().GetJobId() != live || again.GetCtx().GetAttempt() != 1 {
		t.Errorf("requeued delivery = %v, want job %d on attempt 1", again.GetCtx(), live)
	}
	// spec: DLQ-13
	del, err := env.Admin.DeleteDeadLetters(ctxT(t), &seppv1.DeleteDeadLettersRequest{JobIds: []uint64{sched}})
	if err != nil || del.GetResults()[0].GetError() != nil {
		t.Fatalf("delete = %v, %v", del, err)
	}
	_, err = env.Admin.GetDeadLetter(ctxT(t), &seppv1.GetDeadLetterRequest{JobId: sched})
	requireCode(t, err, codes.NotFound)
	// A reserved job cannot be dead-lettered by an operator: the item fails
	// alone with FailedPrecondition.
	res, err = env.Admin.DeadLetterJobs(ctxT(t), &seppv1.DeadLetterJobsRequest{JobIds: []uint64{live}})
	if err != nil {
		t.Fatal(err)
	}
	if e := res.GetResults()[0].GetError(); codes.Code(e.GetCode()) != codes.FailedPrecondition {
		t.Errorf("dead-letter of a reserved job = %v, want FailedPrecondition", e)
	}
}

func TestSpec_ServerInfo(t *testing.T) {
	t.Parallel()
	horizon := 24 * time.Hour
	cfg := retentionConfig()
	cfg.Queues = []engine.QueueConfig{{Name: "short", MaxScheduleHorizon: &horizon}}
	env := rpctest.Start(t, cfg, rpcOptions())
	// spec: INF-1
	// spec: SCH-6
	// spec: DLQ-5
	// spec: DLQ-8
	info, err := env.Queue.GetServerInfo(ctxT(t), &seppv1.GetServerInfoRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if !info.GetDeadLetterRetentionEnabled() || info.GetMaxReserveBatch() != 100 ||
		info.GetMaxScheduleHorizonMs() != (30*24*time.Hour).Milliseconds() || info.GetVersion() != "v-test" ||
		info.GetNodeId() != "node-1" || info.GetLeaderId() != "node-1" || info.GetStale() {
		t.Errorf("server info = %v", info)
	}
	l := info.GetLimits()
	if l.GetMaxPriority() != 9 || l.GetDefaultMaxAttempts() != 3 || l.GetMaxAttemptsCeiling() != 100 ||
		l.GetMaxPayloadBytes() != 1<<20 || l.GetMaxBatchSize() != 1000 || l.GetMaxReserveWaitMs() != 30_000 {
		t.Errorf("limits = %v", l)
	}
	if len(info.GetQueues()) != 1 || info.GetQueues()[0].GetName() != "short" ||
		info.GetQueues()[0].GetMaxScheduleHorizonMs() != horizon.Milliseconds() {
		t.Errorf("queues = %v, want short with its own horizon", info.GetQueues())
	}
}

func TestSpec_RetryPolicy(t *testing.T) {
	t.Parallel()
	base, capDelay, exp := 10*time.Second, 25*time.Second, engine.BackoffExponential
	maxAttempts := uint32(10)
	cfg := &engine.Config{Limits: engine.DefaultLimits(), Queues: []engine.QueueConfig{{
		Name: "emails", RetryDelay: &base, RetryBackoff: &exp, RetryDelayMax: &capDelay, DefaultMaxAttempts: &maxAttempts,
	}}}
	env := start(t, cfg)
	// spec: NAK-4
	// spec: NAK-6
	// spec: NAK-7
	// spec: NAK-8
	// spec: NAK-12
	enqueue(t, env, &seppv1.EnqueueRequest{Queue: "emails"})
	for i, full := range []time.Duration{10 * time.Second, 20 * time.Second, 25 * time.Second} {
		job := reserveOne(t, env, "emails")
		r := nack(t, env, job.GetCtx(), directiveDefault(), "transient")
		delay := r.GetNextAttemptAt().AsTime().Sub(env.Clock.Now())
		if delay > full || delay < full*3/4 {
			t.Errorf("retry %d waits %v, want %v minus at most 25%% jitter", i+1, delay, full)
		}
		if jobs := reserve(t, env, &seppv1.ReserveRequest{Queue: "emails"}); len(jobs) != 0 {
			t.Fatalf("retry %d was Ready before its delay", i+1)
		}
		env.Clock.Advance(delay)
		env.Backend.Tick()
	}
	// spec: NAK-5 — the global policy ("none") on another queue: no delay.
	enqueue(t, env, &seppv1.EnqueueRequest{Queue: "other"})
	r := nack(t, env, reserveOne(t, env, "other").GetCtx(), directiveDefault(), "x")
	if !r.GetNextAttemptAt().AsTime().Equal(env.Clock.Now()) {
		t.Errorf("default policy retry at %v, want now", r.GetNextAttemptAt().AsTime())
	}
}

func TestSpec_RetentionSweepAndTerminalDeadLetters(t *testing.T) {
	t.Parallel()
	cfg := &engine.Config{Limits: engine.DefaultLimits()}
	cfg.Limits.DeadLetterRetention = time.Hour
	env := start(t, cfg)
	id := enqueue(t, env, &seppv1.EnqueueRequest{Queue: "q"}).GetJobId()
	nack(t, env, reserveOne(t, env, "q").GetCtx(), directiveDeadLetter(), "bad")
	// spec: DLQ-2
	if jobs := reserve(t, env, &seppv1.ReserveRequest{Queue: "q"}); len(jobs) != 0 {
		t.Fatal("a dead-lettered job was redelivered")
	}
	// spec: DLQ-4
	env.Clock.Advance(59 * time.Minute)
	env.Backend.Tick()
	if _, err := env.Admin.GetDeadLetter(ctxT(t), &seppv1.GetDeadLetterRequest{JobId: id}); err != nil {
		t.Fatalf("record gone before its retention: %v", err)
	}
	env.Clock.Advance(time.Minute)
	env.Backend.Tick()
	_, err := env.Admin.GetDeadLetter(ctxT(t), &seppv1.GetDeadLetterRequest{JobId: id})
	requireCode(t, err, codes.NotFound)
}

func TestSpec_ReadyJobsWaitUnbounded(t *testing.T) {
	t.Parallel()
	env := start(t, nil)
	// spec: SCH-7
	id := enqueue(t, env, &seppv1.EnqueueRequest{Queue: "q"}).GetJobId()
	env.Clock.Advance(90 * 24 * time.Hour)
	env.Backend.Tick()
	if got := reserveOne(t, env, "q").GetCtx().GetJobId(); got != id {
		t.Errorf("reserved %d, want the job %d that waited past the horizon", got, id)
	}
}
