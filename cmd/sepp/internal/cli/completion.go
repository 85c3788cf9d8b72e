package cli

import (
	"context"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/sepp-io/sepp/client"
)

// completionTimeout bounds the call a shell completion makes: a tab press
// must not hang on an unreachable cluster.
const completionTimeout = 2 * time.Second

// completeQueueArg completes a QUEUE argument (the first) with the names
// the cluster knows, asked of any node (stale reads are fine for this).
func (e *env) completeQueueArg(cmd *cobra.Command, args []string, prefix string) ([]string, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	return e.queueNames(cmd, prefix), cobra.ShellCompDirectiveNoFileComp
}

// completeQueueFlag completes a --queue flag's value.
func (e *env) completeQueueFlag(cmd *cobra.Command, _ []string, prefix string) ([]string, cobra.ShellCompDirective) {
	return e.queueNames(cmd, prefix), cobra.ShellCompDirectiveNoFileComp
}

func (e *env) queueNames(cmd *cobra.Command, prefix string) []string {
	ctx, cancel := context.WithTimeout(cmd.Context(), completionTimeout)
	defer cancel()
	saved := e.timeout
	e.timeout = completionTimeout
	defer func() { e.timeout = saved }()
	c, _, err := e.connect(ctx, cmd)
	if err != nil {
		return nil
	}
	defer c.Close()
	qs, err := c.ListQueues(ctx, true)
	if err != nil {
		return nil
	}
	var names []string
	for _, q := range qs {
		if strings.HasPrefix(q.Name, prefix) {
			names = append(names, q.Name)
		}
	}
	return names
}

// completeLiveStates completes --state of jobs list.
func completeLiveStates(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
	return []string{client.StateReady.String(), client.StateScheduled.String(), client.StateReserved.String(), client.StateBlocked.String(), client.StateCompleted.String()}, cobra.ShellCompDirectiveNoFileComp
}
