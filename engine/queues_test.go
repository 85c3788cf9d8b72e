package engine_test

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/sepp-io/sepp/engine"
	et "github.com/sepp-io/sepp/engine/enginetest"
)

func TestCreateQueue(t *testing.T) {
	for _, tc := range []struct {
		name    string
		strict  bool
		prepare func(t *testing.T, e *engine.Engine, now time.Time)
		qc      engine.QueueConfig
		paused  bool
		wantErr error
		wantMsg string
	}{
		{name: "new queue", qc: engine.QueueConfig{Name: "emails", DefaultPriority: et.Ptr[uint32](4)}},
		{name: "new queue paused", qc: engine.QueueConfig{Name: "emails"}, paused: true},
		{name: "strict server", strict: true, qc: engine.QueueConfig{Name: "emails"}},
		{name: "queue known by first use becomes configured", qc: engine.QueueConfig{Name: "emails"},
			prepare: func(t *testing.T, e *engine.Engine, now time.Time) {
				t.Helper()
				et.MustEnqueue(t, e, now, et.Job("emails"))
			}},
		{name: "already configured", qc: engine.QueueConfig{Name: "emails"}, wantErr: engine.ErrAlreadyExists, wantMsg: `queue "emails" already exists`,
			prepare: func(t *testing.T, e *engine.Engine, now time.Time) {
				t.Helper()
				if err := e.CreateQueue(now, engine.QueueConfig{Name: "emails"}, false); err != nil {
					t.Fatal(err)
				}
			}},
		{name: "bad name", qc: engine.QueueConfig{Name: "no spaces"}, wantErr: engine.ErrInvalidArgument, wantMsg: "name: must be 1..128 bytes"},
		{name: "bad setting", qc: engine.QueueConfig{Name: "emails", DefaultPriority: et.Ptr[uint32](10)},
			wantErr: engine.ErrInvalidArgument, wantMsg: `queues["emails"].default_priority: must be 0..9, got 10`},
		{name: "dead-letter queue is itself", qc: engine.QueueConfig{Name: "emails", DeadLetterQueue: "emails"},
			wantErr: engine.ErrInvalidArgument, wantMsg: "names the queue itself"},
		{name: "strict: unconfigured dead-letter queue", strict: true, qc: engine.QueueConfig{Name: "emails", DeadLetterQueue: "graveyard"},
			wantErr: engine.ErrInvalidArgument, wantMsg: `queue "graveyard" is not configured and limits.strict is on`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clock := et.NewClock()
			e := et.New(t, func(c *engine.Config) { c.Limits.Strict = tc.strict })
			if tc.prepare != nil {
				tc.prepare(t, e, clock.Now())
			}
			before := e.Digest()
			err := e.CreateQueue(clock.Advance(time.Second), tc.qc, tc.paused)
			et.RequireInvariants(t, e)
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) || !strings.Contains(err.Error(), tc.wantMsg) {
					t.Fatalf("CreateQueue: %v, want %v containing %q", err, tc.wantErr, tc.wantMsg)
				}
				if e.Digest() != before {
					t.Fatal("a refused create changed the state")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			s, err := e.QueueStats(clock.Now(), tc.qc.Name)
			if err != nil || !s.Configured || s.Paused != tc.paused {
				t.Fatalf("stats after create: %+v %v", s, err)
			}
			// A strict server accepts enqueues to the new queue.
			et.MustEnqueue(t, e, clock.Now(), et.Job(tc.qc.Name))
			if tc.qc.DefaultPriority != nil {
				if d := et.MustReserveOne(t, e, clock.Now(), tc.qc.Name); tc.paused || d.Job.Priority != *tc.qc.DefaultPriority {
					t.Fatalf("priority %d, want the queue's default %d", d.Job.Priority, *tc.qc.DefaultPriority)
				}
			}
		})
	}
}

