package cluster

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/hashicorp/raft"

	"github.com/sepp-io/sepp/fsm"
)

// defaultMembershipTimeout bounds a membership change when ctx has no
// deadline.
const defaultMembershipTimeout = 10 * time.Second

func timeoutFrom(ctx context.Context) time.Duration {
	if d, ok := ctx.Deadline(); ok {
		if t := time.Until(d); t > 0 {
			return t
		}
		return time.Millisecond
	}
	return defaultMembershipTimeout
}

// raftError maps a raft membership future's error to the node's errors.
func (n *Node) raftError(op string, err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, raft.ErrNotLeader):
		return n.notLeaderError()
	case errors.Is(err, raft.ErrRaftShutdown):
		return fmt.Errorf("cluster: %s: %w", op, ErrShutdown)
	case errors.Is(err, raft.ErrLeadershipLost):
		return fmt.Errorf("cluster: %s: %w: %w", op, ErrUnknownOutcome, err)
	default:
		return fmt.Errorf("cluster: %s: %w", op, err)
	}
}

// Join adds node as a voter (on the leader) and replicates its metadata,
// without a command version: only the member itself can say what its binary
// applies (Announce), so until it does the leader proposes it only commands
// every binary applies.
// Joining again with the same id and address is a no-op apart from the
// metadata; a member known under the same id or address with the other one
// changed is removed first (a node that came back with a new address).
func (n *Node) Join(ctx context.Context, node NodeInfo) error {
	if node.ID == "" || node.RaftAddr == "" {
		return fmt.Errorf("cluster: join: id and raft_addr are required (got id %q, raft_addr %q)", node.ID, node.RaftAddr)
	}
	if err := n.waitReady(ctx); err != nil {
		return err
	}
	cf := n.raft.GetConfiguration()
	if err := cf.Error(); err != nil {
		return n.raftError("join", err)
	}
	present := false
	for _, s := range cf.Configuration().Servers {
		sameID, sameAddr := s.ID == raft.ServerID(node.ID), s.Address == raft.ServerAddress(node.RaftAddr)
		switch {
		case sameID && sameAddr && s.Suffrage == raft.Voter:
			present = true
		case sameID || sameAddr:
			if err := n.raft.RemoveServer(s.ID, 0, timeoutFrom(ctx)).Error(); err != nil {
				return n.raftError(fmt.Sprintf("join: remove stale member %s", s.ID), err)
			}
		}
	}
	if !present {
		if err := n.raft.AddVoter(raft.ServerID(node.ID), raft.ServerAddress(node.RaftAddr), 0, timeoutFrom(ctx)).Error(); err != nil {
			return n.raftError("join: add voter "+node.ID, err)
		}
		n.log.Info("member joined", "id", node.ID, "raft_addr", node.RaftAddr)
	}
	res, err := n.prop.propose(ctx, fsm.SetNodeCommand(metaFromNodeInfo(node)))
	if err != nil {
		return fmt.Errorf("cluster: join: replicate metadata of %s: %w", node.ID, err)
	}
	if res.Err == nil {
		n.askFactsSoon()
	}
	return res.Err
}

// Announce records, on the leader, a member's report of itself: its
// addresses and the highest command version its binary applies (that
// binary's fsm.CommandVersion). The leader proposes a newer command, such as
// AckBatch's one JobAckBatch, only once every member has reported that it
// applies it. Only the member knows what its binary applies, so Announce is
// for the member's own report, relayed to the leader; Join, which an
// operator runs on a member's behalf, records no version. Announce never
// changes the raft configuration: info.ID must already be a member.
//
// A node reports itself today only as the first entry of each of its terms
// as leader; a follower has no way yet to reach this method.
func (n *Node) Announce(ctx context.Context, info NodeInfo, maxCommandVersion uint32) error {
	if info.ID == "" || info.RaftAddr == "" {
		return fmt.Errorf("cluster: announce: id and raft_addr are required (got id %q, raft_addr %q)", info.ID, info.RaftAddr)
	}
	if err := n.waitReady(ctx); err != nil {
		return err
	}
	cf := n.raft.GetConfiguration()
	if err := cf.Error(); err != nil {
		return n.raftError("announce", err)
	}
	member := false
	for _, s := range cf.Configuration().Servers {
		member = member || s.ID == raft.ServerID(info.ID)
	}
	if !member {
		return fmt.Errorf("cluster: announce: %q is not a member of the configuration (join it first)", info.ID)
	}
	meta := metaFromNodeInfo(info)
	meta.MaxCommandVersion = maxCommandVersion
	if old, ok := n.fsm.Node(info.ID); ok {
		meta.Facts = old.Facts // what the member last reported stays
	}
	res, err := n.prop.propose(ctx, fsm.SetNodeCommand(meta))
	if err != nil {
		return fmt.Errorf("cluster: announce: replicate metadata of %s: %w", info.ID, err)
	}
	return res.Err
}

// Remove takes a member out of the configuration (on the leader) and drops
// its metadata. Removing the leader itself makes it step down once the
// change commits.
func (n *Node) Remove(ctx context.Context, id string) error {
	if id == "" {
		return fmt.Errorf("cluster: remove: id is required")
	}
	if err := n.waitReady(ctx); err != nil {
		return err
	}
	// Metadata first: once the leader has removed itself it cannot propose.
	res, err := n.prop.propose(ctx, fsm.DeleteNodeCommand(id))
	if err != nil {
		return fmt.Errorf("cluster: remove: drop metadata of %s: %w", id, err)
	}
	if res.Err != nil {
		return res.Err
	}
	if err := n.raft.RemoveServer(raft.ServerID(id), 0, timeoutFrom(ctx)).Error(); err != nil {
		return n.raftError("remove "+id, err)
	}
	n.log.Info("member removed", "id", id)
	return nil
}

