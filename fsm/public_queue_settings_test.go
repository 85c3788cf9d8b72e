package fsm

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/sepp-io/sepp/apiconv"
	"github.com/sepp-io/sepp/engine"
	seppv1 "github.com/sepp-io/sepp/proto/sepp/v1"
	cmdpb "github.com/sepp-io/sepp/proto/seppcmd/v1"
)

// everySetting sets each field of QueueSettings but fairness_key (which the
// engine does not combine with max_per_key yet; fairSetting has it), so
// that a converter that drops one changes the state it gives.
func everySetting() *seppv1.QueueSettings {
	return &seppv1.QueueSettings{
		DefaultPriority: ptr(uint32(7)), DefaultMaxAttempts: ptr(uint32(4)),
		RetryDelayMs: ptr(int64(1500)), RetryBackoff: ptr(seppv1.RetryBackoff_RETRY_BACKOFF_NONE),
		RetryDelayMaxMs: ptr(int64(60_000)), MaxScheduleHorizonMs: ptr(int64(3_600_000)),
		MaxLength: ptr(uint64(1000)), MaxMemoryBytes: ptr(uint64(1 << 20)),
		DeadLetterQueue: ptr("q.dead"), MaxWaitMs: ptr(int64(90_000)),
		MaxReserved: ptr(uint64(9)), RateLimit: ptr(uint64(5)), RatePeriodMs: ptr(int64(2000)),
		RateBurst: ptr(uint64(3)), ConcurrencyKey: ptr("region"), MaxPerKey: ptr(uint64(2)),
		Tags: &seppv1.QueueTags{Tags: map[string]string{"env": "prod", "team": "core"}},
	}
}

// fairSetting sets fairness_key, which everySetting leaves out.
func fairSetting() *seppv1.QueueSettings { return &seppv1.QueueSettings{FairnessKey: ptr("tenant")} }

// queueRequest is one CreateQueue or UpdateQueue request of the public API.
type queueRequest struct {
	create *seppv1.CreateQueueRequest
	update *seppv1.UpdateQueueRequest
}

// commands are req's commands in both forms, converted as the rpc layer
// converts it (apiconv) and built as the leader builds them.
func (req queueRequest) commands(t *testing.T) (old, public *cmdpb.Command) {
	t.Helper()
	if c := req.create; c != nil {
		qc, err := apiconv.QueueConfig(c.GetName(), c.GetSettings())
		if err != nil {
			t.Fatalf("the API refuses the test's request: %v", err)
		}
		return CreateQueueCommand(qc, c.GetPaused()), PublicCreateQueueCommand(qc, c.GetPaused())
	}
	u, err := apiconv.QueueUpdate(req.update.GetName(), req.update.GetSettings(), req.update.GetInherit(), req.update.Paused)
	if err != nil {
		t.Fatalf("the API refuses the test's request: %v", err)
	}
	return UpdateQueueCommand(u), PublicUpdateQueueCommand(u)
}

