package fsm

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/sepp-io/sepp/engine"
	seppv1 "github.com/sepp-io/sepp/proto/sepp/v1"
	cmdpb "github.com/sepp-io/sepp/proto/seppcmd/v1"
)

// TestPublicEnqueue_SameStateAsTheOlderForm applies the same enqueues to
// one replica in the older EnqueueParams form and to another in the public
// form (CommandVersionPublicEnqueue), and requires the same results, digest
// and snapshot bytes: duplicates, refused items, scheduled, prioritised,
// traced, unique and expiring jobs included.
func TestPublicEnqueue_SameStateAsTheOlderForm(t *testing.T) {
	for _, seed := range []uint64{1, 2, 3} {
		t.Run(fmt.Sprint("Seed", seed), func(t *testing.T) {
			older, public := newTestFSM(t), newTestFSM(t)
			rng := rand.New(rand.NewPCG(seed, seed))
			now := t0
			for index := uint64(1); index <= 120; index++ {
				now = now.Add(time.Duration(rng.IntN(1500)) * time.Millisecond)
				items := randomPublicItems(rng, now)
				var olderCmd, publicCmd *cmdpb.Command
				if len(items) == 1 && rng.IntN(3) == 0 {
					olderCmd = EnqueueCommand(items[0])
					publicCmd = mustPublic(PublicEnqueueCommand(items[0]))
				} else {
					olderCmd = EnqueueBatchCommand(items)
					publicCmd = mustPublic(PublicEnqueueBatchCommand(items))
				}
				apply := func(f *FSM, c *cmdpb.Command) []Result {
					data, err := EncodeEntry(stamped(now, c, ReserveCommand(engine.ReserveParams{Queue: "a", WorkerID: "w", N: 1, Lease: time.Minute})))
					if err != nil {
						t.Fatal(err)
					}
					return f.Apply(&raft.Log{Index: index, Term: 1, Type: raft.LogCommand, Data: data}).([]Result)
				}
				want, got := apply(older, olderCmd), apply(public, publicCmd)
				if !reflect.DeepEqual(got, want) {
					t.Fatalf("index %d: results differ:\npublic: %+v\nolder:  %+v", index, got, want)
				}
				if older.Digest() != public.Digest() {
					t.Fatalf("index %d: digests differ", index)
				}
			}
			if !bytes.Equal(snapshotBytes(t, older), snapshotBytes(t, public)) {
				t.Fatal("snapshot bytes differ")
			}
		})
	}
}

// randomPublicItems are enqueues the public form states exactly, using
// every field the API has.
func randomPublicItems(rng *rand.Rand, now time.Time) []engine.EnqueueParams {
	items := make([]engine.EnqueueParams, 1+rng.IntN(20))
	for i := range items {
		p := engine.EnqueueParams{Queue: []string{"a", "b"}[rng.IntN(2)], JobType: "t", Payload: bytes.Repeat([]byte{byte(i)}, rng.IntN(100))}
		if rng.IntN(2) == 0 {
			p.IdempotencyKey = fmt.Sprintf("%032x", rng.IntN(500))
		}
		switch rng.IntN(10) {
		case 0:
			p.JobType = "" // refused by the engine
		case 1:
			prio := uint32(rng.IntN(11)) // 10 is refused
			p.Priority = &prio
		case 2:
			p.ScheduledAt = now.Add(time.Duration(rng.IntN(20_000_000)) * time.Microsecond)
		case 3:
			p.Custom = map[string]string{"x": fmt.Sprint(i)}
		case 4:
			p.MaxAttempts = uint32(rng.IntN(30))
		case 5:
			p.Trace = &engine.TraceContext{Traceparent: fmt.Sprintf("00-4bf92f3577b34da6a3ce929d0e0e4736-%016x-01", i+1), Tracestate: "a=b"}
		case 6:
			p.Unique = &engine.UniqueOpts{Key: fmt.Sprint("u", rng.IntN(5)), CompletedFor: time.Duration(rng.IntN(3)) * time.Second, CoverDead: rng.IntN(2) == 0}
		case 7:
			p.Expiry = &engine.ExpiryOpts{TTL: time.Duration(1+rng.IntN(5000)) * time.Millisecond}
		case 8:
			p.Expiry = &engine.ExpiryOpts{At: now.Add(time.Duration(rng.IntN(5000)) * time.Millisecond)}
		}
		items[i] = p
	}
	return items
}

// TestPublicEnqueue_ApplyRefuses: a command the leader never writes (both
// forms at once, or a request the API's conversion refuses) is refused at
// apply with nothing enqueued, alike on every replica.
func TestPublicEnqueue_ApplyRefuses(t *testing.T) {
	bad := &seppv1.EnqueueRequest{Queue: "q", JobType: "t", TtlMs: -1}
	tests := []struct {
		name string
		cmd  *cmdpb.Command
		want string
	}{
		{"batch in both forms", &cmdpb.Command{Version: CommandVersionPublicEnqueue, Op: &cmdpb.Command_JobEnqueueBatch{JobEnqueueBatch: &cmdpb.JobEnqueueBatch{
			Items: []*cmdpb.EnqueueParams{{Queue: "q", JobType: "t"}}, Requests: []*seppv1.EnqueueRequest{{Queue: "q", JobType: "t"}}}}}, "both"},
		{"single in both forms", &cmdpb.Command{Version: CommandVersionPublicEnqueue, Op: &cmdpb.Command_JobEnqueue{JobEnqueue: &cmdpb.JobEnqueue{
			Params: &cmdpb.EnqueueParams{Queue: "q", JobType: "t"}, Request: &seppv1.EnqueueRequest{Queue: "q", JobType: "t"}}}}, "both"},
		{"batch request refused", &cmdpb.Command{Version: CommandVersionPublicEnqueue, Op: &cmdpb.Command_JobEnqueueBatch{JobEnqueueBatch: &cmdpb.JobEnqueueBatch{
			Requests: []*seppv1.EnqueueRequest{{Queue: "q", JobType: "t"}, bad}}}}, "jobs[1].ttl_ms"},
		{"single request refused", &cmdpb.Command{Version: CommandVersionPublicEnqueue, Op: &cmdpb.Command_JobEnqueue{JobEnqueue: &cmdpb.JobEnqueue{Request: bad}}}, "ttl_ms"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newTestFSM(t)
			res := applyEntry(t, f, 1, stamped(t0, tt.cmd))
			if err := res[0].Err; err == nil || !bytes.Contains([]byte(err.Error()), []byte(tt.want)) {
				t.Fatalf("apply: %v, want an error naming %q", err, tt.want)
			}
			var n int
			_ = f.Read(func(e *engine.Engine) error {
				st, _ := e.QueueStats(t0, "q")
				n = st.Ready + st.Scheduled
				return nil
			})
			if n != 0 {
				t.Fatalf("%d jobs enqueued by a refused command", n)
			}
		})
	}
}
