package fsm

import (
	"fmt"
	"reflect"
	"slices"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/reflect/protoreflect"

	cmdpb "github.com/sepp-io/sepp/proto/seppcmd/v1"
)

// The command versions, declared once.
//
// A cmdpb.Command carries the lowest version that has everything it uses,
// so that a node of an older binary still applies the commands it knows
// during a rolling upgrade; the leader proposes a command of version N only
// while every member says it applies N (cluster). This file is the one place
// that says which version adds what: the builders stamp these constants, the
// decoder checks an operation against its row, CommandVersion (the newest
// this binary applies) is the number of rows, and Features lists the rows by
// name for the cluster's version gate and for clients.
//
// To add version N: add its constant below (the number written out: it is
// on disk and in every log, so it must never move), append its row to
// commandVersions, and stamp the constant in the builder of what it adds.
// TestCommandVersions checks that the rows run 1..N in order, that each name
// is new and snake_case, and that every row is stamped by a builder;
// TestGoldenEntries then asks for a golden entry of version N.
const (
	commandV1                     = 1
	CommandVersionAckBatch        = 2
	CommandVersionKeyMinWindow    = 3
	CommandVersionMemoryBudget    = 4
	CommandVersionQueues          = 5
	CommandVersionReserveLimits   = 6
	CommandVersionSchedules       = 7
	CommandVersionUnique          = 8
	CommandVersionCancel          = 9
	CommandVersionRedrive         = 10
	CommandVersionExpiryFairness  = 11
	CommandVersionRecordFields    = 12
	CommandVersionDeadLetterEdges = 13
	CommandVersionReserveRetry    = 14
	// CommandVersionQueueReserveLimits = 15: reserve limits as runtime
	// queue settings.
	CommandVersionQueueReserveLimits = 15
	CommandVersionPayloadsOffHeap    = 16
	CommandVersionTraceContext       = 17
	CommandVersionQueueTags          = 18
	// CommandVersionSnapshotPayloads = 19: a capability row (below).
	CommandVersionSnapshotPayloads = 19
	// CommandVersionResults = 20: completed jobs kept with their results.
	CommandVersionResults = 20
	// CommandVersionPublicQueueSettings = 21: QueueCreate and QueueUpdate
	// hold the public QueueSettings instead of the log's mirror of them.
	CommandVersionPublicQueueSettings = 21
	// CommandVersionCompactCharge = 22: plain waiting jobs charged to the
	// memory budget as the compact entries they are held as.
	CommandVersionCompactCharge = 22
	// CommandVersionProgress = 23: a LeaseExtend carrying the job's
	// progress. The number is written out here alone: a change that
	// renumbers it edits this line and regenerates the golden entries.
	CommandVersionProgress = 23
	// CommandVersionSnapshotPayloadsLast = 24: a capability row (below).
	CommandVersionSnapshotPayloadsLast = 24
	// CommandVersionFollowUps = 25: a JobAck carrying follow-ups, the
	// jobs enqueued with the ack in one transition. The number is written
	// out here alone (and in the upgrades table): a change that renumbers
	// it edits this line and regenerates the golden entries.
	CommandVersionFollowUps = 25
	// CommandVersionPublicEnqueue = 26: JobEnqueue and JobEnqueueBatch
	// carrying the producer's public EnqueueRequests.
	CommandVersionPublicEnqueue = 26
	// CommandVersionDependencies = 27: enqueues (a batch's, an ack's
	// follow-ups) that wait for other items of the same call.
	CommandVersionDependencies = 27
	// CommandVersionSnapshotProtobuf = 28: a capability row (below).
	CommandVersionSnapshotProtobuf = 28
	// CommandVersionSnapshotStoreFiles = 29: a capability row (below).
	CommandVersionSnapshotStoreFiles = 29
	// CommandVersionSnapshotEngineStreamed = 30: a capability row (below).
	CommandVersionSnapshotEngineStreamed = 30
)

// commandVersionRow is one command version: its feature name, the Command
// operations (oneof field names) whose every use needs it, and what it
// adds. A version that changes what some uses of an older operation mean
// (a ConfigSet setting a new field, say) lists no operation: its builder
// stamps it when the use needs it.
type commandVersionRow struct {
	version uint32
	feature string
	ops     []protoreflect.Name
	adds    string
}

