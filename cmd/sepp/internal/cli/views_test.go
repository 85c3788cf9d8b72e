package cli

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sepp-io/sepp/client"
)

// jobViewKeys is where each field of the client's job types (generated
// from sepp.v1.Job) shows in the CLI's --json view: its JSON keys, one
// or more. A field the view leaves out on purpose maps to nothing.
var jobViewKeys = map[string]map[string][]string{
	"Job": {
		"ID": {"id"}, "Queue": {"queue"}, "Type": {"job_type"}, "Payload": {"payload"},
		"Priority": {"priority"}, "State": {"state"}, "EnqueuedAt": {"enqueued_at"},
		"ScheduledAt": {"scheduled_at"}, "NextAttemptAt": {"next_attempt_at"}, "Attempt": {"attempt"},
		"MaxAttempts": {"max_attempts"}, "Custom": {"custom"}, "WorkerID": {"worker_id"},
		"LeaseDeadline": {"lease_deadline"}, "LastReason": {"last_reason"}, "History": {"history"},
		"StartedAt": {"started_at"}, "Origin": {"origin"}, "ExpiresAt": {"expires_at"},
		"TraceContext": {"traceparent", "tracestate"}, "Result": {"result"},
		"CompletedAt": {"completed_at"}, "RunTime": {"run_time_ms"}, "Progress": {"progress"},
		"Parents": {"parents"}, "OnParentFailure": {"on_parent_failure"},
		"WaitingChildren": {"waiting_children"}, "WaitingChildrenTotal": {"waiting_children_total"},
	},
	"JobAttempt": {
		"Attempt": {"attempt"}, "WorkerID": {"worker_id"}, "StartedAt": {"started_at"}, "EndedAt": {"ended_at"},
		"Duration": {"duration_ms"}, "LeaseToken": {"lease_token"}, "Outcome": {"outcome"},
		"Directive": {"directive"}, "Reason": {"reason"},
	},
	"JobOrigin": {
		"Queue": {"queue"}, "JobID": {"job_id"}, "Cause": {"cause"}, "FailedAt": {"failed_at"},
		"LastReason": {"last_reason"}, "FinalAttempt": {"final_attempt"},
	},
	"Progress": {"Percent": {"percent"}, "Message": {"message"}},
	"JobParent": {
		"JobID": {"job_id"}, "State": {"state"}, "Cause": {"cause"}, "Ended": {"ended"},
		"ResultKept": {"result_kept"}, "Result": {"result"},
		// Shown as result_omitted when set, in place of the result: the
		// test's parent has its result, so this one is not looked for.
		"ResultOmitted": {},
	},
}

// TestViewJob_ShowsEveryField: the client's Job is generated from the
// proto, so a field added there reaches the client without a hand-kept
// step; this test makes the CLI's --json view the one place it must be
// added by hand, and fails until it is. Every field of the job types,
// filled, must show under its keys in jobViewKeys, and every field must
// be listed there.
func TestViewJob_ShowsEveryField(t *testing.T) {
	var job client.Job
	fill(reflect.ValueOf(&job).Elem())
	job.State = client.StateDead // a dead parent's cause shows, and so here
	job.Parents[0].State = client.StateDead
	job.Parents[0].ResultOmitted = false
	b, err := json.Marshal(viewJob(job))
	if err != nil {
		t.Fatal(err)
	}
	var view map[string]any
	if err := json.Unmarshal(b, &view); err != nil {
		t.Fatal(err)
	}
	checkKeys(t, "Job", reflect.TypeOf(job), view)
	checkKeys(t, "JobAttempt", reflect.TypeOf(job.History[0]), view["history"].([]any)[0].(map[string]any))
	checkKeys(t, "JobOrigin", reflect.TypeOf(*job.Origin), view["origin"].(map[string]any))
	checkKeys(t, "Progress", reflect.TypeOf(*job.Progress), view["progress"].(map[string]any))
	checkKeys(t, "JobParent", reflect.TypeOf(job.Parents[0]), view["parents"].([]any)[0].(map[string]any))
}

func checkKeys(t *testing.T, name string, typ reflect.Type, view map[string]any) {
	t.Helper()
	keys := jobViewKeys[name]
	for i := range typ.NumField() {
		f := typ.Field(i)
		want, listed := keys[f.Name]
		if !listed {
			t.Errorf("client.%s.%s is not in the CLI's JSON view: show it in views.go and list it in jobViewKeys", name, f.Name)
			continue
		}
		for _, k := range want {
			if _, ok := view[k]; !ok {
				t.Errorf("client.%s.%s, filled, does not show as %q in the CLI's JSON view %v", name, f.Name, k, sortedKeys(view))
			}
		}
	}
	for field := range keys {
		if _, ok := typ.FieldByName(field); !ok {
			t.Errorf("jobViewKeys lists %s.%s, which client.%s no longer has", name, field, name)
		}
	}
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// fill sets every field of v, recursively, to a value that is not zero.
func fill(v reflect.Value) {
	switch v.Kind() {
	case reflect.Struct:
		if v.Type() == reflect.TypeOf(time.Time{}) {
			v.Set(reflect.ValueOf(time.Date(2026, 12, 6, 1, 2, 3, 0, time.UTC)))
			return
		}
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				fill(v.Field(i))
			}
		}
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		fill(v.Elem())
	case reflect.Slice:
		v.Set(reflect.MakeSlice(v.Type(), 1, 1))
		fill(v.Index(0))
	case reflect.Map:
		m := reflect.MakeMap(v.Type())
		k, e := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
		fill(k)
		fill(e)
		m.SetMapIndex(k, e)
		v.Set(m)
	case reflect.String:
		v.SetString(strings.ToLower(v.Type().Name()) + "-x")
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		if v.Type() == reflect.TypeOf(time.Duration(0)) {
			v.SetInt(int64(1500 * time.Millisecond))
			return
		}
		v.SetInt(1)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(1)
	}
}
