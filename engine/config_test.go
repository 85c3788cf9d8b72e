package engine_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/sepp-io/sepp/engine"
	et "github.com/sepp-io/sepp/engine/enginetest"
)

func TestConfigValidate(t *testing.T) {
	t.Parallel()
	q := func(name string, mut func(*engine.QueueConfig)) func(*engine.Config) {
		qc := engine.QueueConfig{Name: name}
		if mut != nil {
			mut(&qc)
		}
		return et.WithQueue(qc)
	}
	lim := func(mut func(*engine.Limits)) func(*engine.Config) {
		return func(c *engine.Config) { mut(&c.Limits) }
	}
	tests := []struct {
		name    string
		mutate  []func(*engine.Config)
		wantErr string // "" means valid
	}{
		{name: "DefaultsAreValid"},
		// spec: ATT-5
		{name: "GlobalDefaultMaxAttemptsAboveCeiling", mutate: []func(*engine.Config){lim(func(l *engine.Limits) { l.DefaultMaxAttempts = 101 })},
			wantErr: "limits.default_max_attempts: 101 is above limits.max_attempts_ceiling 100"},
		// spec: ATT-5
		{name: "QueueDefaultMaxAttemptsAboveCeiling", mutate: []func(*engine.Config){q("emails", func(c *engine.QueueConfig) { c.DefaultMaxAttempts = et.Ptr[uint32](500) })},
			wantErr: `queues["emails"].default_max_attempts: 500 is above limits.max_attempts_ceiling 100`},
		{name: "ZeroDefaultMaxAttempts", mutate: []func(*engine.Config){lim(func(l *engine.Limits) { l.DefaultMaxAttempts = 0 })}, wantErr: "limits.default_max_attempts"},
		{name: "DefaultPriorityAboveNine", mutate: []func(*engine.Config){lim(func(l *engine.Limits) { l.DefaultPriority = 10 })}, wantErr: "limits.default_priority: must be 0..9, got 10"},
		{name: "QueueDefaultPriorityAboveNine", mutate: []func(*engine.Config){q("a", func(c *engine.QueueConfig) { c.DefaultPriority = et.Ptr[uint32](12) })}, wantErr: `queues["a"].default_priority: must be 0..9`},
		{name: "NegativeRetryDelay", mutate: []func(*engine.Config){lim(func(l *engine.Limits) { l.RetryDelay = -1 })}, wantErr: "limits.retry_delay_ms"},
		{name: "NegativeQueueRetryDelay", mutate: []func(*engine.Config){q("a", func(c *engine.QueueConfig) { c.RetryDelay = et.Ptr(-time.Second) })}, wantErr: `queues["a"].retry_delay_ms`},
		{name: "ExponentialCapBelowBase", mutate: []func(*engine.Config){lim(func(l *engine.Limits) {
			l.RetryBackoff, l.RetryDelay, l.RetryDelayMax = engine.BackoffExponential, time.Minute, time.Second
		})}, wantErr: "limits.retry_delay_max_ms"},
		{name: "QueueExponentialCapBelowBase", mutate: []func(*engine.Config){q("a", func(c *engine.QueueConfig) {
			c.RetryBackoff, c.RetryDelay = et.Ptr(engine.BackoffExponential), et.Ptr(2*time.Hour)
		})}, wantErr: `queues["a"].retry_delay_max_ms`},
		{name: "UnknownBackoff", mutate: []func(*engine.Config){lim(func(l *engine.Limits) { l.RetryBackoff = 9 })}, wantErr: "limits.retry_backoff"},
		{name: "ZeroHorizon", mutate: []func(*engine.Config){lim(func(l *engine.Limits) { l.MaxScheduleHorizon = 0 })}, wantErr: "limits.max_schedule_horizon_ms: must be positive"},
		{name: "ZeroQueueHorizon", mutate: []func(*engine.Config){q("a", func(c *engine.QueueConfig) { c.MaxScheduleHorizon = et.Ptr(time.Duration(0)) })}, wantErr: `queues["a"].max_schedule_horizon_ms`},
		{name: "NegativeIdempotencyMinWindow", mutate: []func(*engine.Config){lim(func(l *engine.Limits) { l.IdempotencyMinWindow = -time.Second })}, wantErr: "limits.idempotency_min_window_ms: must not be negative"},
		// A shorter window alone must not trip over the default minimum:
		// a minimum above the window means the window.
		{name: "IdempotencyMinWindowAboveWindow", mutate: []func(*engine.Config){lim(func(l *engine.Limits) { l.IdempotencyWindow = 10 * time.Second })}},
		{name: "ZeroReserveBatch", mutate: []func(*engine.Config){lim(func(l *engine.Limits) { l.MaxReserveBatch = 0 })}, wantErr: "limits.max_reserve_batch: must be at least 1, got 0"},
		{name: "MaxLeaseBelowDefault", mutate: []func(*engine.Config){lim(func(l *engine.Limits) { l.MaxLease = time.Second })}, wantErr: "limits.max_lease_ms"},
		{name: "NegativeRetention", mutate: []func(*engine.Config){lim(func(l *engine.Limits) { l.DeadLetterRetention = -1 })}, wantErr: "storage.dead_letter_retention_ms"},
		{name: "NegativeQueueLength", mutate: []func(*engine.Config){q("a", func(c *engine.QueueConfig) { c.MaxLength = et.Ptr(-1) })}, wantErr: `queues["a"].max_length`},
		{name: "BadQueueName", mutate: []func(*engine.Config){q("has space", nil)}, wantErr: `queues[0].name: must be 1..128 bytes of [A-Za-z0-9._:-], got "has space"`},
		{name: "EmptyQueueName", mutate: []func(*engine.Config){q("", nil)}, wantErr: "queues[0].name: must be 1..128 bytes"},
		{name: "LongQueueName", mutate: []func(*engine.Config){q(strings.Repeat("a", 129), nil)}, wantErr: "queues[0].name: must be 1..128 bytes"},
		{name: "MaxLengthQueueNameOK", mutate: []func(*engine.Config){q(strings.Repeat("a", 128), nil)}},
		{name: "DuplicateQueue", mutate: []func(*engine.Config){q("a", nil), q("a", nil)}, wantErr: `queues[1].name: queue "a" is already configured at queues[0]`},
		{name: "DeadLetterQueueIsItself", mutate: []func(*engine.Config){q("a", func(c *engine.QueueConfig) { c.DeadLetterQueue = "a" })}, wantErr: `queues["a"].dead_letter_queue: names the queue itself`},
		{name: "DeadLetterQueueBadName", mutate: []func(*engine.Config){q("a", func(c *engine.QueueConfig) { c.DeadLetterQueue = "a/b" })}, wantErr: `queues["a"].dead_letter_queue: must be 1..128 bytes`},
		{name: "DeadLetterCycle", mutate: []func(*engine.Config){q("a", func(c *engine.QueueConfig) { c.DeadLetterQueue = "b" }), q("b", func(c *engine.QueueConfig) { c.DeadLetterQueue = "a" })}, wantErr: "loops back"},
		{name: "StrictDeadLetterQueueUnconfigured", mutate: []func(*engine.Config){lim(func(l *engine.Limits) { l.Strict = true }), q("a", func(c *engine.QueueConfig) { c.DeadLetterQueue = "b" })}, wantErr: "not configured and limits.strict is on"},
		{name: "NonStrictDeadLetterQueueUnconfiguredOK", mutate: []func(*engine.Config){q("a", func(c *engine.QueueConfig) { c.DeadLetterQueue = "b" })}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := et.Config(tt.mutate...).Validate()
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			var fe *engine.FieldError
			if !errors.As(err, &fe) || !errors.Is(err, engine.ErrInvalidArgument) || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("err = %v, want a FieldError containing %q", err, tt.wantErr)
			}
		})
	}
}

