// Package history records what clients of a sepp cluster saw — every call
// with its start, end and outcome (ok, failed, unknown) — and checks the
// record afterwards against the promises sepp makes through faults:
//
//   - every enqueue acknowledged to a client is later delivered and acked,
//     or dead-lettered per its rules (lost = 0);
//   - an enqueue retried after a failover (same idempotency key) exists once;
//   - no job is held under a valid lease by two deliveries at once, and an ack
//     succeeds only for the job's current lease;
//   - attempt numbers grow by one per delivery and never exceed max_attempts;
//   - among jobs that were Ready together, higher priority goes first and
//     FIFO holds within a priority (where the record proves they were Ready
//     together);
//   - the per-job history is linearizable against a sequential model of one
//     job's lifecycle (checked with porcupine, partitioned by job id).
//
// It knows nothing of how calls are made: integration tests fill a Recorder
// from the Go client and hand Check the final server-side state. It imports
// only the standard library and porcupine, so its checks are unit-tested
// with planted bugs.
package history
