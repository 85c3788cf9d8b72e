package apiconv_test

import (
	"errors"
	"math"
	"reflect"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/sepp-io/sepp/apiconv"
	"github.com/sepp-io/sepp/engine"
	seppv1 "github.com/sepp-io/sepp/proto/sepp/v1"
)

func ptr[T any](v T) *T { return &v }

// everySetting sets every field of QueueSettings to a value other than its
// zero (TestQueueSettings_EveryFieldIsSet keeps it so as fields are added).
func everySetting() *seppv1.QueueSettings {
	return &seppv1.QueueSettings{
		DefaultPriority: ptr(uint32(7)), DefaultMaxAttempts: ptr(uint32(4)),
		RetryDelayMs: ptr(int64(1500)), RetryBackoff: ptr(seppv1.RetryBackoff_RETRY_BACKOFF_NONE),
		RetryDelayMaxMs: ptr(int64(60_000)), MaxScheduleHorizonMs: ptr(int64(3_600_000)),
		MaxLength: ptr(uint64(1000)), MaxMemoryBytes: ptr(uint64(1 << 20)),
		DeadLetterQueue: ptr("q.dead"), MaxWaitMs: ptr(int64(90_000)), FairnessKey: ptr("tenant"), CompletedRetentionMs: ptr(int64(3_600_000)),
		MaxReserved: ptr(uint64(9)), RateLimit: ptr(uint64(5)), RatePeriodMs: ptr(int64(2000)),
		RateBurst: ptr(uint64(3)), ConcurrencyKey: ptr("region"), MaxPerKey: ptr(uint64(2)),
		Tags: &seppv1.QueueTags{Tags: map[string]string{"env": "prod", "team": "core"}},
	}
}

// TestQueueSettings_EveryFieldIsSet: the round-trip tests below catch a
// converter that drops a field only if everySetting sets it, so a field
// added to QueueSettings fails here until everySetting sets it too.
func TestQueueSettings_EveryFieldIsSet(t *testing.T) {
	m := everySetting().ProtoReflect()
	fields := m.Descriptor().Fields()
	for i := range fields.Len() {
		if f := fields.Get(i); !m.Has(f) {
			t.Errorf("everySetting leaves %s unset: set it, so the round trips cover it", f.Name())
		}
	}
}

// TestQueueConfig_RoundTrip: QueueSettings is QueueConfig's inverse, so a
// command of version 21, which holds QueueSettings(QueueConfig(p)), applies
// to what the API validated; a setting one direction drops fails here.
func TestQueueConfig_RoundTrip(t *testing.T) {
	tests := []struct {
		name string
		in   *seppv1.QueueSettings
	}{
		{"Empty", &seppv1.QueueSettings{}},
		{"EverySetting", everySetting()},
		{"ExponentialBackoff", &seppv1.QueueSettings{RetryBackoff: ptr(seppv1.RetryBackoff_RETRY_BACKOFF_EXPONENTIAL)}},
		{"ZeroLengthAndBudget", &seppv1.QueueSettings{MaxLength: ptr(uint64(0)), MaxMemoryBytes: ptr(uint64(0)), RetryDelayMs: ptr(int64(0))}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			qc, err := apiconv.QueueConfig("q", tt.in)
			if err != nil {
				t.Fatal(err)
			}
			if qc.Name != "q" {
				t.Fatalf("name %q", qc.Name)
			}
			if out := apiconv.QueueSettings(qc); !proto.Equal(out, tt.in) {
				t.Fatalf("round trip:\n in  %v\n out %v", tt.in, out)
			}
		})
	}
}

// TestQueueUpdate_RoundTrip: QueueUpdateSettings is QueueUpdate's inverse,
// field presence included (a present empty dead_letter_queue or tag set
// sets none; a zeroed reserve limit drops it), so the leader's command of
// version 21 applies the update the API validated.
func TestQueueUpdate_RoundTrip(t *testing.T) {
	tests := []struct {
		name    string
		in      *seppv1.QueueSettings
		inherit []string
		paused  *bool
	}{
		{"Nothing", nil, nil, nil},
		{"EverySetting", everySetting(), nil, nil},
		{"InheritAndPause", &seppv1.QueueSettings{DefaultPriority: ptr(uint32(1))}, []string{"max_wait_ms", "tags"}, ptr(true)},
		{"Resume", nil, nil, ptr(false)},
		{"EmptyDeadLetterQueueAndTags", &seppv1.QueueSettings{DeadLetterQueue: ptr(""), Tags: &seppv1.QueueTags{}}, nil, nil},
		{"ZeroedReserveLimits", &seppv1.QueueSettings{MaxReserved: ptr(uint64(0)), RateLimit: ptr(uint64(0)), RatePeriodMs: ptr(int64(0)),
			RateBurst: ptr(uint64(0)), ConcurrencyKey: ptr(""), MaxPerKey: ptr(uint64(0))}, []string{"fairness_key"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u, err := apiconv.QueueUpdate("q", tt.in, tt.inherit, tt.paused)
			if err != nil {
				t.Fatal(err)
			}
			settings, inherit := apiconv.QueueUpdateSettings(u)
			again, err := apiconv.QueueUpdate("q", settings, inherit, u.Paused)
			if err != nil {
				t.Fatalf("the inverse's settings are refused: %v", err)
			}
			if !reflect.DeepEqual(again, u) {
				t.Fatalf("round trip:\n first  %+v\n second %+v", u, again)
			}
		})
	}
}

