package cluster

import (
	"context"
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
	Lacking string // which member does not apply it, and why (memberLacking)
}

func (e *CommandVersionError) Error() string {
	return fmt.Sprintf("%s needs command version %d, which not every member of the cluster applies yet (%s); upgrade or start every member, then retry", e.Feature, e.Version, e.Lacking)
}

// checkUniqueVersion refuses unique enqueues until every member applies
// fsm.CommandVersionUnique: an older member would drop the options and add
// the jobs the others refuse, and the replicas' states would split.
func (n *Node) checkUniqueVersion(ctx context.Context, items []engine.EnqueueParams) error {
	if fsm.HasUnique(items) {
		if err := n.requireVersion(ctx, "unique", fsm.CommandVersionUnique); err != nil {
			return err
		}
	}
	// Likewise a deadline (ttl, expires_at): an older member would keep
	// the jobs the others expire.
	if fsm.HasExpiry(items) {
		if err := n.requireVersion(ctx, "expiry (ttl, expires_at)", fsm.CommandVersionExpiryFairness); err != nil {
			return err
		}
	}
	return nil
}

// requireVersion refuses, with a *CommandVersionError, a request for
// feature unless every member applies command version v (membersApplyFor).
func (n *Node) requireVersion(ctx context.Context, feature string, v uint32) error {
	ok, err := n.membersApplyFor(ctx, v)
	if err != nil {
		return err
	}
	if !ok {
		return &CommandVersionError{Feature: feature, Version: v, Lacking: n.memberLacking(v)}
	}
	return nil
}
