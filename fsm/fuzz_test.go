package fsm

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/sepp-io/sepp/apiconv"
	"github.com/sepp-io/sepp/engine"
	seppv1 "github.com/sepp-io/sepp/proto/sepp/v1"
	cmdpb "github.com/sepp-io/sepp/proto/seppcmd/v1"
)

var updateCorpus = flag.Bool("update-corpus", false, "rewrite the seed corpus under testdata/fuzz/FuzzDecodeEntry")

// seedEntries are valid entries of every command, the seed corpus of
// FuzzDecodeEntry; they double as a record of the v1 encoding.
func seedEntries(t testing.TB) map[string][]byte {
	t.Helper()
	prio := uint32(3)
	entries := map[string][]*cmdpb.Command{
		"enqueue":       {EnqueueCommand(engine.EnqueueParams{Queue: "q", JobType: "t", Payload: []byte("hello"), Priority: &prio, Custom: map[string]string{"a": "b"}, IdempotencyKey: "k"})},
		"enqueue_batch": {EnqueueBatchCommand([]engine.EnqueueParams{{Queue: "q", JobType: "t"}, {Queue: "r", JobType: "u", ScheduledAt: t0.Add(time.Hour)}})},
		"ack_batch":     {AckBatchCommand([]engine.LeaseRef{{JobID: 1, LeaseToken: 1}, {JobID: 2, LeaseToken: 7}}), AckCommand(engine.LeaseRef{JobID: 3, LeaseToken: 1})},
		"reserve_ack":   {ReserveCommand(engine.ReserveParams{Queue: "q", WorkerID: "w", N: 2, Lease: time.Minute, RequestID: "r1"}), AckCommand(engine.LeaseRef{JobID: 1, LeaseToken: 1})},
		"nack_release":  {NackCommand(engine.NackParams{LeaseRef: engine.LeaseRef{JobID: 1, LeaseToken: 1}, Directive: engine.DirectiveDeadLetter, Reason: "bad"}), ReleaseCommand(engine.LeaseRef{JobID: 2, LeaseToken: 2})},
		"extend":        {ExtendLeaseCommand(engine.ExtendParams{LeaseRef: engine.LeaseRef{JobID: 1, LeaseToken: 1}, Lease: time.Second}), ExtendAllLeasesCommand(5 * time.Second)},
		"dead_letters":  {DrainCommand(engine.DrainParams{Max: 3}), RequeueDeadLettersCommand([]engine.JobID{1}), DeleteDeadLettersCommand([]engine.JobID{2}), DeadLetterJobsCommand([]engine.JobID{3}, "op")},
		"queues":        {PauseQueueCommand("q"), ResumeQueueCommand("q")},
		"managed_queues": {CreateQueueCommand(engine.QueueConfig{Name: "m", DefaultPriority: &prio}, true),
			UpdateQueueCommand(engine.QueueUpdate{Name: "m", Inherit: []string{"default_priority"}, Paused: new(bool)}),
			PurgeQueueCommand("m", engine.PurgeWaiting), DeleteQueueCommand("m", true),
			JobsActCommand(engine.JobActionParams{Action: engine.JobActionReschedule, IDs: []engine.JobID{1, 2}, RunAt: t0.Add(time.Hour)}),
			DeclaredConfigCommand(engine.Config{Limits: seedLimits(), Queues: []engine.QueueConfig{{Name: "d"}}})},
		"tick":            {TickCommand()},
		"config":          {SetConfigCommand(engine.Config{Limits: seedLimits()})},
		"nodes":           {SetNodeCommand(NodeMeta{ID: "n1", RaftAddr: "127.0.0.1:1", GRPCAddr: "127.0.0.1:2"}), DeleteNodeCommand("n1")},
		"nodes_versioned": {SetNodeCommand(NodeMeta{ID: "n2", RaftAddr: "127.0.0.1:3", MaxCommandVersion: CommandVersion})},
		// The ConfigSet versions: a minimum key window (3), a memory budget (4),
		"config_key_min_window": {SetConfigCommand(engine.Config{Limits: keyMinWindowLimits()})},
		"config_memory_budget":  {SetConfigCommand(engine.Config{Limits: memoryBudgetLimits()})},
		// Redrive tasks (10).
		"redrive": {RedriveStartCommand(engine.RedriveParams{Selection: engine.RedriveSelection{Queue: "q", ReasonContains: "timeout"}, Fresh: true, ToQueue: "r", Rate: 5, By: "ops"}),
			RedriveStepCommand(1, 10), RedriveSetStateCommand(1, engine.RedrivePaused, "ops")},
		// A reserve whose request id outlives its leases, and its retry (16).
		"reserve_retry": {EnqueueCommand(engine.EnqueueParams{Queue: "q", JobType: "t"}),
			ReserveCommand(engine.ReserveParams{Queue: "q", WorkerID: "w", N: 1, Lease: time.Second, RequestID: "r2", RetryWindow: true}),
			ReserveCommand(engine.ReserveParams{Queue: "q", WorkerID: "w", N: 1, Lease: time.Second, RequestID: "r2", RetryWindow: true})},
		// Attempt detail and forwarded origins in their own fields (12).
		"record_fields": {RecordFieldsConfigCommand(engine.Config{Limits: engine.DefaultLimits(), Queues: []engine.QueueConfig{{Name: "q", DeadLetterQueue: "q.dead"}}})},
		// The dead-letter edges (13): forwarded jobs keep their priority, a
		// queue created with an existing dead_letter_queue, a redrive of
		// the expired.
		// Payloads charged to the disk count (16), then a job with one.
		"payloads_off_heap": {PayloadsOffHeapConfigCommand(ForwardKeepsPriorityConfigCommand(RecordFieldsConfigCommand(engine.Config{Limits: engine.DefaultLimits()}))),
			EnqueueCommand(engine.EnqueueParams{Queue: "q", JobType: "t", Payload: []byte("body")})},
		"dead_letter_edges": {ForwardKeepsPriorityConfigCommand(RecordFieldsConfigCommand(engine.Config{Limits: engine.DefaultLimits(), Queues: []engine.QueueConfig{{Name: "q.dead"}}})),
			CreateQueueCommand(engine.QueueConfig{Name: "q", DeadLetterQueue: "q.dead"}, false),
			RedriveStartCommand(engine.RedriveParams{Selection: engine.RedriveSelection{Cause: engine.CauseExpired}, By: "anonymous (127.0.0.1:5000)"})},

		// Expiry and fairness (11): a queue with max_wait and a fairness
		// key, jobs with a ttl and an expires_at, a queue update dropping
		// the fairness key.
		"expiry_fairness": {SetConfigCommand(engine.Config{Limits: engine.DefaultLimits(), Queues: []engine.QueueConfig{{Name: "fair", MaxWait: time.Minute, FairnessKey: "tenant"}}}),
			EnqueueCommand(engine.EnqueueParams{Queue: "fair", JobType: "t", Custom: map[string]string{"tenant": "a"}, Expiry: &engine.ExpiryOpts{TTL: 30 * time.Second}}),
			EnqueueBatchCommand([]engine.EnqueueParams{{Queue: "fair", JobType: "t", Expiry: &engine.ExpiryOpts{At: t0.Add(time.Hour)}}, {Queue: "fair", JobType: "t", Custom: map[string]string{"tenant": "b"}}}),
			UpdateQueueCommand(engine.QueueUpdate{Name: "fair", Inherit: []string{"fairness_key"}})},
		// Trace contexts (17): a single enqueue and a batch with one traced
		// item beside an untraced one.
		"trace_context": {EnqueueCommand(engine.EnqueueParams{Queue: "q", JobType: "t", Trace: &engine.TraceContext{Traceparent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", Tracestate: "v=1"}}),
			EnqueueBatchCommand([]engine.EnqueueParams{{Queue: "q", JobType: "t", Payload: []byte("p"), Trace: &engine.TraceContext{Traceparent: "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00"}}, {Queue: "q", JobType: "u"}})},
		// Queue tags (18): a create with tags, an update that replaces
		// them, one that drops them by inherit and a declarative config
		// that tags its queue.
		"queue_tags": {CreateQueueCommand(engine.QueueConfig{Name: "tagged", Tags: []engine.Tag{{Key: "env", Value: "prod"}, {Key: "team", Value: "core"}}}, false),
			UpdateQueueCommand(engine.QueueUpdate{Name: "tagged", SetTags: true, Set: engine.QueueConfig{Tags: []engine.Tag{{Key: "owner", Value: "ops@example.com"}}}}),
			UpdateQueueCommand(engine.QueueUpdate{Name: "tagged", Inherit: []string{"tags"}}),
			DeclaredConfigCommand(engine.Config{Limits: engine.DefaultLimits(), Queues: []engine.QueueConfig{{Name: "d", Tags: []engine.Tag{{Key: "from", Value: "file"}}}}})},
		// Completed jobs and results (20): a queue that keeps them, a job
		// acked with a result, the retention changed, then inherited.
		"results": {CreateQueueCommand(engine.QueueConfig{Name: "kept", CompletedRetention: time.Hour}, false),
			EnqueueCommand(engine.EnqueueParams{Queue: "kept", JobType: "t", Payload: []byte("p")}),
			ReserveCommand(engine.ReserveParams{Queue: "kept", WorkerID: "w", N: 1, Lease: time.Minute}),
			AckWithResultCommand(engine.LeaseRef{JobID: 1, LeaseToken: 1}, []byte(`{"ok":true}`)),
			UpdateQueueCommand(engine.QueueUpdate{Name: "kept", Set: engine.QueueConfig{CompletedRetention: time.Minute}}),
			SetConfigCommand(engine.Config{Limits: seedLimits(), Queues: []engine.QueueConfig{{Name: "kept", CompletedRetention: 2 * time.Hour}}}),
			UpdateQueueCommand(engine.QueueUpdate{Name: "kept", Inherit: []string{"completed_retention_ms"}})},
		// Queue settings in the public form (21): a create with every
		// setting, an update that sets one and drops others (a zeroed
		// reserve limit, an empty dead_letter_queue and tag set, a key in
		// inherit), and a pause.
		"public_queue_settings": publicQueueSettingsSeed(t),
		// Plain waiting jobs charged as compact entries (22): jobs
		// enqueued before and after the switch, one reserved.
		"compact_charge": {EnqueueCommand(engine.EnqueueParams{Queue: "c", JobType: "t", Payload: []byte("p")}),
			CompactChargeConfigCommand(DeclaredConfigCommand(engine.Config{Limits: seedLimits()})),
			EnqueueCommand(engine.EnqueueParams{Queue: "c", JobType: "t", Payload: []byte("q")}),
			ReserveCommand(engine.ReserveParams{Queue: "c", WorkerID: "w", N: 1, Lease: time.Minute})},
		// Progress (CommandVersionProgress): a reserved job's extension
		// with progress, a plain one that keeps it, one that replaces it
		// and one out of bounds (refused at apply, alike on every replica).
		"progress": {EnqueueCommand(engine.EnqueueParams{Queue: "q", JobType: "t"}),
			ReserveCommand(engine.ReserveParams{Queue: "q", WorkerID: "w", N: 1, Lease: time.Minute}),
			ExtendLeaseCommand(engine.ExtendParams{LeaseRef: engine.LeaseRef{JobID: 1, LeaseToken: 1}, Lease: time.Minute, Progress: &engine.Progress{Percent: 25, Message: "1 of 4 files"}}),
			ExtendLeaseCommand(engine.ExtendParams{LeaseRef: engine.LeaseRef{JobID: 1, LeaseToken: 1}, Lease: time.Minute}),
			ExtendLeaseCommand(engine.ExtendParams{LeaseRef: engine.LeaseRef{JobID: 1, LeaseToken: 1}, Progress: &engine.Progress{Percent: 50}}),
			ExtendLeaseCommand(engine.ExtendParams{LeaseRef: engine.LeaseRef{JobID: 1, LeaseToken: 1}, Progress: &engine.Progress{Percent: 101}})},
		// Follow-ups (CommandVersionFollowUps): an ack enqueueing two
		// jobs (one keyed, one scheduled), a retried one whose lease is
		// gone (nothing enqueued), and one whose second follow-up is
		// refused at apply (nothing enqueued, the job still reserved).
		"follow_ups": {EnqueueCommand(engine.EnqueueParams{Queue: "q", JobType: "t"}),
			EnqueueCommand(engine.EnqueueParams{Queue: "q", JobType: "t"}),
			ReserveCommand(engine.ReserveParams{Queue: "q", WorkerID: "w", N: 2, Lease: time.Minute}),
			AckFollowUpsCommand(engine.LeaseRef{JobID: 1, LeaseToken: 1}, nil, []engine.EnqueueParams{
				{Queue: "next", JobType: "t2", Payload: []byte("p"), IdempotencyKey: "step-2"},
				{Queue: "next", JobType: "t3", ScheduledAt: time.Unix(1, 0), Custom: map[string]string{"a": "b"}}}),
			AckFollowUpsCommand(engine.LeaseRef{JobID: 1, LeaseToken: 1}, nil, []engine.EnqueueParams{{Queue: "next", JobType: "t2"}}),
			AckFollowUpsCommand(engine.LeaseRef{JobID: 2, LeaseToken: 2}, nil, []engine.EnqueueParams{{Queue: "next", JobType: "t2"}, {Queue: "next"}})},
		// Enqueues in the public form (CommandVersionPublicEnqueue): a
		// batch of a plain, a keyed and prioritised, a scheduled, a traced
		// and a unique job with a deadline (written by protobuf), an item
		// the engine refuses, a single enqueue, and a single one that
		// repeats a key.
		"public_enqueue": func() []*cmdpb.Command {
			prio := uint32(7)
			batch, _ := PublicEnqueueBatchCommand([]engine.EnqueueParams{
				{Queue: "q", JobType: "t", Payload: []byte("p")},
				{Queue: "q", JobType: "t", IdempotencyKey: "k1", Priority: &prio, MaxAttempts: 3, Custom: map[string]string{"a": "b"}},
				{Queue: "q", JobType: "t", ScheduledAt: time.Unix(1, 500)},
				{Queue: "q", JobType: "t", Trace: &engine.TraceContext{Traceparent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}},
				{Queue: "u", JobType: "t", Unique: &engine.UniqueOpts{Key: "u1", CompletedFor: time.Minute}, Expiry: &engine.ExpiryOpts{TTL: time.Hour}},
				{Queue: "q"},
			})
			single, _ := PublicEnqueueCommand(engine.EnqueueParams{Queue: "q", JobType: "s", IdempotencyKey: "k2"})
			again, _ := PublicEnqueueCommand(engine.EnqueueParams{Queue: "q", JobType: "s", IdempotencyKey: "k1"})
			return []*cmdpb.Command{batch, single, again}
		}(),
		// Dependencies (CommandVersionDependencies): a fan-out and fan-in
		// batch (a root, two jobs after it, a callback after both that
		// runs whatever they do), the root reserved and acked with a
		// follow-up after a second one, and a batch refused whole (an
		// index not earlier than its item).
		"dependencies": func() []*cmdpb.Command {
			wf, _ := PublicEnqueueBatchCommand([]engine.EnqueueParams{
				{Queue: "root", JobType: "t"},
				{Queue: "fan", JobType: "t", After: []int{0}},
				{Queue: "fan", JobType: "t", After: []int{0}},
				{Queue: "join", JobType: "t", After: []int{1, 2}, OnParentFailure: engine.ParentFailureRun},
			})
			bad, _ := PublicEnqueueBatchCommand([]engine.EnqueueParams{{Queue: "q", JobType: "t"}, {Queue: "q", JobType: "t", After: []int{1}}})
			return []*cmdpb.Command{wf,
				ReserveCommand(engine.ReserveParams{Queue: "root", WorkerID: "w", N: 1, Lease: time.Minute}),
				AckFollowUpsCommand(engine.LeaseRef{JobID: 1, LeaseToken: 1}, nil, []engine.EnqueueParams{
					{Queue: "next", JobType: "a"}, {Queue: "next", JobType: "b", After: []int{0}}}),
				bad}
		}(),
		// Cancelling a reserved job (9).
		"cancel": {JobsActCommand(engine.JobActionParams{Action: engine.JobActionCancel, IDs: []engine.JobID{1}, Reason: "stuck"})},
		// Unique jobs (8).
		"unique": {EnqueueCommand(engine.EnqueueParams{Queue: "q", JobType: "t", Unique: &engine.UniqueOpts{Key: "k", CoverDead: true, CompletedFor: time.Minute}}),
			EnqueueBatchCommand([]engine.EnqueueParams{{Queue: "q", JobType: "t", Payload: []byte("p"), Unique: &engine.UniqueOpts{Fields: []string{"a"}, Refuse: true}}})},
		// Periodic schedules (7).
		"schedules": {UpsertScheduleCommand(engine.ScheduleParams{Name: "nightly", Kind: engine.ScheduleInterval, Interval: time.Hour,
			Template: engine.JobTemplate{Queue: "q", JobType: "report"}, Overlap: engine.OverlapAllow, NextTick: t0.Add(time.Hour)}),
			FireScheduleCommand("nightly", t0.Add(time.Hour), t0.Add(2*time.Hour), false), PauseScheduleCommand("nightly", true, time.Time{}),
			DeleteScheduleCommand("nightly")},
		// Reserve limits set at runtime (15): an update that sets them and
		// one that drops one, and the declarative config that turns the
		// rule on.
		"queue_reserve_limits": {CreateQueueCommand(engine.QueueConfig{Name: "lim"}, false),
			UpdateQueueCommand(engine.QueueUpdate{Name: "lim", Set: engine.QueueConfig{MaxReserved: 2, RateLimit: 5, RatePeriod: time.Minute, ConcurrencyKey: "tenant", MaxPerKey: 1}}),
			UpdateQueueCommand(engine.QueueUpdate{Name: "lim", Inherit: []string{"rate_limit", "rate_period_ms"}}),
			DeclaredReserveLimitsConfigCommand(DeclaredConfigCommand(engine.Config{Limits: engine.DefaultLimits(), Queues: []engine.QueueConfig{{Name: "d", MaxReserved: 3}}}))},
		// A queue's reserve limits (6).
		"config_reserve_limits": {SetConfigCommand(engine.Config{Limits: seedLimits(), Queues: []engine.QueueConfig{{Name: "limited", MaxReserved: 2, ConcurrencyKey: "tenant", MaxPerKey: 1}}})},
	}
	out := make(map[string][]byte, len(entries))
	for name, cmds := range entries {
		data, err := EncodeEntry(stamped(t0, cmds...))
		if err != nil {
			t.Fatal(err)
		}
		out[name] = data
	}
	return out
}

// publicQueueSettingsSeed is the public_queue_settings seed's commands,
// converted from the API's requests as the rpc layer converts them.
func publicQueueSettingsSeed(t testing.TB) []*cmdpb.Command {
	t.Helper()
	qc, err := apiconv.QueueConfig("q", everySetting())
	if err != nil {
		t.Fatal(err)
	}
	u, err := apiconv.QueueUpdate("q", &seppv1.QueueSettings{
		DefaultPriority: ptr(uint32(2)), MaxReserved: ptr(uint64(0)), DeadLetterQueue: ptr(""), Tags: &seppv1.QueueTags{},
	}, []string{"fairness_key"}, ptr(true))
	if err != nil {
		t.Fatal(err)
	}
	fair, err := apiconv.QueueConfig("d.fair", fairSetting())
	if err != nil {
		t.Fatal(err)
	}
	declared := engine.Config{Limits: engine.DefaultLimits(), Queues: []engine.QueueConfig{{Name: "d"}, fair}}
	return []*cmdpb.Command{
		PublicCreateQueueCommand(engine.QueueConfig{Name: "q.dead"}, false),
		PublicCreateQueueCommand(qc, false),
		PublicUpdateQueueCommand(u),
		PublicQueueSettingsConfigCommand(DeclaredReserveLimitsConfigCommand(DeclaredConfigCommand(declared)), declared),
	}
}

// seedLimits are the default limits the older seeds were written with
// (attempt_history was 5 before engine.DefaultAttemptHistory), so those
// seeds keep their bytes.
func seedLimits() engine.Limits {
	l := engine.DefaultLimits()
	l.AttemptHistory = 5
	return l
}

func keyMinWindowLimits() engine.Limits {
	l := seedLimits()
	l.IdempotencyMinWindow = 30 * time.Second
	return l
}

func memoryBudgetLimits() engine.Limits {
	l := seedLimits()
	l.MaxMemoryBytes = 1 << 30
	return l
}

// TestSeedCorpusIsCurrent keeps the committed corpus decodable and, with
// -update-corpus, rewrites it.
func TestSeedCorpusIsCurrent(t *testing.T) {
	dir := filepath.Join("testdata", "fuzz", "FuzzDecodeEntry")
	seeds := seedEntries(t)
	if *updateCorpus {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for name, data := range seeds {
			body := fmt.Sprintf("go test fuzz v1\n[]byte(%q)\n", data)
			if err := os.WriteFile(filepath.Join(dir, "seed_"+name), []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	files, err := filepath.Glob(filepath.Join(dir, "seed_*"))
	if err != nil || len(files) != len(seeds) {
		t.Fatalf("corpus has %d seed files (err %v), want %d: run go test ./fsm -run TestSeedCorpusIsCurrent -update-corpus", len(files), err, len(seeds))
	}
}

// FuzzDecodeEntry: DecodeEntry never panics, and an entry it accepts applies
// without panicking (the engine answers bad input with error values). The
// only panic of Apply is the documented one for entries DecodeEntry rejects.
func FuzzDecodeEntry(f *testing.F) {
	for _, data := range seedEntries(f) {
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		entry, err := DecodeEntry(data)
		if err != nil {
			if !errors.Is(err, ErrDecode) {
				t.Fatalf("decode error %v does not wrap ErrDecode", err)
			}
			return
		}
		fsm := New(Config{Engine: engine.Config{Limits: engine.DefaultLimits()}, SnapshotTempDir: t.TempDir()})
		resp := fsm.Apply(&raft.Log{Index: 1, Type: raft.LogCommand, Data: data})
		if results, ok := resp.([]Result); !ok || len(results) != len(entry.GetCommands()) {
			t.Fatalf("apply answered %T for %d commands", resp, len(entry.GetCommands()))
		}
	})
}
