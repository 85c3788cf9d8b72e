package history

import (
	"slices"
	"sync"
	"time"
)

// Kind is the client call an Op records.
type Kind uint8

// The calls the workload makes.
const (
	KindEnqueue Kind = iota + 1
	KindReserve
	KindAck
	KindNack
)

func (k Kind) String() string {
	switch k {
	case KindEnqueue:
		return "enqueue"
	case KindReserve:
		return "reserve"
	case KindAck:
		return "ack"
	case KindNack:
		return "nack"
	}
	return "kind?"
}

// Outcome is what the client learned about a call.
type Outcome uint8

// Outcomes. Failed means the call certainly did not take effect (a clean
// rejection such as lease lost, or a NotLeader answer); Unknown means it may
// or may not have (the client's ErrUnknownOutcome, a deadline).
const (
	OK Outcome = iota + 1
	Failed
	Unknown
)

func (o Outcome) String() string {
	switch o {
	case OK:
		return "ok"
	case Failed:
		return "failed"
	case Unknown:
		return "unknown"
	}
	return "outcome?"
}

// Delivery is one job a reserve handed out.
type Delivery struct {
	JobID       uint64
	Token       uint64
	Attempt     uint32
	MaxAttempts uint32
	// Deadline is the lease deadline the server reported (its clock).
	Deadline time.Time
	Priority uint32
	// Key is the workload's tag of the job (its idempotency key, carried in
	// the payload), so a delivery can be traced to the enqueue that made it.
	Key string
}

// Op is one client call.
type Op struct {
	Kind    Kind
	Client  int // the producer or worker that made the call
	Start   time.Time
	End     time.Time
	Outcome Outcome
	Err     string

	// Enqueue: the idempotency key, what was asked, what came back.
	Key         string
	Priority    uint32
	MaxAttempts uint32
	Duplicate   bool

	// Enqueue result, or the job an ack/nack answers.
	JobID uint64

	// Reserve.
	Queue      string
	Deliveries []Delivery

	// Ack/Nack: the delivery answered.
	Token   uint64
	Attempt uint32
	// Nack: the directive was DeadLetter, and whether the server reported
	// the job dead-lettered.
	DeadLetter   bool
	DeadLettered bool
}

// Recorder collects Ops from many goroutines.
type Recorder struct {
	mu  sync.Mutex
	ops []Op
}

// Add records one finished call.
func (r *Recorder) Add(op Op) {
	r.mu.Lock()
	r.ops = append(r.ops, op)
	r.mu.Unlock()
}

// Ops returns a copy of the record, ordered by call end.
func (r *Recorder) Ops() []Op {
	r.mu.Lock()
	out := slices.Clone(r.ops)
	r.mu.Unlock()
	slices.SortStableFunc(out, func(a, b Op) int { return a.End.Compare(b.End) })
	return out
}

// Len is the number of calls recorded.
func (r *Recorder) Len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.ops)
}

// LiveState is a job still on the server when the final state was read.
type LiveState uint8

// Live job states as the final read reports them.
const (
	LiveReady LiveState = iota + 1
	LiveReserved
	LiveScheduled
)

// DeadRecord is a retained dead letter in the final state.
type DeadRecord struct {
	FinalAttempt uint32
	Cause        string // "attempts_exhausted", "rejected", "lease_expired", "admin"
}

// Final is the server's state read once the run stopped and the cluster
// was quiet: the jobs still live and the retained dead letters.
type Final struct {
	At   time.Time
	Live map[uint64]LiveState
	Dead map[uint64]DeadRecord
}

// LongestGap is the longest stretch within [from, to] with no successful
// write (an enqueue or an ack that returned ok): the unavailability window
// a client saw.
func LongestGap(ops []Op, from, to time.Time) time.Duration {
	var ends []time.Time
	for _, op := range ops {
		if op.Outcome != OK || (op.Kind != KindEnqueue && op.Kind != KindAck) {
			continue
		}
		if op.End.Before(from) || op.End.After(to) {
			continue
		}
		ends = append(ends, op.End)
	}
	slices.SortFunc(ends, func(a, b time.Time) int { return a.Compare(b) })
	prev, longest := from, time.Duration(0)
	for _, e := range ends {
		longest = max(longest, e.Sub(prev))
		prev = e
	}
	return max(longest, to.Sub(prev))
}