func TestStrictMode(t *testing.T) {
	t.Parallel()
	clock := et.NewClock()
	strict := et.New(t, func(c *engine.Config) { c.Limits.Strict = true }, et.WithQueue(engine.QueueConfig{Name: "known"}))
	if _, err := strict.Enqueue(clock.Now(), et.Job("unknown")); !errors.Is(err, engine.ErrUnknownQueue) {
		t.Fatalf("strict enqueue to an unconfigured queue: %v, want ErrUnknownQueue", err)
	}
	// Pausing a queue that does not exist creates nothing, strict or not.
	if err := strict.PauseQueue(clock.Now(), "unknown"); !errors.Is(err, engine.ErrNotFound) {
		t.Fatalf("strict pause of an unknown queue: %v, want ErrNotFound", err)
	}
	et.MustEnqueue(t, strict, clock.Now(), et.Job("known"))
	open := et.New(t)
	et.MustEnqueue(t, open, clock.Now(), et.Job("created.on:first-use_1"))
	s, err := open.QueueStats(clock.Now(), "created.on:first-use_1")
	if err != nil || s.Configured || s.Ready != 1 {
		t.Fatalf("queue created on first use: %+v %v", s, err)
	}
	if _, err := open.Enqueue(clock.Now(), et.Job("no spaces")); !errors.Is(err, engine.ErrInvalidArgument) || !strings.Contains(err.Error(), "[A-Za-z0-9._:-]") {
		t.Fatalf("bad name: %v", err)
	}
}

func TestSetConfig(t *testing.T) {
	t.Parallel()
	clock := et.NewClock()
	e := et.New(t)
	et.MustEnqueue(t, e, clock.Now(), et.Job("q"))
	bad := et.Config(func(c *engine.Config) { c.Limits.MaxReserveBatch = 0 })
	if err := e.SetConfig(clock.Now(), bad); !errors.Is(err, engine.ErrInvalidArgument) {
		t.Fatalf("invalid config accepted: %v", err)
	}
	cfg := et.Config(et.WithQueue(engine.QueueConfig{Name: "q", DefaultPriority: et.Ptr[uint32](5)}), et.WithRetention(time.Minute))
	if err := e.SetConfig(clock.Now(), cfg); err != nil {
		t.Fatal(err)
	}
	id := et.MustEnqueue(t, e, clock.Now(), et.Job("q"))
	if j, _ := e.GetJob(id); j.Priority != 5 {
		t.Fatalf("new queue default not applied: %d", j.Priority)
	}
	got := e.Config()
	*got.Queues[0].DefaultPriority = 9 // a copy: must not reach the engine
	if *e.Config().Queues[0].DefaultPriority != 5 {
		t.Fatal("Config shares pointers with the engine")
	}
	if s, _ := e.QueueStats(clock.Now(), "q"); !s.Configured {
		t.Fatal("queue not marked configured")
	}
	et.RequireInvariants(t, e)
}

func TestNewPanicsOnInvalidConfig(t *testing.T) {
	t.Parallel()
	defer func() {
		if recover() == nil {
			t.Fatal("New accepted an invalid config")
		}
	}()
	engine.New(engine.Config{})
}
