package cluster

import (
	"context"
	"errors"
	"fmt"

	"github.com/sepp-io/sepp/engine"
	"github.com/sepp-io/sepp/fsm"
)

// An EnqueueBatch request may carry up to server.max_message_bytes of jobs
// (16 MiB by default), far above the proposer's max_entry_bytes (512 KiB),
// the size at which group commit stops merging commands into one log
// entry. One command that large would be one large entry for raft to
// write, replicate (up to max_append_entries of them per AppendEntries)
// and hand to the state machine, so a large batch is split into commands
// of about max_entry_bytes each, handed to the proposer together: they
// still follow one another in the log, normally within few entries, and
// apply in order, so items keep their order and a repeated idempotency key
// within the batch still finds its first item's job.

// batchItemOverhead bounds what an item's command encoding adds to its
// strings' lengths (tags, lengths, priority, schedule, attempts).
const batchItemOverhead = 64

// customFieldOverhead bounds the tags and lengths of one custom-field entry.
const customFieldOverhead = 12

// itemBytes is an upper bound on an item's share of its encoded command.
func itemBytes(p *engine.EnqueueParams) int {
	n := batchItemOverhead + len(p.Queue) + len(p.JobType) + len(p.Payload) + len(p.IdempotencyKey)
	for k, v := range p.Custom {
		n += len(k) + len(v) + customFieldOverhead
	}
	return n
}

// splitBatch returns the end of each chunk of items whose items' bytes
// stay within maxBytes (a chunk holds at least one item, however large),
// or nil when the batch fits whole, the common case, which allocates
// nothing. Chunking only bounds entry sizes, so an estimate suffices.
func splitBatch(items []engine.EnqueueParams, maxBytes int) (ends []int) {
	size := 0
	for i := range items {
		b := itemBytes(&items[i])
		if size+b > maxBytes && size > 0 {
			ends = append(ends, i)
			size = 0
		}
		size += b
	}
	if ends == nil {
		return nil
	}
	return append(ends, len(items))
}

// enqueueBatchSplit proposes items as one JobEnqueueBatch per chunk.
//
// The engine refuses a batch above limits.max_batch_size whole; chunks are
// smaller, so the limit is checked here first against this leader's
// applied limits (a change of the limit racing with the batch may let one
// batch through under the old limit, as it would have a moment earlier).
//
// Outcomes: every chunk applied gives every item's result. If no chunk
// applied and every failure is definite (nothing proposed, or refused),
// the first error is returned as the whole batch's, as for one command.
// Otherwise some items may be in the queue and some not, and the caller is
// told ErrUnknownOutcome, which it retries with the items' idempotency
// keys, the same contract as a single command whose outcome is lost.
func (n *Node) enqueueBatchSplit(ctx context.Context, items []engine.EnqueueParams, ends []int) ([]engine.BatchItemResult, error) {
	if err := n.waitReady(ctx); err != nil {
		return nil, err
	}
	maxBatch := 0
	if err := n.fsm.Read(func(e *engine.Engine) error {
		maxBatch = e.Config().Limits.MaxBatchSize
		return nil
	}); err != nil {
		return nil, err
	}
	if len(items) > maxBatch {
		return nil, &engine.FieldError{Field: "items",
			Reason: fmt.Sprintf("batch of %d exceeds limits.max_batch_size %d", len(items), maxBatch), Err: engine.ErrInvalidArgument}
	}
	prs := make([]*proposal, len(ends))
	errs := make([]error, len(ends))
	start := 0
	for c, end := range ends {
		prs[c], errs[c] = n.prop.enqueue(ctx, n.enqueueBatchCommand(items[start:end]))
		start = end
		if errs[c] != nil {
			// Later chunks are not proposed either: they would land
			// out of the caller's order.
			for rest := c + 1; rest < len(ends); rest++ {
				errs[rest] = errs[c]
			}
			break
		}
	}
	out := make([]engine.BatchItemResult, 0, len(items))
	applied := 0
	var firstErr error
	unknown := false
	start = 0
	for c, end := range ends {
		want := end - start
		start = end
		var res fsm.Result
		err := errs[c]
		if prs[c] != nil {
			res, err = n.prop.await(ctx, prs[c])
			if err == nil {
				err = res.Err
			}
			if err == nil && len(res.Batch) != want {
				err = fmt.Errorf("%w: state machine answered %d results for a chunk of %d items", ErrUnknownOutcome, len(res.Batch), want)
			}
		}
		if err != nil {
			if firstErr == nil {
				firstErr = err
			}
			unknown = unknown || errors.Is(err, ErrUnknownOutcome)
			continue
		}
		applied++
		out = append(out, res.Batch...)
	}
	switch {
	case firstErr == nil:
		return out, nil
	case applied == 0 && !unknown:
		return nil, firstErr
	default:
		return nil, fmt.Errorf("%w: %d of %d parts of a split batch applied: %w", ErrUnknownOutcome, applied, len(ends), firstErr)
	}
}
