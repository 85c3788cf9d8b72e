// Copyright (c) HashiCorp, Inc.
// SPDX-License-Identifier: MPL-2.0

// This file is part of sepp's patch to hashicorp/raft v1.7.3; see
// SEPP-PATCH.md in this folder (sixth change).

package raft

import "time"

// replicationRetryWait is how long replicateTo waits before it retries an
// AppendEntries (or snapshot) that failed failures times in a row.
//
// Upstream doubles from failureWait up to failureWait<<10, 10.24s, while the
// heartbeat loop's own backoff is capped at half a heartbeat timeout
// (upstream PR #494). A follower that was down for half a minute therefore
// answers heartbeats within 250ms of its restart but receives the entries it
// missed only up to 10s later: sepp's compose test saw 11s between a
// restarted node's first answer and "pipelining replication", and its fault
// campaign measured replicas agreeing 2.3s after the last fault. The same cap
// as the heartbeats' keeps a retry to a dead peer to a few cheap dials a
// second.
func replicationRetryWait(heartbeatTimeout time.Duration, failures uint64) time.Duration {
	return cappedExponentialBackoff(failureWait, failures, maxFailureScale, heartbeatTimeout/2)
}
