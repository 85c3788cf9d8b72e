package cli

import (
	"testing"

	seppv1 "github.com/sepp-io/sepp/proto/sepp/v1"
)

// sepp queues --json has every count the API's QueueSummary returns, under
// the API's field names (a duration as its _ms form).
func TestQueuesJSON_HasEveryAPIField(t *testing.T) {
	addr := startServer(t)
	mustRun(t, addr, "enqueue", "q", "t")
	mustRun(t, addr, "enqueue", "q", "t")
	mustRun(t, addr, "queues", "purge", "q", "--waiting")
	qs := decode[[]map[string]any](t, mustRun(t, addr, "queues", "--json"))
	if len(qs) != 1 {
		t.Fatalf("queues: %v", qs)
	}
	renamed := map[string]string{"oldest_ready_age": "oldest_ready_age_ms"}
	fields := (&seppv1.QueueSummary{}).ProtoReflect().Descriptor().Fields()
	for i := range fields.Len() {
		name := string(fields.Get(i).Name())
		if r, ok := renamed[name]; ok {
			name = r
		}
		if _, ok := qs[0][name]; !ok {
			t.Errorf("queues --json has no %q (the API's QueueSummary.%s)", name, fields.Get(i).Name())
		}
	}
	if qs[0]["purged_total"] != float64(2) {
		t.Errorf("purged_total = %v, want 2", qs[0]["purged_total"])
	}
}
