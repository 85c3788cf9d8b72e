package history

import (
	"fmt"
	"time"

	"github.com/anishathalye/porcupine"
)

// The per-job model: one job's lifecycle as a sequential specification.
// Every recorded call that names the job becomes a porcupine operation, so
// the checker searches for an order of those calls, each taking effect
// between its start and end, that this model accepts. Calls with an unknown
// outcome may take effect or not, until the final read.

type jobStatus uint8

const (
	statusAbsent jobStatus = iota
	statusReady
	statusLeased
	statusDone
	statusDead
)

func (s jobStatus) String() string {
	return [...]string{"absent", "ready", "leased", "done", "dead"}[s]
}

// jobState is comparable, so porcupine's default equality works.
type jobState struct {
	status   jobStatus
	attempt  uint32 // deliveries so far
	token    uint64 // the current lease, while leased
	deadline int64  // its deadline (unix nanoseconds, lower bound), while leased
}

func (s jobState) String() string {
	if s.status == statusLeased {
		return fmt.Sprintf("leased(attempt %d, token %d)", s.attempt, s.token)
	}
	return fmt.Sprintf("%s(attempt %d)", s.status, s.attempt)
}

// jobInput is one operation on the job.
type jobInput struct {
	kind    Kind
	outcome Outcome
	at      int64 // when the call returned: expiry may have happened by then

	// reserve: the delivery
	token    uint64
	attempt  uint32
	deadline int64

	// nack
	deadLetter   bool
	deadLettered bool

	// the final read
	final     bool
	finalLive bool
	finalDead bool
}

func (in jobInput) String() string {
	switch {
	case in.final:
		return fmt.Sprintf("final(live=%t dead=%t)", in.finalLive, in.finalDead)
	case in.kind == KindReserve:
		return fmt.Sprintf("reserve→token %d attempt %d", in.token, in.attempt)
	case in.kind == KindNack:
		return fmt.Sprintf("nack(token %d, deadletter=%t)→%s dead=%t", in.token, in.deadLetter, in.outcome, in.deadLettered)
	case in.kind == KindAck:
		return fmt.Sprintf("ack(token %d)→%s", in.token, in.outcome)
	}
	return fmt.Sprintf("%s→%s", in.kind, in.outcome)
}

// jobModel is the model of one job that allows at most maxAttempts
// deliveries. gaps allows a delivery's attempt to skip numbers: only when
// some reserve's outcome was unknown, so a delivery may have happened that
// the record does not show.
func jobModel(maxAttempts uint32, gaps bool, initiallyReady bool) porcupine.Model {
	nm := porcupine.NondeterministicModel{
		Init: func() []interface{} {
			if initiallyReady {
				return []interface{}{jobState{status: statusReady}}
			}
			return []interface{}{jobState{status: statusAbsent}}
		},
		Step: func(state, input, _ interface{}) []interface{} {
			s, in := state.(jobState), input.(jobInput)
			var out []interface{}
			for _, st := range expire(s, in.at, maxAttempts) {
				out = append(out, stepJob(st, in, maxAttempts, gaps)...)
			}
			return out
		},
		DescribeOperation: func(input, _ interface{}) string { return input.(jobInput).String() },
		DescribeState:     func(state interface{}) string { return state.(jobState).String() },
	}
	return nm.ToModel()
}

// expire returns the states the job may be in at time at: as it is, and,
// when its lease deadline has passed, also after the expiry (Ready again,
// or dead when that was the last attempt).
func expire(s jobState, at int64, maxAttempts uint32) []jobState {
	if s.status != statusLeased || s.deadline > at {
		return []jobState{s}
	}
	e := jobState{status: statusReady, attempt: s.attempt}
	if s.attempt >= maxAttempts {
		e.status = statusDead
	}
	return []jobState{s, e}
}

func stepJob(s jobState, in jobInput, maxAttempts uint32, gaps bool) []interface{} {
	if in.final {
		ok := false
		switch {
		case in.finalLive:
			ok = s.status == statusReady || s.status == statusLeased
		case in.finalDead:
			ok = s.status == statusDead
		default:
			ok = s.status == statusDone
		}
		if ok {
			return []interface{}{s}
		}
		return nil
	}
	holds := s.status == statusLeased && s.token == in.token
	switch in.kind {
	case KindEnqueue:
		if in.outcome != OK {
			return []interface{}{s}
		}
		if s.status == statusAbsent {
			return []interface{}{jobState{status: statusReady}}
		}
		return []interface{}{s} // the idempotency key returned the existing job
	case KindReserve:
		if s.status != statusReady || in.attempt > maxAttempts {
			return nil
		}
		if in.attempt != s.attempt+1 && !(gaps && in.attempt > s.attempt) {
			return nil
		}
		return []interface{}{jobState{status: statusLeased, attempt: in.attempt, token: in.token, deadline: in.deadline}}
	case KindAck:
		done := jobState{status: statusDone, attempt: s.attempt}
		switch in.outcome {
		case OK:
			if holds {
				return []interface{}{done}
			}
			return nil
		case Failed:
			if holds {
				return nil
			}
			return []interface{}{s}
		default:
			if holds {
				return []interface{}{s, done}
			}
			return []interface{}{s}
		}
	case KindNack:
		after := jobState{status: statusReady, attempt: s.attempt}
		dies := in.deadLetter || s.attempt >= maxAttempts
		if dies {
			after.status = statusDead
		}
		switch in.outcome {
		case OK:
			if holds && dies == in.deadLettered {
				return []interface{}{after}
			}
			return nil
		case Failed:
			if holds {
				return nil
			}
			return []interface{}{s}
		default:
			if holds {
				return []interface{}{s, after}
			}
			return []interface{}{s}
		}
	}
	return nil
}

// checkJobLinearizable runs porcupine on one job's operations.
func checkJobLinearizable(ops []porcupine.Operation, maxAttempts uint32, gaps, initiallyReady bool, timeout time.Duration) porcupine.CheckResult {
	return porcupine.CheckOperationsTimeout(jobModel(maxAttempts, gaps, initiallyReady), ops, timeout)
}
