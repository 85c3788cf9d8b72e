package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/sepp-io/sepp/client"
)

// watchFlags are a listing's --watch, --interval and --count.
type watchFlags struct {
	on       bool
	interval time.Duration
	count    int
}

func (w *watchFlags) register(cmd *cobra.Command) {
	cmd.Flags().BoolVarP(&w.on, "watch", "w", false, "print again every --interval until Ctrl-C")
	cmd.Flags().DurationVar(&w.interval, "interval", 2*time.Second, "time between two prints of --watch")
	cmd.Flags().IntVar(&w.count, "count", 0, "with --watch, stop after this many prints (0: until Ctrl-C)")
}

// runWatched is run, or with --watch, fn again every interval, each call
// bounded by --timeout on its own, until Ctrl-C or --count prints. A failed
// print ends the watch with that failure.
func (e *env) runWatched(cmd *cobra.Command, w watchFlags, fn func(ctx context.Context, c *client.Client, out io.Writer) error) error {
	if !w.on {
		if cmd.Flags().Changed("count") || cmd.Flags().Changed("interval") {
			return usageErrorf("--count and --interval go with --watch")
		}
		return e.run(cmd, fn)
	}
	switch {
	case w.interval <= 0:
		return usageErrorf("--interval must be positive, got %s", w.interval)
	case w.count < 0:
		return usageErrorf("--count must not be negative, got %d", w.count)
	case e.timeout <= 0:
		return usageErrorf("--timeout must be positive, got %s", e.timeout)
	}
	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	c, finish, err := e.connect(ctx, cmd)
	if err != nil {
		return err
	}
	defer c.Close()
	out := cmd.OutOrStdout()
	saved := e.jsonLines
	e.jsonLines = true
	defer func() { e.jsonLines = saved }()
	for n := 1; ; n++ {
		if !e.json {
			fmt.Fprintf(out, "%s\n", time.Now().UTC().Format(time.RFC3339))
		}
		callCtx, cancel := context.WithTimeout(ctx, e.timeout)
		err := fn(callCtx, c, out)
		cancel()
		if ctx.Err() != nil {
			return nil // Ctrl-C: the watch ends quietly
		}
		if err != nil {
			return finish(err)
		}
		if w.count > 0 && n >= w.count {
			return nil
		}
		if !e.json {
			fmt.Fprintln(out)
		}
		t := time.NewTimer(w.interval)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C:
		}
	}
}

// printJSONLine prints v compact on one line (a --watch stream).
func printJSONLine(out io.Writer, v any) error {
	return json.NewEncoder(out).Encode(v)
}
