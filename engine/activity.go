package engine

import "time"

// WaitBounds are the upper bounds of QueueActivity's wait-time buckets: how
// long a job waited between its enqueue and its first delivery.
var WaitBounds = [...]time.Duration{
	10 * time.Millisecond, 50 * time.Millisecond, 250 * time.Millisecond, time.Second,
	5 * time.Second, 30 * time.Second, time.Minute, 5 * time.Minute, 15 * time.Minute,
	time.Hour, 6 * time.Hour,
}

// QueueActivity counts what this engine applied to one queue since it was
// created or last restored from a snapshot. It is not part of the snapshot,
// so two replicas that applied the same commands from different restore
// points count differently: these are a node's own counters (read them with
// rate()). They follow only from the commands and their times, never the
// wall clock.
type QueueActivity struct {
	Reserved uint64 // deliveries handed out
	// Nacks by directive: default (the queue's retry policy), after (a
	// delay the worker chose), dead_letter (at once).
	NackedDefault, NackedAfter, NackedDeadLetter uint64
	// Retried: nacks and lease expiries that gave the job another attempt.
	Retried  uint64
	Released uint64 // deliveries handed back without burning an attempt
	// LeaseExpired: leases that ran out (retried or dead-lettered).
	LeaseExpired uint64
	// WaitBuckets[i] counts first deliveries (attempt 1) whose wait from
	// enqueue was at most WaitBounds[i] and more than the bound before;
	// the last bucket counts longer waits. WaitSum is their total.
	WaitBuckets [len(WaitBounds) + 1]uint64
	WaitSum     time.Duration
	// RunBuckets[i] counts acked deliveries whose run, from the reserve
	// that handed them out to the ack, was at most WaitBounds[i] (the same
	// bounds) and more than the bound before; RunSum is their total. A
	// delivery handed out before this engine's last restore is not timed.
	RunBuckets [len(WaitBounds) + 1]uint64
	RunSum     time.Duration
}

// observeRun files the run time of an acked delivery.
func (a *QueueActivity) observeRun(d time.Duration) {
	d = max(d, 0)
	i := 0
	for i < len(WaitBounds) && d > WaitBounds[i] {
		i++
	}
	a.RunBuckets[i]++
	a.RunSum += d
}

// RunCount is the number of run times observed.
func (a *QueueActivity) RunCount() uint64 {
	var n uint64
	for _, c := range a.RunBuckets {
		n += c
	}
	return n
}

// observeWait files the wait of a first delivery.
func (a *QueueActivity) observeWait(d time.Duration) {
	d = max(d, 0)
	i := 0
	for i < len(WaitBounds) && d > WaitBounds[i] {
		i++
	}
	a.WaitBuckets[i]++
	a.WaitSum += d
}

// WaitCount is the number of waits observed.
func (a *QueueActivity) WaitCount() uint64 {
	var n uint64
	for _, c := range a.WaitBuckets {
		n += c
	}
	return n
}