// TestQueueUpdate_Presence: what the settings' field presence means for
// the engine's update.
func TestQueueUpdate_Presence(t *testing.T) {
	u, err := apiconv.QueueUpdate("q", &seppv1.QueueSettings{DeadLetterQueue: ptr(""), Tags: &seppv1.QueueTags{}, MaxReserved: ptr(uint64(0))}, []string{"fairness_key"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !u.SetDeadLetterQueue || !u.SetTags || u.Name != "q" || u.Set.Name != "" {
		t.Fatalf("update %+v: want the dead-letter queue and the tags set, the name on the update only", u)
	}
	if want := []string{"fairness_key", "max_reserved"}; !reflect.DeepEqual(u.Inherit, want) {
		t.Fatalf("inherit %v, want %v", u.Inherit, want)
	}
	if u, _ := apiconv.QueueUpdate("q", &seppv1.QueueSettings{}, nil, nil); u.SetDeadLetterQueue || u.SetTags || len(u.Inherit) != 0 {
		t.Fatalf("empty settings: %+v, want nothing set", u)
	}
}

// TestQueueConfig_Refusals: what the API refuses, naming the request's
// field and the limit, as an *engine.FieldError the rpc layer maps.
func TestQueueConfig_Refusals(t *testing.T) {
	tooManyTags := map[string]string{}
	for i := range engine.MaxQueueTags + 1 {
		tooManyTags[string(rune('a'+i%26))+string(rune('a'+i/26))] = ""
	}
	tests := []struct {
		name      string
		in        *seppv1.QueueSettings
		wantField string
		wantLimit string
	}{
		{"MaxLength", &seppv1.QueueSettings{MaxLength: ptr(uint64(math.MaxInt32) + 1)}, "settings.max_length", "0..2147483647"},
		{"MaxMemory", &seppv1.QueueSettings{MaxMemoryBytes: ptr(uint64(math.MaxInt64) + 1)}, "settings.max_memory_bytes", "0..2^63-1"},
		{"RetryDelayOverflow", &seppv1.QueueSettings{RetryDelayMs: ptr(int64(math.MaxInt64))}, "settings.retry_delay_ms", "milliseconds in an int64 of nanoseconds"},
		{"Backoff", &seppv1.QueueSettings{RetryBackoff: ptr(seppv1.RetryBackoff_RETRY_BACKOFF_UNSPECIFIED)}, "settings.retry_backoff", "RETRY_BACKOFF_NONE or RETRY_BACKOFF_EXPONENTIAL"},
		{"MaxWaitZero", &seppv1.QueueSettings{MaxWaitMs: ptr(int64(0))}, "settings.max_wait_ms", ">= 1"},
		{"FairnessKeyEmpty", &seppv1.QueueSettings{FairnessKey: ptr("")}, "settings.fairness_key", "a custom field name"},
		{"MaxReserved", &seppv1.QueueSettings{MaxReserved: ptr(uint64(1_000_001))}, "settings.max_reserved", "0..1000000"},
		{"RatePeriod", &seppv1.QueueSettings{RatePeriodMs: ptr(int64(3_600_001))}, "settings.rate_period_ms", "1..3600000"},
		{"ConcurrencyKey", &seppv1.QueueSettings{ConcurrencyKey: ptr(string(make([]byte, 257)))}, "settings.concurrency_key", "256 bytes"},
		{"TooManyTags", &seppv1.QueueSettings{Tags: &seppv1.QueueTags{Tags: tooManyTags}}, "settings.tags.tags", "at most 50 tags"},
		{"BadTagKey", &seppv1.QueueSettings{Tags: &seppv1.QueueTags{Tags: map[string]string{"ok": "", "": "v"}}}, `settings.tags.tags[""]`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, err := range []error{
				func() error { _, err := apiconv.QueueConfig("q", tt.in); return err }(),
				func() error { _, err := apiconv.QueueUpdate("q", tt.in, nil, nil); return err }(),
			} {
				var fe *engine.FieldError
				if !errors.Is(err, engine.ErrInvalidArgument) || !errors.As(err, &fe) {
					t.Fatalf("err = %v, want an invalid field", err)
				}
				if fe.Field != tt.wantField || (tt.wantLimit != "" && fe.Limit != tt.wantLimit) {
					t.Fatalf("field %q limit %q, want %q %q", fe.Field, fe.Limit, tt.wantField, tt.wantLimit)
				}
			}
		})
	}
}
