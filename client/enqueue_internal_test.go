package client

import (
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	seppv1 "github.com/sepp-io/sepp/proto/sepp/v1"
)

// The generated write side of a job (enqueue_gen.go, from
// sepp.v1.EnqueueRequest) and its hand-kept wrapper: every proto field
// filled through the With methods, the whole wire message checked.

func enqTime(s int64) time.Time {
	return time.Unix(1_767_000_000+s, 5000).UTC()
}

const enqTraceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

// fullWireEnqueue is the wire message of TestEnqueueEveryField's request:
// every field set (everySet checks it).
func fullWireEnqueue() *seppv1.EnqueueRequest {
	p := uint32(7)
	return &seppv1.EnqueueRequest{
		Queue: "q", JobType: "email", Payload: []byte("hi"), Priority: &p,
		ScheduledAt: &timestamppb.Timestamp{Seconds: 1_767_000_001, Nanos: 5000},
		MaxAttempts: 4, Custom: map[string]string{"tenant": "acme"}, IdempotencyKey: "key-1",
		Unique: &seppv1.UniqueOptions{
			Key: "k-1", Fields: []string{"tenant", "region"}, CoverDead: true, CompletedForMs: 60_000, Refuse: true,
		},
		ExpiresAt:       &timestamppb.Timestamp{Seconds: 1_767_000_002, Nanos: 5000},
		TtlMs:           1500,
		TraceContext:    &seppv1.TraceContext{Traceparent: enqTraceparent, Tracestate: "vendor=x"},
		After:           []uint32{0, 2},
		OnParentFailure: seppv1.ParentFailurePolicy_PARENT_FAILURE_POLICY_RUN,
	}
}

func TestEnqueueEveryField(t *testing.T) {
	want := fullWireEnqueue()
	everySet(t, want.ProtoReflect())
	r := NewEnqueueRequest("q", "email").
		WithPayload([]byte("hi")).
		WithPriority(P7).
		WithScheduledAt(enqTime(1)).
		WithMaxAttempts(4).
		WithCustom("tenant", "acme").
		WithIdempotencyKey("the caller's, which the client passes on as key").
		WithUnique(UniqueOptions{Key: "k-1", Fields: []string{"tenant", "region"}, CoverDead: true,
			CompletedFor: 60*time.Second + 700*time.Microsecond, Refuse: true}).
		WithExpiresAt(enqTime(2)).
		WithTTL(1500*time.Millisecond+900*time.Microsecond).
		WithTraceContext(TraceContext{Traceparent: enqTraceparent, Tracestate: "vendor=x"}).
		WithAfter(0, 2).
		WithOnParentFailure(ParentFailureRun)
	if err := r.validate(""); err != nil {
		t.Fatal(err)
	}
	if got := r.toProto("key-1"); !proto.Equal(got, want) {
		t.Errorf("toProto:\n got %v\nwant %v", got, want)
	}
}

func TestEnqueueUnsetFields(t *testing.T) {
	got := NewEnqueueRequest("q", "t").toProto("k")
	want := &seppv1.EnqueueRequest{Queue: "q", JobType: "t", IdempotencyKey: "k"}
	if !proto.Equal(got, want) {
		t.Errorf("toProto:\n got %v\nwant %v", got, want)
	}
	got = NewEnqueueRequest("q", "t").WithPriority(P0).WithUnique(UniqueOptions{}).toProto("k")
	if got.Priority == nil || *got.Priority != 0 || got.Unique == nil {
		t.Errorf("a priority of 0 and empty unique options are sent: %v", got)
	}
}
