package client

import (
	"testing"

	"google.golang.org/protobuf/proto"

	seppv1 "github.com/sepp-io/sepp/proto/sepp/v1"
)

// TestQueueSettings_EveryProtoFieldRoundTrips: QueueSettings is the Go
// form of the API's, so every field of the proto survives the way there
// and back. The proto below sets every field (the descriptor walk fails
// when one is added and not set here), so a queue setting the client
// does not carry fails this test, not a user's update.
func TestQueueSettings_EveryProtoFieldRoundTrips(t *testing.T) {
	u32 := func(v uint32) *uint32 { return &v }
	u64 := func(v uint64) *uint64 { return &v }
	i64 := func(v int64) *int64 { return &v }
	str := func(v string) *string { return &v }
	backoff := seppv1.RetryBackoff_RETRY_BACKOFF_EXPONENTIAL
	every := &seppv1.QueueSettings{
		DefaultPriority: u32(7), DefaultMaxAttempts: u32(4), RetryDelayMs: i64(1500), RetryBackoff: &backoff,
		RetryDelayMaxMs: i64(60_000), MaxScheduleHorizonMs: i64(3_600_000), MaxLength: u64(1000), MaxMemoryBytes: u64(1 << 20),
		DeadLetterQueue: str("q.dead"), MaxWaitMs: i64(90_000), FairnessKey: str("tenant"), CompletedRetentionMs: i64(3_600_000),
		MaxReserved: u64(9), RateLimit: u64(5), RatePeriodMs: i64(2000), RateBurst: u64(3), ConcurrencyKey: str("region"), MaxPerKey: u64(2),
		Tags: &seppv1.QueueTags{Tags: map[string]string{"env": "prod"}},
	}
	m := every.ProtoReflect()
	fields := m.Descriptor().Fields()
	for i := range fields.Len() {
		if f := fields.Get(i); !m.Has(f) {
			t.Fatalf("the test's settings leave %s unset: set it, so the round trip covers it", f.Name())
		}
	}
	back, err := queueSettingsToProto(queueSettingsFromProto(every))
	if err != nil {
		t.Fatal(err)
	}
	if !proto.Equal(back, every) {
		t.Fatalf("round trip:\n in  %v\n out %v", every, back)
	}
}
