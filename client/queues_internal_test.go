package client

import (
	"reflect"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	seppv1 "github.com/sepp-io/sepp/proto/sepp/v1"
)

// fillEvery sets every field of m that keep accepts to a value other than
// its default, by kind, so a field added to the proto is covered without
// an edit here: integers 7, strings "x", bools true, an enum its last
// value, a map-wrapping message one entry.
func fillEvery(t *testing.T, m protoreflect.Message, keep func(protoreflect.FieldDescriptor) bool) {
	t.Helper()
	fields := m.Descriptor().Fields()
	for i := range fields.Len() {
		f := fields.Get(i)
		if !keep(f) {
			continue
		}
		switch f.Kind() {
		case protoreflect.Uint32Kind, protoreflect.Fixed32Kind:
			m.Set(f, protoreflect.ValueOfUint32(7))
		case protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
			m.Set(f, protoreflect.ValueOfUint64(7))
		case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind:
			m.Set(f, protoreflect.ValueOfInt32(7))
		case protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
			m.Set(f, protoreflect.ValueOfInt64(7))
		case protoreflect.BoolKind:
			m.Set(f, protoreflect.ValueOfBool(true))
		case protoreflect.StringKind:
			m.Set(f, protoreflect.ValueOfString("x"))
		case protoreflect.EnumKind:
			vs := f.Enum().Values()
			m.Set(f, protoreflect.ValueOfEnum(vs.Get(vs.Len()-1).Number()))
		case protoreflect.MessageKind:
			w := m.NewField(f).Message()
			mf := w.Descriptor().Fields().Get(0)
			w.Mutable(mf).Map().Set(protoreflect.ValueOfString("k").MapKey(), protoreflect.ValueOfString("v"))
			m.Set(f, protoreflect.ValueOfMessage(w))
		default:
			t.Fatalf("%s: no test value for %v", f.FullName(), f.Kind())
		}
	}
}

// TestQueueSettings_EveryProtoFieldRoundTrips: QueueSettings is the Go
// form of the API's (queue_settings_gen.go), so every field of the proto,
// set, survives the way there and back and sets a field of the Go struct;
// a setting the client does not carry fails here, not a user's update.
func TestQueueSettings_EveryProtoFieldRoundTrips(t *testing.T) {
	every := &seppv1.QueueSettings{}
	fillEvery(t, every.ProtoReflect(), func(protoreflect.FieldDescriptor) bool { return true })
	native := queueSettingsFromProto(every)
	v := reflect.ValueOf(native)
	for i := range v.NumField() {
		if v.Field(i).IsNil() {
			t.Errorf("QueueSettings.%s is nil though every proto field is set", v.Type().Field(i).Name)
		}
	}
	back, err := queueSettingsToProto(native)
	if err != nil {
		t.Fatal(err)
	}
	if !proto.Equal(back, every) {
		t.Fatalf("round trip:\n in  %v\n out %v", every, back)
	}
	if got, err := queueSettingsToProto(QueueSettings{}); err != nil || !proto.Equal(got, &seppv1.QueueSettings{}) {
		t.Fatalf("unset settings send %v, %v; want none", got, err)
	}
}

// TestQueueLimits_EveryEffectiveSettingIsRead: every QueueLimits field
// named as a QueueSettings one is read into the effective settings, and
// nothing else is (tags: QueueLimits has none).
func TestQueueLimits_EveryEffectiveSettingIsRead(t *testing.T) {
	settings := (&seppv1.QueueSettings{}).ProtoReflect()
	named := func(f protoreflect.FieldDescriptor) bool {
		return settings.Descriptor().Fields().ByName(f.Name()) != nil
	}
	limits := &seppv1.QueueLimits{}
	fillEvery(t, limits.ProtoReflect(), named)
	fillEvery(t, settings, func(f protoreflect.FieldDescriptor) bool {
		return limits.ProtoReflect().Descriptor().Fields().ByName(f.Name()) != nil
	})
	got, err := queueSettingsToProto(queueLimitsFromProto(limits))
	if err != nil {
		t.Fatal(err)
	}
	if !proto.Equal(got, settings.Interface()) {
		t.Fatalf("effective settings:\n from %v\n read %v\n want %v", limits, got, settings.Interface())
	}
	if e := queueLimitsFromProto(limits); e.Tags != nil || e.DefaultPriority == nil {
		t.Fatalf("effective settings %+v: want every field but Tags", e)
	}
}

// TestQueueSettings_NativeForms pins the forms the round trips cannot
// see: durations in whole milliseconds, the enum by its value names, a
// present but empty tag set.
func TestQueueSettings_NativeForms(t *testing.T) {
	ms := int64(1500)
	exp := seppv1.RetryBackoff_RETRY_BACKOFF_EXPONENTIAL
	s := queueSettingsFromProto(&seppv1.QueueSettings{RetryDelayMs: &ms, RetryBackoff: &exp, Tags: &seppv1.QueueTags{}})
	if s.RetryDelay == nil || *s.RetryDelay != 1500*time.Millisecond {
		t.Errorf("RetryDelay %v, want 1.5s", s.RetryDelay)
	}
	if s.RetryBackoff == nil || *s.RetryBackoff != "exponential" {
		t.Errorf("RetryBackoff %v, want exponential", s.RetryBackoff)
	}
	if s.Tags == nil || len(s.Tags) != 0 {
		t.Errorf("Tags %v, want an empty non-nil map", s.Tags)
	}
	unknown := seppv1.RetryBackoff(99)
	if s := queueSettingsFromProto(&seppv1.QueueSettings{RetryBackoff: &unknown}); *s.RetryBackoff != "none" {
		t.Errorf("an unknown backoff reads as %q, want none", *s.RetryBackoff)
	}
	d := 2*time.Second + 700*time.Microsecond
	p, err := queueSettingsToProto(QueueSettings{RetryDelay: &d, RetryBackoff: ptrTo("none")})
	if err != nil || p.GetRetryDelayMs() != 2000 || p.GetRetryBackoff() != seppv1.RetryBackoff_RETRY_BACKOFF_NONE {
		t.Errorf("sent %v, %v; want retry_delay_ms 2000, backoff NONE", p, err)
	}
	if _, err := queueSettingsToProto(QueueSettings{RetryBackoff: ptrTo("linear")}); err == nil {
		t.Error("backoff linear accepted")
	}
}
