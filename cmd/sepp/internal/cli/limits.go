package cli

import (
	"fmt"
	"strings"
	"time"

	seppv1 "github.com/sepp-io/sepp/proto/sepp/v1"
)

// reserveLimitsText describes a queue's reserve limits for `sepp info`,
// empty when it sets none.
func reserveLimitsText(q *seppv1.QueueLimits) string {
	var parts []string
	if n := q.GetMaxReserved(); n > 0 {
		parts = append(parts, fmt.Sprintf("max_reserved=%d", n))
	}
	if n := q.GetRateLimit(); n > 0 {
		parts = append(parts, fmt.Sprintf("rate_limit=%d/%s burst=%d", n, time.Duration(q.GetRatePeriodMs())*time.Millisecond, q.GetRateBurst()))
	}
	if n := q.GetMaxPerKey(); n > 0 {
		parts = append(parts, fmt.Sprintf("max_per_key=%d (concurrency_key %q)", n, q.GetConcurrencyKey()))
	}
	if ms := q.GetMaxWaitMs(); ms > 0 {
		parts = append(parts, fmt.Sprintf("max_wait=%s", time.Duration(ms)*time.Millisecond))
	}
	if k := q.GetFairnessKey(); k != "" {
		parts = append(parts, fmt.Sprintf("fairness_key=%q", k))
	}
	if ms := q.GetCompletedRetentionMs(); ms > 0 {
		parts = append(parts, fmt.Sprintf("completed_retention=%s", time.Duration(ms)*time.Millisecond))
	}
	return strings.Join(parts, " ")
}