// capabilityVersions are the rows no command carries: each says that the
// binary reads something besides the log, which the others must not send
// it before it can (a snapshot format). Members report it like any other
// version, and the code that needs it asks whether every member applies
// it (NodeMeta.AppliesCommandVersion); a command stamped with one would be
// a bug (TestVersionTable_OneDeclaration).
var capabilityVersions = []uint32{CommandVersionSnapshotPayloads, CommandVersionSnapshotPayloadsLast, CommandVersionSnapshotProtobuf, CommandVersionSnapshotStoreFiles, CommandVersionSnapshotEngineStreamed}

// isCapability reports whether version v is a capability row.
func isCapability(v uint32) bool { return slices.Contains(capabilityVersions, v) }

// commandVersions is the table, one row per version, in order.
var commandVersions = [...]commandVersionRow{
	{commandV1, "", nil,
		"the operations of fields 10..27"},
	{CommandVersionAckBatch, "ack_batch", []protoreflect.Name{"job_ack_batch"},
		"JobAckBatch (AckBatchCommand)"},
	{CommandVersionKeyMinWindow, "key_min_window", nil,
		"a ConfigSet whose limits set idempotency_min_window: an older binary would drop the field and keep refusing keys the others forget early"},
	{CommandVersionMemoryBudget, "memory_budget", nil,
		"a ConfigSet that sets a memory budget (limits.max_memory_bytes or a queue's max_memory_bytes): an older binary would accept the enqueues the others refuse"},
	{CommandVersionQueues, "queues", []protoreflect.Name{"queue_create", "queue_update", "queue_delete", "queue_purge", "jobs_act"},
		"the queue operations, JobsAct and a declarative ConfigSet (ops_operator.go): an older binary would apply the declarative config as a replacement and drop the queues created at runtime"},
	{CommandVersionReserveLimits, "reserve_limits", nil,
		"a ConfigSet or QueueCreate that sets a queue's reserve limits (max_reserved, rate_limit, concurrency_key, max_per_key): an older binary would hand out the jobs the others hold back (a QueueUpdate applies them from version 15)"},
	{CommandVersionSchedules, "schedules", []protoreflect.Name{"schedule_upsert", "schedule_delete", "schedule_pause_set", "schedule_fire"},
		"the periodic schedule operations (ops_schedule.go)"},
	{CommandVersionUnique, "unique_jobs", nil,
		"an enqueue (single or batch) with an item that sets unique: an older binary would add the jobs the others refuse as duplicates"},
	{CommandVersionCancel, "cancel", nil,
		"a JobsAct that cancels a reserved job (cancel or cancel-delete, with its reason): an older binary would refuse the action and keep the lease the others revoked"},
	{CommandVersionRedrive, "redrive", []protoreflect.Name{"redrive_start", "redrive_step", "redrive_set_state"},
		"the redrive tasks (ops_redrive.go)"},
	{CommandVersionExpiryFairness, "expiry_fairness", nil,
		"an enqueue item's ttl or expires_at, a queue's max_wait or fairness_key (expiry.go): an older binary would keep the jobs the others expire and reserve in another order"},
	{CommandVersionRecordFields, "record_fields", nil,
		"a ConfigSet that sets record_fields, attempt detail and forwarded origins in their own fields (ops_attempts.go): an older binary would keep writing them into custom keys"},
	{CommandVersionDeadLetterEdges, "dead_letter_edges", nil,
		"the dead-letter edges (edges.go): a RedriveStart selecting cause cancelled or expired (an older binary refuses the cause), a QueueCreate or QueueUpdate whose dead_letter_queue must name an existing queue (an older binary accepts any name and creates the queue on the first death), a ConfigSet that sets forward_keeps_priority (an older binary gives a forwarded job the target's default_priority)"},
	{CommandVersionReserveRetry, "reserve_retry_window", nil,
		"a JobReserve whose request id outlives its leases (engine ReserveParams.RetryWindow; ops_reserve.go): a retry whose first answer was lost gets its jobs back on the attempt they lost; it changes what the reserve, the lease expiry and a retried reserve do at apply"},
	{CommandVersionQueueReserveLimits, "queue_reserve_limits", nil,
		"a QueueUpdate that sets or inherits a queue's reserve limits (ops_operator.go): an older binary ignores them in an update and refuses their keys in inherit, so it would hand out the jobs the others hold back; and a declarative ConfigSet with declared_reserve_limits (engine.ApplyDeclaredReserveLimits): from then on a file definition's fingerprint covers its reserve limits, so an entry whose only change is its limits is applied where an older binary would skip it"},
	{CommandVersionPayloadsOffHeap, "payloads_off_heap", nil,
		"a ConfigSet that sets payloads_off_heap (payloads.go): payloads are charged to the disk count, not the memory budget; an older binary would keep charging them to memory and refuse the enqueues the others accept"},
	{CommandVersionTraceContext, "trace_context", nil,
		"an enqueue (single or batch) with an item that carries a W3C trace context (engine/trace.go): an older binary would drop the field, and its state, snapshot and answers would differ from the others'; until every member applies it the leader proposes enqueues without their trace contexts (cluster)"},
	{CommandVersionQueueTags, "queue_tags", nil,
		"a QueueCreate, QueueUpdate or ConfigSet that sets a queue's tags, or a QueueUpdate that names tags in inherit (engine/tags.go): an older binary drops the field and refuses the key, so its state, snapshot and answers would differ from the others'"},
	{CommandVersionSnapshotPayloads, "snapshot_payload_section", nil,
		"a capability, no command: the binary restores snapshot format 2, whose payloads follow the engine's part (snapshot.go), written off the apply path; a node writes format 2 only once every member applies this version, since an older binary refuses it"},
	{CommandVersionResults, "results", nil,
		"completed jobs kept per queue (engine/completed.go): a JobAck carrying a result, and a QueueCreate, QueueUpdate or ConfigSet that sets or inherits a queue's completed_retention: an older binary would drop the result and the setting, keep no completed job, and its state, store and answers would differ from the others'; the binary also restores snapshot format 3, whose completed records follow the payloads (snapshot.go), which a node writes only once every member applies this version"},
	{CommandVersionPublicQueueSettings, "public_queue_settings", nil,
		"a QueueCreate or QueueUpdate that holds the public API's QueueSettings (name, settings) in place of the log's QueueConfig, and a declarative ConfigSet whose queues are QueueDefinitions holding them (ops_operator.go), converted by apiconv as the API's validation converts them: an older binary would read the queues' settings as empty; until every member applies it the leader writes the older form (cluster)"},
	{CommandVersionCompactCharge, "compact_charge", nil,
		"a ConfigSet that sets compact_charge (fsm/compact_charge.go, engine/memory.go): a plain waiting job is charged to the memory budget as its 24-byte compact entry, not as a full job; an older binary would keep charging it in full and refuse the enqueues the others accept near a budget"},
	{CommandVersionProgress, "progress", nil,
		"a LeaseExtend that carries the job's progress (engine/progress.go): an older binary would drop the field, and its state, snapshot and answers would differ from the others'; until every member applies it the leader refuses an extension with progress (FAILED_PRECONDITION naming the feature, the lease not extended: cluster); the binary also restores the engine snapshot layout that carries progress, which the engine writes only while a job has progress, so never before every member applies this version"},
	{CommandVersionSnapshotPayloadsLast, "snapshot_payloads_last", nil,
		"a capability, no command: the binary restores snapshot format 4, whose payload section comes last with a checksum of its own (snapshot.go), so a node whose payload store is at or past the snapshot restores without reading the payloads; a node writes format 4 only once every member applies this version, since an older binary refuses it"},
	{CommandVersionFollowUps, "follow_ups", nil,
		"a JobAck that carries follow-ups, the public EnqueueRequests of the jobs enqueued with the ack, all or nothing (engine/followups.go): an older binary would drop them and enqueue nothing, and its state, snapshot and answers would differ from the others'; until every member applies it the leader refuses an ack with follow-ups (FAILED_PRECONDITION naming the feature, nothing applied, the lease still held: cluster); the engine's snapshot holds nothing new"},
	{CommandVersionPublicEnqueue, "public_enqueue", nil,
		"a JobEnqueue or JobEnqueueBatch that holds the public API's EnqueueRequests (request, requests) in place of the log's EnqueueParams, converted at apply by apiconv as the API's validation converts them (enqueue_public.go): an older binary would read the command as an empty enqueue; until every member applies it the leader writes the older form (cluster), which every binary applies forever"},
	{CommandVersionDependencies, "dependencies", nil,
		"a JobEnqueueBatch or a JobAck's follow-ups whose EnqueueRequests name earlier items with after (engine/dependencies.go): the job is blocked until those end, then released or cancelled; an older binary would drop the field and make the job ready at once, and its state, snapshot and answers would differ from the others'; until every member applies it the leader refuses such a request (FAILED_PRECONDITION naming the feature, nothing applied: cluster); the binary also restores the engine snapshot layout that carries the blocked jobs and their parents, which the engine writes only while a job has parents, so never before every member applies this version"},
	{CommandVersionSnapshotProtobuf, "snapshot_protobuf", nil,
		"a capability, no command: the binary restores the engine's snapshot in protobuf, layout 19 (engine/snapshot_pb.go, proto/seppstore/v1/engine.proto), in place of the hand-written layouts 1 to 18, which it still reads; a node writes layout 19 only once every member applies this version, since an older binary refuses it"},
	{CommandVersionSnapshotStoreFiles, "snapshot_store_files", nil,
		"a capability, no command: the binary restores snapshot format 5, whose last section is the payload store's checkpoint as its files (snapshot.go, store.WriteCheckpoint), so a follower that needs an install receives the store's files and renames them into place instead of writing every record again; a node writes format 5 only once every member applies this version, since an older binary refuses it"},
	{CommandVersionSnapshotEngineStreamed, "snapshot_engine_streamed", nil,
		"a capability, no command: the binary restores snapshot format 6, format 5 with the engine's part in length-prefixed chunks ended by an empty one (snapshot.go), so that a node writes the part once, straight into the snapshot, instead of into a temporary file first to learn its length; a node writes format 6 only once every member applies this version, since an older binary refuses it"},
}

