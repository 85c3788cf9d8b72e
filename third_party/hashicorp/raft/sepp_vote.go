package raft

// sepp's seventh change: a server votes for a candidate that is not in its
// latest configuration when the candidate's log is strictly newer than its
// own (SEPP-PATCH.md).
//
// Upstream refuses every (pre-)vote from a candidate outside the voter's
// latest configuration, so that a removed server cannot disrupt the
// cluster. But a voter that missed a configuration change also refuses the
// servers that change added: a server removed and added back while the
// voter was down is, to the voter, removed. If the one server that has the
// change and votes for both then fails, the two left are a majority of the
// newest configuration and elect nobody until it returns.
//
// Raft's safety does not rest on that refusal: a vote needs the
// candidate's log to be at least as up to date as the voter's, which keeps
// every committed entry in the winner's log. A candidate with a strictly
// newer log holds entries this server lacks, among them possibly the
// change that added it. A removed server cannot have one: the leader stops
// replicating to it once its removal is committed, so its log ends at or
// before the removal, which a majority holds; and a server whose own log
// holds its removal does not stand (runFollower's voter check). Pre-vote and
// the "we have a leader" refusal still keep a server with an old log from
// disrupting.

// seppNewerThanOurLog reports whether a log ending at (lastIndex,
// lastTerm) is strictly newer than this server's.
func (r *Raft) seppNewerThanOurLog(lastIndex, lastTerm uint64) bool {
	ourIndex, ourTerm := r.getLastEntry()
	return lastTerm > ourTerm || lastTerm == ourTerm && lastIndex > ourIndex
}

// seppMayBeNewerMember reports whether a candidate without a vote in this
// server's latest configuration may still get one: it is absent from that
// configuration (not a server it lists as a non-voter, whose refusal
// upstream keeps) and its log is strictly newer than ours.
func seppMayBeNewerMember(r *Raft, id ServerID, lastIndex, lastTerm uint64) bool {
	return !inConfiguration(r.configurations.latest, id) && r.seppNewerThanOurLog(lastIndex, lastTerm)
}

// sepp's eighth change: with Config.SeppRefuseVotesWithoutConfiguration, a
// server that has no configuration at all refuses votes and pre-votes.
//
// A server that starts empty to be added by the leader (sepp's joining
// node: bootstrap = false) has no configuration until the leader's
// AppendEntries or snapshot brings one. Upstream grants votes meanwhile, for
// clusters whose servers all start empty. But a voter whose disk was lost
// and which restarts empty before an operator removed it looks just the
// same, and its vote can elect a candidate that lacks entries this server
// acknowledged before the loss: with three servers, the other holder of an
// entry committed by the two is then outvoted. Refusing keeps every
// election to servers that hold their logs; the empty server votes again
// once the leader's configuration, which still lists it, reaches it.

// seppRefusesVoteWithoutConfiguration reports (and logs) whether a (pre-)
// vote request is refused for want of any configuration.
func (r *Raft) seppRefusesVoteWithoutConfiguration(candidate ServerAddress) bool {
	if len(r.configurations.latest.Servers) > 0 || !r.config().SeppRefuseVotesWithoutConfiguration {
		return false
	}
	r.logger.Warn("rejecting vote request since this server has no configuration yet (it votes once it is added)", "from", candidate)
	return true
}
