package cli

import (
	"strings"
	"testing"
)

// TestInfo_CapabilitiesMembersAndLimits: sepp info lists the server's
// capabilities with their command versions and whether the whole cluster
// can use them, every member, and every limit.
func TestInfo_CapabilitiesMembersAndLimits(t *testing.T) {
	addr := startServer(t)
	out := mustRun(t, addr, "info")
	for _, want := range []string{
		"capability ack_batch",
		"command version 2, cluster-wide",
		"capability dead_letter_edges",
		"capability reserve_retry_window",
		"member n1",
		"command versions 1..",
		"limits.max_message_bytes",
		"limits.idempotency_window_ms",
		"limits.retry_backoff",
		"RETRY_BACKOFF_",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("sepp info lacks %q:\n%s", want, out)
		}
	}
	info := decode[map[string]any](t, mustRun(t, addr, "info", "--json"))
	caps, _ := info["capabilities"].([]any)
	found := false
	for _, c := range caps {
		m := c.(map[string]any)
		if m["name"] == "unique_jobs" {
			found = m["command_version"].(float64) == 8 && m["cluster_ready"] == true
		}
	}
	if !found {
		t.Fatalf("info --json capabilities lack unique_jobs at version 8, ready: %v", caps)
	}
	if ms, _ := info["members"].([]any); len(ms) != 1 {
		t.Fatalf("info --json members: %v", info["members"])
	}
}
