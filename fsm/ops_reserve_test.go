package fsm

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/sepp-io/sepp/engine"
	cmdpb "github.com/sepp-io/sepp/proto/seppcmd/v1"
)

// A reserve with RetryWindow is of command version 14, and only that
// version makes its request id outlive the leases: applied from the older
// form, a retry after the leases lapsed finds the job dead-lettered; from
// version 14 it gets the job back on the same attempt.
func TestReserveRetryCommand(t *testing.T) {
	p := engine.ReserveParams{Queue: "q", WorkerID: "w", N: 1, Lease: time.Second, RequestID: "r"}
	if c := ReserveCommand(p); c.GetVersion() != commandV1 {
		t.Fatalf("reserve without RetryWindow: version %d, want 1", c.GetVersion())
	}
	noID := p
	noID.RequestID, noID.RetryWindow = "", true
	if c := ReserveCommand(noID); c.GetVersion() != commandV1 {
		t.Fatalf("RetryWindow without a request id: version %d, want 1", c.GetVersion())
	}
	for _, tc := range []struct {
		name        string
		retryWindow bool
		wantRetry   int
	}{
		{name: "version 1 forgets the id with its leases", retryWindow: false, wantRetry: 0},
		{name: "version 14 gets the job back", retryWindow: true, wantRetry: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rp := p
			rp.RetryWindow = tc.retryWindow
			one := uint32(1)
			f := newTestFSM(t)
			applyEntry(t, f, 1, stamped(t0, EnqueueCommand(engine.EnqueueParams{Queue: "q", JobType: "t", MaxAttempts: one})))
			if res := applyEntry(t, f, 2, stamped(t0, ReserveCommand(rp))); res[0].Err != nil || len(res[0].Deliveries) != 1 {
				t.Fatalf("reserve: %+v", res[0])
			}
			res := applyEntry(t, f, 3, stamped(t0.Add(5*time.Second), ReserveCommand(rp)))
			if res[0].Err != nil || len(res[0].Deliveries) != tc.wantRetry {
				t.Fatalf("retry after the lease lapsed: %d deliveries (%v), want %d", len(res[0].Deliveries), res[0].Err, tc.wantRetry)
			}
			if tc.wantRetry > 0 && res[0].Deliveries[0].Attempt != 1 {
				t.Fatalf("retry delivered attempt %d, want 1", res[0].Deliveries[0].Attempt)
			}
		})
	}
}

// payloadReplicas are the two ways a replica keeps payloads: in its heap
// and in its on-disk store (payloads.go).
var payloadReplicas = []struct {
	name string
	open func(*testing.T) *FSM
}{
	{"heap", newTestFSM},
	{"payload store", newStoreFSM},
}

