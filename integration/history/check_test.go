package history

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// sim builds histories by hand on a fake clock: each call takes 1ms.
type sim struct {
	now    time.Time
	ops    []Op
	token  uint64
	nextID uint64
}

func newSim() *sim {
	return &sim{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), nextID: 1}
}

func (s *sim) tick(d time.Duration) time.Time { s.now = s.now.Add(d); return s.now }

func (s *sim) call(op Op) *Op {
	op.Start = s.tick(time.Millisecond)
	op.End = s.tick(time.Millisecond)
	if op.Outcome == 0 {
		op.Outcome = OK
	}
	s.ops = append(s.ops, op)
	return &s.ops[len(s.ops)-1]
}

func (s *sim) enqueue(key string, prio uint32) uint64 {
	id := s.nextID
	s.nextID++
	s.call(Op{Kind: KindEnqueue, Key: key, Priority: prio, MaxAttempts: 3, JobID: id})
	return id
}

func (s *sim) deliver(worker int, id uint64, key string, prio, attempt uint32, lease time.Duration) Delivery {
	s.token++
	d := Delivery{JobID: id, Token: s.token, Attempt: attempt, MaxAttempts: 3, Priority: prio, Key: key, Deadline: s.now.Add(2*time.Millisecond + lease)}
	s.call(Op{Kind: KindReserve, Client: worker, Queue: "q", Deliveries: []Delivery{d}})
	return d
}

func (s *sim) ack(worker int, d Delivery, out Outcome) {
	s.call(Op{Kind: KindAck, Client: worker, JobID: d.JobID, Token: d.Token, Attempt: d.Attempt, Outcome: out})
}

func (s *sim) nack(worker int, d Delivery, deadLetter, deadLettered bool) {
	s.call(Op{Kind: KindNack, Client: worker, JobID: d.JobID, Token: d.Token, Attempt: d.Attempt, DeadLetter: deadLetter, DeadLettered: deadLettered})
}

func (s *sim) final(live map[uint64]LiveState, dead map[uint64]DeadRecord) Final {
	return Final{At: s.tick(time.Second), Live: live, Dead: dead}
}

// cleanHistory: three jobs; one acked at once, one nacked then acked, one
// abandoned until its lease expired and then rejected into the dead-letter
// store; an enqueue retried after an unknown outcome.
func cleanHistory() ([]Op, Final) {
	s := newSim()
	a := s.enqueue("a", 5)
	b := s.enqueue("b", 5)
	s.call(Op{Kind: KindEnqueue, Key: "c", Priority: 1, MaxAttempts: 3, Outcome: Unknown, Err: "outcome unknown"})
	c := s.enqueue("c", 1) // the retry with the same key
	da := s.deliver(1, a, "a", 5, 1, time.Second)
	s.ack(1, da, OK)
	db := s.deliver(2, b, "b", 5, 1, time.Second)
	s.nack(2, db, false, false)
	db2 := s.deliver(1, b, "b", 5, 2, time.Second)
	s.ack(1, db2, OK)
	dc := s.deliver(2, c, "c", 1, 1, 100*time.Millisecond)
	s.tick(200 * time.Millisecond) // worker 2 abandons it; the lease expires
	s.ack(2, dc, Failed)           // too late: lease lost
	dc2 := s.deliver(1, c, "c", 1, 2, time.Second)
	s.nack(1, dc2, true, true)
	return s.ops, s.final(nil, map[uint64]DeadRecord{c: {FinalAttempt: 2, Cause: "rejected"}})
}

func TestCheck_CleanHistoryPasses(t *testing.T) {
	ops, final := cleanHistory()
	r := Check(ops, final)
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	if r.EnqueueOK != 3 || r.Acked != 2 || r.DeadLettered != 1 || r.EnqueueRetried != 1 || r.Deliveries != 5 {
		t.Fatalf("counts: %+v", r)
	}
}