func TestUpdateQueue(t *testing.T) {
	for _, tc := range []struct {
		name    string
		u       engine.QueueUpdate
		wantErr error
		wantMsg string
		check   func(t *testing.T, cfg engine.QueueConfig, s engine.QueueStats)
	}{
		{name: "unknown queue", u: engine.QueueUpdate{Name: "nosuchqueue", Paused: et.Ptr(true)},
			wantErr: engine.ErrNotFound, wantMsg: `queue "nosuchqueue" does not exist`},
		{name: "retry policy and length", u: engine.QueueUpdate{Name: "jobs", Set: engine.QueueConfig{
			RetryDelay: et.Ptr(5 * time.Second), RetryBackoff: et.Ptr(engine.BackoffExponential), RetryDelayMax: et.Ptr(time.Minute), MaxLength: et.Ptr(10)}},
			check: func(t *testing.T, cfg engine.QueueConfig, _ engine.QueueStats) {
				t.Helper()
				if *cfg.RetryDelay != 5*time.Second || *cfg.RetryBackoff != engine.BackoffExponential || *cfg.MaxLength != 10 || *cfg.DefaultPriority != 3 {
					t.Fatalf("config %+v", cfg)
				}
			}},
		{name: "inherit drops an override", u: engine.QueueUpdate{Name: "jobs", Inherit: []string{"default_priority"}},
			check: func(t *testing.T, cfg engine.QueueConfig, _ engine.QueueStats) {
				t.Helper()
				if cfg.DefaultPriority != nil {
					t.Fatalf("default_priority still %d", *cfg.DefaultPriority)
				}
			}},
		{name: "pause", u: engine.QueueUpdate{Name: "jobs", Paused: et.Ptr(true)},
			check: func(t *testing.T, _ engine.QueueConfig, s engine.QueueStats) {
				t.Helper()
				if !s.Paused {
					t.Fatal("not paused")
				}
			}},
		{name: "dead-letter queue set and cleared", u: engine.QueueUpdate{Name: "jobs", SetDeadLetterQueue: true, Set: engine.QueueConfig{DeadLetterQueue: "graveyard"}},
			check: func(t *testing.T, cfg engine.QueueConfig, _ engine.QueueStats) {
				t.Helper()
				if cfg.DeadLetterQueue != "graveyard" {
					t.Fatalf("dead_letter_queue %q", cfg.DeadLetterQueue)
				}
			}},
		{name: "unknown inherit key", u: engine.QueueUpdate{Name: "jobs", Inherit: []string{"colour"}},
			wantErr: engine.ErrInvalidArgument, wantMsg: `inherit: unknown setting "colour"`},
		{name: "attempts above the ceiling", u: engine.QueueUpdate{Name: "jobs", Set: engine.QueueConfig{DefaultMaxAttempts: et.Ptr[uint32](1000)}},
			wantErr: engine.ErrInvalidArgument, wantMsg: `queues["jobs"].default_max_attempts: 1000 is above limits.max_attempts_ceiling 100`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clock := et.NewClock()
			e := et.New(t, et.WithQueue(engine.QueueConfig{Name: "jobs", DefaultPriority: et.Ptr[uint32](3)}))
			before := e.Digest()
			err := e.UpdateQueue(clock.Advance(time.Second), tc.u)
			et.RequireInvariants(t, e)
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) || !strings.Contains(err.Error(), tc.wantMsg) {
					t.Fatalf("UpdateQueue: %v, want %v containing %q", err, tc.wantErr, tc.wantMsg)
				}
				if e.Digest() != before {
					t.Fatal("a refused update changed the state")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			s, err := e.QueueStats(clock.Now(), tc.u.Name)
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, e.Config().Queues[0], s)
		})
	}
}

