package rpc_test

import (
	"bytes"
	"strings"
	"testing"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"

	"github.com/sepp-io/sepp/engine"
	seppv1 "github.com/sepp-io/sepp/proto/sepp/v1"
)

// Through the gRPC API: at the memory budget an enqueue is refused with
// ResourceExhausted naming the budget (a QuotaFailure on its config key),
// changing nothing; batch items are refused one by one; GetServerInfo
// advertises the budgets and the bytes held; workers drain everything that
// was accepted, and then enqueues are accepted again (issue 22).
func TestMemoryBudgetRefusesThenDrains(t *testing.T) {
	cfg := &engine.Config{Limits: engine.DefaultLimits()}
	cfg.Limits.MaxMemoryBytes = 64 << 10
	capped := int64(8 << 10)
	cfg.Queues = []engine.QueueConfig{{Name: "capped", MaxMemoryBytes: &capped}}
	env := start(t, cfg)
	payload := func(i int) []byte { return bytes.Repeat([]byte{byte('a' + i%26)}, 1024) }

	acked := map[uint64][]byte{}
	var refusal error
	for i := range 200 {
		resp, err := env.Queue.Enqueue(ctxT(t), &seppv1.EnqueueRequest{Queue: "q", JobType: "t", Payload: payload(i)})
		if err != nil {
			refusal = err
			break
		}
		acked[resp.GetJobId()] = payload(i)
	}
	if refusal == nil {
		t.Fatal("200 KiB of jobs accepted under a 64 KiB budget")
	}
	st := requireCode(t, refusal, codes.ResourceExhausted)
	if !strings.Contains(st.Message(), "limits.max_memory_bytes 65536") {
		t.Errorf("message %q does not name the budget", st.Message())
	}
	if qf, ok := detail[*errdetails.QuotaFailure](st); !ok || qf.GetViolations()[0].GetSubject() != "limits.max_memory_bytes" {
		t.Errorf("QuotaFailure = %v, want subject limits.max_memory_bytes", qf)
	}
	before, _ := env.Backend.StateDigest()
	_, err := env.Queue.Enqueue(ctxT(t), &seppv1.EnqueueRequest{Queue: "q", JobType: "t", Payload: payload(0)})
	requireCode(t, err, codes.ResourceExhausted)
	if after, _ := env.Backend.StateDigest(); after != before {
		t.Error("a refused enqueue changed the state")
	}
	batch, err := env.Queue.EnqueueBatch(ctxT(t), &seppv1.EnqueueBatchRequest{Jobs: []*seppv1.EnqueueRequest{
		{Queue: "q", JobType: "t", Payload: payload(1)},
		{Queue: "q", JobType: "t", Payload: payload(2)},
	}})
	if err != nil {
		t.Fatalf("EnqueueBatch at the budget failed whole: %v", err)
	}
	for i, item := range batch.GetResults() {
		if e := item.GetError(); e.GetCode() != int32(codes.ResourceExhausted) || !strings.Contains(e.GetMessage(), "max_memory_bytes") {
			t.Errorf("batch item %d = %v, want ResourceExhausted naming max_memory_bytes", i, item)
		}
	}

	info, err := env.Queue.GetServerInfo(ctxT(t), &seppv1.GetServerInfoRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if l := info.GetLimits(); l.GetMaxMemoryBytes() != 64<<10 || l.GetMemoryHeldBytes() == 0 || l.GetMemoryHeldBytes() > 64<<10 {
		t.Errorf("GetServerInfo limits: max_memory_bytes %d, memory_held_bytes %d", l.GetMaxMemoryBytes(), l.GetMemoryHeldBytes())
	}
	if qs := info.GetQueues(); len(qs) != 1 || qs[0].GetMaxMemoryBytes() != uint64(capped) {
		t.Errorf("GetServerInfo queues: %v, want capped's max_memory_bytes %d", qs, capped)
	}

	// Workers drain at the budget: every accepted job, unchanged.
	got := reserveAll(t, env, "q")
	if len(got) != len(acked) {
		t.Fatalf("reserved %d jobs, %d were accepted", len(got), len(acked))
	}
	for id, p := range acked {
		j := got[id]
		if j == nil || !bytes.Equal(j.GetJob().GetPayload(), p) {
			t.Fatalf("accepted job %d missing or changed", id)
		}
		if _, err := env.Queue.Ack(ctxT(t), &seppv1.AckRequest{Ctx: j.GetCtx()}); err != nil {
			t.Fatalf("Ack at the budget: %v", err)
		}
	}
	enqueue(t, env, &seppv1.EnqueueRequest{Queue: "q", Payload: payload(3)})

	// A queue's own budget refuses that queue only, naming it.
	for i := range 20 {
		if _, err := env.Queue.Enqueue(ctxT(t), &seppv1.EnqueueRequest{Queue: "capped", JobType: "t", Payload: payload(i)}); err != nil {
			st := requireCode(t, err, codes.ResourceExhausted)
			if qf, ok := detail[*errdetails.QuotaFailure](st); !ok || qf.GetViolations()[0].GetSubject() != `queues["capped"].max_memory_bytes` {
				t.Errorf("QuotaFailure = %v, want the queue's key", qf)
			}
			enqueue(t, env, &seppv1.EnqueueRequest{Queue: "q", Payload: payload(4)})
			return
		}
	}
	t.Fatal("20 KiB accepted on a queue of an 8 KiB budget")
}
