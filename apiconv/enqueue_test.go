package apiconv_test

import (
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/sepp-io/sepp/apiconv"
	seppv1 "github.com/sepp-io/sepp/proto/sepp/v1"
)

// TestEnqueueRequest_RoundTrips: the public form the leader writes of an
// ack's follow-ups converts back to the same params, for a request that
// sets every field (checked by its descriptor, so that a field added to
// EnqueueRequest and not to the conversion fails here).
func TestEnqueueRequest_RoundTrips(t *testing.T) {
	t.Parallel()
	prio := uint32(7)
	r := &seppv1.EnqueueRequest{
		Queue: "q", JobType: "t", Payload: []byte("p"), Priority: &prio,
		ScheduledAt: timestamppb.New(time.Unix(100, 5)), MaxAttempts: 4,
		Custom: map[string]string{"a": "b"}, IdempotencyKey: "k",
		Unique:       &seppv1.UniqueOptions{Key: "u", Fields: []string{"a"}, CoverDead: true, CompletedForMs: 1500, Refuse: true},
		ExpiresAt:    timestamppb.New(time.Unix(200, 0)),
		TtlMs:        60000,
		TraceContext: &seppv1.TraceContext{Traceparent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", Tracestate: "k=v"},
	}
	fields := r.ProtoReflect().Descriptor().Fields()
	for i := range fields.Len() {
		if f := fields.Get(i); !r.ProtoReflect().Has(f) {
			t.Fatalf("the test's request leaves %s unset", f.Name())
		}
	}
	p, err := apiconv.EnqueueParams("", r)
	if err != nil {
		t.Fatal(err)
	}
	back := apiconv.EnqueueRequest(&p)
	if !proto.Equal(r, back) {
		t.Fatalf("round trip:\n%v\nwant\n%v", back, r)
	}
}