// The new retry policy applies to the next failure of a job already held.
func TestUpdateQueue_RetryPolicyAppliesToHeldJobs(t *testing.T) {
	clock := et.NewClock()
	e := et.New(t, et.WithQueue(engine.QueueConfig{Name: "jobs"}))
	et.MustEnqueue(t, e, clock.Now(), et.Job("jobs"))
	if err := e.UpdateQueue(clock.Now(), engine.QueueUpdate{Name: "jobs", Set: engine.QueueConfig{RetryDelay: et.Ptr(time.Minute)}}); err != nil {
		t.Fatal(err)
	}
	d := et.MustReserveOne(t, e, clock.Now(), "jobs")
	res, err := e.Nack(clock.Now(), engine.NackParams{LeaseRef: et.Ref(d)})
	// The delay carries a jitter of its own (a hash of the job id); without
	// the update the retry would be immediate.
	if err != nil || res.NextAttemptAt.Before(clock.Now().Add(30*time.Second)) {
		t.Fatalf("nack: %+v %v, want a retry in about 1m", res, err)
	}
}

func TestDeleteQueue(t *testing.T) {
	// fill gives "jobs" one Ready, one Scheduled, one Reserved job and one
	// dead-letter record, and a keyed job.
	fill := func(t *testing.T, e *engine.Engine, clock *et.Clock) engine.Delivery {
		t.Helper()
		now := clock.Now()
		dead := et.MustEnqueue(t, e, now, et.Job("jobs"))
		if r := e.DeadLetterJobs(now, []engine.JobID{dead}, "bad"); r[0].Err != nil {
			t.Fatal(r[0].Err)
		}
		et.MustEnqueue(t, e, now, et.Job("jobs"))
		d := et.MustReserveOne(t, e, now, "jobs")
		p := et.Job("jobs")
		p.IdempotencyKey = "k1"
		et.MustEnqueue(t, e, now, p)
		p = et.Job("jobs")
		p.ScheduledAt = now.Add(time.Hour)
		et.MustEnqueue(t, e, now, p)
		return d
	}
	for _, tc := range []struct {
		name    string
		queue   string
		fill    bool
		force   bool
		dlqOf   bool // another queue forwards to "jobs"
		want    engine.QueueRemoval
		wantErr error
		wantMsg string
	}{
		{name: "unknown", queue: "nosuchqueue", wantErr: engine.ErrNotFound, wantMsg: `queue "nosuchqueue" does not exist`},
		{name: "empty", queue: "jobs"},
		{name: "holds jobs", queue: "jobs", fill: true, wantErr: engine.ErrQueueNotEmpty,
			wantMsg: `queue "jobs" holds 3 jobs and 1 dead-letter records; purge it first or delete with force`},
		{name: "forced", queue: "jobs", fill: true, force: true, want: engine.QueueRemoval{Jobs: 3, DeadLetters: 1}},
		{name: "another queue's dead-letter queue", queue: "jobs", force: true, dlqOf: true, wantErr: engine.ErrQueueInUse,
			wantMsg: `queue "jobs" is the dead_letter_queue of queue "orders"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clock := et.NewClock()
			e := et.New(t, et.WithRetention(time.Hour), et.WithQueue(engine.QueueConfig{Name: "jobs"}))
			if tc.dlqOf {
				if err := e.CreateQueue(clock.Now(), engine.QueueConfig{Name: "orders", DeadLetterQueue: "jobs"}, false); err != nil {
					t.Fatal(err)
				}
			}
			var d engine.Delivery
			if tc.fill {
				d = fill(t, e, clock)
			}
			before := e.Digest()
			got, err := e.DeleteQueue(clock.Advance(time.Second), tc.queue, tc.force)
			et.RequireInvariants(t, e)
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) || !strings.Contains(err.Error(), tc.wantMsg) {
					t.Fatalf("DeleteQueue: %v, want %v containing %q", err, tc.wantErr, tc.wantMsg)
				}
				if !errors.Is(tc.wantErr, engine.ErrQueueNotEmpty) && e.Digest() != before {
					t.Fatal("a refused delete changed the state")
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("DeleteQueue: %+v %v, want %+v", got, err, tc.want)
			}
			if _, err := e.QueueStats(clock.Now(), "jobs"); !errors.Is(err, engine.ErrNotFound) {
				t.Fatalf("stats of the deleted queue: %v, want ErrNotFound", err)
			}
			if len(e.Config().Queues) != 0 {
				t.Fatalf("config still names %v", e.Config().Queues)
			}
			if e.MemoryHeldTotal() != 0 {
				t.Fatalf("the engine still counts %d held bytes", e.MemoryHeldTotal())
			}
			if !tc.fill {
				return
			}
			// The worker holding a job of the deleted queue learns it is gone.
			if err := e.Ack(clock.Now(), et.Ref(d)); !errors.Is(err, engine.ErrNotFound) && !errors.Is(err, engine.ErrLeaseLost) {
				t.Fatalf("ack after delete: %v", err)
			}
			// A queue of the same name starts afresh: its keys are forgotten.
			p := et.Job("jobs")
			p.IdempotencyKey = "k1"
			if res, err := e.Enqueue(clock.Now(), p); err != nil || res.Duplicate {
				t.Fatalf("keyed enqueue to the recreated queue: %+v %v", res, err)
			}
			et.RequireInvariants(t, e)
		})
	}
}

func TestPurgeQueue(t *testing.T) {
	for _, tc := range []struct {
		name      string
		queue     string
		target    engine.PurgeTarget
		want      engine.QueueRemoval
		wantStats func(s engine.QueueStats) bool
		wantErr   error
		wantMsg   string
	}{
		{name: "unknown", queue: "nosuchqueue", target: engine.PurgeWaiting, wantErr: engine.ErrNotFound},
		{name: "bad target", queue: "jobs", target: 7, wantErr: engine.ErrInvalidArgument, wantMsg: "target: must be waiting or dead_letters, got 7"},
		{name: "waiting", queue: "jobs", target: engine.PurgeWaiting, want: engine.QueueRemoval{Jobs: 3},
			wantStats: func(s engine.QueueStats) bool {
				return s.Ready == 0 && s.Scheduled == 0 && s.Reserved == 1 && s.Dead == 1 && s.Purged == 3
			}},
		{name: "dead letters", queue: "jobs", target: engine.PurgeDeadLetters, want: engine.QueueRemoval{DeadLetters: 1},
			wantStats: func(s engine.QueueStats) bool {
				return s.Ready == 2 && s.Scheduled == 1 && s.Reserved == 1 && s.Dead == 0 && s.DeadDeleted == 1
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clock := et.NewClock()
			e := et.New(t, et.WithRetention(time.Hour))
			now := clock.Now()
			for range 4 {
				et.MustEnqueue(t, e, now, et.Job("jobs"))
			}
			et.MustReserveOne(t, e, now, "jobs")
			p := et.Job("jobs")
			p.ScheduledAt = now.Add(time.Hour)
			et.MustEnqueue(t, e, now, p)
			if r := e.DeadLetterJobs(now, []engine.JobID{2}, ""); r[0].Err != nil {
				t.Fatal(r[0].Err)
			}
			got, err := e.PurgeQueue(clock.Advance(time.Second), tc.queue, tc.target)
			et.RequireInvariants(t, e)
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) || !strings.Contains(err.Error(), tc.wantMsg) {
					t.Fatalf("PurgeQueue: %v, want %v containing %q", err, tc.wantErr, tc.wantMsg)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("PurgeQueue: %+v %v, want %+v", got, err, tc.want)
			}
			s, _ := e.QueueStats(clock.Now(), "jobs")
			if !tc.wantStats(s) {
				t.Fatalf("stats after purge: %+v", s)
			}
			// The purged count survives a snapshot.
			restored := engine.New(engine.DefaultConfig())
			if err := restored.Restore(bytes.NewReader(snapshotBytes(t, e))); err != nil || restored.Digest() != e.Digest() {
				t.Fatalf("restore after purge: %v", err)
			}
		})
	}
}

// No ghost queues: an operation on a queue that does not exist, or an
// enqueue that is refused, creates nothing.
func TestNoGhostQueues(t *testing.T) {
	clock := et.NewClock()
	e := et.New(t)
	e.Tick(clock.Now())
	empty := e.Digest()
	for name, op := range map[string]func() error{
		"pause":  func() error { return e.PauseQueue(clock.Now(), "nosuchqueue") },
		"resume": func() error { return e.ResumeQueue(clock.Now(), "nosuchqueue") },
		"update": func() error {
			return e.UpdateQueue(clock.Now(), engine.QueueUpdate{Name: "nosuchqueue", Paused: et.Ptr(true)})
		},
		"delete": func() error { _, err := e.DeleteQueue(clock.Now(), "nosuchqueue", true); return err },
		"purge":  func() error { _, err := e.PurgeQueue(clock.Now(), "nosuchqueue", engine.PurgeWaiting); return err },
	} {
		if err := op(); !errors.Is(err, engine.ErrNotFound) {
			t.Errorf("%s of an unknown queue: %v, want ErrNotFound", name, err)
		}
	}
	far := et.Job("typo")
	far.ScheduledAt = clock.Now().Add(365 * 24 * time.Hour)
	if _, err := e.Enqueue(clock.Now(), far); !errors.Is(err, engine.ErrScheduledTooFar) {
		t.Fatalf("enqueue too far: %v", err)
	}
	res, err := e.EnqueueBatch(clock.Now(), []engine.EnqueueParams{far})
	if err != nil || !errors.Is(res[0].Err, engine.ErrScheduledTooFar) {
		t.Fatalf("batch enqueue too far: %+v %v", res, err)
	}
	if _, err := e.QueueStats(clock.Now(), "typo"); !errors.Is(err, engine.ErrNotFound) {
		t.Fatalf("a refused enqueue left its queue behind: %v", err)
	}
	if len(e.Stats(clock.Now())) != 0 || e.Digest() != empty {
		t.Fatal("refused operations changed the state")
	}
	// A batch whose first item to a new queue is refused and whose second is
	// accepted creates the queue once.
	ok := et.Job("typo")
	res, err = e.EnqueueBatch(clock.Now(), []engine.EnqueueParams{far, ok, ok})
	if err != nil || res[0].Err == nil || res[1].Err != nil || res[2].Err != nil {
		t.Fatalf("batch: %+v %v", res, err)
	}
	if s, err := e.QueueStats(clock.Now(), "typo"); err != nil || s.Ready != 2 {
		t.Fatalf("stats: %+v %v", s, err)
	}
	et.RequireInvariants(t, e)
}

// The [[queues]] rule: each distinct definition from a file is applied
// once; runtime changes rule until the file's entry changes.
func TestApplyDeclared(t *testing.T) {
	clock := et.NewClock()
	e := et.New(t)
	file := func(qs ...engine.QueueConfig) engine.Config {
		cfg := engine.DefaultConfig()
		cfg.Queues = qs
		return cfg
	}
	v1 := engine.QueueConfig{Name: "emails", DefaultMaxAttempts: et.Ptr[uint32](5)}
	apply := func(cfg engine.Config) {
		t.Helper()
		if err := e.ApplyDeclared(clock.Advance(time.Second), cfg); err != nil {
			t.Fatal(err)
		}
		et.RequireInvariants(t, e)
	}
	attempts := func() uint32 {
		t.Helper()
		q := e.Config().Queues
		if len(q) != 1 || q[0].DefaultMaxAttempts == nil {
			t.Fatalf("queues %+v", q)
		}
		return *q[0].DefaultMaxAttempts
	}

	if !e.DeclaredPending(file(v1)) {
		t.Fatal("a new definition is not pending")
	}
	apply(file(v1))
	if attempts() != 5 || e.DeclaredPending(file(v1)) {
		t.Fatalf("first apply: attempts %d, pending %v", attempts(), e.DeclaredPending(file(v1)))
	}

	// A runtime change survives the same file applied again (a restart, a
	// new leader with the same file).
	if err := e.UpdateQueue(clock.Now(), engine.QueueUpdate{Name: "emails", Set: engine.QueueConfig{DefaultMaxAttempts: et.Ptr[uint32](9)}}); err != nil {
		t.Fatal(err)
	}
	apply(file(v1))
	if attempts() != 9 {
		t.Fatalf("the file overwrote a runtime change: attempts %d", attempts())
	}

	// An edited entry is applied.
	v2 := engine.QueueConfig{Name: "emails", DefaultMaxAttempts: et.Ptr[uint32](7)}
	apply(file(v2))
	if attempts() != 7 {
		t.Fatalf("the edited entry was not applied: attempts %d", attempts())
	}

	// Two nodes whose files differ (v1 and v2) flip the queue no more: each
	// definition was applied once already.
	for range 3 {
		apply(file(v1))
		apply(file(v2))
	}
	if attempts() != 7 {
		t.Fatalf("differing files flipped the queue: attempts %d", attempts())
	}

	// A queue deleted at runtime stays deleted until its entry changes.
	if _, err := e.DeleteQueue(clock.Now(), "emails", false); err != nil {
		t.Fatal(err)
	}
	apply(file(v2))
	if len(e.Config().Queues) != 0 {
		t.Fatalf("the file brought a deleted queue back: %+v", e.Config().Queues)
	}
	v3 := engine.QueueConfig{Name: "emails", DefaultMaxAttempts: et.Ptr[uint32](2)}
	apply(file(v3))
	if attempts() != 2 {
		t.Fatalf("a changed entry did not recreate the queue: attempts %d", attempts())
	}

	// Limits always follow the file.
	cfg := file(v3)
	cfg.Limits.DefaultPriority = 4
	if !e.DeclaredPending(cfg) {
		t.Fatal("changed limits are not pending")
	}
	apply(cfg)
	if e.Config().Limits.DefaultPriority != 4 {
		t.Fatal("limits not applied")
	}

	// A file that would leave the running queues invalid is refused whole.
	bad := file(v3)
	bad.Limits.MaxAttemptsCeiling = 1
	bad.Limits.DefaultMaxAttempts = 1
	before := e.Digest()
	if err := e.ApplyDeclared(clock.Now(), bad); !errors.Is(err, engine.ErrInvalidArgument) {
		t.Fatalf("ApplyDeclared of a contradicting file: %v", err)
	}
	if e.Digest() != before {
		t.Fatal("a refused ApplyDeclared changed the state")
	}

	// The declarations survive a snapshot, and the restored engine applies
	// the rule alike.
	restored := engine.New(engine.DefaultConfig())
	if err := restored.Restore(bytes.NewReader(snapshotBytes(t, e))); err != nil {
		t.Fatal(err)
	}
	again := cfg
	again.Queues = []engine.QueueConfig{v1}
	if restored.Digest() != e.Digest() || restored.DeclaredPending(again) || restored.DeclaredPending(cfg) {
		t.Fatal("restored engine differs")
	}
}

// A state that never used the operator features is written in the older
// layout; one that did reads back equal.
func TestSnapshot_OperatorLayoutOnlyWhenUsed(t *testing.T) {
	clock := et.NewClock()
	e := et.New(t)
	if err := e.CreateQueue(clock.Now(), engine.QueueConfig{Name: "a"}, true); err != nil {
		t.Fatal(err)
	}
	et.MustEnqueue(t, e, clock.Now(), et.Job("a"))
	layout := func() byte { return snapshotBytes(t, e)[len("SEPPENG\x00")] }
	if got := layout(); got != 2 {
		t.Fatalf("layout %d before any purge or declaration, want 2", got)
	}
	if _, err := e.PurgeQueue(clock.Now(), "a", engine.PurgeWaiting); err != nil {
		t.Fatal(err)
	}
	if got := layout(); got != 4 {
		t.Fatalf("layout %d after a purge, want 4", got)
	}
	restored := engine.New(engine.DefaultConfig())
	if err := restored.Restore(bytes.NewReader(snapshotBytes(t, e))); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(snapshotBytes(t, restored), snapshotBytes(t, e)) {
		t.Fatal("restored engine differs")
	}
	s, _ := restored.QueueStats(clock.Now(), "a")
	if !s.Paused || !s.Configured || s.Purged != 1 {
		t.Fatalf("restored stats %+v", s)
	}
}
