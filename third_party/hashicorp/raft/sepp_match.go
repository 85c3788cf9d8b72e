// Copyright (c) sepp authors
// SPDX-License-Identifier: MPL-2.0

package raft

// SEPP PATCH: the leader's view of each voter's match index, for
// per-follower replication lag metrics. Upstream keeps it inside the
// leader loop's state only.

// MatchIndexes returns, while this node leads, every voter's match index
// (the last log index the leader knows the server stores; the leader's own
// entry included), and nil otherwise. Safe to call from any goroutine.
func (r *Raft) MatchIndexes() map[ServerID]uint64 {
	c := r.seppCommitment.Load()
	if c == nil {
		return nil
	}
	c.Lock()
	defer c.Unlock()
	out := make(map[ServerID]uint64, len(c.matchIndexes))
	for id, idx := range c.matchIndexes {
		out[id] = idx
	}
	return out
}
