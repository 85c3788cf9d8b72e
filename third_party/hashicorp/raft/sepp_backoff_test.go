// Copyright (c) HashiCorp, Inc.
// SPDX-License-Identifier: MPL-2.0

// This file is part of sepp's patch to hashicorp/raft v1.7.3; see
// SEPP-PATCH.md in this folder (sixth change).

package raft

import (
	"testing"
	"time"
)

func TestSeppReplicationRetryWait(t *testing.T) {
	const hb = 500 * time.Millisecond
	tests := []struct {
		failures uint64
		want     time.Duration
	}{
		{failures: 1, want: 10 * time.Millisecond},
		{failures: 2, want: 10 * time.Millisecond},
		{failures: 3, want: 20 * time.Millisecond},
		{failures: 6, want: 160 * time.Millisecond},
		{failures: 7, want: hb / 2},  // upstream: 320ms
		{failures: 12, want: hb / 2}, // upstream: 10.24s
		{failures: 1000, want: hb / 2},
	}
	for _, tt := range tests {
		if got := replicationRetryWait(hb, tt.failures); got != tt.want {
			t.Errorf("replicationRetryWait(%v, %d) = %v, want %v", hb, tt.failures, got, tt.want)
		}
	}
	// A shorter heartbeat timeout lowers the cap with it.
	if got := replicationRetryWait(100*time.Millisecond, 12); got != 50*time.Millisecond {
		t.Errorf("replicationRetryWait(100ms, 12) = %v, want 50ms", got)
	}
}