func TestCheck_CatchesPlantedBugs(t *testing.T) {
	tests := []struct {
		name string
		// build returns a history with one planted bug
		build func() ([]Op, Final)
		// want names the Problems line that must appear
		want string
	}{
		{
			name: "LostJob",
			build: func() ([]Op, Final) {
				s := newSim()
				a := s.enqueue("a", 0)
				s.enqueue("b", 0) // acknowledged, then never seen again
				s.ack(1, s.deliver(1, a, "a", 0, 1, time.Second), OK)
				return s.ops, s.final(nil, nil)
			},
			want: "lost: 1 job(s), e.g. [2]",
		},
		{
			name: "DoubleLease",
			build: func() ([]Op, Final) {
				s := newSim()
				a := s.enqueue("a", 0)
				d1 := s.deliver(1, a, "a", 0, 1, 10*time.Second)
				d2 := s.deliver(2, a, "a", 0, 2, 10*time.Second) // while d1 still holds it
				s.ack(2, d2, OK)
				s.ack(1, d1, Failed)
				return s.ops, s.final(nil, nil)
			},
			want: "double leases: 1",
		},
		{
			name: "AckOfReplacedLease",
			build: func() ([]Op, Final) {
				s := newSim()
				a := s.enqueue("a", 0)
				d1 := s.deliver(1, a, "a", 0, 1, 10*time.Millisecond)
				s.tick(50 * time.Millisecond)
				s.deliver(2, a, "a", 0, 2, 10*time.Second)
				s.ack(1, d1, OK) // the old token must not work any more
				return s.ops, s.final(nil, nil)
			},
			want: "stale acks: 1",
		},
		{
			name: "AttemptSkipped",
			build: func() ([]Op, Final) {
				s := newSim()
				a := s.enqueue("a", 0)
				d1 := s.deliver(1, a, "a", 0, 1, time.Second)
				s.nack(1, d1, false, false)
				s.ack(1, s.deliver(1, a, "a", 0, 3, time.Second), OK)
				return s.ops, s.final(nil, nil)
			},
			want: "attempt errors: 1",
		},
		{
			name: "AttemptOverMax",
			build: func() ([]Op, Final) {
				s := newSim()
				a := s.enqueue("a", 0)
				for n := uint32(1); n <= 3; n++ {
					s.nack(1, s.deliver(1, a, "a", 0, n, time.Second), false, n == 3)
				}
				s.ack(1, s.deliver(1, a, "a", 0, 4, time.Second), OK)
				return s.ops, s.final(nil, nil)
			},
			want: "attempt errors: 1",
		},
		{
			name: "RetriedEnqueueMadeTwoJobs",
			build: func() ([]Op, Final) {
				s := newSim()
				s.call(Op{Kind: KindEnqueue, Key: "a", Outcome: Unknown})
				a1 := s.nextID
				s.nextID++
				a2 := s.enqueue("a", 0) // the retry made a second job
				s.ack(1, s.deliver(1, a1, "a", 0, 1, time.Second), OK)
				s.ack(1, s.deliver(1, a2, "a", 0, 1, time.Second), OK)
				return s.ops, s.final(nil, nil)
			},
			want: "duplicates: 1",
		},
		{
			name: "PriorityIgnored",
			build: func() ([]Op, Final) {
				s := newSim()
				lo := s.enqueue("lo", 1)
				hi := s.enqueue("hi", 9)
				s.ack(1, s.deliver(1, lo, "lo", 1, 1, time.Second), OK)
				s.ack(1, s.deliver(1, hi, "hi", 9, 1, time.Second), OK)
				return s.ops, s.final(nil, nil)
			},
			want: "priority/FIFO errors: 1",
		},
		{
			name: "FIFOBroken",
			build: func() ([]Op, Final) {
				s := newSim()
				first := s.enqueue("first", 4)
				second := s.enqueue("second", 4)
				s.ack(1, s.deliver(1, second, "second", 4, 1, time.Second), OK)
				s.ack(1, s.deliver(1, first, "first", 4, 1, time.Second), OK)
				return s.ops, s.final(nil, nil)
			},
			want: "priority/FIFO errors: 1",
		},
		{
			name: "DeliveredAfterAck",
			build: func() ([]Op, Final) {
				s := newSim()
				a := s.enqueue("a", 0)
				s.ack(1, s.deliver(1, a, "a", 0, 1, time.Millisecond), OK)
				s.tick(time.Second)
				s.ack(2, s.deliver(2, a, "a", 0, 2, time.Second), OK) // an acked job came back
				return s.ops, s.final(nil, nil)
			},
			want: "not linearizable: 1",
		},
		{
			name: "AckedJobStillLive",
			build: func() ([]Op, Final) {
				s := newSim()
				a := s.enqueue("a", 0)
				s.ack(1, s.deliver(1, a, "a", 0, 1, time.Second), OK)
				return s.ops, s.final(map[uint64]LiveState{a: LiveReady}, nil)
			},
			want: "not linearizable: 1",
		},
		{
			name: "DeadBeforeLastAttempt",
			build: func() ([]Op, Final) {
				s := newSim()
				a := s.enqueue("a", 0)
				d := s.deliver(1, a, "a", 0, 1, time.Second)
				s.nack(1, d, false, true) // a default retry on attempt 1 of 3 must not kill the job
				return s.ops, s.final(nil, map[uint64]DeadRecord{a: {FinalAttempt: 1, Cause: "attempts_exhausted"}})
			},
			want: "dead-letter rule errors: 1",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ops, final := tt.build()
			r := Check(ops, final)
			if r.OK() {
				t.Fatalf("checker passed a history with a planted bug: %+v", r)
			}
			found := false
			for _, p := range r.Problems() {
				found = found || strings.HasPrefix(p, tt.want)
			}
			if !found {
				t.Fatalf("problems %q do not include %q", r.Problems(), tt.want)
			}
		})
	}
}

