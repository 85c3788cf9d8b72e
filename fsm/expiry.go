package fsm

import (
	"slices"

	"github.com/sepp-io/sepp/engine"
)

// HasExpiry reports whether an item sets a deadline of its own, which
// takes CommandVersionExpiryFairness.
func HasExpiry(items []engine.EnqueueParams) bool {
	for i := range items {
		if items[i].Expiry != nil {
			return true
		}
	}
	return false
}

// expiryFairnessInQueue reports whether a queue's settings or inherited
// keys touch max_wait or fairness_key.
func expiryFairnessInQueue(qc engine.QueueConfig, inherit []string) bool {
	return qc.MaxWait != 0 || qc.FairnessKey != "" ||
		slices.Contains(inherit, "max_wait_ms") || slices.Contains(inherit, "fairness_key")
}

// atLeast raises c's version to v.
func atLeast(version *uint32, v uint32) {
	if *version < v {
		*version = v
	}
}
