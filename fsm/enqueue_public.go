package fsm

import (
	"fmt"

	"github.com/sepp-io/sepp/apiconv"
	"github.com/sepp-io/sepp/engine"
	cmdpb "github.com/sepp-io/sepp/proto/seppcmd/v1"
)

// Enqueues in the public form (CommandVersionPublicEnqueue).
//
// From version 26 the log holds an enqueue as the producer's own
// sepp.v1.EnqueueRequest, as etcd's log holds its PutRequest: a field added
// to EnqueueRequest reaches every replica without a mirror in command.proto
// or a second converter, because apply converts the request with apiconv,
// the converter the API validated it with. The leader builds the request
// back from the params the API checked (apiconv.EnqueueRequest), so
// whatever reaches the engine is what the API would make of the request in
// the log. The older EnqueueParams form stays for the entries already in
// logs, for a cluster with a member that does not apply version 26, and for
// params the public form cannot state exactly (a deadline or window finer
// than the API's milliseconds, which only in-process callers make).

// PublicEnqueueCommand builds a JobEnqueue holding p as an EnqueueRequest,
// or reports false when the public form would not state p exactly
// (apiconv.StatesExactly); the caller then builds EnqueueCommand's older
// form. Propose it only to a cluster whose every member applies
// CommandVersionPublicEnqueue.
func PublicEnqueueCommand(p engine.EnqueueParams) (*cmdpb.Command, bool) {
	if !apiconv.StatesExactly(&p) {
		return nil, false
	}
	c := &cmdpb.Command{Version: CommandVersionPublicEnqueue}
	c.Op = &cmdpb.Command_JobEnqueue{JobEnqueue: &cmdpb.JobEnqueue{Request: apiconv.EnqueueRequest(&p)}}
	return c, true
}

// PublicEnqueueBatchCommand builds a JobEnqueueBatch holding items as
// EnqueueRequests (in one slab: apiconv.EnqueueRequests), or reports false
// when the public form would not state every item exactly. A batch whose
// items wait for each other is of CommandVersionDependencies.
func PublicEnqueueBatchCommand(items []engine.EnqueueParams) (*cmdpb.Command, bool) {
	for i := range items {
		if !apiconv.StatesExactly(&items[i]) {
			return nil, false
		}
	}
	c := &cmdpb.Command{Version: CommandVersionPublicEnqueue}
	if HasAfter(items) {
		c.Version = CommandVersionDependencies // an older binary would drop after
	}
	c.Op = &cmdpb.Command_JobEnqueueBatch{JobEnqueueBatch: &cmdpb.JobEnqueueBatch{Requests: apiconv.EnqueueRequests(items)}}
	return c, true
}

// errBothForms refuses, at apply, an enqueue that holds both forms: only a
// writer bug or a hostile entry makes one, and applying either half would
// guess at its intent. Every replica refuses it alike.
var errBothForms = fmt.Errorf("%w: an enqueue command holds both the older params and the public request", engine.ErrInvalidArgument)
