// Package store is sepp's on-disk store: the parts of a job that do not
// decide order or deadlines (payload, job type, custom fields, attempt
// history, reasons, origin, result) and the dead-letter records, kept in a
// Pebble database so that a node's memory does not grow with its backlog's
// bodies. What decides order and deadlines stays in the engine's memory.
//
// Contract with the FSM (see DESIGN.md):
//   - Deterministic: the store's content is a function of the Raft entries
//     applied. Every replica commits the same records from the same
//     entries, so Digest is equal on replicas at the same applied index.
//   - One Batch per applied entry (or per run of entries applied together)
//     carries the records and the applied index, committed atomically and
//     without an fsync (the Pebble WAL is off: the Raft log is the WAL).
//     After a crash the store holds exactly the entries up to AppliedIndex,
//     and the FSM replays the log from AppliedIndex()+1.
//   - Snapshots copy no bodies: Checkpoint hard-links the store's files;
//     WriteCheckpoint streams them to a follower that needs an install, and
//     ReadCheckpoint plus Install put them in place there.
//
// Records are protobuf messages of proto/seppstore/v1, marshalled
// deterministically (golden bytes in testdata/records.golden).
//
// The package imports Pebble and its own records only: not engine, fsm,
// cluster or raft. It keeps no clock and no randomness.
package store
