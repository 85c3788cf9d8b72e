package cluster

import (
	"fmt"

	"github.com/sepp-io/sepp/engine"
	"github.com/sepp-io/sepp/fsm"
)

// CommandVersionError refuses a request that needs a command version not
// every member of the cluster applies yet (a rolling upgrade is under way):
// nothing was proposed. The gRPC layer answers FailedPrecondition.
type CommandVersionError struct {
	Feature string // what the request uses, e.g. "unique"
	Version uint32 // the command version it needs
}

func (e *CommandVersionError) Error() string {
	return fmt.Sprintf("%s needs command version %d, which not every member of the cluster applies yet; finish upgrading every member first", e.Feature, e.Version)
}

// checkUniqueVersion refuses unique enqueues until every member applies
// fsm.CommandVersionUnique: an older member would drop the options and add
// the jobs the others refuse, and the replicas' states would split.
func (n *Node) checkUniqueVersion(items []engine.EnqueueParams) error {
	if fsm.HasUnique(items) && !n.membersApply(fsm.CommandVersionUnique) {
		return &CommandVersionError{Feature: "unique", Version: fsm.CommandVersionUnique}
	}
	// Likewise a deadline (ttl, expires_at): an older member would keep
	// the jobs the others expire.
	if fsm.HasExpiry(items) && !n.membersApply(fsm.CommandVersionExpiryFairness) {
		return &CommandVersionError{Feature: "expiry (ttl, expires_at)", Version: fsm.CommandVersionExpiryFairness}
	}
	return nil
}
