// Copyright (c) HashiCorp, Inc.
// SPDX-License-Identifier: MPL-2.0

// This file is part of sepp's patch to hashicorp/raft v1.7.3; see
// SEPP-PATCH.md in this folder (fifth change).

package raft

import (
	"math/rand"
	"sync/atomic"
	"time"
)

// maxLeaseProbes is how many heartbeat rounds a leader sends, after a lease
// check found no quorum, before it steps down. Each round has
// leaseProbeWindow to reach a quorum, so a leader that is really cut off
// steps down maxLeaseProbes windows after its lease ran out (375ms at
// sepp's 500ms lease), still before its followers, which wait one to two
// heartbeat timeouts and a grace, can have elected another. The bound keeps
// a leader that is starved for good from holding on forever.
const maxLeaseProbes = 3

// leaseAction is what the leader loop does after a lease check.
type leaseAction int

const (
	// leaseKeep: a quorum was heard from within the lease; carry on.
	leaseKeep leaseAction = iota
	// leaseProbe: no quorum within the lease, and fewer than
	// maxLeaseProbes heartbeat rounds sent since; send one and check again
	// after leaseProbeWindow.
	leaseProbe
	// leaseStepDown: maxLeaseProbes heartbeat rounds sent after a failed
	// check had their chance and none reached a quorum.
	leaseStepDown
)

// leaseProbeState is the leader loop's memory between a failed lease check
// and its verdict.
type leaseProbeState struct {
	probes int // heartbeat rounds sent since the last passing check
}

// leaseProbeWindow is how long a heartbeat round sent after a failed lease
// check has to reach a quorum: two of the leader's heartbeat intervals at
// sepp's defaults, long enough for loopback and LAN round trips on a busy
// host, short enough that a cut-off leader still steps down well within two
// leases.
func leaseProbeWindow(leaseTimeout time.Duration) time.Duration {
	w := leaseTimeout / 4
	if w < minCheckInterval {
		w = minCheckInterval
	}
	return w
}

// leaseVerdict decides what a lease check means. hashicorp/raft judges the
// lease by wall-clock time: a leader whose own process was descheduled (CPU
// starvation, a stop signal, a long GC pause of the whole process) wakes to
// find every follower's last contact as old as the stall, and upstream
// stepped down at once, although its heartbeat goroutines, runnable at the
// same moment, had not yet had a chance to refresh them. etcd counts ticks,
// and a stalled process does not tick. Here a failed check first sends a
// fresh heartbeat round, and the leader steps down only once
// maxLeaseProbes rounds in a row reached no quorum.
//
// Until issue 22's last measurements a round checked on time and found
// empty ended the lease at once (only a late check earned another round).
// With one member of three down, every lease then rests on the one
// follower left; when that follower's own process was starved for longer
// than a window, its late answer to a single round deposed a healthy leader
// (the logs' "heartbeat-rounds=1"). Waiting out all rounds costs a cut-off
// leader 250ms more before it steps down, which no client notices: the
// followers elect its successor no sooner.
func leaseVerdict(quorum bool, p leaseProbeState) leaseAction {
	switch {
	case quorum:
		return leaseKeep
	case p.probes < maxLeaseProbes:
		return leaseProbe
	default:
		return leaseStepDown
	}
}

// leaseCheckHook, when set, runs on the main loop at the start of every
// lease check (a leader's) or heartbeat check (a follower's). Tests use it
// to age last contacts as a stall of the node's own process would.
type leaseCheckHook = atomic.Pointer[func(r *Raft)]

// runLeaseCheckHook runs the leader's test hook, if any. Main thread only.
func (r *Raft) runLeaseCheckHook() {
	if h := r.leaseCheckHook.Load(); h != nil {
		(*h)(r)
	}
}

// runFollowerCheckHook runs the follower's test hook, if any. Main thread
// only.
func (r *Raft) runFollowerCheckHook() {
	if h := r.followerCheckHook.Load(); h != nil {
		(*h)(r)
	}
}

// sendLeaseProbe asks every replicator for an immediate heartbeat, as
// verifyLeader does, without a future to answer. Main thread only.
func (r *Raft) sendLeaseProbe() {
	for _, repl := range r.leaderState.replState {
		asyncNotifyCh(repl.notifyCh)
	}
}

// The follower's side of the same problem: a follower whose process was
// descheduled wakes with its heartbeat timer due and the leader's
// heartbeats still unread in its sockets; upstream's loop, woken by the
// timer before the transport's goroutines read them, saw a silence as old
// as the stall and stood for election. When the two followers of a
// three-node cluster stall together (they share a host, or a host's CPU
// starvation), each grants the other's pre-vote and a healthy leader is
// deposed. So a follower that finds the leader silent first re-checks after
// followerGrace, which gives the transport time to deliver what arrived
// during the stall; while those re-checks themselves fire late (the process
// stalled again), it re-checks again, up to maxFollowerGraces. On a host
// that keeps its timers a frozen or cut-off leader is detected one grace
// later than upstream would.

// maxFollowerGraces bounds the re-checks of a follower that finds its
// leader silent, so a follower starved for good still stands for election.
const maxFollowerGraces = 3

// followerGrace is the re-check's delay: one of the leader's heartbeat
// intervals (a tenth of the heartbeat timeout).
func followerGrace(heartbeatTimeout time.Duration) time.Duration {
	g := heartbeatTimeout / 10
	if g < minCheckInterval {
		g = minCheckInterval
	}
	return g
}

// followerSilenceVerdict says whether a follower whose leader has been
// silent for a whole heartbeat timeout stands for election now (true), or
// re-checks after followerGrace first (false). graces is how many re-checks
// it made since it last heard from a leader, due when the current timer was
// meant to fire. heard is whether this node has heard from any leader
// since it started: until it has, there is no leader a stall could make it
// depose, and it stands at once, as upstream does (a new cluster's, or a
// restarted node's, first election is not delayed).
func followerSilenceVerdict(heard bool, graces int, due, now time.Time, grace time.Duration) bool {
	switch {
	case !heard:
		return true
	case graces == 0:
		return false
	case now.Sub(due) > grace && graces < maxFollowerGraces:
		return false
	default:
		return true
	}
}

// randomDuration is randomTimeout's duration: between minVal and 2x minVal.
func randomDuration(minVal time.Duration) time.Duration {
	if minVal == 0 {
		return 0
	}
	return minVal + time.Duration(rand.Int63())%minVal
}
