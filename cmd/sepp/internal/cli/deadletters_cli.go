package cli

import (
	"context"
	"fmt"
	"io"

	"github.com/sepp-io/sepp/client"
)

// explainNoDeadLetters says why a dead-letter listing or drain came back
// empty when the reason is that the cluster keeps no dead letters: dead jobs
// are dropped on the spot, and how many were. It writes to errOut under
// --json (so the JSON stays parseable) and to out otherwise. known says
// retentionOn and dropped came from the server's drain answer; else (or when
// it said off, which an older server also says) they are read here.
func (e *env) explainNoDeadLetters(ctx context.Context, c *client.Client, errOut, out io.Writer, queue string, retentionOn bool, dropped uint64, known bool) error {
	if e.json {
		out = errOut
	}
	if known && retentionOn {
		if !e.json {
			fmt.Fprintln(out, "no dead letters")
		}
		return nil
	}
	info, err := c.ServerInfoStale(ctx)
	if err != nil {
		return err
	}
	if info.DeadLetterRetentionEnabled {
		if !e.json {
			fmt.Fprintln(out, "no dead letters")
		}
		return nil
	}
	if !known {
		if dropped, err = droppedTotal(ctx, c, queue); err != nil {
			return err
		}
	}
	fmt.Fprintln(out, droppedMessage(queue, dropped))
	return nil
}

// droppedMessage is the one wording of "retention is off" the CLI prints.
func droppedMessage(queue string, dropped uint64) string {
	where := "the cluster"
	if queue != "" {
		where = fmt.Sprintf("queue %s", queue)
	}
	return fmt.Sprintf("dead-letter retention is off ([storage] dead_letter_retention_ms = 0): dead jobs are dropped, not kept; %s has dropped %d", where, dropped)
}

func droppedTotal(ctx context.Context, c *client.Client, queue string) (uint64, error) {
	qs, err := c.ListQueues(ctx, true)
	if err != nil {
		return 0, err
	}
	var n uint64
	for _, q := range qs {
		if queue == "" || q.Name == queue {
			n += q.DroppedTotal
		}
	}
	return n, nil
}
