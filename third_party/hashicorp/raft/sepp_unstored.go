// Copyright (c) HashiCorp, Inc.
// SPDX-License-Identifier: MPL-2.0

// This file is part of sepp's patch to hashicorp/raft v1.7.3; see
// SEPP-PATCH.md in this folder.

package raft

import "sync"

// unstoredLogs holds the entries a leader is appending to its own log store
// while the replicators may already be sending them: the replicators read
// an entry from here until the store has it.
type unstoredLogs struct {
	mu   sync.Mutex
	logs []*Log // consecutive indexes, ascending
}

// set makes logs readable to the replicators before the store has them.
func (u *unstoredLogs) set(logs []*Log) {
	u.mu.Lock()
	u.logs = logs
	u.mu.Unlock()
}

// clear is called once the store has the entries (or failed to take them).
func (u *unstoredLogs) clear() {
	u.mu.Lock()
	u.logs = nil
	u.mu.Unlock()
}

// get copies the entry at index into out when it is one being appended.
func (u *unstoredLogs) get(index uint64, out *Log) bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	if len(u.logs) == 0 {
		return false
	}
	first := u.logs[0].Index
	if index < first || index-first >= uint64(len(u.logs)) {
		return false
	}
	*out = *u.logs[index-first]
	return true
}

// getLogForReplication reads an entry for an AppendEntries request: from
// the entries being appended when it is one of them, else from the store.
// The order matters: dispatchLogs clears unstored only after the store has
// the entries, so a miss here means the store holds the entry.
func (r *Raft) getLogForReplication(index uint64, out *Log) error {
	if r.unstored.get(index, out) {
		return nil
	}
	return r.logs.GetLog(index, out)
}
