// Copyright (c) HashiCorp, Inc.
// SPDX-License-Identifier: MPL-2.0

// Tests of sepp's patch to hashicorp/raft (seventh change: a vote for a
// candidate outside the voter's configuration whose log is newer); see
// SEPP-PATCH.md and sepp_vote.go.

package raft

import (
	"testing"
	"time"
)

// TestSeppVoteForAMemberAddedByAnEntryTheVoterLacks: B is removed and
// added back while C is cut off, so C's latest configuration lacks B. The
// leader then stops. B and C are a majority of the newest configuration;
// C must vote for B, whose log holds the entries C lacks, and B must lead.
// Upstream, C refuses B as "not in configuration" and B refuses C's older
// log: no leader until the old one returns.
func TestSeppVoteForAMemberAddedByAnEntryTheVoterLacks(t *testing.T) {
	conf := inmemConfig(t)
	conf.HeartbeatTimeout = 50 * time.Millisecond
	conf.ElectionTimeout = 50 * time.Millisecond
	conf.LeaderLeaseTimeout = 50 * time.Millisecond
	c := MakeCluster(3, t, conf)
	defer c.Close()

	leader := c.Leader()
	followers := c.WaitForFollowers(2)
	b, cn := followers[0], followers[1]

	if err := leader.RemoveServer(b.localID, 0, 0).Error(); err != nil {
		t.Fatalf("remove B: %v", err)
	}
	waitFor(t, "C drops B", func() bool { return len(c.getConfiguration(cn).Servers) == 2 })

	c.Disconnect(cn.localAddr)
	if err := leader.AddVoter(b.localID, b.localAddr, 0, 0).Error(); err != nil {
		t.Fatalf("add B back: %v", err)
	}
	if err := leader.Apply([]byte("after B's return"), time.Second).Error(); err != nil {
		t.Fatalf("apply: %v", err)
	}
	waitFor(t, "B holds its return", func() bool { return inConfiguration(c.getConfiguration(b), b.localID) })
	if inConfiguration(c.getConfiguration(cn), b.localID) {
		t.Fatal("C learned of B's return while cut off")
	}

	if err := leader.Shutdown().Error(); err != nil {
		t.Fatalf("shutdown: %v", err)
	}
	c.FullyConnect()
	waitFor(t, "B elected by C's vote", func() bool { return b.State() == Leader })
	waitFor(t, "C learns B's return", func() bool { return inConfiguration(c.getConfiguration(cn), b.localID) })
}

// TestSeppNoVoteForARemovedServer: a server removed from the configuration
// gets no vote from one that holds its removal, even with a higher term:
// its log cannot be newer than the removal.
func TestSeppNoVoteForARemovedServer(t *testing.T) {
	c := MakeCluster(3, t, nil)
	defer c.Close()
	leader := c.Leader()
	followers := c.WaitForFollowers(2)
	removed, voter := followers[0], followers[1]
	if err := leader.RemoveServer(removed.localID, 0, 0).Error(); err != nil {
		t.Fatalf("remove: %v", err)
	}
	waitFor(t, "the voter drops the removed server", func() bool { return len(c.getConfiguration(voter).Servers) == 2 })

	lastIndex, lastTerm := removed.getLastEntry()
	req := RequestVoteRequest{
		RPCHeader:    removed.getRPCHeader(),
		Term:         removed.getCurrentTerm() + 10,
		LastLogIndex: lastIndex,
		LastLogTerm:  lastTerm,
	}
	var resp RequestVoteResponse
	if err := c.trans[c.IndexOf(removed)].RequestVote(voter.localID, voter.localAddr, &req, &resp); err != nil {
		t.Fatalf("RequestVote: %v", err)
	}
	if resp.Granted {
		t.Fatal("a removed server got a vote")
	}
	preReq := RequestPreVoteRequest{
		RPCHeader:    removed.getRPCHeader(),
		Term:         removed.getCurrentTerm() + 10,
		LastLogIndex: lastIndex,
		LastLogTerm:  lastTerm,
	}
	var preResp RequestPreVoteResponse
	if err := c.trans[c.IndexOf(removed)].RequestPreVote(voter.localID, voter.localAddr, &preReq, &preResp); err != nil {
		t.Fatalf("RequestPreVote: %v", err)
	}
	if preResp.Granted {
		t.Fatal("a removed server got a pre-vote")
	}
}

// TestSeppNoVoteWithoutConfiguration: a server with no configuration at
// all refuses votes and pre-votes when SeppRefuseVotesWithoutConfiguration
// is set, and grants them as upstream does when it is not.
func TestSeppNoVoteWithoutConfiguration(t *testing.T) {
	for _, refuse := range []bool{true, false} {
		t.Run(map[bool]string{true: "refuses", false: "upstream grants"}[refuse], func(t *testing.T) {
			conf := inmemConfig(t)
			conf.SeppRefuseVotesWithoutConfiguration = refuse
			c := MakeClusterNoBootstrap(2, t, conf)
			defer c.Close()
			candidate, voter := c.rafts[0], c.rafts[1]
			req := RequestVoteRequest{RPCHeader: candidate.getRPCHeader(), Term: 5, LastLogIndex: 10, LastLogTerm: 4}
			var resp RequestVoteResponse
			if err := c.trans[0].RequestVote(voter.localID, voter.localAddr, &req, &resp); err != nil {
				t.Fatalf("RequestVote: %v", err)
			}
			preReq := RequestPreVoteRequest{RPCHeader: candidate.getRPCHeader(), Term: 6, LastLogIndex: 10, LastLogTerm: 4}
			var preResp RequestPreVoteResponse
			if err := c.trans[0].RequestPreVote(voter.localID, voter.localAddr, &preReq, &preResp); err != nil {
				t.Fatalf("RequestPreVote: %v", err)
			}
			if resp.Granted == refuse || preResp.Granted == refuse {
				t.Fatalf("vote granted %v, pre-vote granted %v; want %v", resp.Granted, preResp.Granted, !refuse)
			}
		})
	}
}

// TestSeppEmptyVoterVotesOnceAdded: with the refusal set on every server,
// a server added to a running cluster gets the configuration from the
// leader and then takes part in elections: the cluster still elects a
// leader after the old one stops.
func TestSeppEmptyVoterVotesOnceAdded(t *testing.T) {
	conf := inmemConfig(t)
	conf.SeppRefuseVotesWithoutConfiguration = true
	c := MakeCluster(2, t, conf)
	defer c.Close()
	extra := MakeClusterNoBootstrap(1, t, conf)
	c.Merge(extra)
	c.FullyConnect()
	leader := c.Leader()
	joiner := extra.rafts[0]
	if err := leader.AddVoter(joiner.localID, joiner.localAddr, 0, 0).Error(); err != nil {
		t.Fatalf("add: %v", err)
	}
	waitFor(t, "the joiner holds a configuration", func() bool { return len(c.getConfiguration(joiner).Servers) == 3 })
	if err := leader.Shutdown().Error(); err != nil {
		t.Fatalf("shutdown: %v", err)
	}
	waitFor(t, "a new leader among the other two", func() bool {
		for _, r := range c.rafts {
			if r != leader && r.State() == Leader {
				return true
			}
		}
		return false
	})
}