func TestCheck_UnknownAckMayHaveApplied(t *testing.T) {
	s := newSim()
	a := s.enqueue("a", 0)
	s.ack(1, s.deliver(1, a, "a", 0, 1, time.Second), Unknown)
	if err := Check(s.ops, s.final(nil, nil)).Err(); err != nil {
		t.Fatalf("an unknown ack that applied is not a lost job: %v", err)
	}
	s = newSim()
	a = s.enqueue("a", 0)
	d := s.deliver(1, a, "a", 0, 1, 10*time.Millisecond)
	s.ack(1, d, Unknown)
	s.tick(time.Second)
	s.ack(2, s.deliver(2, a, "a", 0, 2, time.Second), OK)
	if err := Check(s.ops, s.final(nil, nil)).Err(); err != nil {
		t.Fatalf("an unknown ack that did not apply, then an expiry and redelivery, is fine: %v", err)
	}
}

func TestLongestGap(t *testing.T) {
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return base.Add(time.Duration(ms) * time.Millisecond) }
	ops := []Op{
		{Kind: KindEnqueue, Outcome: OK, End: at(100)},
		{Kind: KindAck, Outcome: OK, End: at(200)},
		{Kind: KindEnqueue, Outcome: Unknown, End: at(900)}, // not a success
		{Kind: KindReserve, Outcome: OK, End: at(950)},      // not a write
		{Kind: KindEnqueue, Outcome: OK, End: at(1500)},
	}
	tests := []struct {
		from, to int
		want     time.Duration
	}{
		{0, 1600, 1300 * time.Millisecond},
		{0, 150, 100 * time.Millisecond},
		{1000, 3000, 1500 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%d-%d", tt.from, tt.to), func(t *testing.T) {
			if got := LongestGap(ops, at(tt.from), at(tt.to)); got != tt.want {
				t.Fatalf("LongestGap = %s, want %s", got, tt.want)
			}
		})
	}
}