// CommandVersion is the highest cmdpb.Command.version this binary applies:
// the last row of commandVersions. It applies every version from 1 up.
const CommandVersion = uint32(len(commandVersions))

// Feature names a command version by what it adds.
type Feature struct {
	// Name is stable, snake_case ("unique_jobs"): clients and tools may
	// key on it.
	Name string
	// CommandVersion is the version that adds the feature: a cluster has
	// it once every member applies that version.
	CommandVersion uint32
}

// Features lists the features of the command versions this binary applies,
// oldest first (version 1, the base, is none). The slice is the caller's.
func Features() []Feature {
	out := make([]Feature, 0, len(commandVersions)-1)
	for _, r := range commandVersions[1:] {
		out = append(out, Feature{Name: r.feature, CommandVersion: r.version})
	}
	return out
}

// FeatureOf is the feature that command version v adds; ok is false for
// version 1 and for versions this binary does not know.
func FeatureOf(v uint32) (f Feature, ok bool) {
	if v < 2 || v > CommandVersion {
		return Feature{}, false
	}
	r := commandVersions[v-1]
	return Feature{Name: r.feature, CommandVersion: r.version}, true
}

// mustFeature is FeatureOf for a version of the table.
func mustFeature(v uint32) Feature {
	f, ok := FeatureOf(v)
	if !ok {
		panic(fmt.Sprintf("fsm: no feature row for command version %d", v))
	}
	return f
}

