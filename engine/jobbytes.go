package engine

// MaxJobBytes bounds the bytes of the variable-length fields of one job as
// the engine can hold and return it under l: payload, custom fields, job
// type, queue, idempotency key, the current worker id and last reason, and
// l.AttemptHistory history entries (a worker id and a reason each), and a
// forwarded job's origin (a queue name and a reason). A
// request carrying one job, and a response carrying one job's view, is this
// plus a fixed encoding overhead per field, so a message limit above it
// (with room for that overhead) fits every valid job.
func MaxJobBytes(l Limits) int {
	const (
		// perField covers an entry's tags and lengths and the fixed-size
		// fields (ids, timestamps, counters) next to it.
		perField = 32
		fixed    = 256
	)
	// An entry's fixed fields: attempt, two timestamps, a duration, the
	// lease token, outcome and directive, with their tags.
	const perAttempt = 96
	history := max(l.AttemptHistory, 0) * (maxWorkerIDBytes + maxReasonBytes + perAttempt)
	// A job's trace context, its two strings with their tags.
	trace := MaxTraceparentBytes + MaxTracestateBytes + 2*perField
	// A forwarded job's origin: its queue, last reason and fixed fields.
	origin := MaxQueueNameBytes + maxReasonBytes + 2*perField
	custom := max(l.MaxCustomFields, 0) * (max(l.MaxCustomFieldBytes, 0) + perField)
	return fixed + max(l.MaxPayloadBytes, 0) + custom + max(l.MaxJobTypeBytes, 0) + MaxQueueNameBytes +
		maxIdempotencyKeyBytes + maxWorkerIDBytes + maxReasonBytes + history + origin + trace
}
