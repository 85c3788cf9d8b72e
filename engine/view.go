package engine

import "time"

// View is the engine as a reader sees it: only the query methods, none of
// the transitions. The replicated state machine hands readers (the gRPC and
// admin UI handlers, through rpc.Backend.Read) a View of the live engine
// under its read lock, so a handler that called a mutating method by mistake
// would not compile, where a comment asking it to read only could be
// ignored. A View is the engine itself, not a copy: reading through it costs
// what reading the engine costs (one interface call), and the reader must
// keep nothing it got past the read lock but what the method returned.
//
// Add a method here only if it changes nothing at any now:
// TestView_MethodsChangeNothing calls each one on a state with work due.
type View interface {
	CanReserve(now time.Time, p ReserveParams) bool
	Config() Config
	Digest() [32]byte
	DiskHeld() int64
	GetDeadLetter(id JobID) (DeadLetterRecord, error)
	GetJob(id JobID) (Job, error)
	JobTrace(id JobID) (queue string, t TraceContext, ok bool)
	GetRedrive(id uint64) (RedriveTask, error)
	GetSchedule(name string) (Schedule, error)
	ListDeadLetters(queue string, page Page) ([]DeadLetterRecord, error)
	ListJobs(queue string, state State, page Page) ([]Job, error)
	ListReadyInOrder(queue string, offset, limit int) ([]Job, error)
	MemoryHeld() MemoryUse
	MemoryHeldTotal() int64
	NextDeadline() (t time.Time, ok bool)
	Now() time.Time
	PayloadsOffHeap() bool
	PeekDeadLetters(p DrainParams) []DeadLetterRecord
	QueueStats(now time.Time, queue string) (QueueStats, error)
	RedriveDryRun(now time.Time, p RedriveParams, sample int) (int, []DeadLetterRecord, error)
	RedriveTasks() []RedriveTask
	RememberedKeys() RememberedKeys
	Reservable(queue string) int
	Schedules() []Schedule
	Stats(now time.Time) []QueueStats
}

// *Engine is a View; nothing else in this package implements one.
var _ View = (*Engine)(nil)
