package engine

import (
	"errors"
	"fmt"
	"time"
)

// Sentinel errors. Every error the engine returns wraps exactly one of these,
// so callers (the gRPC layer's one status table) test them with errors.Is.
var (
	// ErrInvalidArgument: a field is malformed or out of range. The wrapping
	// *FieldError names the field and the limit.
	ErrInvalidArgument = errors.New("invalid argument")
	// ErrNotFound: no such job, dead-letter record or queue.
	ErrNotFound = errors.New("not found")
	// ErrLeaseLost: the lease named is not the job's current one (it expired,
	// or the job was redelivered, acked or released since). Nothing changed.
	ErrLeaseLost = errors.New("lease lost")
	// ErrLeaseCancelled: the lease named was revoked by an operator's cancel
	// of the job (JobActionCancel). It wraps ErrLeaseLost: the lease is gone
	// all the same, and a caller that only knows lost leases sees one.
	ErrLeaseCancelled = fmt.Errorf("the job was cancelled: %w", ErrLeaseLost)
	// ErrScheduledTooFar: scheduled_at lies beyond the queue's horizon; the
	// wrapping *ScheduledTooFarError carries both.
	ErrScheduledTooFar = errors.New("scheduled too far")
	// ErrQueueFull: the queue is at its max length; the enqueue was refused
	// and nothing was added (backpressure, never a silent drop).
	ErrQueueFull = errors.New("queue full")
	// ErrUnknownQueue: strict mode and the queue is not configured.
	ErrUnknownQueue = errors.New("unknown queue")
	// ErrWrongState: the job is not in a state the operation accepts (for
	// example dead-lettering a reserved job).
	ErrWrongState = errors.New("wrong state")
	// ErrCapacity: a bounded store (idempotency keys, dead-letter records) is
	// full; the operation was refused rather than dropping anything.
	ErrCapacity = errors.New("capacity exhausted")
	// ErrMemoryFull: adding the job would take the bytes the engine holds
	// above limits.max_memory_bytes or the queue's max_memory_bytes; the
	// enqueue was refused and nothing was added. Workers draining the
	// backlog make room.
	ErrMemoryFull = errors.New("memory budget exhausted")
	// ErrDiskFull: adding the job would take the payload bytes the jobs and
	// dead-letter records hold above limits.max_disk_bytes; the enqueue was
	// refused and nothing was added. Workers draining the backlog make room.
	ErrDiskFull = errors.New("disk budget exhausted")
)

// FieldError is a rejected field, with the limit it broke.
type FieldError struct {
	Field string // the request field, e.g. "priority" or "payload"
	// Limit states the bound broken ("0..1000000"), where a caller has
	// one to state apart from Reason (apiconv does); empty otherwise.
	Limit  string
	Reason string // what is wrong, naming the limit: "must be 0..9, got 10"
	Err    error  // the sentinel: ErrInvalidArgument, ErrQueueFull, ...
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Reason }

func (e *FieldError) Unwrap() error { return e.Err }

func invalid(field, format string, args ...any) error {
	return &FieldError{Field: field, Reason: fmt.Sprintf(format, args...), Err: ErrInvalidArgument}
}

// ScheduledTooFarError reports the horizon and the time asked for.
type ScheduledTooFarError struct {
	Queue     string
	Horizon   time.Duration
	Requested time.Time
	Latest    time.Time // now + horizon: the latest time accepted
}

func (e *ScheduledTooFarError) Error() string {
	return fmt.Sprintf("scheduled_at %s is beyond the schedule horizon of queue %q (max_schedule_horizon_ms=%d, latest allowed %s)",
		e.Requested.UTC().Format(time.RFC3339Nano), e.Queue, e.Horizon.Milliseconds(), e.Latest.UTC().Format(time.RFC3339Nano))
}

func (e *ScheduledTooFarError) Unwrap() error { return ErrScheduledTooFar }
