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
	Use     string // what the request uses, e.g. "unique"
	Feature string // the feature's name in fsm.Features, e.g. "unique_jobs"
	Version uint32 // the command version it needs
	Lacking string // which member does not apply it, and why (memberLacking)
}

func (e *CommandVersionError) Error() string {
	return fmt.Sprintf("%s needs %s, which not every member of the cluster applies yet (%s); upgrade or start every member, then retry", e.Use, versionNeed(e.Version), e.Lacking)
}

// checkUniqueVersion refuses unique enqueues until every member applies
// fsm.CommandVersionUnique: an older member would drop the options and add
// the jobs the others refuse, and the replicas' states would split.
func (n *Node) checkUniqueVersion(ctx context.Context, items []engine.EnqueueParams) error {
	if fsm.HasUnique(items) {
		if err := n.requireFeature(ctx, "unique", fsm.FeatureUnique); err != nil {
			return err
		}
	}
	// Likewise a deadline (ttl, expires_at): an older member would keep
	// the jobs the others expire.
	if fsm.HasExpiry(items) {
		if err := n.requireFeature(ctx, "expiry (ttl, expires_at)", fsm.FeatureExpiryFairness); err != nil {
			return err
		}
	}
	// And a dependency: an older member would make the job ready at once.
	if fsm.HasAfter(items) {
		if err := n.requireFeature(ctx, "dependencies (after)", fsm.FeatureDependencies); err != nil {
			return err
		}
	}
	return nil
}

// keepTrace reports whether an enqueue may carry its trace context: once
// every member applies fsm.CommandVersionTraceContext. Until then the
// leader proposes the enqueue without it (an older member would drop the
// field, and the replicas' states would differ), rather than refuse it as
// a unique enqueue is refused: a trace context is an observation, and a
// job must not fail for want of one. The job then answers without its
// trace context, so the server's and the worker's spans start traces of
// their own.
func (n *Node) keepTrace(ctx context.Context) (bool, error) {
	return n.membersApplyFor(ctx, fsm.CommandVersionTraceContext)
}

// requireFeature refuses, with a *CommandVersionError, a request whose use
// needs feature f unless every member applies f's command version
// (membersApplyFor).
func (n *Node) requireFeature(ctx context.Context, use string, f fsm.Feature) error {
	ok, err := n.membersApplyFor(ctx, f.CommandVersion)
	if err != nil {
		return err
	}
	if !ok {
		return &CommandVersionError{Use: use, Feature: f.Name, Version: f.CommandVersion, Lacking: n.memberLacking(f.CommandVersion)}
	}
	return nil
}
