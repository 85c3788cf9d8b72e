package rpc_test

import (
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/sepp-io/sepp/engine"
	seppv1 "github.com/sepp-io/sepp/proto/sepp/v1"
	"github.com/sepp-io/sepp/rpc/rpctest"
)

// requireLimitRefusal checks a refusal by a full bounded store: status
// ResourceExhausted naming the limit, with a FieldViolation on field, and
// no change to the replicated state.
func requireLimitRefusal(t *testing.T, env *rpctest.Env, before [32]byte, err error, field, limit string) {
	t.Helper()
	st := requireCode(t, err, codes.ResourceExhausted)
	if !strings.Contains(st.Message(), limit) {
		t.Errorf("message %q does not name the limit %s", st.Message(), limit)
	}
	if fv, ok := detail[*seppv1.FieldViolation](st); !ok || fv.GetField() != field {
		t.Errorf("FieldViolation = %v, want field %q", fv, field)
	}
	if after, _ := env.Backend.StateDigest(); after != before {
		t.Errorf("a refused call changed the state")
	}
}

// reserveAll reserves every Ready job of queue and returns them by id.
func reserveAll(t *testing.T, env *rpctest.Env, queue string) map[uint64]*seppv1.ReservedJob {
	t.Helper()
	got := map[uint64]*seppv1.ReservedJob{}
	for {
		jobs := reserve(t, env, &seppv1.ReserveRequest{Queue: queue, WorkerId: "collector", Max: 100})
		if len(jobs) == 0 {
			return got
		}
		for _, j := range jobs {
			if got[j.GetJob().GetId()] != nil {
				t.Fatalf("job %d delivered twice", j.GetJob().GetId())
			}
			got[j.GetJob().GetId()] = j
		}
	}
}

// A full idempotency-key store refuses an enqueue with a new key, loudly,
// and loses nothing: every job acknowledged before is still there, a retry
// with a remembered key still finds its job, and keyless enqueues (which
// need no key record) still go through.
func TestIdempotencyKeyStoreFullRefusesNewKeys(t *testing.T) {
	cfg := &engine.Config{Limits: engine.DefaultLimits()}
	cfg.Limits.MaxIdempotencyKeys = 3
	env := start(t, cfg)

	acked := map[uint64]string{} // job id -> payload
	keyed := map[string]uint64{} // key -> job id
	for _, k := range []string{"k1", "k2", "k3"} {
		resp := enqueue(t, env, &seppv1.EnqueueRequest{Queue: "q", Payload: []byte("job " + k), IdempotencyKey: k})
		acked[resp.GetJobId()] = "job " + k
		keyed[k] = resp.GetJobId()
	}

	before, _ := env.Backend.StateDigest()
	_, err := env.Queue.Enqueue(ctxT(t), &seppv1.EnqueueRequest{Queue: "q", JobType: "t", Payload: []byte("job k4"), IdempotencyKey: "k4"})
	requireLimitRefusal(t, env, before, err, "idempotency_key", "max_idempotency_keys")

	// A batch item with a new key is refused on its own; the keyless item
	// beside it is added.
	batch, err := env.Queue.EnqueueBatch(ctxT(t), &seppv1.EnqueueBatchRequest{Jobs: []*seppv1.EnqueueRequest{
		{Queue: "q", JobType: "t", Payload: []byte("job k5"), IdempotencyKey: "k5"},
		{Queue: "q", JobType: "t", Payload: []byte("keyless in batch")},
	}})
	if err != nil {
		t.Fatalf("EnqueueBatch: %v", err)
	}
	items := batch.GetResults()
	if len(items) != 2 {
		t.Fatalf("batch answered %d items, want 2", len(items))
	}
	if e := items[0].GetError(); e.GetCode() != int32(codes.ResourceExhausted) || !strings.Contains(e.GetMessage(), "max_idempotency_keys") {
		t.Errorf("batch item with a new key = %v, want ResourceExhausted naming max_idempotency_keys", items[0])
	}
	if items[1].GetEnqueued().GetJobId() == 0 {
		t.Fatalf("keyless batch item refused: %v", items[1])
	}
	acked[items[1].GetEnqueued().GetJobId()] = "keyless in batch"

	// A retry with a remembered key needs no new record: same job.
	again := enqueue(t, env, &seppv1.EnqueueRequest{Queue: "q", Payload: []byte("job k2"), IdempotencyKey: "k2"})
	if !again.GetDuplicate() || again.GetJobId() != keyed["k2"] {
		t.Errorf("retry of k2 = job %d duplicate %v, want job %d duplicate", again.GetJobId(), again.GetDuplicate(), keyed["k2"])
	}
	keyless := enqueue(t, env, &seppv1.EnqueueRequest{Queue: "q", Payload: []byte("keyless")})
	acked[keyless.GetJobId()] = "keyless"

	got := reserveAll(t, env, "q")
	if len(got) != len(acked) {
		t.Fatalf("reserved %d jobs, want the %d acknowledged", len(got), len(acked))
	}
	for id, payload := range acked {
		if j := got[id]; j == nil || string(j.GetJob().GetPayload()) != payload {
			t.Errorf("acknowledged job %d (%q) missing or changed: %v", id, payload, j.GetJob())
		}
	}
}