// A JobReserve reads its deliveries' payloads only on the node whose
// caller registered its request id (AnswerReserve): the proposer. Two
// replicas, one answering and one not, apply the same entries and end in
// the same state; only the answering one hands back the payloads, and an
// id-less reserve is answered everywhere.
func TestReservePayloadsReadOnlyWhereAnswered(t *testing.T) {
	for _, tc := range payloadReplicas {
		t.Run(tc.name, func(t *testing.T) {
			proposer, replica := tc.open(t), tc.open(t)
			done := proposer.AnswerReserve("r1")
			entries := [][]*cmdpb.Command{
				stamped(t0,
					EnqueueCommand(engine.EnqueueParams{Queue: "q", JobType: "t", Payload: []byte("first")}),
					EnqueueCommand(engine.EnqueueParams{Queue: "q", JobType: "t", Payload: []byte("second")}),
					EnqueueCommand(engine.EnqueueParams{Queue: "q", JobType: "t", Payload: []byte("third")})),
				stamped(t0, ReserveCommand(engine.ReserveParams{Queue: "q", WorkerID: "w", N: 2, Lease: time.Minute, RequestID: "r1"})),
				stamped(t0, ReserveCommand(engine.ReserveParams{Queue: "q", WorkerID: "w", N: 1, Lease: time.Minute})),
			}
			var got [2][][]Result
			for i, f := range []*FSM{proposer, replica} {
				for k, e := range entries {
					got[i] = append(got[i], applyEntry(t, f, uint64(k+1), e))
				}
			}
			payloads := func(res Result) []string {
				var out []string
				for _, d := range res.Deliveries {
					out = append(out, string(d.Job.Payload))
				}
				return out
			}
			for _, c := range []struct {
				who   string
				node  int // 0 the proposer, 1 the replica
				entry int
				want  []string
			}{
				{"proposer, its reserve", 0, 1, []string{"first", "second"}},
				{"replica, the proposer's reserve", 1, 1, []string{"", ""}},
				{"proposer, an id-less reserve", 0, 2, []string{"third"}},
				{"replica, an id-less reserve", 1, 2, []string{"third"}},
			} {
				if p := payloads(got[c.node][c.entry][0]); !slices.Equal(p, c.want) {
					t.Errorf("%s: payloads %q, want %q", c.who, p, c.want)
				}
			}
			if proposer.Digest() != replica.Digest() {
				t.Fatal("the answering replica and the other one hold different states")
			}
			done()
			if proposer.answers("r1") {
				t.Fatal("a request id is still answered after its wait ended")
			}
			// The retry of a reserve replays its deliveries: answered in full
			// once its caller waits here again.
			defer proposer.AnswerReserve("r1")()
			res := applyEntry(t, proposer, 4, stamped(t0, ReserveCommand(engine.ReserveParams{Queue: "q", WorkerID: "w", N: 2, Lease: time.Minute, RequestID: "r1"})))
			if p := payloads(res[0]); !slices.Equal(p, []string{"first", "second"}) {
				t.Fatalf("the retry's replay: payloads %q, want first and second", p)
			}
		})
	}
}

// A reserve reads its deliveries' payloads through one reader over the
// apply's batch: it sees jobs enqueued earlier in the same ApplyBatch
// (not yet in the store), and deliveries out of id order (a later job of
// higher priority first) each get their own payload.
func TestReservePayloadsReadThroughTheBatch(t *testing.T) {
	for _, tc := range payloadReplicas {
		t.Run(tc.name, func(t *testing.T) {
			f := tc.open(t)
			low, high := uint32(1), uint32(7)
			// Earlier entries, committed to the store before the batch.
			applyEntry(t, f, 1, stamped(t0, EnqueueCommand(engine.EnqueueParams{Queue: "q", JobType: "t", Priority: &low, Payload: []byte("committed low")})))
			var logs []*raft.Log
			for i, cmds := range [][]*cmdpb.Command{
				stamped(t0,
					EnqueueCommand(engine.EnqueueParams{Queue: "q", JobType: "t", Priority: &low, Payload: []byte("batch low")}),
					EnqueueCommand(engine.EnqueueParams{Queue: "q", JobType: "t", Priority: &high, Payload: []byte("batch high")})),
				stamped(t0, ReserveCommand(engine.ReserveParams{Queue: "q", WorkerID: "w", N: 3, Lease: time.Minute, RequestID: "r"})),
			} {
				data, err := EncodeEntry(cmds)
				if err != nil {
					t.Fatal(err)
				}
				logs = append(logs, &raft.Log{Index: uint64(i + 2), Term: 1, Type: raft.LogCommand, Data: data})
			}
			defer f.AnswerReserve("r")()
			resp := f.ApplyBatch(logs)
			res := resp[1].([]Result)[0]
			var got []string
			for _, d := range res.Deliveries {
				got = append(got, fmt.Sprintf("%d:%s", d.Job.ID, d.Job.Payload))
			}
			if want := []string{"3:batch high", "1:committed low", "2:batch low"}; !slices.Equal(got, want) {
				t.Fatalf("deliveries %q (%v), want %q", got, res.Err, want)
			}
		})
	}
}