// The features the cluster's gate asks for by name.
var (
	FeatureAckBatch        = mustFeature(CommandVersionAckBatch)
	FeatureKeyMinWindow    = mustFeature(CommandVersionKeyMinWindow)
	FeatureMemoryBudget    = mustFeature(CommandVersionMemoryBudget)
	FeatureQueues          = mustFeature(CommandVersionQueues)
	FeatureReserveLimits   = mustFeature(CommandVersionReserveLimits)
	FeatureSchedules       = mustFeature(CommandVersionSchedules)
	FeatureUnique          = mustFeature(CommandVersionUnique)
	FeatureCancel          = mustFeature(CommandVersionCancel)
	FeatureRedrive         = mustFeature(CommandVersionRedrive)
	FeatureExpiryFairness  = mustFeature(CommandVersionExpiryFairness)
	FeatureRecordFields    = mustFeature(CommandVersionRecordFields)
	FeatureDeadLetterEdges = mustFeature(CommandVersionDeadLetterEdges)
	FeatureReserveRetry    = mustFeature(CommandVersionReserveRetry)
	// FeatureQueueReserveLimits: reserve limits set at runtime.
	FeatureQueueReserveLimits = mustFeature(CommandVersionQueueReserveLimits)
	FeaturePayloadsOffHeap    = mustFeature(CommandVersionPayloadsOffHeap)
	FeatureTraceContext       = mustFeature(CommandVersionTraceContext)
	FeatureQueueTags          = mustFeature(CommandVersionQueueTags)
	// FeatureSnapshotPayloads: snapshot format 2 (a capability row).
	FeatureSnapshotPayloads = mustFeature(CommandVersionSnapshotPayloads)
	// FeatureResults: completed jobs and their results.
	FeatureResults = mustFeature(CommandVersionResults)
	// FeaturePublicQueueSettings: queue settings in the public form.
	FeaturePublicQueueSettings = mustFeature(CommandVersionPublicQueueSettings)
	// FeatureCompactCharge: plain waiting jobs charged as compact entries.
	FeatureCompactCharge = mustFeature(CommandVersionCompactCharge)
	// FeatureProgress: a running job's progress, with its lease extension.
	FeatureProgress = mustFeature(CommandVersionProgress)
	// FeatureFollowUps: jobs enqueued with an ack, all or nothing.
	FeatureFollowUps = mustFeature(CommandVersionFollowUps)
	// FeaturePublicEnqueue: enqueues in the public form in the log.
	FeaturePublicEnqueue = mustFeature(CommandVersionPublicEnqueue)
	// FeatureDependencies: jobs that wait for other jobs of the same call.
	FeatureDependencies = mustFeature(CommandVersionDependencies)
)

