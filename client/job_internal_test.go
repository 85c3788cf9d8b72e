package client

import (
	"reflect"
	"testing"
	"time"

	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	seppv1 "github.com/sepp-io/sepp/proto/sepp/v1"
)

// The generated read side of a job (job_gen.go, from sepp.v1.Job): every
// proto field filled, every Go field checked.

func jobTS(s int64) *timestamppb.Timestamp {
	return &timestamppb.Timestamp{Seconds: 1_767_000_000 + s, Nanos: 5000}
}
func jobAt(s int64) time.Time { return time.Unix(1_767_000_000+s, 5000).UTC() }

func fullWireJob() *seppv1.Job {
	return &seppv1.Job{
		Id: 1<<53 + 3, Queue: "q", JobType: "t", Payload: []byte("payload"), Priority: 7,
		State:      seppv1.JobState_JOB_STATE_RESERVED,
		EnqueuedAt: jobTS(0), ScheduledAt: jobTS(1), NextAttemptAt: jobTS(2), Attempt: 3, MaxAttempts: 5,
		Custom:   map[string]string{"a": "1", "b": "2"},
		WorkerId: "w-1", LeaseDeadline: jobTS(3), LastReason: "boom",
		History: []*seppv1.JobAttempt{{
			Attempt: 2, WorkerId: "w-a", EndedAt: jobTS(6), Outcome: "nack", Reason: "boom", StartedAt: jobTS(5),
			Duration: durationpb.New(1500 * time.Millisecond), LeaseToken: 1<<64 - 1, Directive: "after",
		}},
		StartedAt: jobTS(4),
		Origin: &seppv1.JobOrigin{Queue: "src", JobId: 1<<53 + 1, Cause: seppv1.DeadLetterCause_DEAD_LETTER_CAUSE_LEASE_EXPIRED,
			FailedAt: jobTS(7), LastReason: "late", FinalAttempt: 3},
		ExpiresAt:    jobTS(60),
		TraceContext: &seppv1.TraceContext{Traceparent: "tp", Tracestate: "congo=t61rcWkgMzE"},
		Result:       []byte("result"), CompletedAt: jobTS(8), RunTime: durationpb.New(2250 * time.Millisecond),
		Progress: &seppv1.Progress{Percent: 42, Message: "half"},
		Parents: []*seppv1.JobParent{{JobId: 7, State: seppv1.JobState_JOB_STATE_COMPLETED, Cause: seppv1.DeadLetterCause_DEAD_LETTER_CAUSE_ADMIN,
			Ended: true, ResultKept: true, Result: []byte("parent"), ResultOmitted: true}},
		OnParentFailure:      seppv1.ParentFailurePolicy_PARENT_FAILURE_POLICY_RUN,
		WaitingChildren:      []uint64{11, 1<<64 - 2},
		WaitingChildrenTotal: 101,
	}
}

// everySet fails on a field of m, or of a message in it, left unset: a
// field added to the proto fails here until the test's wire message
// (fullWireJob, fullWireEnqueue) fills it.
func everySet(t *testing.T, m protoreflect.Message) {
	t.Helper()
	fields := m.Descriptor().Fields()
	for i := range fields.Len() {
		f := fields.Get(i)
		if !m.Has(f) {
			t.Errorf("%s is unset: fill it in the test's wire message", f.FullName())
			continue
		}
		switch {
		case f.IsList() && f.Message() != nil:
			for j := range m.Get(f).List().Len() {
				everySet(t, m.Get(f).List().Get(j).Message())
			}
		case f.Message() != nil && !f.IsMap() && f.Message().FullName().Parent() == m.Descriptor().FullName().Parent():
			everySet(t, m.Get(f).Message())
		}
	}
}

// noZero fails on a field of v (a struct, or a pointer to or slice of
// one) left at its zero value: a generated line gone leaves one.
func noZero(t *testing.T, path string, v reflect.Value) {
	t.Helper()
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			t.Errorf("%s is nil", path)
			return
		}
		noZero(t, path, v.Elem())
	case reflect.Slice:
		if v.Len() == 0 {
			t.Errorf("%s is empty", path)
		}
		if v.Type().Elem().Kind() == reflect.Struct {
			for i := range v.Len() {
				noZero(t, path+"[i]", v.Index(i))
			}
		}
	case reflect.Struct:
		if v.Type() == reflect.TypeFor[time.Time]() {
			if v.Interface().(time.Time).IsZero() {
				t.Errorf("%s is zero", path)
			}
			return
		}
		for i := range v.NumField() {
			noZero(t, path+"."+v.Type().Field(i).Name, v.Field(i))
		}
	default:
		if v.IsZero() {
			t.Errorf("%s is zero", path)
		}
	}
}

func TestJobFromProtoReadsEveryField(t *testing.T) {
	m := fullWireJob()
	everySet(t, m.ProtoReflect())
	got := jobFromProto(m)
	noZero(t, "Job", reflect.ValueOf(got))
	want := Job{
		ID: 1<<53 + 3, Queue: "q", Type: "t", Payload: []byte("payload"), Priority: P7, State: StateReserved,
		EnqueuedAt: jobAt(0), ScheduledAt: jobAt(1), NextAttemptAt: jobAt(2), Attempt: 3, MaxAttempts: 5,
		Custom:   map[string]string{"a": "1", "b": "2"},
		WorkerID: "w-1", LeaseDeadline: jobAt(3), LastReason: "boom",
		History: []JobAttempt{{
			Attempt: 2, WorkerID: "w-a", EndedAt: jobAt(6), Outcome: "nack", Reason: "boom", StartedAt: jobAt(5),
			Duration: 1500 * time.Millisecond, LeaseToken: 1<<64 - 1, Directive: "after",
		}},
		StartedAt:    jobAt(4),
		Origin:       &JobOrigin{Queue: "src", JobID: 1<<53 + 1, Cause: CauseLeaseExpired, FailedAt: jobAt(7), LastReason: "late", FinalAttempt: 3},
		ExpiresAt:    jobAt(60),
		TraceContext: &TraceContext{Traceparent: "tp", Tracestate: "congo=t61rcWkgMzE"},
		Result:       []byte("result"), CompletedAt: jobAt(8), RunTime: 2250 * time.Millisecond,
		Progress: &Progress{Percent: 42, Message: "half"},
		Parents: []JobParent{{JobID: 7, State: StateCompleted, Cause: CauseAdmin, Ended: true, ResultKept: true,
			Result: []byte("parent"), ResultOmitted: true}},
		OnParentFailure:      ParentFailureRun,
		WaitingChildren:      []uint64{11, 1<<64 - 2},
		WaitingChildrenTotal: 101,
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("jobFromProto:\n got %+v\nwant %+v", got, want)
	}
}

func TestJobFromProtoOfNothing(t *testing.T) {
	// Unset times are zero, unset messages nil, and the policy the
	// default, cancel; no job at all is the zero Job.
	if got, want := jobFromProto(&seppv1.Job{}), (Job{OnParentFailure: ParentFailureCancel}); !reflect.DeepEqual(got, want) {
		t.Errorf("jobFromProto of an empty job = %+v, want %+v", got, want)
	}
	if got := jobFromProto(nil); !reflect.DeepEqual(got, Job{}) {
		t.Errorf("jobFromProto(nil) = %+v", got)
	}
	if got := jobFromProto(&seppv1.Job{State: 99}).State; got.String() != "unknown" {
		t.Errorf("an unknown state reads as %v", got)
	}
}
