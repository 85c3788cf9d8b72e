// Package cli holds the operator subcommands of the sepp binary (enqueue,
// reserve, ack, nack, queues, jobs, dead-letters, pause, resume, cluster,
// info). They talk to a running cluster over gRPC through the Go client
// (package client), so they follow the leader and ride through a failover
// like any other client. Commands returns them for the `sepp` root command;
// errors they return carry an exit code (ExitCode) that main passes on.
package cli
