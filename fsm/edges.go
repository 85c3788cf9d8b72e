package fsm

import (
	cmdpb "github.com/sepp-io/sepp/proto/seppcmd/v1"
)

// The dead-letter edges (CommandVersionDeadLetterEdges, versions.go) are
// each something an older binary would apply otherwise, so the leader
// proposes them only while every member applies that version:
//
//   - a RedriveStart selecting cause cancelled or expired (an older binary
//     refuses the cause);
//   - a QueueCreate or QueueUpdate that sets a dead_letter_queue, which
//     must name an existing queue (an older binary accepts any name and
//     creates the queue on the first death);
//   - a ConfigSet that sets forward_keeps_priority (a job forwarded to a
//     dead_letter_queue keeps its priority; an older binary gives it that
//     queue's default_priority when the queue sets one).

// ForwardKeepsPriorityConfigCommand builds the declarative ConfigSet of
// cmd (DeclaredConfigCommand or RecordFieldsConfigCommand) that also turns
// forwardKeepsPriority on.
func ForwardKeepsPriorityConfigCommand(cmd *cmdpb.Command) *cmdpb.Command {
	atLeast(&cmd.Version, CommandVersionDeadLetterEdges) // never lower what the config needs (tags)
	cmd.GetConfigSet().ForwardKeepsPriority = true
	return cmd
}
