package apiconv_test

import (
	"errors"
	"reflect"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/sepp-io/sepp/apiconv"
	"github.com/sepp-io/sepp/engine"
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
		Unique:          &seppv1.UniqueOptions{Key: "u", Fields: []string{"a"}, CoverDead: true, CompletedForMs: 1500, Refuse: true},
		ExpiresAt:       timestamppb.New(time.Unix(200, 0)),
		TtlMs:           60000,
		TraceContext:    &seppv1.TraceContext{Traceparent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", Tracestate: "k=v"},
		After:           []uint32{0, 2},
		OnParentFailure: seppv1.ParentFailurePolicy_PARENT_FAILURE_POLICY_RUN,
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
	if !apiconv.StatesExactly(&p) {
		t.Fatal("StatesExactly refuses params the public form states")
	}
	// The batch form, whose messages share one slab, says the same.
	batch := apiconv.EnqueueRequests([]engine.EnqueueParams{{Queue: "plain"}, p, {Queue: "scheduled", ScheduledAt: time.Unix(-5, 999)}})
	if len(batch) != 3 || !proto.Equal(batch[1], r) || !proto.Equal(batch[0], &seppv1.EnqueueRequest{Queue: "plain"}) ||
		!proto.Equal(batch[2], &seppv1.EnqueueRequest{Queue: "scheduled", ScheduledAt: timestamppb.New(time.Unix(-5, 999))}) {
		t.Fatalf("EnqueueRequests: %v", batch)
	}
	items, err := apiconv.EnqueueBatchParams(batch)
	if err != nil || len(items) != 3 || !reflect.DeepEqual(items[1], p) {
		t.Fatalf("EnqueueBatchParams: %+v, %v", items, err)
	}
}

// TestEnqueueParams_Dependencies: a policy without after, an unknown
// policy and an index out of range are refused naming the field.
func TestEnqueueParams_Dependencies(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name  string
		r     *seppv1.EnqueueRequest
		field string
	}{
		{"policy without after", &seppv1.EnqueueRequest{OnParentFailure: seppv1.ParentFailurePolicy_PARENT_FAILURE_POLICY_RUN}, "jobs[2].on_parent_failure"},
		{"unknown policy", &seppv1.EnqueueRequest{After: []uint32{0}, OnParentFailure: 9}, "jobs[2].on_parent_failure"},
		{"index out of range", &seppv1.EnqueueRequest{After: []uint32{1 << 31}}, "jobs[2].after[0]"},
	} {
		_, err := apiconv.EnqueueParams("jobs[2].", tt.r)
		var fe *engine.FieldError
		if !errors.As(err, &fe) || fe.Field != tt.field || !errors.Is(err, engine.ErrInvalidArgument) {
			t.Errorf("%s: %v, want invalid naming %s", tt.name, err, tt.field)
		}
	}
}

// TestStatesExactly: params the API's milliseconds and timestamps cannot
// state are left to the log's older form.
func TestStatesExactly(t *testing.T) {
	t.Parallel()
	year10000 := time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		name string
		p    engine.EnqueueParams
		want bool
	}{
		{"plain", engine.EnqueueParams{Queue: "q"}, true},
		{"scheduled to the nanosecond", engine.EnqueueParams{ScheduledAt: time.Unix(1, 1)}, true},
		{"scheduled past year 9999", engine.EnqueueParams{ScheduledAt: year10000}, false},
		{"ttl in milliseconds", engine.EnqueueParams{Expiry: &engine.ExpiryOpts{TTL: time.Second}}, true},
		{"ttl finer than a millisecond", engine.EnqueueParams{Expiry: &engine.ExpiryOpts{TTL: time.Second + time.Microsecond}}, false},
		{"ttl negative", engine.EnqueueParams{Expiry: &engine.ExpiryOpts{TTL: -time.Second}}, false},
		{"expires at", engine.EnqueueParams{Expiry: &engine.ExpiryOpts{At: time.Unix(5, 5)}}, true},
		{"expires past year 9999", engine.EnqueueParams{Expiry: &engine.ExpiryOpts{At: year10000}}, false},
		{"empty expiry", engine.EnqueueParams{Expiry: &engine.ExpiryOpts{}}, false},
		{"unique window in milliseconds", engine.EnqueueParams{Unique: &engine.UniqueOpts{CompletedFor: time.Minute}}, true},
		{"after, run anyway", engine.EnqueueParams{After: []int{0, 1}, OnParentFailure: engine.ParentFailureRun}, true},
		{"a policy without after", engine.EnqueueParams{OnParentFailure: engine.ParentFailureRun}, false},
		{"unique window finer", engine.EnqueueParams{Unique: &engine.UniqueOpts{CompletedFor: time.Nanosecond}}, false},
	}
	for _, tt := range tests {
		if got := apiconv.StatesExactly(&tt.p); got != tt.want {
			t.Errorf("%s: StatesExactly %v, want %v", tt.name, got, tt.want)
		}
	}
}