// TransferLeadership hands leadership to the voter toID, or to the most
// up-to-date voter when toID is empty, and returns once the transfer is
// done (raft bounds it by an election timeout).
func (n *Node) TransferLeadership(ctx context.Context, toID string) error {
	if n.raft.State() != raft.Leader {
		return n.notLeaderError()
	}
	var f raft.Future
	if toID == "" {
		f = n.raft.LeadershipTransfer()
	} else {
		cf := n.raft.GetConfiguration()
		if err := cf.Error(); err != nil {
			return n.raftError("transfer leadership", err)
		}
		var addr raft.ServerAddress
		for _, s := range cf.Configuration().Servers {
			if s.ID == raft.ServerID(toID) && s.Suffrage == raft.Voter {
				addr = s.Address
			}
		}
		if addr == "" {
			return fmt.Errorf("cluster: transfer leadership: %q is not a voter of the configuration: %w", toID, ErrUnknownMember)
		}
		f = n.raft.LeadershipTransferToServer(raft.ServerID(toID), addr)
	}
	if err := f.Error(); err != nil {
		if n.leadershipMovedAfterTimeout(ctx, toID, err) {
			return nil
		}
		return n.raftError("transfer leadership", err)
	}
	return ctx.Err()
}

// leadershipMovedAfterTimeout reports whether a transfer that raft gave up
// on after its election timeout went through all the same: raft answers
// "leadership transfer timeout" once the timeout has passed since it
// began, even when it has already sent the target its TimeoutNow, and on a
// loaded host the target's election then ends just after. So the node
// watches, for one more election timeout (within ctx), for a leader other
// than itself (the target, when one was named).
func (n *Node) leadershipMovedAfterTimeout(ctx context.Context, toID string, err error) bool {
	if !strings.Contains(err.Error(), "leadership transfer timeout") {
		return false
	}
	moved := func() bool {
		l := n.Leader().ID
		return l != "" && l != n.self.ID && (toID == "" || l == toID)
	}
	deadline := time.NewTimer(n.cfg.ElectionTimeout)
	defer deadline.Stop()
	poll := time.NewTicker(10 * time.Millisecond)
	defer poll.Stop()
	for !moved() {
		select {
		case <-poll.C:
		case <-deadline.C:
			return moved()
		case <-ctx.Done():
			return false
		case <-n.shutdownCh:
			return false
		}
	}
	return true
}

// Status is this node's view of the cluster.
func (n *Node) Status(ctx context.Context) (Status, error) {
	st := Status{
		Self:              n.self,
		Leader:            n.Leader(),
		State:             n.raft.State().String(),
		Term:              n.raft.CurrentTerm(),
		CommitIndex:       n.raft.CommitIndex(),
		AppliedIndex:      n.raft.AppliedIndex(),
		PayloadStoreBytes: n.fsm.PayloadDiskBytes(),

		SnapshotCheckpointPinnedBytes: n.fsm.CheckpointPinnedBytes(),
		LastLogIndex:                  n.raft.LastIndex(),
	}
	cf := n.raft.GetConfiguration()
	if err := cf.Error(); err != nil {
		return st, n.raftError("status", err)
	}
	isLeader := n.raft.State() == raft.Leader
	clocks := n.ClockStatus()
	st.MaxClockSkew, st.ClockSkew = clocks.MaxSkew, clocks.Reason
	n.healthMu.Lock()
	defer n.healthMu.Unlock()
	for _, s := range cf.Configuration().Servers {
		m := Member{NodeInfo: NodeInfo{ID: string(s.ID), RaftAddr: string(s.Address)}, Voter: s.Suffrage == raft.Voter}
		if meta, ok := n.fsm.Node(string(s.ID)); ok {
			m.NodeInfo = nodeInfoFromMeta(meta)
			m.RaftAddr = string(s.Address)
		}
		if m.ID == n.self.ID {
			f := n.SelfFacts()
			m.Facts = &f
		} else if meta, ok := n.fsm.Node(string(s.ID)); ok {
			m.Facts = factsFromMeta(meta)
		}
		m.Leader = m.ID == st.Leader.ID
		if off, ok := clocks.Offsets[m.ID]; ok {
			m.Clock = &off
		}
		switch {
		case m.ID == n.self.ID && isLeader:
			m.Healthy = true
		case m.ID == n.self.ID:
			last := n.raft.LastContact()
			m.Healthy = !last.IsZero() && time.Since(last) < 3*n.cfg.HeartbeatTimeout
			if !last.IsZero() {
				m.LastContact = time.Since(last).Round(time.Millisecond).String()
			}
		case isLeader:
			failedAt, failing := n.failing[s.ID]
			m.Healthy = !failing
			if failing && !failedAt.IsZero() {
				m.LastContact = time.Since(failedAt).Round(time.Millisecond).String()
			}
		case m.Leader:
			// A follower knows the leader as well as it knows itself: by
			// the leader's last contact. (It used to fall through to
			// false, so a follower's answer showed the leader unhealthy.)
			last := n.raft.LastContact()
			m.Healthy = !last.IsZero() && time.Since(last) < 3*n.cfg.HeartbeatTimeout
			if !last.IsZero() {
				m.LastContact = time.Since(last).Round(time.Millisecond).String()
			}
		}
		st.Members = append(st.Members, m)
	}
	return st, ctx.Err()
}
