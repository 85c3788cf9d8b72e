package fsm

// Feature is a capability a server advertises (GetServerInfo's
// capabilities): a stable name for clients and the command version that
// introduced it. A client checks a feature's name, not a version number.
type Feature struct {
	Name    string
	Version uint32
}

// Features are the features of the command versions this binary applies,
// oldest first, read from the CommandVersion constants declared beside
// each operation; TestFeatures_CoverEveryCommandVersion fails when a
// CommandVersion constant has no feature here, so a new version cannot be
// left out. Names never change once released.
var Features = []Feature{
	{"ack_batch", CommandVersionAckBatch},
	{"idempotency_min_window", CommandVersionKeyMinWindow},
	{"memory_budget", CommandVersionMemoryBudget},
	{"queue_admin", CommandVersionQueues},
	{"jobs_act", CommandVersionQueues},
	{"reserve_limits", CommandVersionReserveLimits},
	{"schedules", CommandVersionSchedules},
	{"unique_jobs", CommandVersionUnique},
	{"cancel_reserved", CommandVersionCancel},
	{"redrive", CommandVersionRedrive},
	{"expiry", CommandVersionExpiryFairness},
	{"fairness", CommandVersionExpiryFairness},
	{"record_fields", CommandVersionRecordFields},
	{"redrive_cancelled_expired", CommandVersionDeadLetterEdges},
	{"dead_letter_queue_checked", CommandVersionDeadLetterEdges},
	{"forward_keeps_priority", CommandVersionDeadLetterEdges},
	{"reserve_retry_window", CommandVersionReserveRetry},
}