// TestPublicQueueSettings_SameStateAsTheOldForm: each run of queue requests,
// written in the log's older form and in the public form of command version
// 21, gives the same results and the same state, byte for byte, so a leader
// may write either and a replica replaying a log that holds both ends
// alike. It is what catches a setting one direction of apiconv drops.
func TestPublicQueueSettings_SameStateAsTheOldForm(t *testing.T) {
	create := func(name string, s *seppv1.QueueSettings) queueRequest {
		return queueRequest{create: &seppv1.CreateQueueRequest{Name: name, Settings: s}}
	}
	update := func(name string, s *seppv1.QueueSettings, inherit ...string) queueRequest {
		return queueRequest{update: &seppv1.UpdateQueueRequest{Name: name, Settings: s, Inherit: inherit}}
	}
	every := []string{"default_priority", "default_max_attempts", "retry_delay_ms", "retry_backoff", "retry_delay_max_ms",
		"max_schedule_horizon_ms", "max_length", "max_memory_bytes", "dead_letter_queue", "max_reserved", "rate_limit",
		"rate_period_ms", "rate_burst", "concurrency_key", "max_per_key", "max_wait_ms", "fairness_key", "tags"}
	tests := []struct {
		name string
		reqs []queueRequest
		// refused is the error the last request meets (the others
		// succeed), "" for none: a run whose requests all fail in both
		// forms would compare nothing.
		refused string
	}{
		{"CreateWithEverySetting", []queueRequest{create("q.dead", nil), create("q", everySetting())}, ""},
		{"CreateWithFairnessKey", []queueRequest{create("q", fairSetting())}, ""},
		{"UpdateSetsFairnessKey", []queueRequest{create("q", nil), update("q", fairSetting())}, ""},
		{"UpdateDropsFairnessKey", []queueRequest{create("q", fairSetting()), update("q", nil, "fairness_key")}, ""},
		{"CreatePaused", []queueRequest{{create: &seppv1.CreateQueueRequest{Name: "q", Paused: true}}}, ""},
		{"CreateWithNoSettings", []queueRequest{create("q", nil), create("r", &seppv1.QueueSettings{})}, ""},
		{"UpdateSetsEverySetting", []queueRequest{create("q.dead", nil), create("q", nil), update("q", everySetting())}, ""},
		{"UpdateInheritsEverySetting", []queueRequest{create("q.dead", nil), create("q", everySetting()), update("q", nil, every...)}, ""},
		{"UpdateDropsByZeroAndEmpty", []queueRequest{create("q.dead", nil), create("q", everySetting()), update("q", &seppv1.QueueSettings{
			MaxReserved: ptr(uint64(0)), RatePeriodMs: ptr(int64(0)), ConcurrencyKey: ptr(""), MaxPerKey: ptr(uint64(0)),
			DeadLetterQueue: ptr(""), Tags: &seppv1.QueueTags{},
		})}, ""},
		{"UpdateLeavesUnsetAlone", []queueRequest{create("q.dead", nil), create("q", everySetting()), update("q", &seppv1.QueueSettings{DefaultPriority: ptr(uint32(1))})}, ""},
		{"UpdatePausesAndResumes", []queueRequest{create("q", nil),
			{update: &seppv1.UpdateQueueRequest{Name: "q", Paused: ptr(true)}},
			{update: &seppv1.UpdateQueueRequest{Name: "q", Paused: ptr(false), Settings: &seppv1.QueueSettings{MaxLength: ptr(uint64(0))}}}}, ""},
		// Refusals are the engine's, alike in both forms.
		{"UpdateUnknownQueue", []queueRequest{update("nope", &seppv1.QueueSettings{DefaultPriority: ptr(uint32(1))})}, "does not exist"},
		{"DeadLetterTargetMissing", []queueRequest{create("r", nil), update("r", &seppv1.QueueSettings{DeadLetterQueue: ptr("gone")})}, "gone"},
		{"InheritUnknownKey", []queueRequest{create("q", nil), update("q", nil, "colour")}, "colour"},
		{"CreateTwice", []queueRequest{create("q", nil), create("q", nil)}, "exists"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			oldFSM, pubFSM := newTestFSM(t), newTestFSM(t)
			now := time.Unix(100, 0)
			for i, req := range tt.reqs {
				oldCmd, pubCmd := req.commands(t)
				if pubCmd.GetVersion() != CommandVersionPublicQueueSettings {
					t.Fatalf("request %d: public form of version %d", i, pubCmd.GetVersion())
				}
				if pubCmd.GetQueueCreate().GetConfig() != nil || pubCmd.GetQueueUpdate().GetConfig() != nil {
					t.Fatalf("request %d: the public form also holds the log's own config", i)
				}
				oldRes := applyCommands(t, oldFSM, now, oldCmd)[0]
				pubRes := applyCommands(t, pubFSM, now, pubCmd)[0]
				if (oldRes.Err == nil) != (pubRes.Err == nil) || (oldRes.Err != nil && oldRes.Err.Error() != pubRes.Err.Error()) {
					t.Fatalf("request %d: older form answers %v, public form %v", i, oldRes.Err, pubRes.Err)
				}
				last := i == len(tt.reqs)-1
				switch {
				case last && tt.refused != "":
					if pubRes.Err == nil || !strings.Contains(pubRes.Err.Error(), tt.refused) {
						t.Fatalf("request %d: err = %v, want one naming %q", i, pubRes.Err, tt.refused)
					}
				case pubRes.Err != nil:
					t.Fatalf("request %d: %v", i, pubRes.Err)
				}
			}
			if o, p := oldFSM.eng.Config().Queues, pubFSM.eng.Config().Queues; !reflect.DeepEqual(o, p) {
				t.Fatalf("queues differ:\nolder form  %+v\npublic form %+v", o, p)
			}
			if oldFSM.Digest() != pubFSM.Digest() {
				t.Fatal("the two forms give states of different digests")
			}
		})
	}
}

