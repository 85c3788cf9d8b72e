package cluster

import (
	"fmt"

	"github.com/hashicorp/raft"
)

// Readiness is whether this node is ready to serve, for /readyz: a node
// that answers its port (liveness, /healthz) may still be unable to do
// anything useful, and a rolling update or a PodDisruptionBudget that
// counts it as ready can take the cluster's quorum away.
type Readiness struct {
	Ready bool
	// Reason says why not (or "ready"), for the probe's body and logs.
	Reason       string
	State        string
	Leader       string // id of the leader known, "" if none
	Term         uint64
	CommitIndex  uint64
	AppliedIndex uint64 // what this node's state machine has applied
}

// Readiness reports the node ready when it knows a leader of the current
// term (it leads, with its term's first commands applied, or follows a
// leader it has heard from), and its state machine has applied the log to
// within maxLag entries of the commit index: a restarted node replaying
// its log, or one installing a snapshot from the leader, is not ready
// until it has caught up. (Raft restores a node's own snapshot before the
// node is built, so a node that answers has done that.) Entries that do
// not reach the state machine (a term's no-op, configuration changes)
// count in the lag, so maxLag must leave room for a few.
func (n *Node) Readiness(maxLag uint64) Readiness {
	st := n.raft.State()
	r := Readiness{
		State:        st.String(),
		Leader:       n.Leader().ID,
		Term:         n.raft.CurrentTerm(),
		CommitIndex:  n.raft.CommitIndex(),
		AppliedIndex: n.fsm.AppliedIndex(),
	}
	notReady := func(format string, args ...any) Readiness {
		r.Reason = fmt.Sprintf(format, args...)
		return r
	}
	select {
	case <-n.shutdownCh:
		return notReady("shutting down")
	default:
	}
	if skewed, reason := n.clockSkewed(); skewed {
		// A skewed node hands over any lead it wins (clock.go).
		return notReady("%s", reason)
	}
	switch st {
	case raft.Leader:
		if lr := n.ready.Load(); lr == nil || lr.term != r.Term || !closed(lr.ch) {
			return notReady("leader of term %d, not yet serving (its term's first commands are not applied)", r.Term)
		}
	case raft.Follower:
		if r.Leader == "" {
			return notReady("follower of term %d with no leader known", r.Term)
		}
	default:
		return notReady("%s of term %d: no leader", r.State, r.Term)
	}
	if r.CommitIndex > r.AppliedIndex+maxLag {
		return notReady("applied index %d is %d entries behind commit index %d (more than %d): catching up",
			r.AppliedIndex, r.CommitIndex-r.AppliedIndex, r.CommitIndex, maxLag)
	}
	r.Ready, r.Reason = true, "ready"
	return r
}

func closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}
