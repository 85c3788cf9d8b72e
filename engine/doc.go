// Package engine is the job queue itself: jobs, per-queue priority order, the
// scheduled set, leases and their fencing tokens, retries and backoff,
// attempts, the dead-letter store with its retention and forwarding, drains,
// jobs that wait for other jobs (dependencies.go) and the operator actions.
// STATES.md draws the job states.
//
// The engine is a pure, deterministic state machine. It imports the standard
// library only; it never reads a clock, a random source or the environment,
// starts no goroutines and does no I/O except to the writer or reader handed
// to Snapshot and Restore. Every operation takes now, the time stamped by the
// Raft leader into the command, and the engine keeps time monotonic: an
// operation whose now lies before the last one seen runs at the last one.
// Each mutating operation first applies what is due at now (promotions,
// lease expiries, retention, key expiry), exactly as Tick does, so no result
// depends on when ticks were proposed. Job ids and lease tokens come from
// counters in the state; retry jitter is a hash of the job id. Two engines fed
// the same operations therefore hold the same state, which Digest proves byte
// for byte.
//
// Memory: the engine counts the bytes its state holds (memory.go), a pure
// function of the state kept incrementally, and refuses an enqueue that
// would take the count above limits.max_memory_bytes or its queue's
// max_memory_bytes with ErrMemoryFull; everything that drains keeps
// working. The budgets are part of the replicated Config, so every replica
// refuses alike.
//
// Cost: enqueue, reserve, ack, nack, release, extend and each promotion or
// expiry are O(1) or O(log n) in the jobs held; listings are operator calls
// that read one queue's jobs in one state.
//
// Concurrency: the read methods (GetJob, ListJobs, Stats, QueueStats,
// CanReserve, Reservable,
// ListDeadLetters, GetDeadLetter, NextDeadline, Config, Now, Digest,
// Snapshot, CheckInvariants) change nothing and may run concurrently with
// each other; every other method needs exclusive access. The Raft state
// machine (package fsm) holds that lock. View (view.go) is the read methods
// the serving layer calls, as an interface *Engine satisfies: readers get a
// View, so a transition called by mistake is a compile error.
package engine
