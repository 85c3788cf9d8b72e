package engine

// The engine snapshot layouts, declared once.
//
// Each layout adds a section or a field to the one before it and includes
// all of it. The engine writes the oldest layout that holds its state
// (snapshotLayout), so a state that never used a newer feature is written
// as an older binary writes it and digests alike; it reads every layout
// from 1 up to snapshotVersion, the last row.
//
// To add layout N: add its constant below (the number written out: it is in
// every snapshot on disk), append its row to snapshotLayouts, write it from
// snapshotLayout and read it under d.version >= the constant.
// TestSnapshotLayoutTable checks that the rows run 1..N in order, that no
// layout is compared with a number written out and that every layout's
// constant is used; add a golden snapshot of the layout to
// TestGoldenSnapshotLayouts.
const (
	snapshotVersionBase          = 1
	snapshotVersionMinWindow     = 2
	snapshotVersionMemoryBudget  = 3
	snapshotVersionOperator      = 4
	snapshotVersionReserveLimits = 5
	snapshotVersionSchedules     = 6
	snapshotVersionUnique        = 7
	snapshotVersionCancel        = 8
	snapshotVersionRedrive       = 9
	snapshotVersionExpiryFair    = 10
	snapshotVersionAttempts      = 11
	snapshotVersionPayloadsOff   = 12
	snapshotVersionTrace         = 13
	snapshotVersionTags          = 14
	snapshotVersionCompleted     = 15
	snapshotVersionCompactCharge = 16
	// snapshotVersionProgress = 17: reserved jobs' progress (progress.go).
	snapshotVersionProgress = 17
	// snapshotVersionDependencies = 18: jobs' parents (dependencies.go).
	snapshotVersionDependencies = 18
	// snapshotVersionProto = 19: the protobuf form (snapshot_pb.go).
	snapshotVersionProto = 19
)

// snapshotLayoutRow is one layout and what it adds.
type snapshotLayoutRow struct {
	version uint64
	adds    string
}

// snapshotLayouts is the table, one row per layout, in order.
var snapshotLayouts = [...]snapshotLayoutRow{
	{snapshotVersionBase, "the clock and counters, config, queues, live jobs, dead-letter records, idempotency keys and reserve request ids"},
	{snapshotVersionMinWindow, "limits.idempotency_min_window after the other limits (layout 1 reads as 0: keys are never forgotten early)"},
	{snapshotVersionMemoryBudget, "limits.max_memory_bytes and each queue's max_memory_bytes; written only when a budget is set"},
	{snapshotVersionOperator, "the operator section after the reserve request ids: queues managed at runtime (snapshot_queues.go)"},
	{snapshotVersionReserveLimits, "each queue's reserve limits and token bucket; written only when a queue sets a reserve limit"},
	{snapshotVersionSchedules, "the periodic schedules after the reserve request ids; written only while a schedule exists"},
	{snapshotVersionUnique, "each job's unique key and the holds of acked jobs' keys; written only while a key is held"},
	{snapshotVersionCancel, "the cancel section (snapshot_cancel.go): the cause and outcome cancelled, which older layouts refuse, and a per-queue count; written once an operator cancelled a reserved job"},
	{snapshotVersionRedrive, "the redrive section (snapshot_redrive.go); written only while a redrive task or audit record exists"},
	{snapshotVersionExpiryFair, "the expiry and fairness section (snapshot_expiry.go): the queues' max_wait and fairness_key, the jobs' deadlines, the per-queue count of jobs dead-lettered as expired and each fair level's turn order"},
	{snapshotVersionAttempts, "the attempts section (snapshot_attempts.go): the recordFields flag, each reserved job's delivery start, each job's attempt detail and forwarded origin; written once the cluster runs recordFields"},
	{snapshotVersionPayloadsOff, "limits.max_disk_bytes after max_memory_bytes, and bit 1 of the attempts section's flags: payloads are charged to the disk budget, not the memory budget (payloads.go); written once the cluster runs payloadsOffHeap or sets max_disk_bytes"},
	{snapshotVersionTrace, "the trace section (trace.go): each live job's and retained record's W3C trace context by job id; written once a job got one"},
	{snapshotVersionTags, "the tags section (snapshot_tags.go): each configured queue's tags, in the config's queue order; written only while a queue has tags"},
	{snapshotVersionCompleted, "the completed section (completed.go): each configured queue's completed_retention, each queue's completed jobs (time, id) in completion order and, unless the state machine streams them itself, their records; written only while a queue keeps completed jobs or has a retention"},
	{snapshotVersionCompactCharge, "bits 2 and 3 of the attempts section's flags: a plain waiting job is charged as a compact entry (memory.go, compactCharge), and a job had a trace context (traceUsed, which layouts 13..15 imply from their version); written once the cluster charges so"},
	{snapshotVersionProgress, "the progress section (progress.go): a flags word (bit 0: a job had a trace context, which layouts 13..16 imply from their version), then each reserved job's progress (percent, message) by job id; written only while a job has progress"},
	{snapshotVersionDependencies, "the dependencies section (dependencies.go): the state blocked, which older layouts refuse, and by job id each live job's parent-failure policy and its parents (id, outcome, cause); written only while a job has parents"},
	{snapshotVersionProto, "the whole state as one seppstore.v1.EngineSnapshot (proto/seppstore/v1/engine.proto, snapshot_pb.go) in place of the hand-written sections; written when the state machine asks for it (SnapshotOptions.Protobuf), once every member reads it"},
}

// snapshotVersion is the newest layout this engine writes and reads.
const snapshotVersion = uint64(len(snapshotLayouts))