// A full dead-letter store refuses a nack that would need a record, and
// the job stays leased to its worker: it can extend, and once an operator
// drains the store the same nack goes through. A nack that only retries
// needs no record and is not refused.
func TestDeadLetterStoreFullRefusesNack(t *testing.T) {
	cfg := retentionConfig()
	cfg.Limits.MaxDeadLetters = 2
	env := start(t, cfg)

	for i := range 5 {
		req := &seppv1.EnqueueRequest{Queue: "q", Payload: []byte{byte(i)}}
		if i == 3 {
			req.MaxAttempts = 1 // the job "final" below: its first failure is its last
		}
		enqueue(t, env, req)
	}
	// Fill the store: two rejected jobs.
	for range 2 {
		j := reserveOne(t, env, "q")
		if resp := nack(t, env, j.GetCtx(), directiveDeadLetter(), "poison"); !resp.GetDeadLettered() {
			t.Fatalf("nack DeadLetter of job %d: not dead-lettered", j.GetCtx().GetJobId())
		}
	}

	rejected := reserveOne(t, env, "q")
	final := reserveOne(t, env, "q")
	retried := reserveOne(t, env, "q")
	if a, m := final.GetCtx().GetAttempt(), final.GetCtx().GetMaxAttempts(); a != 1 || m != 1 {
		t.Fatalf("job %d: attempt %d of %d, want 1 of 1", final.GetCtx().GetJobId(), a, m)
	}

	// spec: NAK-10 (DeadLetter needs a record; the full store refuses it rather than drop it)
	before, _ := env.Backend.StateDigest()
	_, err := env.Queue.Nack(ctxT(t), &seppv1.NackRequest{Ctx: rejected.GetCtx(), Directive: directiveDeadLetter(), Reason: "poison"})
	requireLimitRefusal(t, env, before, err, "dead_letters", "max_dead_letters")

	// spec: ATT-2 (the failing final attempt is dead-lettered: refused while the store is full)
	before, _ = env.Backend.StateDigest()
	_, err = env.Queue.Nack(ctxT(t), &seppv1.NackRequest{Ctx: final.GetCtx(), Directive: directiveDefault(), Reason: "last try failed"})
	requireLimitRefusal(t, env, before, err, "dead_letters", "max_dead_letters")

	// A plain retry needs no record.
	if resp := nack(t, env, retried.GetCtx(), directiveDefault(), "transient"); resp.GetDeadLettered() {
		t.Fatalf("a retry nack dead-lettered job %d", retried.GetCtx().GetJobId())
	}

	// The refused jobs are still leased to their worker, not lost.
	for _, j := range []*seppv1.ReservedJob{rejected, final} {
		if _, err := env.Queue.ExtendLease(ctxT(t), &seppv1.ExtendLeaseRequest{Ctx: j.GetCtx(), Lease: durationpb.New(time.Minute)}); err != nil {
			t.Fatalf("job %d after its refused nack: extend lease: %v, want the lease still held", j.GetCtx().GetJobId(), err)
		}
		got, err := env.Admin.GetJob(ctxT(t), &seppv1.GetJobRequest{JobId: j.GetCtx().GetJobId()})
		if err != nil || got.GetJob().GetState() != seppv1.JobState_JOB_STATE_RESERVED {
			t.Fatalf("job %d after its refused nack: %v, %v; want reserved", j.GetCtx().GetJobId(), got.GetJob().GetState(), err)
		}
	}

	// spec: DLQ-9 (drain removes the records, which makes room)
	drained, err := env.Queue.DrainDeadLetters(ctxT(t), &seppv1.DrainDeadLettersRequest{Max: 10})
	if err != nil || len(drained.GetRecords()) != 2 {
		t.Fatalf("drain: %d records, %v; want the 2 stored", len(drained.GetRecords()), err)
	}
	// spec: NAK-2 (true exactly when dead-lettered)
	for _, j := range []*seppv1.ReservedJob{rejected, final} {
		d := directiveDeadLetter()
		if j == final {
			d = directiveDefault()
		}
		if resp := nack(t, env, j.GetCtx(), d, "now there is room"); !resp.GetDeadLettered() {
			t.Fatalf("nack of job %d after the drain: not dead-lettered", j.GetCtx().GetJobId())
		}
	}
	recs, err := env.Admin.ListDeadLetters(ctxT(t), &seppv1.ListDeadLettersRequest{Queue: "q"})
	if err != nil {
		t.Fatal(err)
	}
	ids := map[uint64]bool{}
	for _, r := range recs.GetRecords() {
		ids[r.GetJob().GetId()] = true
	}
	if len(ids) != 2 || !ids[rejected.GetCtx().GetJobId()] || !ids[final.GetCtx().GetJobId()] {
		t.Fatalf("dead letters after the drain = %v, want jobs %d and %d", ids, rejected.GetCtx().GetJobId(), final.GetCtx().GetJobId())
	}
}