// opVersions maps the field numbers of Command's op oneof to the version
// that introduced each operation, from the table's ops (1 for an operation
// no row lists): CheckEntry reads it. opSince holds the same for DecodeEntry,
// by the Go type of the oneof wrapper, for the operations newer than
// version 1 only.
var opVersions, opSince = func() (map[protowire.Number]uint32, map[reflect.Type]uint32) {
	byName := make(map[protoreflect.Name]uint32)
	for _, r := range commandVersions {
		for _, op := range r.ops {
			byName[op] = r.version
		}
	}
	byNum, byType := make(map[protowire.Number]uint32), make(map[reflect.Type]uint32)
	fields := opOneof.Fields()
	for i := range fields.Len() {
		f := fields.Get(i)
		if f.Kind() != protoreflect.MessageKind {
			continue
		}
		v := uint32(commandV1)
		if since, ok := byName[f.Name()]; ok {
			v = since
			byType[reflect.TypeOf(opOfField(f))] = v
		}
		byNum[f.Number()] = v
	}
	return byNum, byType
}()

// opOneof is Command's op oneof.
var opOneof = (&cmdpb.Command{}).ProtoReflect().Descriptor().Oneofs().ByName("op")

// opOfField is an empty value of the oneof wrapper of field f.
func opOfField(f protoreflect.FieldDescriptor) any {
	m := (&cmdpb.Command{}).ProtoReflect()
	m.Set(f, m.NewField(f))
	return m.Interface().(*cmdpb.Command).GetOp()
}

// opVersion is the command version that introduced an operation. (A map
// lookup by type where a type switch was: about ten times the switch's
// nanoseconds, on a path that decodes and applies a command in
// microseconds; the switch was a second list of versions to keep right.)
func opVersion(op any) uint32 {
	if v, ok := opSince[reflect.TypeOf(op)]; ok {
		return v
	}
	return commandV1
}