// A public-form command the API would have refused (a replica can meet one
// only from a faulty leader) is refused at apply, by the same converter, the
// same way on every replica, naming the request's field.
func TestPublicQueueSettings_ApplyRefusesWhatTheAPIRefuses(t *testing.T) {
	bad := &seppv1.QueueSettings{MaxLength: ptr(uint64(1) << 40)}
	for _, cmd := range []*cmdpb.Command{
		{Version: CommandVersionPublicQueueSettings, Op: &cmdpb.Command_QueueCreate{QueueCreate: &cmdpb.QueueCreate{Name: "q", Settings: bad}}},
		{Version: CommandVersionPublicQueueSettings, Op: &cmdpb.Command_QueueUpdate{QueueUpdate: &cmdpb.QueueUpdate{Name: "q", Settings: bad}}},
	} {
		f := newTestFSM(t)
		res := applyCommands(t, f, time.Unix(100, 0), cmd)[0]
		var fe *engine.FieldError
		if !errors.Is(res.Err, engine.ErrInvalidArgument) || !errors.As(res.Err, &fe) || fe.Field != "settings.max_length" || !strings.Contains(fe.Reason, "above 2147483647") {
			t.Fatalf("%T: err = %v, want settings.max_length refused", cmd.GetOp(), res.Err)
		}
	}
}

// The public_queue_settings seed's commands all apply: a golden entry that
// is refused would pin an error, not the form.
func TestPublicQueueSettings_SeedApplies(t *testing.T) {
	f := newTestFSM(t)
	for i, res := range applyCommands(t, f, time.Unix(100, 0), publicQueueSettingsSeed(t)...) {
		if res.Err != nil {
			t.Fatalf("command %d: %v", i, res.Err)
		}
	}
}

// A declarative ConfigSet whose queues are written in the public form
// (PublicQueueSettingsConfigCommand) applies to the state the older form
// gives; a config the API cannot state exactly keeps the older form.
func TestPublicQueueSettings_DeclaredConfig(t *testing.T) {
	every, err := apiconv.QueueConfig("q", everySetting())
	if err != nil {
		t.Fatal(err)
	}
	fair, err := apiconv.QueueConfig("fair", fairSetting())
	if err != nil {
		t.Fatal(err)
	}
	subMillisecond := engine.QueueConfig{Name: "fine", MaxWait: 1500 * time.Microsecond}
	tests := []struct {
		name   string
		queues []engine.QueueConfig
		public bool
	}{
		{"EverySetting", []engine.QueueConfig{{Name: "q.dead"}, every, fair}, true},
		{"PlainQueues", []engine.QueueConfig{{Name: "a"}, {Name: "b"}}, true},
		{"EmptyTagList", []engine.QueueConfig{{Name: "a", Tags: []engine.Tag{}}}, true},
		{"NoQueues", nil, false},
		{"SubMillisecondKeepsTheOlderForm", []engine.QueueConfig{{Name: "a"}, subMillisecond}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := engine.Config{Limits: engine.DefaultLimits(), Queues: tt.queues}
			oldCmd := DeclaredReserveLimitsConfigCommand(DeclaredConfigCommand(cfg))
			pubCmd := PublicQueueSettingsConfigCommand(DeclaredReserveLimitsConfigCommand(DeclaredConfigCommand(cfg)), cfg)
			pc := pubCmd.GetConfigSet().GetConfig()
			isPublic := pubCmd.GetVersion() == CommandVersionPublicQueueSettings && len(pc.GetQueues()) == 0 && len(pc.GetQueueSettings()) == len(tt.queues)
			if isPublic != tt.public {
				t.Fatalf("version %d, %d queues in the older form, %d in the public; want public %v", pubCmd.GetVersion(), len(pc.GetQueues()), len(pc.GetQueueSettings()), tt.public)
			}
			oldFSM, pubFSM := newTestFSM(t), newTestFSM(t)
			now := time.Unix(100, 0)
			if res := applyCommands(t, oldFSM, now, oldCmd)[0]; res.Err != nil {
				t.Fatalf("older form: %v", res.Err)
			}
			if res := applyCommands(t, pubFSM, now, pubCmd)[0]; res.Err != nil {
				t.Fatalf("public form: %v", res.Err)
			}
			if o, p := oldFSM.eng.Config(), pubFSM.eng.Config(); !reflect.DeepEqual(o, p) {
				t.Fatalf("configs differ:\nolder form  %+v\npublic form %+v", o.Queues, p.Queues)
			}
			if oldFSM.Digest() != pubFSM.Digest() {
				t.Fatal("the two forms give states of different digests")
			}
		})
	}
}
